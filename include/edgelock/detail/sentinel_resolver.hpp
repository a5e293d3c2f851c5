// A redis-sentinel:// node's asking of where its master is
// (src/client/sentinel.cpp): which sentinel to ask, in what time, what to
// ask and what the answer means. No socket: the node's own connection
// carries the question, as it carries the set-up. Tested alone in
// tests/unit/test_sentinel_resolver.cpp and test_sentinel_watch.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/detail/peer.hpp"
#include "edgelock/detail/timer_table.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/time.hpp"

namespace edgelock {

struct client_options;

namespace detail {

class sentinel_resolver {
public:
    // What a reply to the question meant.
    enum class answer : std::uint8_t {
        wait,     // AUTH's +OK: the address comes next
        found,    // the master is at the peer given to on_reply()
        refused,  // this sentinel does not say (why() tells): ask the next
    };

    // Asking now: the node's connection goes to sentinel(), not the master.
    bool asking() const noexcept { return asking_; }
    // The sentinel that answered last: asked first next time (and watched).
    std::uint8_t front() const noexcept { return front_; }
    // Until when the sentinel being asked has to answer.
    instant deadline() const noexcept { return timers_.get(timer::answer); }
    bool expired(instant now) const noexcept { return timers_.expired(timer::answer, now); }

    // Starts asking from the front sentinel: each has sentinel_timeout, all
    // of them together what is left until `connect_deadline`.
    void begin(instant now, instant connect_deadline, duration sentinel_timeout) noexcept;
    // The sentinel being asked failed us: the next one (restart() gives it
    // its time with the new connection); false (asking ends) when every
    // sentinel has been asked or no time is left before `connect_deadline`.
    bool next(const node_address& a, instant now, instant connect_deadline) noexcept;
    // A new connection to the sentinel being asked starts its own time.
    void restart(instant now, instant connect_deadline, duration sentinel_timeout) noexcept;
    void stop() noexcept;
    // The sentinel being asked.
    bool sentinel(const node_address& a, str_view& host, std::uint16_t& port) const noexcept;

    // The question: [AUTH with the sentinel's own credentials] and SENTINEL
    // get-master-addr-by-name. `auth` says whether AUTH is first (tag 0); the
    // address's reply is tag 1. 0 when it does not fit.
    static std::size_t write_question(char* buf, std::size_t capacity, const node_address& a,
                                      const client_options& o, bool& auth) noexcept;
    static constexpr std::uint32_t tag_auth = 0;
    static constexpr std::uint32_t tag_master = 1;
    // A reply (nodes nullptr: one too large to read). found: `master` is set
    // and this sentinel becomes the front one.
    answer on_reply(std::uint32_t tag, const resp_node* nodes, std::size_t count,
                    const node_address& a, peer& master) noexcept;
    // Why the latest refused answer refused: the sentinel's error text, or
    // what was wrong with the answer. Valid until the next on_reply().
    str_view why() const noexcept { return why_; }

private:
    enum class timer : std::uint8_t { answer };

    timer_table<timer, 1> timers_;
    bool asking_ = false;
    std::uint8_t tried_ = 0;  // sentinels asked in this round of asking
    std::uint8_t front_ = 0;
    str_view why_;
};

}  // namespace detail
}  // namespace edgelock
