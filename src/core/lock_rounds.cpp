// The lock machine's rounds (see lock.cpp for the operations that start them):
// a round's votes, its tally, and what a won or lost round leads to: the hold
// and its validity, round 2 of a fenced Redlock, a retry (at once when a
// server said the key changed, else after the retry delay or, for a waiter
// that is told, the holder's ttl), the busy or failed event, and the cleanups
// owed where our key may have landed.
#include "edgelock/lock.hpp"

#include "lock_slots.hpp"
#include "lock_wire.hpp"

namespace edgelock {

using namespace detail;

void lock::start_round(req kind, instant now) noexcept {
    ++round_;
    round_kind_ = kind;
    round_t0_ = now;
    // A renew without a fixed node_timeout waits while the hold is valid:
    // its validity timer, not this one, says when it is lost.
    const bool to_validity = kind == req::renew && options_.node_timeout.us == 0;
    timers_.set(timer::round, to_validity ? latest(validity_, now) : now + round_allowance());
    tally_ = redlock_tally{};
    tally_.nodes = node_count_;
    tally_.quorum = quorum_;
    refused_ = 0;
    unreplicated_ = 0;
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slot& s = slots_[i];
        s.send = kind;
        s.answer = vote::waiting;
        s.flags = static_cast<std::uint16_t>(s.flags & ~slot_round_bits);
    }
}

void lock::close_round() noexcept {
    round_kind_ = req::none;
    timers_.stop(timer::round);
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        // A request not yet sent when the round is decided is never sent.
        slots_[i].send = req::none;
        slots_[i].flags = static_cast<std::uint16_t>(slots_[i].flags & ~slot_in_flight);
    }
}

void lock::count_vote(slot& s, vote v) noexcept {
    s.answer = v;
    s.send = req::none;
    s.flags = static_cast<std::uint16_t>(s.flags & ~slot_in_flight);
    if (v == vote::yes) {
        ++tally_.yes;
    } else {
        ++tally_.no;
        if (v == vote::refused) {
            ++refused_;
        }
    }
}

void lock::decide(instant now) noexcept {
    switch (round_kind_) {
    case req::acquire:
        if (tally_.won()) {
            finish_acquire_round(now);
        } else if (tally_.lost()) {
            // Busy when a node said so; not replicated when a node took the
            // key but too few of its replicas had it.
            fail_acquisition(refused_ == 0 && unreplicated_ != 0 ? lock_failure::not_replicated
                                                                 : lock_failure::no_quorum,
                             now);
        }
        return;
    case req::fence_raise:
        if (tally_.won()) {
            finish_fence_round(now);
        } else if (tally_.lost()) {
            fail_acquisition(refused_ != 0 ? lock_failure::fence_conflict : lock_failure::no_quorum,
                             now);
        }
        return;
    case req::renew:
        if (tally_.won()) {
            finish_renew_round(now);
        } else if (tally_.lost()) {
            renew_round_failed(now);
        }
        return;
    case req::release:
        // Every node's answer (a silent node's, within the round's
        // allowance): when release() is done, every node that answers has
        // let go.
        if (tally_.all_in()) {
            close_round();
            state_ = lock_state::idle;
            holds_ = 0;
            lock_event ev;
            ev.kind = lock_event_kind::released;
            ev.nodes = released_;
            ev.absent = absent_;
            push_event(ev);
        }
        return;
    case req::none:
    case req::cleanup:
        return;
    }
}

void lock::finish_acquire_round(instant now) noexcept {
    close_round();
    if (fenced_redlock()) {
        // Round 2: a token above every counter of this quorum, written back to
        // a quorum before anyone sees it. Any later quorum overlaps this one.
        fence_ = round_max_ + 1;
        state_ = lock_state::fencing;
        start_round(req::fence_raise, now);
        const instant v = redlock_validity_deadline(
            t0_, options_.ttl,
            redlock_drift(options_.ttl, options_.drift_ppm, options_.drift_fixed));
        timers_.set(timer::round, earliest(timers_.get(timer::round), v));
        return;
    }
    become_held(round_, now);
}

