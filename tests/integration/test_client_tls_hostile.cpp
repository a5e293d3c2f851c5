// A TLS server that completes a real handshake and then misbehaves
// (tls_relay.hpp: the test's own mbedTLS server in front of a real
// redis-server): garbage, an oversized reply, a fatal alert, a plaintext
// record, a reply cut off, silence. Each ends the node with its own reason
// within the deadline, the lock never held; a clean close sends close_notify.
#include <catch2/catch.hpp>

#include <string>

#include "edgelock/client.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "integration/tls_helpers.hpp"
#include "integration/tls_relay.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"

namespace {

using namespace edgelock;
using namespace edgelock_test;
using fault = tls_relay::fault;

struct hostile_case {
    const char* what;
    fault f;
    node_error at_setup;    // meeting the set-up, before any data came back
    node_error at_request;  // meeting a lock request on a ready connection
};

// What each fault must end in. An alert before any data is how a TLS 1.3
// server refuses a client certificate (after the client's handshake ended):
// the handshake's failure; later, the session's.
const hostile_case hostile_cases[] = {
    {"garbage", fault::garbage, node_error::protocol_error, node_error::protocol_error},
    {"a 100 MB bulk string", fault::oversized, node_error::reply_too_large,
     node_error::reply_too_large},
    {"a fatal alert", fault::alert, node_error::tls_handshake_failed,
     node_error::tls_session_failed},
    {"a plaintext record", fault::raw, node_error::tls_session_failed,
     node_error::tls_session_failed},
    {"half a reply, then TCP closed without close_notify", fault::cut, node_error::closed,
     node_error::closed},
};

// A redis-server behind the relay, and a connected one-node client of the
// relay that trusts the test CA (quick reconnects: the tests heal and retry).
struct relayed {
    tls_certs certs;
    redis_server srv;
    redis_client peek{srv.port()};
    tls_relay relay{certs, srv.port()};
    tls_mbedtls<1> tls;
    const url_list urls{{tls_url(relay.port())}};
    client_options o;
    client<1> c;

    relayed() {
        trust_ca(tls, certs);
        o.via = &tls;
        o.reconnect_min = duration::millis(10);
        o.reconnect_max = duration::millis(20);
        REQUIRE(c.configure(urls.data(), 1, o) == client_errc::ok);
    }
    void connect() { REQUIRE(c.connect(port::now() + duration::seconds(5)) == 1); }
};

}  // namespace

TEST_CASE("tls hostile: a clean close sends close_notify, and a relayed session works",
          "[client][tls]") {
    relayed t;
    client<1>& c = t.c;
    tls_relay& relay = t.relay;
    t.connect();
    lock_cycle(c, t.peek, "hostile-relayed");
    CHECK(relay.handshakes() == 1);
    CHECK(relay.close_notifies() == 0);
    c.disconnect();
    CHECK(wait_for([&] { return relay.close_notifies() == 1; }, 5.0));
    // Again, by the client's end.
    REQUIRE(c.connect(port::now() + duration::seconds(5)) == 1);
    CHECK(relay.handshakes() == 2);
    c.configure(t.urls.data(), 1, t.o);  // configure() closes what is open
    CHECK(wait_for([&] { return relay.close_notifies() == 2; }, 5.0));
}

TEST_CASE("tls hostile: misbehaving after the handshake, during the set-up", "[client][tls]") {
    tls_certs certs;
    redis_server srv;
    tls_relay relay(certs, srv.port());
    tls_mbedtls<1> tls;
    trust_ca(tls, certs);
    for (const hostile_case& hc : hostile_cases) {
        INFO(hc.what);
        relay.set_fault(hc.f);
        const int before = relay.handshakes();
        const attempt a = connect_once(tls_url(relay.port()), tls);
        INFO(a.what << ": " << a.message);
        CHECK(relay.handshakes() == before + 1);  // the handshake itself was fine
        CHECK(a.info.state == node_state::backoff);
        CHECK(a.info.error == hc.at_setup);
        CHECK(a.ms < tls_connect_timeout_ms);
    }
    SECTION("silence: connect_timeout") {
        relay.set_fault(fault::silent);
        const attempt a = connect_once(tls_url(relay.port()), tls, 500);
        INFO(a.what);
        CHECK(a.info.error == node_error::connect_timeout);
        CHECK(a.ms < 1500);
    }
}

TEST_CASE("tls hostile: misbehaving under a lock request, then healed", "[client][tls]") {
    relayed t;
    client<1>& c = t.c;
    tls_relay& relay = t.relay;
    redis_client& peek = t.peek;
    client_lock l;
    REQUIRE(l.attach(c, "hostile-lock", options(5000, tls_request_timeout_ms), no_watchdog()) ==
            client_errc::ok);
    t.connect();

    for (const hostile_case& hc : hostile_cases) {
        INFO(hc.what);
        relay.set_fault(hc.f);
        const instant start = port::now();
        const op_result r = l.try_acquire();
        const double ms = ms_since(start);
        INFO(what(r) << " after " << ms << " ms; node: " << what(c.node(0)));
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK_FALSE(l.held());
        CHECK(c.node(0).error == hc.at_request);
        CHECK(ms < tls_request_timeout_ms + 1000);
        // Nothing reached the server: no lock left behind.
        CHECK(peek.command({"EXISTS", key_of("hostile-lock")}).integer == 0);

        // Healed: a new connection, a new handshake, the lock.
        relay.set_fault(fault::none);
        sleep_ms(30);  // past the reconnect backoff
        must_acquire(l);
        must_release(l);
    }
    SECTION("silence: the request's node_timeout") {
        relay.set_fault(fault::silent);
        const instant start = port::now();
        const op_result r = l.try_acquire();
        const double ms = ms_since(start);
        INFO(what(r) << " after " << ms << " ms");
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK_FALSE(l.held());
        CHECK(ms >= tls_request_timeout_ms - 50);
        CHECK(ms < tls_request_timeout_ms + 1000);
        CHECK(peek.command({"EXISTS", key_of("hostile-lock")}).integer == 0);
    }
}
