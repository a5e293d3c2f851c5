// What a server tells a waiting lock (see lock.hpp, on_key_changed and
// on_key_renewed): its key was released (the release mark), so a waiter
// tries again now (paced when the pushes are more than a key's holders
// make, told_pace.hpp); its key was renewed (the renewal mark), so a told
// waiter's fallback poll moves on instead, unless that poll was nearly due
// (the mark expired with the key). And when that poll is due.
#include "edgelock/lock.hpp"

#include "lock_slots.hpp"
#include "lock_wire.hpp"

namespace edgelock {

using namespace detail;

lock_errc lock::on_key_changed(std::uint8_t node, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (state_ != lock_state::retry_wait && state_ != lock_state::acquiring) {
        return lock_errc::ok;
    }
    pace_.told(node);
    if (state_ == lock_state::acquiring) {
        woken_ = true;  // again as soon as this round ends busy
        // News from a node that already said busy: its answer came before
        // the change (a push before it is already in it).
        if (node < node_count_ && (slots_[node].flags & slot_said_busy) != 0) {
            woken_after_busy_ = true;
        }
        return lock_errc::ok;
    }
    polling_ = false;
    hint_try_ = false;  // the next round is the push's, whatever it asks for
    // Not before the delay of a waiter that collided twice in a row
    // (lock_rounds.cpp); after one collision a push is heard at once.
    const bool heard =
        backoff_ == backoff::none || (backoff_ == backoff::delay && node < node_count_ &&
                                      (slots_[node].flags & slot_said_busy) != 0);
    const instant at = latest(pace_.next_try(now, options_.retry_min, options_.retry_max),
                              heard ? now : backoff_until_);
    if (at <= now) {
        start_acquire_round(now);
    } else if (at < timers_.get(timer::retry)) {
        timers_.set(timer::retry, at);  // a noisy server: not before then
    }
    return lock_errc::ok;
}

lock_errc lock::on_key_renewed(std::uint8_t node, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (state_ != lock_state::retry_wait || !polling_ || longest_busy_ttl_ms_ < 0) {
        return lock_errc::ok;  // a try is due anyway, or it was not waiting on a ttl
    }
    // A renew comes with most of the ttl left (every third of it, by
    // default); the mark's expiry, when the key's was due.
    const duration ttl = duration::millis(static_cast<std::uint64_t>(longest_busy_ttl_ms_));
    if (key_gone_at_ <= now + duration::micros(ttl.us / 3)) {
        return on_key_changed(node, now);
    }
    key_gone_at_ = now + ttl;
    instant at;
    if (poll_at(now, longest_busy_ttl_ms_, at) && at > timers_.get(timer::retry) &&
        at < wait_deadline_) {
        timers_.set(timer::retry, at);
    }
    return lock_errc::ok;
}

lock_errc lock::on_told(std::uint8_t node, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    if (state_ != lock_state::acquiring && state_ != lock_state::retry_wait) {
        return lock_errc::ok;
    }
    slots_[node].flags = static_cast<std::uint16_t>(slots_[node].flags | slot_told);
    if (state_ == lock_state::acquiring || polling_ || woken_ || hint_try_ || busy_ttl_ms_ < 0) {
        // The round's end reads it; or already timed so (a hint's try: now).
        return lock_errc::ok;
    }
    instant at;
    if (poll_at(now, busy_ttl_ms_, at) && at < wait_deadline_) {
        const instant backed = latest(at, backoff_until_);  // a backoff stands
        timers_.set(timer::retry, backed < wait_deadline_ ? backed : at);
        polling_ = true;
        key_gone_at_ = now + duration::millis(static_cast<std::uint64_t>(busy_ttl_ms_));
    }
    return lock_errc::ok;
}

bool lock::is_renewal_mark(str_view key) const noexcept {
    // A semaphore renews none: a lock's of the same name says nothing of it.
    return state_ != lock_state::unconfigured && options_.permits == 0 &&
           detail::is_mark(key, name_, marks_, false);
}

std::size_t lock::renewal_mark(char* out) const noexcept {
    return state_ == lock_state::unconfigured ? 0 : detail::make_renewal_mark(out, name_, marks_);
}

bool lock::is_release_mark(str_view key) const noexcept {
    return state_ != lock_state::unconfigured && detail::is_mark(key, name_, marks_, true);
}

bool lock::told() const noexcept {
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        if ((slots_[i].flags & slot_told) != 0) {
            return true;
        }
    }
    return false;
}

bool lock::poll_at(instant now, std::int64_t ttl_ms, instant& at) noexcept {
    if (ttl_ms >= 0) {
        // Told: just after the key can be gone (PTTL counts whole ms), not
        // sooner than retry_min, or once more as the wait ends, a retry_max
        // before (or the round's allowance, if shorter). The waiter's own read then finds the key
        // expired, whether or not the server's expiry cycle has told it yet.
        const duration ttl = duration::millis(static_cast<std::uint64_t>(ttl_ms) + 1);
        at = now + (ttl > options_.retry_min ? ttl : options_.retry_min);
        const duration allowance = round_allowance();
        const std::uint64_t margin =
            (allowance < options_.retry_max ? allowance : options_.retry_max).us + 1;
        const instant last{wait_deadline_.us > margin ? wait_deadline_.us - margin : 0};
        at = earliest(at, last > now ? last : at);
        return true;
    }
    std::uint64_t delay_us = 0;
    if (!random_between(random_, options_.retry_min.us, options_.retry_max.us, delay_us)) {
        return false;
    }
    at = now + duration::micros(delay_us);
    return true;
}

}  // namespace edgelock