void lock::finish_fence_round(instant now) noexcept {
    close_round();
    become_held(round_ - 1, now);  // late acquire replies of round 1 belong to this hold
}

void lock::become_held(std::uint32_t won_round, instant now) noexcept {
    const instant v = redlock_validity_deadline(
        t0_, options_.ttl, redlock_drift(options_.ttl, options_.drift_ppm, options_.drift_fixed));
    if (v <= now) {
        fail_acquisition(lock_failure::expired, now);
        return;
    }
    hold_until(v, t0_);
    held_round_ = won_round;
    state_ = lock_state::held;
    lock_event ev;
    ev.kind = lock_event_kind::acquired;
    ev.validity_deadline = v;
    ev.fence = fence_;
    ev.holds = holds_;
    ev.permit = static_cast<std::int16_t>(options_.permits != 0 ? permit_ : -1);
    push_event(ev);
}

void lock::fail_acquisition(lock_failure reason, instant now) noexcept {
    const bool acquire_round = round_kind_ == req::acquire;
    if (acquire_round && permits_found_ >= 0) {
        // A semaphore of another limit: no retry would change that.
        reason = lock_failure::permits_differ;
        tries_left_ = 0;
    }
    const bool busy = reason == lock_failure::no_quorum && refused_ != 0 && acquire_round;
    close_round();
    queue_cleanup_all();
    for (std::uint8_t i = 0; i < node_count_ && acquire_round; ++i) {
        // A node that answered "busy" did not set our key: nothing to undo.
        slot& s = slots_[i];
        if ((s.flags & slot_said_busy) != 0) {
            s.flags = static_cast<std::uint16_t>(s.flags & ~slot_cleanup);
        }
    }
    fence_ = 0;
    holds_ = 0;
    if (busy) {
        pace_.busy();
        if (busy_ttl_ms_ > longest_busy_ttl_ms_ && busy_ttl_ms_ <= INT32_MAX) {
            longest_busy_ttl_ms_ = static_cast<std::int32_t>(busy_ttl_ms_);
        }
    }
    polling_ = false;
    // Contenders that split the nodes between them (we took some, others
    // were busy) and retry at once, or when their cleanups tell them, collide
    // again on every round trip; so do a semaphore's tries on hints when its
    // permits are held crosswise. As Redlock asks, such a waiter waits its
    // random retry delay (backoff_until_), and a try on a hint that did not
    // win is not followed by another at once (a hint from a split round is
    // tried at once: it names another permit). A push from a node that said
    // busy, heard after it did, still starts the next round at once (its
    // holder let go: the collision may be a release still on its way to some
    // nodes); a push from any other node (another waiter's cleanup there), or
    // one a node sent before it said busy (its answer already saw that
    // change), does not. A semaphore that collides twice in a row hears no
    // push until its delay ends (its waiters' partial permits are on nodes
    // that said busy to each other).
    const bool after_hint = hint_try_;
    const bool collided = busy && (tally_.yes != 0 || after_hint);
    const bool deaf = collided && collided_before_ && options_.permits != 0;
    hint_try_ = false;
    collided_before_ = collided;
    backoff_ = deaf ? backoff::deaf : collided ? backoff::delay : backoff::none;
    std::uint64_t backoff_us = 0;
    if (backoff_ != backoff::none && tries_left_ > 0 &&
        !random_between(random_, options_.retry_min.us, options_.retry_max.us, backoff_us)) {
        reason = lock_failure::random_failed;
        tries_left_ = 0;
    }
    backoff_until_ = now + duration::micros(backoff_us);
    // A push heard during the round wakes the waiter at once unless it
    // collided, where only a busy node's word after its answer does (and
    // none after a semaphore's second collision in a row).
    const bool heard = woken_ && (!collided || (woken_after_busy_ && !deaf));
    const instant told_at = latest(pace_.next_try(now, options_.retry_min, options_.retry_max),
                                   heard ? now : backoff_until_);
    if (tries_left_ > 0 && woken_ && told_at < wait_deadline_) {
        // The key changed meanwhile: again at once, or as soon as a noisy
        // server's pushes (told_pace.hpp) or the backoff allow.
        timers_.set(timer::retry, told_at);
        state_ = lock_state::retry_wait;
        return;
    }
    if (tries_left_ > 0 && busy && !after_hint && options_.permits != 0 && hint_ >= 0 &&
        now < wait_deadline_) {
        // A semaphore's node named a free permit: the next round asks for
        // it now, rather than wait for the one asked for to be released.
        hint_try_ = true;
        timers_.set(timer::retry, now);
        state_ = lock_state::retry_wait;
        return;
    }
    if (tries_left_ > 0) {
        // A server tells us of the change; polling is the fallback for a
        // word that never comes. The key, unless renewed (which tells us
        // too), lasts busy_ttl_ms_ more.
        const bool poll = told() && busy_ttl_ms_ >= 0;
        instant at;
        if (!poll_at(now, poll ? busy_ttl_ms_ : -1, at)) {
            reason = lock_failure::random_failed;
        } else if (at < wait_deadline_) {
            // The backoff, unless it would pass the poll's last try before
            // the wait ends.
            const instant backed = latest(at, backoff_until_);
            timers_.set(timer::retry, backed < wait_deadline_ ? backed : at);
            state_ = lock_state::retry_wait;
            polling_ = poll;
            key_gone_at_ =
                now + duration::millis(static_cast<std::uint64_t>(poll ? busy_ttl_ms_ : 0));
            return;
        }
    }
    state_ = lock_state::idle;
    timers_.stop(timer::retry);
    lock_event ev;
    if (busy && reason == lock_failure::no_quorum) {
        ev.kind = lock_event_kind::busy;
        ev.holder_ttl_ms = busy_ttl_ms_;
    } else {
        ev.kind = lock_event_kind::failed;
        ev.reason = reason;
        ev.permits_found = reason == lock_failure::permits_differ ? permits_found_ : -1;
    }
    push_event(ev);
}

