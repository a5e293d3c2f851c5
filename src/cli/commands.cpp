// The one-shot commands: acquire, renew, release and status (run is in run.cpp).
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

namespace {

struct status_reply {
    bool answered = false;
    bool is_integer = false;  // PTTL must answer with one; anything else is not Redis
    long long integer = 0;
    std::string value;
    bool is_text = false;
};

void take_reply(void* ctx, const resp_node* n, std::size_t count) {
    status_reply& r = *static_cast<status_reply*>(ctx);
    if (count == 0) {
        return;
    }
    r.answered = true;
    if (n[0].type == resp_type::integer) {
        r.integer = n[0].integer;
        r.is_integer = true;
    } else if (n[0].has_text() && !n[0].is_error()) {
        r.value = text(n[0].text);
        r.is_text = true;
    }
}

}  // namespace

int status_command(client_lock& l) {
    // The layout is the library's (the name was checked at attach).
    const str_view name(opt.key.data(), opt.key.size());
    char key_buf[lock_key_capacity];
    char counter_buf[lock_key_capacity];
    const std::string key(key_buf, lock_key(name, lock_key_kind::lock, key_buf, sizeof key_buf));
    const std::string counter(
        counter_buf, lock_key(name, lock_key_kind::fence_counter, counter_buf, sizeof counter_buf));
    unsigned holding = 0;
    unsigned answered = 0;
    std::string lines;
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        status_reply ttl;
        status_reply value;
        status_reply fence;
        const str_view pttl[] = {"PTTL", str_view(key.data(), key.size())};
        const str_view get[] = {"GET", str_view(key.data(), key.size())};
        const str_view getf[] = {"GET", str_view(counter.data(), counter.size())};
        const instant bound = port::now() + duration::seconds(2);
        driver.command(i, pttl, 2, bound, take_reply, &ttl);
        if (ttl.is_integer) {
            driver.command(i, get, 2, bound, take_reply, &value);
            driver.command(i, getf, 2, bound, take_reply, &fence);
        }
        std::string line = "  " + node_shown(i) + ": ";
        if (!ttl.answered) {
            const node_info n = driver.node(i);
            line += std::string("unreachable (") + describe(n.error) + ")";
        } else if (!ttl.is_integer) {
            line += "unexpected reply to PTTL";
        } else {
            ++answered;
            if (ttl.integer == -2) {
                line += "free";
            } else {
                ++holding;
                line += "held";
                line += ttl.integer >= 0 ? ", ttl " + std::to_string(ttl.integer) + " ms"
                                         : std::string(", no expiry");
                if (value.is_text) {
                    line += ", token " + value.value;
                }
            }
            if (fence.is_text) {
                line += ", fencing counter " + fence.value;
            }
        }
        lines += line + "\n";
    }
    const unsigned quorum = l.machine().quorum();
    std::printf("%s: %s (%u of %u nodes hold it, quorum %u)\n%s", opt.key.c_str(),
                holding >= quorum ? "held" : "free", holding, driver.node_count(), quorum,
                lines.c_str());
    std::fflush(stdout);
    if (answered < quorum) {
        return unavailable(l);
    }
    return exit_ok;
}

}  // namespace edgelock_cli
