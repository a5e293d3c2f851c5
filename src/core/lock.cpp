// The lock state machine (see lock.hpp for its use, redlock.hpp for the rule):
// its operations. The rounds they start are decided in lock_rounds.cpp; what
// comes in and goes out (replies, disconnects, timeouts; requests, deadlines)
// is in lock_io.cpp.
//
// A round is one request per node, all ready at once. Each node's answer is a
// vote; the round ends when the tally is decided or its deadline passes, and a
// reply arriving after that is late. Cleanup requests (releases after a failed
// round, or of a late success) travel outside rounds, ahead of anything else
// for the node, so on a FIFO connection they always land before the next
// round's acquire.
//
// Tokens: every acquire round has its own (round_token()), the acquisition's
// random base with the round's number folded in. A request can act only on a
// key holding its own round's token, and every later round, the hold's
// renewals and its release name another. So whatever a request does when it
// finally lands (a link held it for seconds; the connection it went on was
// dropped long ago), it cannot delete, extend or recreate a later round's key:
// a late acquire makes a key nobody owns, which its own cleanup or its ttl
// removes, and a late cleanup finds nothing of its own left to delete. The
// reentrant mode's owner cannot change per round, so its hash keeps a field
// per hold, named by the round's token, beside the owner's count: an
// increment comes with its hold's field, a decrement (release or cleanup)
// takes only its own hold's field and does nothing where that is gone, and a
// renew extends only a hold whose field is there. After `lost` the cleanups
// of every mode still go out: each names the lost round's token alone.
#include "edgelock/lock.hpp"

#include "edgelock/resp_encoder.hpp"

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
    char marks[4];
    if ((options.mode == lock_mode::fenced && !detail::counter_shares_slot(name)) ||
        !detail::mark_suffixes(name, marks)) {
        return lock_errc::name_unslotted;
    }
    if (options.owner.size > lock_max_owner) {
        return lock_errc::owner_too_long;
    }
    if (options.holder.size > lock_max_holder) {
        return lock_errc::holder_too_long;
    }
    if (options.drift_ppm > lock_max_drift_ppm) {
        return lock_errc::bad_drift;
    }
    const std::uint64_t ttl_ms = options.ttl.ms();
    if (ttl_ms == 0 || ttl_ms > lock_max_ttl_ms || options.ttl.us % 1000 != 0 ||
        redlock_drift(options.ttl, options.drift_ppm, options.drift_fixed) >= options.ttl) {
        return lock_errc::bad_ttl;
    }
    if (options.node_timeout >= options.ttl) {
        return lock_errc::bad_node_timeout;
    }
    if (options.max_tries == 0 || options.retry_min > options.retry_max) {
        return lock_errc::bad_retry;
    }
    if (options.renew_resurrects && options.mode != lock_mode::plain) {
        return lock_errc::bad_mode_option;
    }
    const duration allowance = lock_round_allowance(options);
    if (options.min_replicas > 0 &&
        (options.replica_timeout.ms() == 0 || options.replica_timeout >= allowance)) {
        return lock_errc::bad_replicas;
    }
    if (options.permits != 0) {
        if (!detail::counter_shares_slot(name)) {
            return lock_errc::name_unslotted;  // a permit's key would not share its slot
        }
        if (options.permits > lock_max_permits || options.mode == lock_mode::reentrant ||
            options.renew_resurrects ||
            detail::longest_permit_request(name, options) > lock_max_request) {
            return lock_errc::bad_permits;
        }
    }
    if (!random.valid()) {
        return lock_errc::no_random_source;
    }
    name_ = name;
    for (int i = 0; i < 4; ++i) {
        marks_[i] = marks[i];
    }
    options_ = options;
    const std::int64_t numbers[3] = {static_cast<std::int64_t>(options.ttl.ms()),
                                     static_cast<std::int64_t>(options.min_replicas),
                                     static_cast<std::int64_t>(options.replica_timeout.ms())};
    for (int i = 0; i < 3; ++i) {
        number_sizes_[i] =
            static_cast<std::uint8_t>(format_signed(numbers_ + number_at[i], numbers[i]));
    }
    random_ = random;
    node_count_ = node_count;
    quorum_ = options.quorum != 0 ? options.quorum : redlock_min_quorum(node_count);
    for (slot& s : slots_) {
        s = slot{};
    }
    for (std::uint8_t& known : scripts_) {
        known = 0;
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
    if (options_.mode == lock_mode::reentrant || options_.permits != 0) {
        // Reentrant holds belong to an owner, not a token; a permit's renew
        // needs to know which permit.
        return lock_errc::bad_mode_option;
    }
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        if ((slots_[i].flags & (slot_cleanup | slot_cleanup_out)) != 0) {
            return lock_errc::busy;  // an old cleanup would name the wrong token
        }
    }
    // A round of its own, so no late reply of the last acquisition counts as
    // this hold's; the base whose round it is `token`: the fold is its own
    // inverse.
    ++round_;
    base_ = token;
    token_round_ = round_;
    base_ = round_token(round_);
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        // Any node may hold it: a release goes to all of them.
        slots_[i].flags = static_cast<std::uint16_t>(slots_[i].flags | slot_holder);
    }
    t0_ = now;
    hold_until(now + (options_.ttl -
                      redlock_drift(options_.ttl, options_.drift_ppm, options_.drift_fixed)),
               now);
    fence_ = 0;
    holds_ = 1;
    acquisition_round_ = round_;
    held_round_ = round_;
    state_ = lock_state::held;
    return lock_errc::ok;
}

