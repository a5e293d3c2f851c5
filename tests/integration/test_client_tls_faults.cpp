// The client over TLS through the fault proxy (tests/tools/fault_proxy.cpp)
// in front of a real TLS redis-server: a link that splits every byte
// carries the handshake and lock cycles, one that trickles lock cycles; one
// too slow for the handshake ends at connect_timeout, named; a reset under a lock request and
// a partition end the round within its deadline with the node failed, the
// lock never held by two and nothing left behind once healed.
// The proxy is a host tool: a cross build (no EDGELOCK_FAULT_PROXY_PATH)
// skips these.
#include <catch2/catch.hpp>

#include <string>

#include "edgelock/client.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "integration/tls_helpers.hpp"
#include "tools/clock.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"
#include "tools/proc.hpp"
#include "tools/skip.hpp"

namespace {

using namespace edgelock;
using namespace edgelock_test;

// Starts the proxy in front of target; its port (0 when this build has none).
std::uint16_t start_proxy(fault_proxy& proxy, std::uint16_t target) {
#ifdef EDGELOCK_FAULT_PROXY_PATH
    REQUIRE(proxy.start(EDGELOCK_FAULT_PROXY_PATH, target, 11, 60));
#else
    (void)target;
#endif
    return proxy.port();
}

// A TLS redis-server, a proxy in front of it, and a one-node client of the
// proxy that trusts the test CA (quick reconnects, a short stall_timeout).
struct proxied {
    tls_certs certs;
    redis_server srv{certs.server_files(), {}};
    redis_client peek{srv.unix_path()};
    fault_proxy proxy;
    const url_list urls{{tls_url(start_proxy(proxy, srv.port()))}};
    tls_mbedtls<1> tls;
    client<1> c;

    explicit proxied(unsigned connect_timeout_ms = 3000) {
        trust_ca(tls, certs);
        client_options o;
        o.via = &tls;
        o.connect_timeout = duration::millis(connect_timeout_ms);
        o.reconnect_min = duration::millis(10);
        o.reconnect_max = duration::millis(50);
        o.stall_timeout = duration::millis(800);
        REQUIRE(c.configure(urls.data(), 1, o) == client_errc::ok);
    }
    bool connect() { return c.connect(port::now() + duration::seconds(10)) == 1; }
};

bool have_proxy() {
#ifdef EDGELOCK_FAULT_PROXY_PATH
    return true;
#else
    skip("the fault proxy is a host tool, not in this build");
    return false;
#endif
}

// A second client straight to the server's TLS port: the other contender.
struct direct {
    tls_mbedtls<1> tls;
    url_list urls;
    client<1> c;
    client_lock l;

    direct(const tls_certs& certs, std::uint16_t port, const char* name) : urls({tls_url(port)}) {
        trust_ca(tls, certs);
        client_options o;
        o.via = &tls;
        configure(c, urls, o);
        // A ttl that outlasts the test: it holds until it releases.
        REQUIRE(l.attach(c, name, options(10000, 500), no_watchdog()) == client_errc::ok);
    }
};

// Drives c until cond() holds or timeout_ms passed; the answer of a last look.
template <class F>
bool drive_until(client_base& c, F cond, unsigned timeout_ms) {
    const instant until = port::now() + duration::millis(timeout_ms);
    while (!cond() && port::now() < until) {
        c.run_for(duration::millis(20));
    }
    return cond();
}

}  // namespace

TEST_CASE("tls faults: every byte its own segment, or a trickle: the handshake and a lock cycle",
          "[client][tls]") {
    if (!have_proxy()) {
        return;
    }
    proxied t;
    // The handshake one byte per segment (at one byte per ms, a trickle,
    // its 3 kB or so would take seconds: the lock cycle goes that way).
    REQUIRE(t.proxy.command("split"));
    const instant start = port::now();
    const bool ready = t.connect();
    INFO(what(t.c.node(0)) << " after " << ms_since(start) << " ms");
    REQUIRE(ready);
    SECTION("split") {
        lock_cycle(t.c, t.peek, "tls-faults-slow");
    }
    SECTION("trickle") {
        // A byte a millisecond: a request and its reply take hundreds of
        // ms, and a release by EVALSHA that meets NOSCRIPT about a second,
        // so the rounds get what the ttl allows, not a fixed second.
        REQUIRE(t.proxy.command("trickle 1"));
        lock_cycle(t.c, t.peek, "tls-faults-slow", edgelock::lock_mode::plain, 0);
    }
    // Healed, on the same session.
    REQUIRE(t.proxy.command("pass"));
    lock_cycle(t.c, t.peek, "tls-faults-slow");
    CHECK(t.c.node(0).state == node_state::ready);
}

TEST_CASE("tls faults: a trickle too slow for the handshake ends at connect_timeout, named",
          "[client][tls]") {
    if (!have_proxy()) {
        return;
    }
    proxied t(500);
    REQUIRE(t.proxy.command("trickle 20"));
    const instant start = port::now();
    CHECK_FALSE(t.connect());
    const double ms = ms_since(start);
    const node_info n = t.c.node(0);
    INFO(what(n) << " after " << ms << " ms");
    CHECK(n.error == node_error::connect_timeout);
    CHECK(str(n.message).find("TLS handshake") == 0);
    CHECK(ms < 500 + 1000);
}

