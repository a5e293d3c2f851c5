// The lock state machine (see lock.hpp for its use, redlock.hpp for the rule).
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
#include "lock_wire.hpp"

namespace edgelock {

namespace {

// slot::flags
constexpr std::uint8_t slot_in_flight = 1;        // this round's request is out
constexpr std::uint8_t slot_eval = 2;             // send it as EVAL (after NOSCRIPT)
constexpr std::uint8_t slot_retried = 4;          // the NOSCRIPT retry is spent
constexpr std::uint8_t slot_cleanup = 8;          // a cleanup waits to be sent
constexpr std::uint8_t slot_cleanup_out = 16;     // a cleanup is out
constexpr std::uint8_t slot_holder = 32;          // the node holds our acquisition
constexpr std::uint8_t slot_cleanup_resent = 64;  // a cleanup cut off was sent again

// Tags: round number in the high 29 bits, request kind in the low 3.
constexpr std::uint32_t tag_kind_bits = 3;
constexpr std::uint32_t round_mask = 0xffffffffU >> tag_kind_bits;

// Lua numbers are doubles: counters past 2^53 cannot be trusted to increase.
constexpr std::int64_t max_fence = (std::int64_t{1} << 53) - 1;

}  // namespace

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
        slots_[i].flags = static_cast<std::uint8_t>(slots_[i].flags | slot_holder);
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
        s.flags = static_cast<std::uint8_t>(s.flags & ~(slot_in_flight | slot_eval | slot_retried));
    }
}

void lock::close_round() noexcept {
    round_kind_ = req::none;
    round_deadline_ = instant::never();
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        // A request not yet sent when the round is decided is never sent.
        slots_[i].send = req::none;
        slots_[i].flags = static_cast<std::uint8_t>(slots_[i].flags & ~slot_in_flight);
    }
}

