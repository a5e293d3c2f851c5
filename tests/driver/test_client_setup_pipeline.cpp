// Lock requests in the same flight as a connection's set-up, through the real
// driver on simulated nodes with a fixed round trip: an acquire on a new
// connection costs the connect and one round trip; a check the set-up fails
// after the acquire went behind it (a writable replica, a database the server
// does not have, a wrong password) makes the acquire count for nothing and
// deletes what it took, on the same connection; a server without HELLO that
// wants a password answers NOAUTH to the acquire, which goes again after AUTH.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock::node_error;
using edgelock_test::fixed_round_trip;
using edgelock_test::node_urls;
using edgelock_test::round_trips;

TEST_CASE("an acquire on a new connection goes with its set-up: the connect and one round trip",
          "[client][sim][handshake]") {
    const bool resp3 = GENERATE(true, false);
    const bool password = GENERATE(false, true);
    CAPTURE(resp3, password);
    sim::net n(601);
    n.add_nodes(1);
    fixed_round_trip(n);
    if (password) {
        n.node(0).password = "pw";
    }
    node_urls urls(n, 1, password ? ":pw" : "");
    edgelock::client_options o;
    o.resp3 = resp3;
    edgelock::client<1> c;
    edgelock_test::configure(c, urls, o);
    edgelock::client_lock l;
    // Rounds as long as the ttl allows: the round trip is well below an
    // eighth of them, so scripts go by digest first.
    edgelock::lock_options lo = edgelock_test::fast_lock_options();
    lo.node_timeout = duration{};
    REQUIRE(l.attach(c, "jobs", lo) == client_errc::ok);
    const instant start = n.now();
    const edgelock::op_result r = l.try_acquire();
    INFO(edgelock_test::what(r));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(round_trips(n, start) == 2.0);  // TCP's handshake, then set-up and acquire
    CHECK(n.node(0).count_of("SET") == 1);
    CHECK(n.node(0).count_of("SCRIPT") == 0);  // nothing loaded ahead of use
    CHECK(n.node(0).count_of("INFO") == 0);    // HELLO and CONFIG GET said it all
    const instant held = n.now();
    REQUIRE(l.release().event.kind == lock_event_kind::released);
    // A fresh server's cache lacks the release script: NOSCRIPT, then EVAL.
    CHECK(round_trips(n, held) == 2.0);
    CHECK(n.node(0).noscripts == 1);
    // The next connection finds it cached: one round trip each.
    c.disconnect();
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    const instant again = n.now();
    REQUIRE(l.release().event.kind == lock_event_kind::released);
    CHECK(round_trips(n, again) == 1.0);
    CHECK(n.node(0).noscripts == 1);
}

TEST_CASE("on a link slow for the round's time, a fresh connection's scripts go as their text",
          "[client][sim][handshake]") {
    sim::net n(602);
    n.add_nodes(1);
    fixed_round_trip(n);
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock_test::configure(c, urls);
    edgelock::client_lock l;
    // 50 ms a round: a round trip of 10 ms is more than an eighth of it, so
    // a NOSCRIPT's extra round trip is not risked.
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    CHECK(c.node_stats(0).rtt_smoothed_us >= edgelock_test::fixed_rtt_us);
    const instant held = n.now();
    REQUIRE(l.release().event.kind == lock_event_kind::released);
    CHECK(round_trips(n, held) == 1.0);
    CHECK(n.node(0).noscripts == 0);
    CHECK(n.node(0).evals == 1);
    // Once run on the connection, a script goes by its digest.
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    REQUIRE(l.release().event.kind == lock_event_kind::released);
    CHECK(n.node(0).evals == 1);
    CHECK(n.node(0).count_of("EVALSHA") == 1);
    // A new connection may reach an emptied cache: its text again.
    c.disconnect();
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    REQUIRE(l.release().event.kind == lock_event_kind::released);
    CHECK(n.node(0).evals == 2);
    CHECK(n.node(0).noscripts == 0);
}