TEST_CASE("tls faults: a reset under a lock request: the round fails at once, the key expires",
          "[client][tls]") {
    if (!have_proxy()) {
        return;
    }
    const char* name = "tls-faults-reset";
    proxied t;
    recorder rec;
    client_lock l;
    rec.listen(l);
    REQUIRE(l.attach(t.c, name, options(1500, 1000), no_watchdog()) == client_errc::ok);
    REQUIRE(t.connect());

    // The request reaches the server; its reply waits in the proxy.
    REQUIRE(t.proxy.command("delay down 2000"));
    REQUIRE(l.start_acquire(1, duration{}) == client_errc::ok);
    REQUIRE(drive_until(
        t.c,
        [&] {
            return t.peek.command({"EXISTS", key_of(name)}).integer == 1;
        },
        2000));
    CHECK(t.peek.command({"GET", key_of(name)}).text == hex(l.token()));
    REQUIRE(t.proxy.command("reset"));
    const instant cut = port::now();
    REQUIRE(drive_until(
        t.c, [&] { return rec.count(lock_event_kind::failed) == 1; }, 3000));
    const double ms = ms_since(cut);
    INFO("events: " << rec.list() << "; node: " << what(t.c.node(0)) << " after " << ms << " ms");
    // The reset ended it (the node_timeout would leave the node ready, and
    // stall_timeout, sooner, would say stalled), within the round's deadline.
    CHECK(t.c.node(0).error == node_error::reset);
    CHECK(ms < 1000 + 1000);
    CHECK_FALSE(l.held());
    CHECK(rec.count(lock_event_kind::acquired) == 0);

    // The key the server set for a round that failed: nobody else gets the
    // lock while it lasts, and it does not outlast its ttl (or the client
    // deletes it once it reconnects).
    REQUIRE(t.proxy.command("pass"));
    direct other(t.certs, t.srv.port(), name);
    const op_result early = other.l.try_acquire();
    INFO(what(early));
    // Still there after the attempt: it was there during it.
    if (t.peek.command({"EXISTS", key_of(name)}).integer == 1) {
        CHECK(early.event.kind == lock_event_kind::busy);
    }
    if (other.l.held()) {  // the client's clean-up came first
        must_release(other.l);
    }
    CHECK(drive_until(
        t.c,
        [&] {
            return t.peek.command({"EXISTS", key_of(name)}).integer == 0;
        },
        1500 + 1000));
    must_acquire(other.l);
    must_release(other.l);
    // And the client through the healed proxy takes it again.
    must_acquire(l);
    must_release(l);
    CHECK(t.peek.command({"EXISTS", key_of(name)}).integer == 0);
}

TEST_CASE(
    "tls faults: a partition under a lock request: node_timeout, a stalled node, the lock "
    "never held by two",
    "[client][tls]") {
    if (!have_proxy()) {
        return;
    }
    const char* name = "tls-faults-partition";
    proxied t;
    client_lock l;
    REQUIRE(l.attach(t.c, name, options(1500, 300), no_watchdog()) == client_errc::ok);
    REQUIRE(t.connect());

    REQUIRE(t.proxy.command("blackhole"));
    const instant start = port::now();
    const op_result r = l.try_acquire();
    const double ms = ms_since(start);
    INFO(what(r) << " after " << ms << " ms");
    CHECK(r.event.kind == lock_event_kind::failed);
    CHECK_FALSE(l.held());
    CHECK(ms < 300 + 1000);
    // The connection is dropped at stall_timeout (800 ms).
    CHECK(drive_until(
        t.c, [&] { return t.c.node(0).error == node_error::stalled; }, 800 + 1500));
    CHECK(t.c.node(0).state != node_state::ready);
    CHECK(t.peek.command({"EXISTS", key_of(name)}).integer == 0);

    // Another client takes the lock straight from the server meanwhile.
    direct other(t.certs, t.srv.port(), name);
    must_acquire(other.l);
    const std::string token = hex(other.l.token());
    // Healed: whatever the proxy held reaches the server late; it must not
    // take the lock from its holder, and the client must not think it holds it.
    REQUIRE(t.proxy.command("pass"));
    CHECK(drive_until(
        t.c, [&] { return t.c.node(0).state == node_state::ready; }, 4000));
    CHECK_FALSE(l.held());
    CHECK(t.peek.command({"GET", key_of(name)}).text == token);
    const op_result busy = l.try_acquire();
    INFO(what(busy));
    CHECK(busy.event.kind == lock_event_kind::busy);
    CHECK_FALSE(l.held());
    CHECK(t.peek.command({"GET", key_of(name)}).text == token);
    must_release(other.l);
    must_acquire(l);
    must_release(l);
    CHECK(t.peek.command({"EXISTS", key_of(name)}).integer == 0);
}