void lock::count_vote(slot& s, vote v) noexcept {
    s.answer = v;
    s.send = req::none;
    s.flags = static_cast<std::uint8_t>(s.flags & ~slot_in_flight);
    if (v == vote::yes) {
        ++tally_.yes;
    } else {
        ++tally_.no;
        if (v == vote::busy) {
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
            s.flags = static_cast<std::uint8_t>((s.flags | slot_cleanup) & ~slot_cleanup_resent);
        }
        s.flags = static_cast<std::uint8_t>(s.flags & ~slot_holder);
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
    acquisition_round_ = round_ + 1;
    tries_left_ = options_.max_tries;
    wait_deadline_ = now + options_.wait;
    holds_ = 0;
    fence_ = 0;
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slots_[i].flags = static_cast<std::uint8_t>(slots_[i].flags & ~slot_holder);
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
    const bool busy =
        reason == lock_failure::no_quorum && refused_ != 0 && round_kind_ == req::acquire;
    close_round();
    queue_cleanup_all();
    fence_ = 0;
    holds_ = 0;
    if (tries_left_ > 0) {
        std::uint64_t delay_us = 0;
        if (!random_between(random_, options_.retry_min.us, options_.retry_max.us, delay_us)) {
            reason = lock_failure::random_failed;
        } else {
            const instant at = now + duration::micros(delay_us);
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
        s.flags = static_cast<std::uint8_t>(s.flags &
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
        slots_[i].flags = static_cast<std::uint8_t>(slots_[i].flags & ~slot_holder);
    }
    decide(now);
    return lock_errc::ok;
}

void lock::handle_late(slot& s, req kind, std::uint32_t round, bool success) noexcept {
    if (kind != req::acquire || !success) {
        return;
    }
    // Only the current acquisition's token can still be named.
    const std::uint32_t age = (round - acquisition_round_) & round_mask;
    const std::uint32_t span = (round_ - acquisition_round_) & round_mask;
    if (age > span) {
        return;
    }
    if (options_.mode == lock_mode::reentrant) {
        if (held() && round == (held_round_ & round_mask)) {
            s.flags = static_cast<std::uint8_t>(s.flags | slot_holder);
            return;
        }
        if (lost_) {
            // Not after lost: the decrement would land on whatever hold the
            // owner has by then. This increment expires with the ttl.
            return;
        }
        // An increment of a round that did not win: take it back.
        cleanup_token_ = token_;
        s.flags = static_cast<std::uint8_t>((s.flags | slot_cleanup) & ~slot_cleanup_resent);
        return;
    }
    switch (state_) {
    case lock_state::idle:
    case lock_state::retry_wait:
    case lock_state::releasing:
        // Compare-and-delete: also correct if a failure cleanup beat us to it.
        cleanup_token_ = token_;
        s.flags = static_cast<std::uint8_t>((s.flags | slot_cleanup) & ~slot_cleanup_resent);
        return;
    default:
        // Held: the key is ours and the release will take it. Acquiring a
        // later round: the failed round's cleanup is already queued ahead
        // of the new acquire, and a release now would delete that acquire.
        return;
    }
}

lock_errc lock::on_reply(std::uint8_t node, std::uint32_t tag, const resp_node* nodes,
                         std::size_t count, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    slot& s = slots_[node];
    const detail::lock_reply r = detail::read_lock_reply(nodes, count);
    const std::uint32_t kind_bits = tag & ((1U << tag_kind_bits) - 1);
    const std::uint32_t round = tag >> tag_kind_bits;
    if (kind_bits > static_cast<std::uint32_t>(req::cleanup) || kind_bits == 0) {
        return lock_errc::ok;  // not a tag of ours: nothing to match it to
    }
    const req kind = static_cast<req>(kind_bits);

    if (kind == req::cleanup) {
        // Cleanups go out as EVAL, so there is no NOSCRIPT to retry: a retry
        // would land behind whatever was sent since, possibly an acquire with
        // the same token whose key it would then delete.
        s.flags = static_cast<std::uint8_t>(s.flags & ~slot_cleanup_out);
        return lock_errc::ok;
    }

    // What the reply says, independent of whether it is on time.
    vote v = vote::no;
    std::int64_t value = 0;
    switch (kind) {
    case req::acquire:
        if (r.shape == detail::reply_shape::pair && r.first == 1 && r.second >= 0 &&
            r.second <= max_fence) {
            v = vote::yes;
            value = r.second;
            if (options_.mode == lock_mode::fenced && !fenced_redlock() && value < 1) {
                v = vote::no;  // a fenced single node must hand out a counter
            }
        } else if (r.shape == detail::reply_shape::pair && r.first == 0) {
            v = vote::busy;
            value = r.second;
        }
        break;
    case req::fence_raise:
        if (r.shape == detail::reply_shape::integer) {
            if (r.first >= 0 && static_cast<std::uint64_t>(r.first) == fence_) {
                v = vote::yes;
            } else if (r.first >= 0 && static_cast<std::uint64_t>(r.first) > fence_) {
                v = vote::busy;
            }
        }
        break;
    case req::renew:
        if (r.shape == detail::reply_shape::integer) {
            v = r.first == 1 ? vote::yes : (r.first == 0 ? vote::busy : vote::no);
        } else if (r.shape == detail::reply_shape::pair) {
            // renew_resurrects sends the acquire script.
            v = r.first == 1 ? vote::yes : (r.first == 0 ? vote::busy : vote::no);
        }
        break;
    case req::release:
        v = r.shape == detail::reply_shape::integer ? vote::yes : vote::no;
        value = r.first;
        break;
    case req::none:
    case req::cleanup:
        break;
    }

    const bool current = round_open() && kind == round_kind_ && round == (round_ & round_mask) &&
                         (s.flags & slot_in_flight) != 0 && s.answer == vote::waiting;
    if (!current) {
        handle_late(s, kind, round, v == vote::yes);
        return lock_errc::ok;
    }
    if (r.shape == detail::reply_shape::noscript && (s.flags & slot_retried) == 0) {
        // The node lost its script cache: once more with the text, same round.
        s.flags = static_cast<std::uint8_t>((s.flags | slot_retried | slot_eval) & ~slot_in_flight);
        s.send = kind;
        return lock_errc::ok;
    }
    if (kind == req::release && v == vote::yes) {
        // Plain and fenced: 1 deleted, 0 not ours. Reentrant: holds left
        // (0 deleted), -1 no hold of ours.
        const bool reentrant = options_.mode == lock_mode::reentrant;
        if (reentrant ? value >= 0 : value == 1) {
            ++released_;
        } else if (reentrant ? value == -1 : value == 0) {
            ++absent_;
        }
    }
    if (v == vote::yes && (kind == req::acquire || kind == req::renew)) {
        s.flags = static_cast<std::uint8_t>(s.flags | slot_holder);
    }
    if (kind == req::acquire) {
        if (v == vote::yes) {
            const std::uint64_t u = static_cast<std::uint64_t>(value);
            if (options_.mode == lock_mode::fenced) {
                if (fenced_redlock()) {
                    round_max_ = u > round_max_ ? u : round_max_;
                } else {
                    fence_ = u;
                }
            } else if (options_.mode == lock_mode::reentrant) {
                holds_ = static_cast<std::uint32_t>(u > 0xffffffffU ? 0xffffffffU : u);
            }
        } else if (v == vote::busy && value >= 0) {
            busy_ttl_ms_ = busy_ttl_ms_ < 0 || value < busy_ttl_ms_ ? value : busy_ttl_ms_;
        }
    }
    count_vote(s, v);
    decide(now);
    return lock_errc::ok;
}

lock_errc lock::on_disconnected(std::uint8_t node, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    slot& s = slots_[node];
    if (options_.mode == lock_mode::reentrant && (s.flags & slot_cleanup) != 0) {
        // A decrement waiting for a node whose connection broke: by the time
        // a new connection carries it, the node may have restarted without our
        // increment, and a newer hold of the owner may be there instead (the
        // driver may serve that lock first). Our increment expires with the ttl.
        s.flags = static_cast<std::uint8_t>(s.flags & ~slot_cleanup);
    }
    if ((s.flags & slot_cleanup_out) != 0) {
        // Anything sent after the cleanup was lost with it (and counts as
        // "no"), so the resend is again first on the new connection.
        s.flags = static_cast<std::uint8_t>(s.flags & ~slot_cleanup_out);
        // Resending a compare-and-delete is harmless; resending a decrement
        // could take a hold that is not ours, so that one is left to the ttl.
        // Once only: a node that keeps refusing must not keep us busy; its key
        // expires with the ttl anyway.
        if (options_.mode != lock_mode::reentrant && (s.flags & slot_cleanup_resent) == 0) {
            s.flags = static_cast<std::uint8_t>(s.flags | slot_cleanup | slot_cleanup_resent);
        }
    }
    if (round_open() && (s.flags & slot_in_flight) != 0 && s.answer == vote::waiting) {
        count_vote(s, vote::no);
        decide(now);
    }
    return lock_errc::ok;
}

void lock::on_timeout(instant now) noexcept {
    switch (state_) {
    case lock_state::held:
    case lock_state::renewing:
        if (validity_ <= now) {
            become_lost(lock_failure::validity_ended);
            return;
        }
        break;
    case lock_state::retry_wait:
        if (retry_at_ <= now) {
            start_acquire_round(now);
        }
        return;
    default:
        break;
    }
    if (round_open() && round_deadline_ <= now) {
        for (std::uint8_t i = 0; i < node_count_ && round_open(); ++i) {
            if (slots_[i].answer == vote::waiting) {
                count_vote(slots_[i], vote::no);
                decide(now);
            }
        }
        return;
    }
    if (state_ == lock_state::renewing && !round_open() && retry_at_ <= now) {
        start_renew_round(now);
    }
}

instant lock::next_deadline() const noexcept {
    switch (state_) {
    case lock_state::acquiring:
    case lock_state::fencing:
    case lock_state::releasing:
        return round_deadline_;
    case lock_state::retry_wait:
        return retry_at_;
    case lock_state::held:
        return validity_;
    case lock_state::renewing:
        return earliest(validity_, round_open() ? round_deadline_ : retry_at_);
    case lock_state::unconfigured:
    case lock_state::idle:
        break;
    }
    return instant::never();
}

lock::pending lock::pending_send(std::uint8_t node) const noexcept {
    if (state_ == lock_state::unconfigured || node >= node_count_) {
        return pending::none;
    }
    const slot& s = slots_[node];
    if ((s.flags & slot_cleanup) != 0) {
        return pending::cleanup;
    }
    return round_open() && s.send != req::none ? pending::request : pending::none;
}

lock_transmit lock::poll_transmit(std::uint8_t node, char* buf, std::size_t capacity) noexcept {
    lock_transmit out;
    if (state_ == lock_state::unconfigured) {
        out.error = lock_errc::not_configured;
        return out;
    }
    if (node >= node_count_) {
        out.error = lock_errc::bad_node;
        return out;
    }
    slot& s = slots_[node];
    const bool cleanup = (s.flags & slot_cleanup) != 0;
    const req kind = cleanup ? req::cleanup : (round_open() ? s.send : req::none);
    if (kind == req::none) {
        return out;
    }
    const bool eval = cleanup || (s.flags & slot_eval) != 0;
    const owner_token& tok = cleanup ? cleanup_token_ : token_;

    char key[detail::lock_key_capacity];
    char fence_key[detail::lock_key_capacity];
    char hex[owner_token::hex_size];
    tok.to_hex(hex);
    const str_view token_view(hex, sizeof hex);
    const str_view owner = options_.mode == lock_mode::reentrant && !options_.owner.empty()
                               ? options_.owner
                               : token_view;
    const str_view lock_key(key, detail::make_lock_key(key, name_, false));
    const str_view counter_key(fence_key, detail::make_lock_key(fence_key, name_, true));
    const decimal_arg ttl(static_cast<std::int64_t>(options_.ttl.ms()));
    const decimal_arg fence = decimal_arg::from_unsigned(fence_);

    const lock_script* script = &script_release;
    str_view keys[2] = {lock_key, counter_key};
    str_view args[2] = {token_view, ttl.view()};
    std::size_t key_count = 1;
    std::size_t arg_count = 2;
    const bool reentrant = options_.mode == lock_mode::reentrant;
    switch (kind) {
    case req::acquire:
        if (reentrant) {
            script = &script_reentrant_acquire;
            args[0] = owner;
        } else if (options_.mode == lock_mode::fenced) {
            script = fenced_redlock() ? &script_fenced_read : &script_fenced_acquire;
            key_count = 2;
        } else {
            script = &script_acquire;
        }
        break;
    case req::fence_raise:
        script = &script_fence_raise;
        key_count = 2;
        args[1] = fence.view();
        break;
    case req::renew:
        if (reentrant) {
            script = &script_reentrant_renew;
            args[0] = owner;
        } else {
            script = options_.renew_resurrects ? &script_acquire : &script_renew;
        }
        break;
    case req::release:
    case req::cleanup:
        if (reentrant) {
            script = &script_reentrant_release;
            args[0] = owner;
        } else {
            script = &script_release;
            arg_count = 1;
        }
        break;
    case req::none:
        return out;
    }
    const resp_encoded enc =
        detail::encode_script_call(*script, eval, keys, key_count, args, arg_count, buf, capacity);
    if (enc.error != resp_encode_errc::ok) {
        out.error = lock_errc::buffer_too_small;
        out.size = enc.size;
        return out;
    }
    out.size = enc.size;
    out.tag = tag_for(kind);
    if (cleanup) {
        s.flags = static_cast<std::uint8_t>((s.flags & ~slot_cleanup) | slot_cleanup_out);
    } else {
        s.send = req::none;
        s.flags = static_cast<std::uint8_t>(s.flags | slot_in_flight);
    }
    return out;
}

}  // namespace edgelock
