// More of a TLS server that completes a real handshake and then misbehaves
// (tls_relay.hpp in front of a real redis-server), with the reply itself:
// a bulk string longer than it says, a line with no end, a record shaped
// like the session's that does not decrypt, half a reply closed with
// close_notify. Each ends the node with its own reason within the deadline,
// named, the lock never held and nothing left in the server. And a clean close
// (disconnect, configure, the destructor) sends close_notify.
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

struct reply_case {
    const char* what;
    fault f;
    node_error want;  // at the set-up and under a lock request alike
};

const reply_case reply_cases[] = {
    {"a bulk string longer than it says", fault::malformed, node_error::protocol_error},
    {"a status line of 256 kB without its end", fault::long_line, node_error::reply_too_large},
    {"an application data record that does not decrypt", fault::forged,
     node_error::tls_session_failed},
    {"half a reply, then close_notify", fault::notify_cut, node_error::closed},
};

// A redis-server behind the relay; the client's side trusts the test CA.
struct relayed {
    tls_certs certs;
    redis_server srv;
    redis_client peek{srv.port()};
    tls_relay relay{certs, srv.port()};
    const url_list urls{{tls_url(relay.port())}};
};

client_options quick_reconnects(transport& via) {
    client_options o;
    o.via = &via;
    o.reconnect_min = duration::millis(10);
    o.reconnect_max = duration::millis(20);
    return o;
}

}  // namespace

TEST_CASE("tls replies: a bad reply after the handshake, during the set-up", "[client][tls]") {
    relayed t;
    tls_mbedtls<1> tls;
    trust_ca(tls, t.certs);
    for (const reply_case& rc : reply_cases) {
        INFO(rc.what);
        t.relay.set_fault(rc.f);
        const int before = t.relay.handshakes();
        const attempt a = connect_once(tls_url(t.relay.port()), tls);
        INFO(a.what << ": " << a.message);
        CHECK(t.relay.handshakes() == before + 1);  // the handshake itself was fine
        CHECK(a.info.state == node_state::backoff);
        CHECK(a.info.error == rc.want);
        CHECK(a.ms < tls_connect_timeout_ms);
    }
}

TEST_CASE("tls replies: a bad reply to a lock request, then healed", "[client][tls]") {
    relayed t;
    tls_mbedtls<1> tls;
    trust_ca(tls, t.certs);
    client<1> c;
    REQUIRE(c.configure(t.urls.data(), 1, quick_reconnects(tls)) == client_errc::ok);
    client_lock l;
    REQUIRE(l.attach(c, "tls-replies", options(5000, tls_request_timeout_ms), no_watchdog()) ==
            client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(5)) == 1);

    for (const reply_case& rc : reply_cases) {
        INFO(rc.what);
        t.relay.set_fault(rc.f);
        const instant start = port::now();
        const op_result r = l.try_acquire();
        const double ms = ms_since(start);
        INFO(what(r) << " after " << ms << " ms; node: " << what(c.node(0)));
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK_FALSE(l.held());
        CHECK(c.node(0).error == rc.want);
        CHECK(c.node(0).state != node_state::ready);
        CHECK(ms < tls_request_timeout_ms + 1000);
        // The relay answered in the server's place: nothing reached it.
        CHECK(t.peek.command({"EXISTS", key_of("tls-replies")}).integer == 0);

        t.relay.set_fault(fault::none);
        sleep_ms(30);  // past the reconnect backoff
        must_acquire(l);
        must_release(l);
    }
}

// (tls hostile's test of this runs under ctest as two names that match no
// test: the ';' in its name splits it.)
TEST_CASE("tls replies: disconnect, configure and the destructor end sessions with close_notify",
          "[client][tls]") {
    relayed t;
    tls_mbedtls<1> tls;
    trust_ca(tls, t.certs);
    const auto connect = [](client<1>& c) {
        REQUIRE(c.connect(port::now() + duration::seconds(5)) == 1);
    };
    {
        client<1> c;
        REQUIRE(c.configure(t.urls.data(), 1, quick_reconnects(tls)) == client_errc::ok);
        connect(c);
        lock_cycle(c, t.peek, "tls-replies-close");
        CHECK(t.relay.handshakes() == 1);
        CHECK(t.relay.close_notifies() == 0);
        c.disconnect();
        CHECK(wait_for([&] { return t.relay.close_notifies() == 1; }, 5.0));

        connect(c);
        CHECK(t.relay.handshakes() == 2);
        REQUIRE(c.configure(t.urls.data(), 1, quick_reconnects(tls)) == client_errc::ok);
        CHECK(wait_for([&] { return t.relay.close_notifies() == 2; }, 5.0));

        connect(c);
        CHECK(t.relay.handshakes() == 3);
        lock_cycle(c, t.peek, "tls-replies-close");
    }
    CHECK(wait_for([&] { return t.relay.close_notifies() == 3; }, 5.0));
    CHECK(t.relay.accepted() == 3);
}