void lock::finish_renew_round(instant now) noexcept {
    close_round();
    const instant v = redlock_validity_deadline(
        round_t0_, options_.ttl,
        redlock_drift(options_.ttl, options_.drift_ppm, options_.drift_fixed));
    if (validity_ <= now || v <= now) {
        become_lost(lock_failure::validity_ended);
        return;
    }
    hold_until(v, round_t0_);
    state_ = lock_state::held;
    lock_event ev;
    ev.kind = lock_event_kind::renewed;
    ev.validity_deadline = v;
    push_event(ev);
}

void lock::renew_round_failed(instant now) noexcept {
    // A quorum that cannot be reached any more because nodes said "not ours"
    // will not come back by retrying: the keys expired or were taken.
    if (refused_ > node_count_ - quorum_) {
        become_lost(lock_failure::not_ours);
        return;
    }
    close_round();
    std::uint64_t delay_us = 0;
    if (!random_between(random_, options_.retry_min.us, options_.retry_max.us, delay_us)) {
        become_lost(lock_failure::random_failed);
        return;
    }
    // At least 1 ms, so nodes failing instantly cannot spin us in place.
    if (delay_us < 1000) {
        delay_us = 1000;
    }
    lock_event ev;
    ev.kind = lock_event_kind::renew_failed;
    ev.reason = unreplicated_ != 0 ? lock_failure::not_replicated : lock_failure::no_quorum;
    ev.validity_deadline = validity_;
    push_event(ev);
    // A round that would start past the validity is none: the validity timer
    // reports the loss then.
    const instant at = now + duration::micros(delay_us);
    if (at < validity_) {
        timers_.set(timer::retry, at);
    }
    state_ = lock_state::renewing;
}

}  // namespace edgelock