owner_token lock::fold(const owner_token& base, std::uint32_t round) noexcept {
    // The round's number as tags carry it (round_mask): a late reply's tag
    // names its round's token. Distinct rounds of the acquisition (fewer than
    // 2^29 apart) get distinct tokens; another owner's base is another 128
    // random bits. Round 0 is no acquire round: the base itself, which resume()
    // takes as given.
    const std::uint32_t r = round & round_mask;
    owner_token t = base;
    for (std::size_t i = 0; i < 4; ++i) {
        t.bytes[owner_token::size - 4 + i] ^= static_cast<std::uint8_t>(r >> (24 - 8 * i));
    }
    return t;
}

void lock::queue_cleanup(slot& s, std::uint32_t round) noexcept {
    if (cleanup_base_ != base_) {
        // Cleanups of an earlier acquisition still waiting for their nodes
        // would now name tokens of this one's base, which match nothing:
        // their keys, if any landed, are left to the ttl.
        cleanup_base_ = base_;
    }
    s.cleanup_round = round & round_mask;
    s.flags = static_cast<std::uint16_t>((s.flags | slot_cleanup) & ~slot_cleanup_resent);
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

void lock::queue_cleanup_all() noexcept {
    // A cleanup takes only the current round's own key (a reentrant one: its
    // own hold's field): harmless where that is not there, so every node gets
    // one (a request may have landed unanswered).
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slot& s = slots_[i];
        queue_cleanup(s, token_round_);
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
    base_ = fresh;
    lost_ = false;
    contended_ = false;
    polling_ = false;
    hint_try_ = false;
    collided_before_ = false;
    backoff_ = backoff::none;
    backoff_until_ = now;
    longest_busy_ttl_ms_ = -1;
    acquisition_round_ = round_ + 1;
    tries_left_ = options_.max_tries;
    pace_.reset();
    wait_deadline_ = now + options_.wait;
    holds_ = 0;
    fence_ = 0;
    hint_ = -1;
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slots_[i].flags = static_cast<std::uint16_t>(slots_[i].flags & ~slot_holder);
    }
    start_acquire_round(now);
    return lock_errc::ok;
}

void lock::start_acquire_round(instant now) noexcept {
    if (options_.permits != 0) {
        // The permit named free by the last round, else one at random (on
        // one node, where the scan starts).
        std::uint64_t pick = 0;
        if (hint_ >= 0) {
            permit_ = static_cast<std::uint8_t>(hint_);
        } else if (random_between(random_, 0, options_.permits - 1U, pick)) {
            permit_ = static_cast<std::uint8_t>(pick);
        } else {
            permit_ = static_cast<std::uint8_t>((permit_ + 1U) % options_.permits);
        }
        hint_ = -1;
        permits_found_ = -1;
    }
    state_ = lock_state::acquiring;
    t0_ = now;
    round_max_ = 0;
    busy_ttl_ms_ = -1;
    timers_.stop(timer::retry);
    woken_ = false;
    woken_after_busy_ = false;
    pace_.start(now);
    --tries_left_;
    token_round_ = round_ + 1;  // the round start_round opens: its own token
    start_round(req::acquire, now);
}

void lock::become_lost(lock_failure reason) noexcept {
    close_round();
    queue_cleanup_all();  // the lost round's token alone (see the top of this file)
    lost_ = true;
    state_ = lock_state::idle;
    timers_.stop(timer::retry);
    timers_.stop(timer::validity);
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
    timers_.stop(timer::retry);
    // The round's deadline may lie past the validity: the validity timer ends
    // the hold, and the round with it, first (a renew that wins after the
    // validity ended proves nothing about the gap).
    start_round(req::renew, now);
}

duration lock_round_allowance(const lock_options& options) noexcept {
    if (options.node_timeout.us != 0) {
        return options.node_timeout;
    }
    const duration drift = redlock_drift(options.ttl, options.drift_ppm, options.drift_fixed);
    return duration::micros(options.ttl.us > drift.us ? (options.ttl.us - drift.us) / 2 : 0);
}

duration lock::round_allowance() const noexcept {
    return lock_round_allowance(options_);
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
    timers_.stop(timer::retry);
    timers_.stop(timer::validity);  // given up: its end wakes no one
    state_ = lock_state::releasing;
    released_ = 0;
    absent_ = 0;
    // Every node: a release takes the hold's own key (a reentrant one, its
    // own hold's field), so it is harmless where that is not, and finds it
    // where an acquire landed unanswered.
    start_round(req::release, now);
    for (std::uint8_t i = 0; i < node_count_; ++i) {
        slots_[i].flags = static_cast<std::uint16_t>(slots_[i].flags & ~slot_holder);
    }
    decide(now);
    return lock_errc::ok;
}

}  // namespace edgelock
