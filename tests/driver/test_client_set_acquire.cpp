// The one-command acquire through the real driver on simulated nodes: the
// driver reads each node's version at set-up (INFO server) and tells the lock
// machine, so a Redis 7 node gets SET NX PX GET and an older one the acquire
// script, in the same Redlock; a node that claims 7 but refuses the SET is
// asked by script in the same round and gets no SET again.
#include <catch2/catch.hpp>

#include <string>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::lock_event_kind;
using edgelock_test::node_urls;

TEST_CASE("set acquire: Redis 7 gets one SET, Redis 6.2 the script, in one Redlock",
          "[client][sim][set]") {
    sim::net n(611);
    n.add_nodes(3);
    n.node(1).version = "6.2.14";
    node_urls urls(n);
    edgelock::client<3> c;
    edgelock_test::configure(c, urls);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(c.connect(n.now() + edgelock::duration::seconds(1)) == 3);  // every version known
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    CHECK(std::string(c.node(0).version.data, c.node(0).version.size) == "7.0.15");
    CHECK(std::string(c.node(1).version.data, c.node(1).version.size) == "6.2.14");
    int holding = 0;
    for (int i = 0; i < 3; ++i) {
        holding += edgelock_test::value_at(n, i, "jobs") == edgelock_test::hex(l.token()) ? 1 : 0;
    }
    CHECK(holding >= 2);  // a quorum; the third may still be on its way
    CHECK(l.release().event.kind == lock_event_kind::released);
    for (int i = 0; i < 3; ++i) {
        CHECK(edgelock_test::value_at(n, i, "jobs").empty());
    }
    // Requests, the release's compare-and-delete (EVALSHA) included.
    for (int i : {0, 2}) {
        CHECK(n.node(i).count_of("SET") == 1);
        CHECK(n.node(i).count_of("EVALSHA") == 1);
    }
    // The script acquire found the cache empty (NOSCRIPT, then its text):
    // the release's text goes at once on that connection.
    CHECK(n.node(1).count_of("SET") == 0);
    CHECK(n.node(1).count_of("EVALSHA") == 1);
    CHECK(n.node(1).noscripts == 1);
}

TEST_CASE("set acquire: a node that refuses the SET is asked by script, then only so",
          "[client][sim][set]") {
    sim::net n(612);
    n.add_nodes(1);
    n.node(0).refusals["SET"] = "ERR syntax error";  // claims 7.0.15, acts older
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock_test::configure(c, urls);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    CHECK(n.node(0).count_of("SET") == 1);
    CHECK(n.node(0).count_of("EVALSHA") == 1);
    CHECK(l.release().event.kind == lock_event_kind::released);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    CHECK(n.node(0).count_of("SET") == 1);  // not again
    CHECK(c.node(0).error == edgelock::node_error::none);
    CHECK(l.release().event.kind == lock_event_kind::released);
}

TEST_CASE("set acquire: a key held by another says busy with its ttl", "[client][sim][set]") {
    sim::net n(613);
    n.add_nodes(1);
    n.node(0).set_nx_px("jobs", "someone-else", 4000, n.now().us);
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock_test::configure(c, urls);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    const edgelock::op_result r = l.try_acquire();
    CHECK(r.event.kind == lock_event_kind::busy);
    CHECK(r.event.holder_ttl_ms > 0);
    CHECK(r.event.holder_ttl_ms <= 4000);
    CHECK(n.node(0).count_of("SET") == 1);      // found it taken
    CHECK(n.node(0).count_of("EVALSHA") == 1);  // the script said for how long
    CHECK(edgelock_test::value_at(n, 0, "jobs") == "someone-else");
}
