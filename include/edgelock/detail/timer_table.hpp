// Named timers, one instant each, and the earliest of them: the way an object
// keeps its deadlines in one place instead of loose instants (quinn's
// TimerTable). `Name` is an enum whose values run from 0 to N - 1.
//
//   enum class conn_timer : std::uint8_t { connect, backoff, stall, count_ };
//   timer_table<conn_timer, 3> timers;
//   timers.set(conn_timer::stall, now + stall_timeout);
//   if (timers.expired(conn_timer::stall, now)) ...
//   instant next = timers.next();   // instant::never() when none is set
#pragma once

#include <cstddef>

#include "edgelock/time.hpp"

namespace edgelock {
namespace detail {

template <class Name, std::size_t N>
class timer_table {
public:
    timer_table() noexcept { stop_all(); }

    void set(Name t, instant at) noexcept { at_[index(t)] = at; }
    void stop(Name t) noexcept { at_[index(t)] = instant::never(); }
    void stop_all() noexcept {
        for (instant& at : at_) {
            at = instant::never();
        }
    }
    instant get(Name t) const noexcept { return at_[index(t)]; }
    bool armed(Name t) const noexcept { return at_[index(t)] != instant::never(); }
    // Set and due at `now` (a stopped timer never is).
    bool expired(Name t, instant now) const noexcept { return armed(t) && at_[index(t)] <= now; }
    instant next() const noexcept {
        instant first = instant::never();
        for (const instant at : at_) {
            first = earliest(first, at);
        }
        return first;
    }

private:
    static std::size_t index(Name t) noexcept { return static_cast<std::size_t>(t); }

    instant at_[N];
};

}  // namespace detail
}  // namespace edgelock