TEST_CASE("a set-up check refused behind an acquire undoes the acquire",
          "[client][sim][handshake]") {
    struct refusal {
        const char* name;
        std::function<void(sim::net&)> arrange;
        std::string userinfo;
        std::string path;
        node_error error;
    };
    const refusal cases[] = {
        {"a writable replica (replica-read-only no)",
         [](sim::net& n) {
             n.node(0).replica = true;
             n.node(0).replica_writable = true;
         },
         "", "", node_error::replica},
        {"a database the server does not have: the acquire ran in database 0", [](sim::net&) {}, "",
         "/99", node_error::select_failed},
        {"a wrong password: nothing ran", [](sim::net& n) { n.node(0).password = "right"; },
         ":wrong", "", node_error::auth_failed},
    };
    for (const refusal& k : cases) {
        for (const bool resp3 : {true, false}) {
            INFO(k.name);
            CAPTURE(resp3);
            sim::net n(602);
            n.add_nodes(1);
            fixed_round_trip(n);
            k.arrange(n);
            node_urls urls(n, 1, k.userinfo, k.path);
            edgelock::client_options o;
            o.resp3 = resp3;
            o.reconnect_min = duration::seconds(5);  // no second connection within the test
            o.reconnect_max = duration::seconds(5);
            edgelock::client<1> c;
            edgelock_test::configure(c, urls, o);
            edgelock::client_lock l;
            REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
            const edgelock::op_result r = l.try_acquire();
            INFO(edgelock_test::what(r));
            CHECK(r.event.kind == lock_event_kind::failed);
            CHECK_FALSE(l.held());
            CHECK(c.node(0).error == k.error);
            // The cleanup went behind the acquire, on the same connection; the
            // driver waits for its reply before it lets go (settle()).
            REQUIRE(c.settle(n.now() + duration::seconds(1)) == client_errc::ok);
            CHECK_FALSE(c.busy());
            CHECK(n.node(0).lock_requests() >= 1);
            for (std::uint32_t d : {0u, 99u}) {
                CHECK(n.node(0).db(d).find("jobs", n.now().us) == nullptr);
            }
            CHECK(n.connects.size() == 1);
            CHECK(c.node(0).error == k.error);
        }
    }
}

TEST_CASE(
    "a writable replica among three: the lock holds on the two masters, the replica's key goes",
    "[client][sim][handshake]") {
    sim::net n(603);
    n.add_nodes(3);
    fixed_round_trip(n);
    n.node(1).replica = true;
    n.node(1).replica_writable = true;
    node_urls urls(n);
    edgelock::client_options o;
    o.reconnect_min = duration::seconds(5);
    o.reconnect_max = duration::seconds(5);
    edgelock::client<3> c;
    edgelock_test::configure(c, urls, o);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    REQUIRE(c.settle(n.now() + duration::seconds(1)) == client_errc::ok);
    const std::string token = edgelock_test::hex(l.token());
    CHECK(edgelock_test::value_at(n, 0, "jobs") == token);
    CHECK(edgelock_test::value_at(n, 2, "jobs") == token);
    CHECK(edgelock_test::value_at(n, 1, "jobs").empty());
    CHECK(n.node(1).count_of("SET") == 1);
    CHECK(c.node(1).error == node_error::replica);
    CHECK(edgelock_test::str(c.node(1).message) == "replica of 10.0.0.99:6379");
    CHECK(l.release().event.kind == lock_event_kind::released);
}

TEST_CASE("a server without HELLO that wants a password: the acquire it refused goes after AUTH",
          "[client][sim][handshake]") {
    sim::net n(604);
    n.add_nodes(1);
    fixed_round_trip(n);
    n.node(0).speaks_resp3 = false;
    n.node(0).password = "pw";
    node_urls urls(n, 1, ":pw");
    edgelock::client<1> c;
    edgelock_test::configure(c, urls);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    const edgelock::op_result r = l.try_acquire();
    INFO(edgelock_test::what(r));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(c.node(0).error == node_error::none);
    CHECK(c.node(0).resp2);
    CHECK(edgelock_test::value_at(n, 0, "jobs") == edgelock_test::hex(l.token()));
    CHECK(l.release().event.kind == lock_event_kind::released);
}

TEST_CASE("open() returns once the set-up is written, and the acquire goes in its flight",
          "[client][sim][handshake]") {
    sim::net n(605);
    n.add_nodes(3);
    fixed_round_trip(n);
    node_urls urls(n);
    edgelock::client<3> c;
    edgelock_test::configure(c, urls);
    const instant start = n.now();
    REQUIRE(c.open(n.now() + duration::seconds(1), 2) >= 2);
    CHECK(round_trips(n, start) == 1.0);  // TCP's handshake only
    CHECK(c.node(0).state == edgelock::node_state::handshake);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    CHECK(round_trips(n, start) == 2.0);
    // A quorum's replies ended the acquire; settle() reads the rest.
    REQUIRE(c.settle(n.now() + duration::seconds(1)) == client_errc::ok);
    for (std::uint8_t i = 0; i < 3; ++i) {
        CHECK(c.node(i).state == edgelock::node_state::ready);
    }
    // connect() still waits for the set-up's replies.
    c.disconnect();
    const instant again = n.now();
    REQUIRE(c.connect(n.now() + duration::seconds(1)) == 3);
    CHECK(round_trips(n, again) == 2.0);
}
