// The lock machine's inputs (see lock.hpp): replies, disconnects and
// timeouts in, and the deadline of the next timeout. What they decide is in
// lock.cpp and lock_rounds.cpp; the requests that go out, in
// lock_transmit.cpp; what a server tells a waiter, in lock_notify.cpp.
#include "edgelock/lock.hpp"

#include "lock_slots.hpp"
#include "lock_wire.hpp"

namespace edgelock {

using namespace detail;

void lock::handle_late(slot& s, req kind, std::uint32_t round, bool success) noexcept {
    if (kind != req::acquire || !success) {
        return;
    }
    // Only the current acquisition's rounds can still be named: an earlier
    // one's key is left to its ttl.
    const std::uint32_t age = (round - acquisition_round_) & round_mask;
    const std::uint32_t span = (round_ - acquisition_round_) & round_mask;
    if (age > span) {
        return;
    }
    if (round == (token_round_ & round_mask) &&
        (holding() || state_ == lock_state::fencing || state_ == lock_state::acquiring)) {
        // The hold's own round (a node that answered after the quorum, or
        // after its time in a round still open): the key is the hold's,
        // renewed and released with it, or cleaned up if the round fails.
        s.flags = static_cast<std::uint16_t>(s.flags | slot_holder);
        return;
    }
    // Any other round's key is nobody's: its compare-and-delete (a reentrant
    // one: its own hold's field) can touch nothing else, in any state.
    queue_cleanup(s, round);
}

lock_errc lock::set_node_caps(std::uint8_t node, lock_node_caps caps) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    slot& s = slots_[node];
    s.flags = static_cast<std::uint16_t>(
        (s.flags & ~(slot_set_get | slot_told)) | (caps.set_nx_get ? slot_set_get : 0) |
        (caps.told ? slot_told : 0) | (caps.migrating ? slot_unmarked : 0));
    scripts_[node] = static_cast<std::uint8_t>((scripts_[node] & ~scripts_text) |
                                               (caps.scripts_unknown ? scripts_text : 0));
    return lock_errc::ok;
}

lock_errc lock::send_as_eval(std::uint8_t node) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    slots_[node].flags = static_cast<std::uint16_t>(slots_[node].flags | slot_eval);
    return lock_errc::ok;
}

lock::vote lock::silent_vote(const slot& s) noexcept {
    return (s.flags & slot_found_taken) != 0 ? vote::refused : vote::no;
}

bool lock::taken_by_another(const detail::lock_reply& r) const noexcept {
    if (r.shape == detail::reply_shape::wrongtype) {
        return true;  // another layout's lock (a reentrant hash)
    }
    if (r.shape != detail::reply_shape::text) {
        return false;
    }
    char hex[owner_token::hex_size];
    token().to_hex(hex);
    return r.text != str_view(hex, sizeof hex);
}

bool lock::answer_set_acquire(slot& s, const detail::lock_reply& r) noexcept {
    // The SET did not set the key, or the server is not the one we took it
    // for: this node gets the acquire script instead, in the same round.
    std::uint16_t add = slot_as_script;
    switch (r.shape) {
    case detail::reply_shape::nil:
        return false;  // set: acquired
    case detail::reply_shape::status:
        // +OK: the key was set, but GET was ignored, so a nil from this
        // server could not be told from "not set". Scripts from now on.
        s.flags = static_cast<std::uint16_t>(s.flags | slot_set_get_off);
        return false;
    case detail::reply_shape::text: {
        char hex[owner_token::hex_size];
        token().to_hex(hex);
        if (r.text != str_view(hex, sizeof hex)) {
            add = static_cast<std::uint16_t>(add | slot_found_taken);
            contended_ = true;
        }
        // Our own token: a request of ours landed before; the script
        // re-arms its ttl, which the SET left as it was.
        break;
    }
    case detail::reply_shape::wrongtype:
        add = static_cast<std::uint16_t>(add | slot_found_taken);
        contended_ = true;
        break;
    case detail::reply_shape::syntax:
        add = static_cast<std::uint16_t>(add | slot_set_get_off);  // Redis < 7
        break;
    default:
        return false;  // an error or garbage: counted as "no"
    }
    s.flags = static_cast<std::uint16_t>((s.flags | add) & ~slot_in_flight);
    s.send = req::acquire;
    return true;
}

