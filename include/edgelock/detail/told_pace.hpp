// How soon a waiter told of a change to the lock's key tries again: at once,
// unless its last told tries heard more pushes than a key's holders make.
//
// A real change (the key released, expired, taken by another) costs a
// waiter one try, and that try is never delayed: the handoff after a
// release is one round trip. A renew by the holder is heard as one, with
// its renewal mark, and is not counted here (lock::on_key_renewed). But a
// push is only a claim. A server (or something between) that sends
// invalidations without end, for the key or as flushes, would otherwise
// have every waiter try once per round trip, on every node of a Redlock,
// for as long as the wait lasts.
//
// Between the start of one round and the answer of the next, a key changes
// hands about twice: released (or expired), then taken by whoever won. So at
// most two pushes for the key (or flushes) from each node are taken as true.
// A told round that ends busy after more than that heard noise: after two
// such rounds in a row, the next told try waits retry_min after the last
// one, doubling with each further one up to retry_max, so a waiter is never
// woken more often than one that is not told polls. A told round that heard
// no more than that, or an acquire, ends the backoff. Pushes are counted,
// never queued: any number of them costs a counter.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/time.hpp"

namespace edgelock {
namespace detail {

template <std::size_t Nodes>
class told_pace {
public:
    // An acquire begins: nothing heard yet.
    void reset() noexcept { *this = told_pace(); }
    // A push for the key (or a flush) came from `node` (Nodes or more: from
    // no node in particular, not counted): the next round answers it.
    void told(std::size_t node) noexcept {
        pending_ = true;
        if (node < Nodes && (heard_[node] & now_mask) < now_mask) {
            ++heard_[node];
        }
    }
    // A round begins at `now`; it answers the pushes heard so far.
    void start(instant now) noexcept {
        round_told_ = pending_;
        pending_ = false;
        for (std::uint8_t& h : heard_) {
            h = static_cast<std::uint8_t>((h & now_mask) << 4);
        }
        if (round_told_) {
            last_ = now;
        }
    }
    // The round ended busy.
    void busy() noexcept {
        if (!round_told_) {
            return;
        }
        bool noise = false;
        for (const std::uint8_t h : heard_) {
            noise = noise || static_cast<unsigned>((h >> 4) + (h & now_mask)) > true_pushes;
        }
        idle_ = !noise ? 0 : static_cast<std::uint8_t>(idle_ < idle_cap ? idle_ + 1 : idle_);
    }
    // When a told round may start, at `now` or later.
    instant next_try(instant now, duration retry_min, duration retry_max) const noexcept {
        if (idle_ < idle_free) {
            return now;
        }
        const unsigned shift = static_cast<unsigned>(idle_ - idle_free);
        duration gap = retry_max;
        if (shift < 20 && retry_min.us <= (retry_max.us >> shift)) {
            gap = duration::micros(retry_min.us << shift);
        }
        const instant at = last_ + gap;
        return at > now ? at : now;
    }

private:
    static constexpr unsigned true_pushes = 2;    // what a node sends between two answers
    static constexpr std::uint8_t idle_free = 2;  // noisy told rounds before the backoff
    static constexpr std::uint8_t idle_cap = 32;
    static constexpr std::uint8_t now_mask = 0x0f;
    instant last_;  // the last told round's start
    // Each node's pushes: since the current round began (low 4 bits, up to
    // 15), and between the round before and this one (high 4 bits).
    std::uint8_t heard_[Nodes] = {};
    std::uint8_t idle_ = 0;  // told rounds in a row that heard noise and ended busy
    bool pending_ = false;
    bool round_told_ = false;
};

}  // namespace detail
}  // namespace edgelock
