// The lock machine's requests (see lock.hpp): which one a node has waiting,
// and its bytes: the script or the one-command SET, with PTTL ahead of a told
// waiter's SET and WAIT behind it with min_replicas.
#include "edgelock/lock.hpp"

#include "edgelock/lock_scripts.hpp"
#include "lock_slots.hpp"
#include "lock_wire.hpp"

namespace edgelock {

using namespace detail;

lock::outgoing lock::next_send(std::uint8_t node) const noexcept {
    if (state_ == lock_state::unconfigured || node >= node_count_) {
        return outgoing::none;
    }
    const slot& s = slots_[node];
    if ((s.flags & slot_cleanup) != 0) {
        return outgoing::cleanup;
    }
    return round_open() && s.send != req::none ? outgoing::request : outgoing::none;
}

detail::permit_call lock::permit_request(req kind, bool eval, std::uint16_t flags, str_view token,
                                         str_view ttl) const noexcept {
    permit_call call;
    call.kind = kind == req::acquire ? permit_req::acquire
                : kind == req::renew ? permit_req::renew
                                     : permit_req::release;
    call.name = name_;
    call.permits = options_.permits;
    call.permit = permit_;
    call.eval = eval;
    call.only = node_count_ > 1;
    call.fence = options_.mode != lock_mode::fenced ? '-' : fenced_redlock() ? 'r' : 'i';
    call.token = token;
    call.ttl = ttl;
    call.record = options_.holder;
    call.marks = (flags & slot_unmarked) != 0 ? nullptr : marks_;
    return call;
}

std::size_t lock::encode_delete(char* buf, std::size_t capacity) const noexcept {
    if (state_ == lock_state::unconfigured) {
        return 0;
    }
    char hex[owner_token::hex_size];
    token().to_hex(hex);
    const str_view token(hex, sizeof hex);
    if (options_.permits != 0) {
        const std::size_t size = encode_permit_call(
            permit_request(req::release, true, slot_unmarked, token, str_view()), buf, capacity);
        return size <= capacity ? size : 0;
    }
    const str_view keys[] = {name_};
    const resp_encoded e =
        encode_script_call(script_release, true, keys, 1, &token, 1, buf, capacity);
    return e.error == resp_encode_errc::ok ? e.size : 0;
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
    // EVALSHA first (a server's script cache serves every client after the
    // first), except where a NOSCRIPT cannot be afforded: a cleanup (a resend
    // could land behind a newer request), a request WAIT follows (WAIT
    // would block for replica_timeout behind the NOSCRIPT, and the resend's
    // own WAIT then come too late for the round), and a script the node has
    // not run since its connection began where the driver says its cache is
    // not known (lock_node_caps::scripts_unknown).
    const bool eval = cleanup || (s.flags & slot_eval) != 0 || options_.min_replicas > 0 ||
                      ((scripts_[node] & scripts_text) != 0 &&
                       (scripts_[node] & (1U << static_cast<unsigned>(kind))) == 0);
    // A cleanup names its own round, of the acquisition it was queued for.
    const owner_token tok = cleanup ? fold(cleanup_base_, s.cleanup_round & round_mask) : token();

    char fence_key[lock_key_capacity];  // or the renewal mark
    char release_mark[lock_key_capacity];
    char holder_key[lock_key_capacity];  // the renewal mark, holding the record
    char hex[owner_token::hex_size];
    tok.to_hex(hex);
    const str_view token_view(hex, sizeof hex);
    // A reentrant hold's field: '#' and its round's token (lock.cpp). The
    // owner's count is under the owner, or without one the acquisition's base.
    char hold[1 + owner_token::hex_size];
    hold[0] = '#';
    tok.to_hex(hold + 1);
    char base_hex[owner_token::hex_size];
    (cleanup ? cleanup_base_ : base_).to_hex(base_hex);
    const str_view owner =
        !options_.owner.empty() ? options_.owner : str_view(base_hex, sizeof base_hex);
    // The lock's key is its name (a semaphore's round 2: the permit's); the
    // fence counter's key is made only for the requests that name it.
    char permit[lock_key_capacity];
    const str_view lock_key =
        options_.permits != 0 ? str_view(permit, make_permit_key(permit, name_, permit_)) : name_;
    const str_view ttl(numbers_ + number_at[0], number_sizes_[0]);
    char fence_digits[20];

    // A holder record is written by the acquire scripts only.
    const bool records =
        kind == req::acquire && !options_.holder.empty() && (s.flags & slot_unmarked) == 0;
    const bool set_capable =
        kind == req::acquire && options_.mode == lock_mode::plain && options_.min_replicas == 0 &&
        options_.permits == 0 && !records &&
        (s.flags & (slot_set_get | slot_set_get_off | slot_as_script)) == slot_set_get;
    // A told waiter's next try (the key was found taken): PTTL, then the SET.
    // The PTTL says the holder's ttl, which the script was sent for (the
    // waiter polls after it, should no word come); two commands Redis runs
    // faster than one script, which matters when a release wakes every
    // waiter and the winner's reply waits for all of them. The PTTL goes
    // first: a release between the two is then either taken by the SET or
    // pushed.
    const bool told_set = set_capable && contended_ && (s.flags & slot_told) != 0;
    const bool via_set = set_capable && (!contended_ || told_set);
    const lock_script* script = &script_release;
    str_view keys[3] = {lock_key, str_view(), str_view()};
    str_view args[4] = {token_view, ttl, options_.holder, str_view()};
    std::size_t key_count = 1;
    std::size_t arg_count = 2;
    const bool reentrant = options_.mode == lock_mode::reentrant;
    switch (kind) {
    case req::acquire:
        // With a holder record, the renewal mark (which holds it) follows the
        // keys, and the record the arguments.
        if (reentrant) {
            script = &script_reentrant_acquire;
            args[0] = owner;
            args[2] = str_view(hold, sizeof hold);
            args[3] = options_.holder;
            arg_count = 3;
        } else if (options_.mode == lock_mode::fenced) {
            script = fenced_redlock() ? &script_fenced_read : &script_fenced_acquire;
            key_count = 2;
        } else {
            script = &script_acquire;
        }
        if (records) {
            keys[key_count++] = str_view(holder_key, make_renewal_mark(holder_key, name_, marks_));
            ++arg_count;
        }
        break;
    case req::fence_raise:
        script = &script_fence_raise;
        key_count = 2;
        args[1] = str_view(fence_digits, format_unsigned(fence_digits, fence_));
        break;
    case req::renew:
        // The renew scripts write the renewal mark too (see lock.hpp, "Keys"),
        // unless a migrating Cluster slot said TRYAGAIN to the pair.
        if (reentrant) {
            script = &script_reentrant_renew;
            args[0] = owner;
            args[2] = str_view(hold, sizeof hold);
            arg_count = 3;
        } else {
            script = options_.renew_resurrects ? &script_acquire : &script_renew;
        }
        key_count = (s.flags & slot_unmarked) != 0 ? 1 : 2;
        break;
    case req::release:
    case req::cleanup:
        // And the release scripts the release mark, which tells waiters.
        if (reentrant) {
            script = &script_reentrant_release;
            args[0] = owner;
            args[2] = str_view(hold, sizeof hold);
            arg_count = 3;
        } else {
            script = &script_release;
            arg_count = 1;
        }
        key_count = (s.flags & slot_unmarked) != 0 ? 1 : 3;
        break;
    case req::none:
        return out;
    }
    if (key_count >= 2 && keys[1].empty()) {
        const bool fence = kind == req::acquire || kind == req::fence_raise;
        keys[1] = fence ? str_view(fence_key, detail::make_lock_key(fence_key, name_, true))
                        : str_view(fence_key, detail::make_renewal_mark(fence_key, name_, marks_));
    }
    if (key_count == 3 && keys[2].empty()) {
        keys[2] = str_view(release_mark, detail::make_release_mark(release_mark, name_, marks_));
    }
    // The request goes behind room for the PTTL, so nothing is written
    // unless both fit.
    const str_view pttl[] = {"PTTL", lock_key};
    const std::size_t at = told_set ? resp_command_size(pttl, 2) : 0;
    // With min_replicas, WAIT follows an acquire or a renew: room for it is
    // kept behind the request, so nothing is written unless all of it fits.
    const bool waits = options_.min_replicas > 0 && (kind == req::acquire || kind == req::renew);
    const str_view wait[] = {"WAIT", str_view(numbers_ + number_at[1], number_sizes_[1]),
                             str_view(numbers_ + number_at[2], number_sizes_[2])};
    const std::size_t after = waits ? resp_command_size(wait, 3) : 0;
    const std::size_t room = capacity > at + after ? capacity - at - after : 0;
    resp_encoded enc;
    if (options_.permits != 0 && kind != req::fence_raise) {
        enc.size = encode_permit_call(permit_request(kind, eval, s.flags, token_view, ttl),
                                      buf + at, room);
        enc.error = enc.size > room ? resp_encode_errc::too_large : resp_encode_errc::ok;
    } else {
        enc = via_set ? detail::encode_set_acquire(lock_key, token_view, ttl, buf + at, room)
                      : detail::encode_script_call(*script, eval, keys, key_count, args, arg_count,
                                                   buf + at, room);
    }
    if (enc.error != resp_encode_errc::ok || capacity < at + after) {
        out.error = lock_errc::buffer_too_small;
        out.size = at + enc.size + after;
        return out;
    }
    resp_encoded pre;
    if (told_set) {
        pre = resp_encode_command(buf, at, pttl, 2);
        out.preceding_tag = ((round_ & round_mask) << tag_kind_bits) | tag_wait;
    }
    resp_encoded post;
    if (waits) {
        post = resp_encode_command(buf + at + enc.size, after, wait, 3);
        out.following = 1;
        out.following_tag = ((round_ & round_mask) << tag_kind_bits) | tag_wait;
    }
    out.preceding = static_cast<std::uint8_t>(pre.size == 0 ? 0 : 1);
    out.size = pre.size + enc.size + post.size;
    out.tag =
        via_set ? (tag_for(kind) & ~((1U << tag_kind_bits) - 1)) | tag_set_acquire : tag_for(kind);
    if (cleanup) {
        s.flags = static_cast<std::uint16_t>((s.flags & ~slot_cleanup) | slot_cleanup_out);
    } else {
        s.send = req::none;
        s.flags =
            static_cast<std::uint16_t>(s.flags | slot_in_flight | (told_set ? slot_told_set : 0));
    }
    return out;
}

}  // namespace edgelock