void lock::answer_permit(const detail::lock_reply& r, vote& v) noexcept {
    if (r.shape != detail::reply_shape::pair || !r.three) {
        return;
    }
    if (v == vote::yes) {
        // The permit taken: any on one node, under Redlock the one asked for.
        if (r.third < 0 || r.third >= options_.permits || (node_count_ > 1 && r.third != permit_)) {
            v = vote::no;  // what it took, if anything, the cleanups find
            return;
        }
        permit_ = static_cast<std::uint8_t>(r.third);
    } else if (v == vote::refused) {
        if (r.third >= 0 && r.third < options_.permits && hint_ < 0) {
            hint_ = static_cast<std::int8_t>(r.third);
        }
    } else if (r.first == -1) {
        // Another limit: its value (0 when it does not read as one).
        permits_found_ = static_cast<std::int16_t>(r.second < 0       ? 0
                                                   : r.second > 32767 ? 32767
                                                                      : r.second);
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
    const bool via_set = kind_bits == tag_set_acquire;
    if (kind_bits == tag_wait && options_.min_replicas == 0) {
        // The PTTL ahead of a told waiter's SET (lock_transmit.cpp): the
        // holder's ttl, should the SET find the key taken.
        if (r.shape == detail::reply_shape::integer && r.first >= 0 && round_open() &&
            round == (round_ & round_mask) && (s.flags & slot_told_set) != 0) {
            busy_ttl_ms_ = busy_ttl_ms_ < 0 || r.first < busy_ttl_ms_ ? r.first : busy_ttl_ms_;
        }
        return lock_errc::ok;
    }
    if (kind_bits == tag_wait) {
        answer_wait(s, round, r, now);
        return lock_errc::ok;
    }
    if ((kind_bits > static_cast<std::uint32_t>(req::cleanup) && !via_set) || kind_bits == 0) {
        return lock_errc::ok;  // not a tag of ours: nothing to match it to
    }
    const req kind = via_set ? req::acquire : static_cast<req>(kind_bits);
    if (r.shape == detail::reply_shape::noscript) {
        // The cache was emptied (SCRIPT FLUSH): none is there.
        scripts_[node] = static_cast<std::uint8_t>(scripts_[node] & scripts_text);
    } else if (!via_set) {
        // The script ran (or failed as a script): the server's cache has it
        // (a cleanup's is the release's).
        const req ran = kind == req::cleanup ? req::release : kind;
        scripts_[node] =
            static_cast<std::uint8_t>(scripts_[node] | (1U << static_cast<unsigned>(ran)));
    }

    if (kind == req::cleanup) {
        // Cleanups go out as EVAL, so there is no NOSCRIPT to retry (one that
        // lost its connection is resent, on_disconnected).
        s.flags = static_cast<std::uint16_t>(s.flags & ~slot_cleanup_out);
        return lock_errc::ok;
    }

    // What the reply says, independent of whether it is on time.
    vote v = vote::no;
    std::int64_t value = 0;
    // A semaphore's acquire answers three integers, a lock's two.
    const bool shaped = r.shape == detail::reply_shape::pair && r.three == (options_.permits != 0);
    switch (kind) {
    case req::acquire:
        if (shaped && r.first == 1 && r.second >= 0 && r.second <= max_fence) {
            v = vote::yes;
            value = r.second;
            if (options_.mode == lock_mode::fenced && !fenced_redlock() && value < 1) {
                v = vote::no;  // a fenced single node must hand out a counter
            }
        } else if (shaped && r.first == 0) {
            v = vote::refused;
            value = r.second;
        } else if (via_set &&
                   (r.shape == detail::reply_shape::nil ||
                    (r.shape == detail::reply_shape::status && r.text == str_view("OK")))) {
            v = vote::yes;  // the SET set the key
        }
        break;
    case req::fence_raise:
        if (r.shape == detail::reply_shape::integer) {
            if (r.first >= 0 && static_cast<std::uint64_t>(r.first) == fence_) {
                v = vote::yes;
            } else if (r.first == -2 ||
                       (r.first >= 0 && static_cast<std::uint64_t>(r.first) > fence_)) {
                v = vote::refused;  // the counter is at or past the token: another's
            }
        }
        break;
    case req::renew:
        if (r.shape == detail::reply_shape::integer) {
            v = r.first == 1 ? vote::yes : (r.first == 0 ? vote::refused : vote::no);
        } else if (r.shape == detail::reply_shape::pair && !r.three) {
            // renew_resurrects sends the acquire script.
            v = r.first == 1 ? vote::yes : (r.first == 0 ? vote::refused : vote::no);
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
    if (kind == req::acquire && options_.permits != 0) {
        answer_permit(r, v);
    }
    if (via_set && (s.flags & slot_told_set) != 0 && taken_by_another(r)) {
        // A told waiter's SET: the PTTL ahead of it read the key, which is
        // now tracked, and said the holder's ttl. Busy, no script needed.
        v = vote::refused;
        value = -1;
        contended_ = true;
    } else if (via_set && answer_set_acquire(s, r)) {
        return lock_errc::ok;
    }
    // A semaphore's only mark is the release's: its acquire and renew keys
    // are all needed.
    const bool marked = options_.permits != 0
                            ? kind == req::release
                            : kind == req::renew || kind == req::release ||
                                  (kind == req::acquire && !options_.holder.empty());
    if (marked && r.shape == detail::reply_shape::tryagain && (s.flags & slot_unmarked) == 0) {
        // A Cluster slot migrating with the key and its marks (an acquire's:
        // the holder record's) on different sides: once more without them,
        // same round.
        s.flags = static_cast<std::uint16_t>((s.flags | slot_unmarked) & ~slot_in_flight);
        s.send = kind;
        return lock_errc::ok;
    }
    if (r.shape == detail::reply_shape::noscript && (s.flags & slot_retried) == 0) {
        // The node lost its script cache: once more with the text, same round.
        s.flags =
            static_cast<std::uint16_t>((s.flags | slot_retried | slot_eval) & ~slot_in_flight);
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
        s.flags = static_cast<std::uint16_t>(s.flags | slot_holder);
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
        } else if (v == vote::refused) {
            // It said so: the key is another's, and no cleanup is owed here.
            // A waiter now (the scripts of the fenced and reentrant modes
            // too): its next try asks to be told (client notify.cpp).
            s.flags = static_cast<std::uint16_t>(s.flags | slot_said_busy);
            contended_ = true;
            if (value >= 0) {
                busy_ttl_ms_ = busy_ttl_ms_ < 0 || value < busy_ttl_ms_ ? value : busy_ttl_ms_;
            }
        }
    }
    if (v == vote::yes && options_.min_replicas > 0 &&
        (kind == req::acquire || kind == req::renew)) {
        // The node has the key; it counts once WAIT, which follows, says
        // enough replicas have it too.
        s.flags = static_cast<std::uint16_t>(s.flags | slot_wait_due);
        return lock_errc::ok;
    }
    count_vote(s, v);
    decide(now);
    return lock_errc::ok;
}

void lock::answer_wait(slot& s, std::uint32_t round, const detail::lock_reply& r,
                       instant now) noexcept {
    // A WAIT behind a request that said anything but "yes" (busy, NOSCRIPT
    // before its resend, an error), or of a round decided since, says
    // nothing that counts.
    const bool current = round_open() && round == (round_ & round_mask) &&
                         (s.flags & slot_wait_due) != 0 && s.answer == vote::waiting;
    if (!current) {
        return;
    }
    s.flags = static_cast<std::uint16_t>(s.flags & ~slot_wait_due);
    if (r.shape == detail::reply_shape::integer && r.first >= options_.min_replicas) {
        count_vote(s, vote::yes);
    } else {
        // Too few replicas in time, or no WAIT here (an error): "no". The key
        // is ours there (slot_holder), so a failed round takes it back.
        ++unreplicated_;
        count_vote(s, vote::no);
    }
    decide(now);
}

lock_errc lock::on_disconnected(std::uint8_t node, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    slot& s = slots_[node];
    // The next connection may reach an empty cache.
    scripts_[node] = static_cast<std::uint8_t>(scripts_[node] & scripts_text);
    if ((s.cleanup_round & cleanup_here_only) != 0) {
        // A cleanup of the live hold's key on a node found unfit (undo): not
        // on whatever this node's next connection reaches.
        s.flags = static_cast<std::uint16_t>(s.flags & ~(slot_cleanup | slot_cleanup_out));
        s.cleanup_round &= ~cleanup_here_only;
    }
    if ((s.flags & slot_cleanup_out) != 0) {
        // It may or may not land (a dropped connection's bytes can still
        // arrive): sent again, first on the new connection. It names its own
        // round's key alone, so landing twice, or after anything sent since,
        // is harmless. Once only: a node that keeps refusing must not keep us
        // busy; its key expires with the ttl anyway.
        s.flags = static_cast<std::uint16_t>(s.flags & ~slot_cleanup_out);
        if ((s.flags & slot_cleanup_resent) == 0) {
            s.flags = static_cast<std::uint16_t>(s.flags | slot_cleanup | slot_cleanup_resent);
        }
    }
    if (round_open() && (s.flags & slot_in_flight) != 0 && s.answer == vote::waiting) {
        count_vote(s, silent_vote(s));
        decide(now);
    }
    return lock_errc::ok;
}

lock_errc lock::on_unreachable(std::uint8_t node, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    slot& s = slots_[node];
    if (round_open() && s.send != req::none && (s.flags & slot_in_flight) == 0 &&
        s.answer == vote::waiting) {
        count_vote(s, silent_vote(s));
        decide(now);
    }
    return lock_errc::ok;
}

lock_errc lock::undo(std::uint8_t node, std::uint32_t tag, const resp_node* nodes,
                     std::size_t count, instant now) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    const detail::lock_reply r = detail::read_lock_reply(nodes, count);
    const std::uint32_t kind_bits = tag & ((1U << tag_kind_bits) - 1);
    const bool via_set = kind_bits == tag_set_acquire;
    const bool pair_yes = r.shape == detail::reply_shape::pair && r.first == 1;
    bool took = false;
    if (via_set) {
        char hex[owner_token::hex_size];
        round_token(tag >> tag_kind_bits).to_hex(hex);
        took = r.shape == detail::reply_shape::nil || r.shape == detail::reply_shape::status ||
               (r.shape == detail::reply_shape::text && r.text == str_view(hex, sizeof hex));
    } else if (kind_bits == static_cast<std::uint32_t>(req::acquire)) {
        took = pair_yes;
    } else if (kind_bits == static_cast<std::uint32_t>(req::renew)) {
        // A renew takes nothing new, unless it re-created the key
        // (renew_resurrects) or extended a key of ours that should not be there.
        took = options_.mode != lock_mode::reentrant &&
               (pair_yes || (r.shape == detail::reply_shape::integer && r.first == 1));
    }
    // First as a broken connection (a reentrant decrement pending here is
    // dropped there), then the cleanup of what this request took.
    const lock_errc e = on_disconnected(node, now);
    const bool renew = kind_bits == static_cast<std::uint32_t>(req::renew);
    if (took && (!renew || holding())) {
        // An acquire took its own round's key, sent again wherever the node
        // goes next. A renew extended the live hold's: on this connection
        // only, since the node's next one may reach the right server, where
        // the key is the hold's.
        slot& s = slots_[node];
        queue_cleanup(s, renew ? token_round_ : tag >> tag_kind_bits);
        if (renew) {
            s.cleanup_round |= cleanup_here_only;
        }
    }
    return e;
}

lock_errc lock::redirected(std::uint8_t node, std::uint32_t tag) noexcept {
    if (state_ == lock_state::unconfigured) {
        return lock_errc::not_configured;
    }
    if (node >= node_count_) {
        return lock_errc::bad_node;
    }
    slot& s = slots_[node];
    const std::uint32_t kind_bits = tag & ((1U << tag_kind_bits) - 1);
    const std::uint32_t round = tag >> tag_kind_bits;
    if (kind_bits == static_cast<std::uint32_t>(req::cleanup)) {
        if ((s.flags & slot_cleanup_out) != 0) {
            // Again, where the node said (it names its own round's key alone,
            // so a request sent behind it changes nothing), unless it is for
            // the connection it went on only. A cleanup queued since goes
            // instead.
            s.flags = static_cast<std::uint16_t>(s.flags & ~slot_cleanup_out);
            if ((s.cleanup_round & cleanup_here_only) == 0) {
                s.flags = static_cast<std::uint16_t>(s.flags | slot_cleanup);
            }
        }
        return lock_errc::ok;
    }
    const bool via_set = kind_bits == tag_set_acquire;
    if (kind_bits == 0 || kind_bits == tag_wait ||
        (kind_bits > static_cast<std::uint32_t>(req::cleanup) && !via_set)) {
        return lock_errc::ok;
    }
    const req kind = via_set ? req::acquire : static_cast<req>(kind_bits);
    const bool current = round_open() && kind == round_kind_ && round == (round_ & round_mask) &&
                         (s.flags & slot_in_flight) != 0 && s.answer == vote::waiting;
    if (current) {
        s.flags = static_cast<std::uint16_t>(s.flags & ~(slot_in_flight | slot_wait_due));
        s.send = kind;
    }
    return lock_errc::ok;
}

void lock::on_timeout(instant now) noexcept {
    // Each timer is armed only in the states that wait for it (see lock.hpp),
    // so none needs the state checked again. The hold ending comes first: it
    // ends a renew round with it.
    if (timers_.expired(timer::validity, now)) {
        become_lost(lock_failure::validity_ended);
        return;
    }
    if (timers_.expired(timer::round, now)) {
        for (std::uint8_t i = 0; i < node_count_ && round_open(); ++i) {
            if (slots_[i].answer == vote::waiting) {
                count_vote(slots_[i], silent_vote(slots_[i]));
                decide(now);
            }
        }
        return;
    }
    if (timers_.expired(timer::retry, now)) {
        // The next round of the operation that waits: an acquisition or a renew.
        if (state_ == lock_state::retry_wait) {
            start_acquire_round(now);
        } else {
            start_renew_round(now);
        }
    }
}

instant lock::next_deadline() const noexcept {
    return timers_.next();
}

}  // namespace edgelock
