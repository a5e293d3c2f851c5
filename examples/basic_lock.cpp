// One lock on one Redis node, with the blocking API.
//
//   basic_lock URL [KEY]
//
// It tries KEY (default "basic-lock-demo") once; when another owner holds it,
// it says for how long, then waits up to 5 s for it. Once acquired it prints
// the token and the validity, does three 500 ms "work slices" (each checks
// that the lock is still held, then lets the client run so the watchdog can
// renew), and releases. Run two at once to see the second one wait.
// Exit status: 0 acquired and released, 1 not acquired, 2 lost, 64 usage.
#include <cstdio>
#include <cstring>

#include "edgelock/client.hpp"

namespace {

constexpr int exit_ok = 0;
constexpr int exit_not_acquired = 1;
constexpr int exit_lost = 2;
constexpr int exit_usage = 64;

// Events that happen between the blocking calls (the watchdog's renewals).
void on_event(void*, edgelock::client_lock& l, const edgelock::lock_event& ev) {
    switch (ev.kind) {
    case edgelock::lock_event_kind::renewed:
        std::printf(
            "  watchdog: renewed, valid for %llu ms\n",
            static_cast<unsigned long long>((ev.validity_deadline - edgelock::port::now()).ms()));
        break;
    case edgelock::lock_event_kind::renew_failed:
        std::printf("  watchdog: renew missed its quorum, retrying (lock at risk)\n");
        break;
    case edgelock::lock_event_kind::lost:
        std::printf("  watchdog: lock lost (%s)\n", edgelock::describe(ev.reason));
        break;
    default:
        break;
    }
    (void)l;
}

// Why the node failed, as far as the client knows.
void print_node(const char* url, const edgelock::node_info& n) {
    std::fprintf(stderr, "basic_lock: node %s: %s, %s", url, edgelock::describe(n.state),
                 edgelock::describe(n.error));
    if (!n.message.empty()) {
        std::fprintf(stderr, ": %.*s", static_cast<int>(n.message.size), n.message.data);
    } else if (n.code != 0 && n.error == edgelock::node_error::io_error) {
        std::fprintf(stderr, ": %s", std::strerror(n.code));
    }
    std::fprintf(stderr, "\n");
}

// A blocking call that did not even run (misuse, or a bug guard).
void print_call_error(const char* what, const edgelock::op_result& r) {
    std::fprintf(stderr, "basic_lock: %s: %s", what, edgelock::describe(r.error));
    if (r.error == edgelock::client_errc::lock_rejected) {
        std::fprintf(stderr, " (%s)", edgelock::describe(r.lock_error));
    }
    std::fprintf(stderr, "\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::fprintf(stderr, "usage: basic_lock URL [KEY]\n");
        return exit_usage;
    }
    const char* url = argv[1];
    const char* key = argc == 3 ? argv[2] : "basic-lock-demo";

    static edgelock::client<1> client;  // ~8 KB: not on the stack
    const edgelock::str_view urls[] = {url};
    const edgelock::client_errc ce = client.configure(urls, 1, edgelock::client_options{});
    if (ce == edgelock::client_errc::bad_url) {
        std::fprintf(stderr, "basic_lock: %s: %s\n", url,
                     edgelock::describe(client.bad_url_error()));
        return exit_usage;
    }
    if (ce != edgelock::client_errc::ok) {
        std::fprintf(stderr, "basic_lock: %s: %s\n", url, edgelock::describe(ce));
        return exit_usage;
    }

    edgelock::lock_options options;
    options.ttl = edgelock::duration::seconds(10);
    // No node_timeout: a round waits as long as the lock can use its
    // replies, so the same code works on a LAN and over a satellite link.
    edgelock::client_lock lock;
    const edgelock::client_errc ae = lock.attach(client, key, options);
    if (ae != edgelock::client_errc::ok) {
        std::fprintf(stderr, "basic_lock: %s: %s\n", key,
                     ae == edgelock::client_errc::lock_rejected
                         ? edgelock::describe(lock.lock_error())
                         : edgelock::describe(ae));
        return exit_usage;
    }
    lock.set_callback(on_event, nullptr);
    // Connect (and authenticate) up front rather than within the first
    // round (connect_timeout bounds each node: 5 s by default).
    client.connect(edgelock::port::now() + edgelock::duration::seconds(5));

    edgelock::op_result r = lock.try_acquire();
    if (r.error == edgelock::client_errc::ok && r.event.kind == edgelock::lock_event_kind::busy) {
        if (r.event.holder_ttl_ms >= 0) {
            std::printf("%s is held by another owner for %lld ms more; waiting up to 5 s\n", key,
                        static_cast<long long>(r.event.holder_ttl_ms));
        } else {
            std::printf("%s is held by another owner; waiting up to 5 s\n", key);
        }
        std::fflush(stdout);
        r = lock.acquire(edgelock::duration::seconds(5));
    }
    if (r.error != edgelock::client_errc::ok) {
        print_call_error("acquire", r);
        return exit_not_acquired;
    }
    if (r.event.kind != edgelock::lock_event_kind::acquired) {
        std::fprintf(stderr, "basic_lock: %s not acquired: %s", key,
                     edgelock::describe(r.event.kind));
        if (r.event.kind == edgelock::lock_event_kind::busy && r.event.holder_ttl_ms >= 0) {
            std::fprintf(stderr, " (held for %lld ms more)",
                         static_cast<long long>(r.event.holder_ttl_ms));
        } else if (r.event.reason != edgelock::lock_failure::none) {
            std::fprintf(stderr, " (%s)", edgelock::describe(r.event.reason));
        }
        std::fprintf(stderr, "\n");
        if (r.event.kind != edgelock::lock_event_kind::busy) {
            print_node(url, client.node(0));
        }
        return exit_not_acquired;
    }

    char hex[edgelock::owner_token::hex_size];
    lock.token().to_hex(hex);
    std::printf(
        "acquired %s: token %.*s, valid for %llu ms\n", key, static_cast<int>(sizeof hex), hex,
        static_cast<unsigned long long>((r.event.validity_deadline - edgelock::port::now()).ms()));
    std::fflush(stdout);

    for (int slice = 1; slice <= 3; ++slice) {
        // Act only while the lock is ours: held() is false once the validity
        // deadline has passed, whether or not anything was heard from Redis.
        if (!lock.held()) {
            std::fprintf(stderr, "basic_lock: lost %s before work slice %d (%s)\n", key, slice,
                         edgelock::describe(lock.last_event().reason));
            return exit_lost;
        }
        std::printf("work slice %d/3\n", slice);
        std::fflush(stdout);
        // The "work": 500 ms of letting the client run its watchdog. Real
        // work would do a bounded step here and call run_for(0) or any
        // blocking operation now and then.
        const edgelock::client_errc we = client.run_for(edgelock::duration::millis(500));
        if (we != edgelock::client_errc::ok) {
            std::fprintf(stderr, "basic_lock: run_for: %s\n", edgelock::describe(we));
        }
    }

    r = lock.release();
    if (r.error == edgelock::client_errc::not_held) {
        std::fprintf(stderr, "basic_lock: %s was lost before the release (%s)\n", key,
                     edgelock::describe(lock.last_event().reason));
        return exit_lost;
    }
    if (r.error != edgelock::client_errc::ok) {
        print_call_error("release", r);
        return exit_lost;
    }
    if (r.event.nodes == 0) {
        const edgelock::node_info n = client.node(0);
        if (n.state == edgelock::node_state::ready) {
            // The node answered: the key was gone or someone else's.
            std::fprintf(stderr, "basic_lock: %s was no longer ours at release\n", key);
            return exit_lost;
        }
        // No answer: the key stays until its ttl runs out. The work was done
        // while the lock was held, so that is not a failure.
        std::fprintf(stderr, "basic_lock: release not confirmed; %s expires within its ttl\n", key);
        print_node(url, n);
        return exit_ok;
    }
    std::printf("released %s\n", key);
    return exit_ok;
}
