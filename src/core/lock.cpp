// The lock state machine (see lock.hpp for its use, redlock.hpp for the rule):
// its operations and the rounds they start and decide. What comes in and goes
// out (replies, disconnects, timeouts; requests, deadlines) is in lock_io.cpp.
//
// A round is one request per node, all ready at once. Each node's answer is a
// vote; the round ends when the tally is decided or its deadline passes, and a
// reply arriving after that is late. Cleanup requests (releases after a failed
// round, or of a late success) travel outside rounds, ahead of anything else
// for the node, so on a FIFO connection they always land before the next
// round's acquire.
//
// After `lost` nothing is sent that could change a later hold of the same
// owner. A plain or fenced cleanup compare-and-deletes the lost acquisition's
// own random token, so it still goes out. A reentrant one decrements the
// owner's field: by the time it lands (the driver may hold it while the node is
// down, and serve a newer lock of the same owner first) the field may count
// that newer lock's hold only, which it would then delete. So in reentrant
// mode a lost acquisition sends nothing more, and its increments expire.
#include "edgelock/lock.hpp"

#include "edgelock/lock_scripts.hpp"
#include "lock_slots.hpp"
#include "lock_wire.hpp"

namespace edgelock {

using namespace detail;

lock_errc lock::configure(str_view name, std::uint8_t node_count, const lock_options& options,
                          random_source random) noexcept {
    if (state_ != lock_state::unconfigured && state_ != lock_state::idle) {
        return lock_errc::busy;
    }
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        // Pending cleanups name the old key; let them go out first.
        if ((slots_[i].flags & slot_cleanup) != 0) {
            return lock_errc::busy;
        }
    }
    if (node_count == 0 || node_count > lock_max_nodes) {
        return lock_errc::bad_node_count;
    }
    if (options.quorum != 0 && !redlock_quorum_ok(node_count, options.quorum)) {
        return lock_errc::bad_quorum;
    }
    if (name.size == 0 || name.data == nullptr) {
        return lock_errc::empty_name;
    }
    if (name.size > lock_max_name) {
        return lock_errc::name_too_long;
    }
    if (options.mode == lock_mode::fenced && !detail::counter_shares_slot(name)) {
        return lock_errc::name_unslotted;
    }
    if (options.owner.size > lock_max_owner) {
        return lock_errc::owner_too_long;
    }
    if (options.drift_ppm > lock_max_drift_ppm) {
        return lock_errc::bad_drift;
    }
    const std::uint64_t ttl_ms = options.ttl.ms();
    if (ttl_ms == 0 || ttl_ms > lock_max_ttl_ms || options.ttl.us % 1000 != 0 ||
        redlock_drift(options.ttl, options.drift_ppm, options.drift_fixed) >= options.ttl) {
        return lock_errc::bad_ttl;
    }
    if (options.node_timeout.us == 0 || options.node_timeout >= options.ttl) {
        return lock_errc::bad_node_timeout;
    }
    if (options.max_tries == 0 || options.retry_min > options.retry_max) {
        return lock_errc::bad_retry;
    }
    if (options.renew_resurrects && options.mode != lock_mode::plain) {
        return lock_errc::bad_mode_option;
    }
    if (!random.valid()) {
        return lock_errc::no_random_source;
    }
    name_ = name;
    options_ = options;
    random_ = random;
    node_count_ = node_count;
    quorum_ = options.quorum != 0 ? options.quorum : redlock_min_quorum(node_count);
    for (slot& s : slots_) {
        s = slot{};
    }
    round_kind_ = req::none;
    state_ = lock_state::idle;
    return lock_errc::ok;
}

lock_errc lock::set_retry(std::uint32_t max_tries, duration wait) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (state_ == lock_state::acquiring || state_ == lock_state::fencing ||
        state_ == lock_state::retry_wait) {
        return lock_errc::busy;
    }
    if (max_tries == 0) {
        return lock_errc::bad_retry;
    }
    options_.max_tries = max_tries;
    options_.wait = wait;
    return lock_errc::ok;
}

lock_errc lock::resume(const owner_token& token, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (state_ != lock_state::idle) {
        return lock_errc::busy;
    }
    if (options_.mode == lock_mode::reentrant) {
        return lock_errc::bad_mode_option;  // reentrant holds belong to an owner, not a token
    }
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        if ((slots_[i].flags & (slot_cleanup | slot_cleanup_out)) != 0) {
            return lock_errc::busy;  // an old cleanup would name the wrong token
        }
    }
    token_ = token;
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        // Any node may hold it: a release goes to all of them.
        slots_[i].flags = static_cast<std::uint16_t>(slots_[i].flags | slot_holder);
    }
    t0_ = now;
    validity_ = now + (options_.ttl -
                       redlock_drift(options_.ttl, options_.drift_ppm, options_.drift_fixed));
    fence_ = 0;
    holds_ = 1;
    acquisition_round_ = round_;
    held_round_ = round_;
    state_ = lock_state::held;
    return lock_errc::ok;
}

