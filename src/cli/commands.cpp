// The one-shot commands: acquire, renew and release (run is in run.cpp;
// status and list in inspect.cpp).
#include <cstdio>
#include <string>

#include "agent.hpp"
#include "messages.hpp"

namespace edgelock_cli {

using namespace edgelock;

namespace {

bool parse_token(owner_token& t) {
    if (!t.from_hex(opt.token.data(), opt.token.size())) {
        say(0, "TOKEN must be %zu hex digits", owner_token::hex_size);
        return false;
    }
    return true;
}

}  // namespace

int acquire_command(client_lock& l) {
    const op_result r = opt.wait.us == 0 ? l.try_acquire() : l.acquire(opt.wait);
    if (r.error != client_errc::ok) {
        return r.lock_error == lock_errc::random_failed ? exit_software : unavailable(l);
    }
    if (r.event.kind != lock_event_kind::acquired) {
        return not_acquired(l, r.event);
    }
    warn_nodes(true);
    char hex[owner_token::hex_size];
    l.token().to_hex(hex);
    std::printf("%.*s\n", static_cast<int>(sizeof hex), hex);
    if (opt.fencing) {
        std::printf("%llu\n", static_cast<unsigned long long>(l.fence()));
    }
    return std::fflush(stdout) == 0 ? exit_ok : exit_software;
}

int renew_command(client_lock& l) {
    owner_token t;
    if (!parse_token(t)) {
        return exit_usage;
    }
    if (l.resume(t) != client_errc::ok) {
        return exit_software;
    }
    watch.last = lock_event{};
    if (l.start_renew() != client_errc::ok) {
        return exit_software;
    }
    // A renew round that missed its quorum is tried again until the
    // validity ends; this one-shot command reports it at once instead.
    const instant bound = op_bound(duration{});
    bool signalled = false;
    while (!l.outcome().done && watch.last.kind != lock_event_kind::renew_failed &&
           port::now() < bound) {
        if (!turn(bound, false, signalled)) {
            return exit_software;
        }
    }
    const lock_event& ev = l.outcome().done ? ended_with(l) : watch.last;
    if (ev.kind == lock_event_kind::renewed) {
        return exit_ok;
    }
    if (ev.kind == lock_event_kind::lost && ev.reason == lock_failure::not_ours) {
        say(1, "'%s' is not held by that token", opt.key.c_str());
        return exit_conflict;
    }
    return unavailable(l);
}

int release_command(client_lock& l) {
    owner_token t;
    if (!parse_token(t)) {
        return exit_usage;
    }
    if (l.resume(t) != client_errc::ok) {
        return exit_software;
    }
    const op_result r = l.release();
    if (r.error != client_errc::ok) {
        return unavailable(l);
    }
    if (r.event.nodes >= l.machine().quorum()) {
        return exit_ok;
    }
    if (driver.ready_count() < l.machine().quorum()) {
        return unavailable(l);
    }
    say(1, "'%s' was not held by that token", opt.key.c_str());
    return exit_conflict;
}

}  // namespace edgelock_cli