std::uint32_t lock::tag_for(req kind) const noexcept {
    return ((round_ & round_mask) << tag_kind_bits) | static_cast<std::uint32_t>(kind);
}

void lock::push_event(const lock_event& ev) noexcept {
    // Two slots: one operation ends in one event, and a renewed can be followed
    // by a lost before the owner polls. Past that the oldest gives way.
    constexpr std::uint8_t cap = sizeof events_ / sizeof events_[0];
    if (event_count_ == cap) {
        event_head_ = static_cast<std::uint8_t>((event_head_ + 1) % cap);
        --event_count_;
    }
    events_[(event_head_ + event_count_) % cap] = ev;
    ++event_count_;
}

bool lock::poll_event(lock_event& out) noexcept {
    if (event_count_ == 0) {
        return false;
    }
    constexpr std::uint8_t cap = sizeof events_ / sizeof events_[0];
    out = events_[event_head_];
    event_head_ = static_cast<std::uint8_t>((event_head_ + 1) % cap);
    --event_count_;
    return true;
}

void lock::start_round(req kind, instant now) noexcept {
    ++round_;
    round_kind_ = kind;
    round_t0_ = now;
    round_deadline_ = now + options_.node_timeout;
    tally_ = redlock_tally{};
    tally_.nodes = node_count_;
    tally_.quorum = quorum_;
    refused_ = 0;
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slot& s = slots_[i];
        s.send = kind;
        s.answer = vote::waiting;
        s.flags = static_cast<std::uint16_t>(s.flags & ~slot_round_bits);
    }
}

void lock::close_round() noexcept {
    round_kind_ = req::none;
    round_deadline_ = instant::never();
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

void lock::queue_cleanup_all() noexcept {
    // Plain and fenced releases compare-and-delete: harmless where the key is
    // not ours, so every node gets one (a SET may have landed unanswered).
    // A reentrant release decrements, which is not idempotent: only nodes known
    // to hold our increment get one; an unknown one expires with the ttl.
    const bool everywhere = options_.mode != lock_mode::reentrant;
    cleanup_token_ = token_;
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slot& s = slots_[i];
        if (everywhere || (s.flags & slot_holder) != 0) {
            s.flags = static_cast<std::uint16_t>((s.flags | slot_cleanup) & ~slot_cleanup_resent);
        }
        s.flags = static_cast<std::uint16_t>(s.flags & ~slot_holder);
    }
}

lock_errc lock::acquire(instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (state_ != lock_state::idle) {
        return lock_errc::busy;
    }
    owner_token fresh;
    if (!fresh.generate(random_)) {
        return lock_errc::random_failed;
    }
    token_ = fresh;
    lost_ = false;
    contended_ = false;
    acquisition_round_ = round_ + 1;
    tries_left_ = options_.max_tries;
    wait_deadline_ = now + options_.wait;
    holds_ = 0;
    fence_ = 0;
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slots_[i].flags = static_cast<std::uint16_t>(slots_[i].flags & ~slot_holder);
    }
    start_acquire_round(now);
    return lock_errc::ok;
}

void lock::start_acquire_round(instant now) noexcept {
    state_ = lock_state::acquiring;
    t0_ = now;
    round_max_ = 0;
    busy_ttl_ms_ = -1;
    retry_at_ = instant::never();
    woken_ = false;
    --tries_left_;
    start_round(req::acquire, now);
}

void lock::decide(instant now) noexcept {
    switch (round_kind_) {
    case req::acquire:
        if (tally_.won()) {
            finish_acquire_round(now);
        } else if (tally_.lost()) {
            fail_acquisition(lock_failure::no_quorum, now);
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
        round_deadline_ = earliest(round_deadline_, v);
        return;
    }
    const instant v = redlock_validity_deadline(
        t0_, options_.ttl, redlock_drift(options_.ttl, options_.drift_ppm, options_.drift_fixed));
    if (v <= now) {
        fail_acquisition(lock_failure::expired, now);
        return;
    }
    validity_ = v;
    held_round_ = round_;
    state_ = lock_state::held;
    lock_event ev;
    ev.kind = lock_event_kind::acquired;
    ev.validity_deadline = v;
    ev.fence = fence_;
    ev.holds = holds_;
    push_event(ev);
}

void lock::finish_fence_round(instant now) noexcept {
    close_round();
    const instant v = redlock_validity_deadline(
        t0_, options_.ttl, redlock_drift(options_.ttl, options_.drift_ppm, options_.drift_fixed));
    if (v <= now) {
        fail_acquisition(lock_failure::expired, now);
        return;
    }
    validity_ = v;
    // Late acquire replies of round 1 belong to this hold.
    held_round_ = round_ - 1;
    state_ = lock_state::held;
    lock_event ev;
    ev.kind = lock_event_kind::acquired;
    ev.validity_deadline = v;
    ev.fence = fence_;
    push_event(ev);
}

void lock::fail_acquisition(lock_failure reason, instant now) noexcept {
    const bool acquire_round = round_kind_ == req::acquire;
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
    if (tries_left_ > 0 && woken_ && now < wait_deadline_) {
        retry_at_ = now;  // the key changed meanwhile: again at once
        state_ = lock_state::retry_wait;
        return;
    }
    if (tries_left_ > 0) {
        std::uint64_t delay_us = 0;
        if (!random_between(random_, options_.retry_min.us, options_.retry_max.us, delay_us)) {
            reason = lock_failure::random_failed;
        } else {
            instant at = now + duration::micros(delay_us);
            if (told() && busy_ttl_ms_ >= 0) {
                // A server tells us of the change; polling is the fallback for
                // a word that never comes. The key, unless renewed (which
                // tells us too), lasts busy_ttl_ms_ more: try then, or once
                // more as the wait ends, leaving that round its node_timeout.
                at = at + duration::millis(static_cast<std::uint64_t>(busy_ttl_ms_));
                const std::uint64_t margin = options_.node_timeout.us + 1;
                const instant last{wait_deadline_.us > margin ? wait_deadline_.us - margin : 0};
                at = earliest(at, last > now ? last : at);
            }
            if (at < wait_deadline_) {
                retry_at_ = at;
                state_ = lock_state::retry_wait;
                return;
            }
        }
    }
    state_ = lock_state::idle;
    retry_at_ = instant::never();
    lock_event ev;
    if (busy && reason == lock_failure::no_quorum) {
        ev.kind = lock_event_kind::busy;
        ev.holder_ttl_ms = busy_ttl_ms_;
    } else {
        ev.kind = lock_event_kind::failed;
        ev.reason = reason;
    }
    push_event(ev);
}

void lock::drop_cleanups() noexcept {
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        // One already out cannot be called back; it is not resent either.
        slot& s = slots_[i];
        s.flags = static_cast<std::uint16_t>(s.flags &
                                             ~(slot_cleanup | slot_cleanup_resent | slot_holder));
    }
}

void lock::become_lost(lock_failure reason) noexcept {
    close_round();
    if (options_.mode == lock_mode::reentrant) {
        drop_cleanups();  // see the top of this file: let the old hold expire
    } else {
        queue_cleanup_all();
    }
    lost_ = true;
    state_ = lock_state::idle;
    retry_at_ = instant::never();
    holds_ = 0;
    lock_event ev;
    ev.kind = lock_event_kind::lost;
    ev.reason = reason;
    push_event(ev);
}

lock_errc lock::renew(instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (state_ == lock_state::renewing) {
        return lock_errc::busy;
    }
    if (state_ != lock_state::held) {
        return state_ == lock_state::idle ? lock_errc::not_held : lock_errc::busy;
    }
    if (validity_ <= now) {
        become_lost(lock_failure::validity_ended);
        return lock_errc::ok;
    }
    start_renew_round(now);
    return lock_errc::ok;
}

void lock::start_renew_round(instant now) noexcept {
    state_ = lock_state::renewing;
    retry_at_ = instant::never();
    start_round(req::renew, now);
    // A renew that wins after the validity ended proves nothing about the gap.
    round_deadline_ = earliest(round_deadline_, validity_);
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
    validity_ = v;
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
    ev.reason = lock_failure::no_quorum;
    ev.validity_deadline = validity_;
    push_event(ev);
    const instant at = now + duration::micros(delay_us);
    if (at >= validity_) {
        // No time for another round; on_timeout reports the loss at the deadline.
        retry_at_ = instant::never();
    } else {
        retry_at_ = at;
    }
    state_ = lock_state::renewing;
}

lock_errc lock::release(instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (state_ == lock_state::idle) {
        return lock_errc::not_held;
    }
    if (state_ == lock_state::releasing) {
        return lock_errc::busy;
    }
    close_round();
    retry_at_ = instant::never();
    state_ = lock_state::releasing;
    released_ = 0;
    absent_ = 0;
    start_round(req::release, now);
    if (options_.mode == lock_mode::reentrant) {
        // One decrement per node that holds our increment; see queue_cleanup_all.
        for (std::uint8_t i = 0; i < node_count_; ++i) {
            slot& s = slots_[i];
            if ((s.flags & slot_holder) == 0) {
                count_vote(s, vote::no);
            }
        }
    }
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slots_[i].flags = static_cast<std::uint16_t>(slots_[i].flags & ~slot_holder);
    }
    decide(now);
    return lock_errc::ok;
}

}  // namespace edgelock
