// The first lock request in the set-up's flight where a topology first says
// where to go, through the real driver on simulated nodes with a fixed round
// trip: on the master a Sentinel names (after the sentinel's answer), and on
// a Cluster's seed and on the master a MOVED names (the slot map read only
// once a request went astray). A demoted master that
// stale sentinels still name undoes what the acquire behind its set-up took,
// and is not sent another acquire before its role is read.
#include <catch2/catch.hpp>

#include <string>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"
#include "sim/sentinel.hpp"
#include "sim/slot_cluster.hpp"
#include "tools/url.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock::node_error;
using edgelock_test::fixed_round_trip;
using edgelock_test::round_trips;
using edgelock_test::url_list;
using edgelock_test::value_at;

namespace {

// Connects to `node` since `from`.
int connects_to(sim::net& n, int node, instant from) {
    int count = 0;
    for (const sim::net::connect_record& r : n.connects) {
        count += r.node == node && r.at.us >= from.us ? 1 : 0;
    }
    return count;
}

}  // namespace

TEST_CASE("a Sentinel node's acquire goes with the set-up of the master the sentinel names",
          "[client][sim][sentinel][handshake]") {
    const bool resp3 = GENERATE(true, false);
    CAPTURE(resp3);
    sim::net n(611);
    sim::sentinel_group g(n, 2, 1);
    fixed_round_trip(n);
    const url_list urls({g.url()});
    edgelock::client_options o;
    o.resp3 = resp3;
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.data(), urls.size(), o) == client_errc::ok);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    const instant start = n.now();
    const edgelock::op_result r = l.try_acquire();
    INFO(edgelock_test::what(r));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    // The sentinel's TCP handshake and answer, the master's TCP handshake,
    // then the master's set-up and the acquire in one round trip.
    CHECK(round_trips(n, start) == 4.0);
    CHECK(g.asked == 1);
    CHECK(n.node(g.master).count_of("SET") == 1);
    CHECK(value_at(n, g.master, "jobs") == edgelock_test::hex(l.token()));
    CHECK(l.release().event.kind == lock_event_kind::released);
}

TEST_CASE("a demoted master the sentinels still name: the acquire behind its set-up is undone",
          "[client][sim][sentinel][handshake]") {
    const bool writable = GENERATE(false, true);
    CAPTURE(writable);
    sim::net n(612);
    sim::sentinel_group g(n, 2, 1);
    fixed_round_trip(n);
    const int old = g.master;
    const int to = g.replicas[0];
    // Demoted, the sentinels not told: they go on naming the old master.
    g.promote(to, true, sim::old_master::demoted, false);
    n.node(old).replica_writable = writable;
    const url_list urls({g.url()});
    edgelock::client_options o;
    o.reconnect_min = duration::millis(50);
    o.reconnect_max = duration::millis(50);
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.data(), urls.size(), o) == client_errc::ok);
    sim::event_loop loop(n);
    loop.add(c);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    const instant start = n.now();
    REQUIRE(l.start_acquire(100, duration::millis(400)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(500)));
    CHECK_FALSE(l.held());
    CHECK(c.node(0).error == node_error::replica);
    // Connected there again and again; only the first connection carried an
    // acquire (behind its set-up), and what it took is gone.
    CHECK(connects_to(n, old, start) >= 3);
    CHECK(n.node(old).count_of("SET") == 1);
    CHECK(value_at(n, old, "jobs").empty());
    CHECK(value_at(n, to, "jobs").empty());

    // Once the sentinels know, the next acquire goes to the new master.
    g.tell(0);
    REQUIRE(l.start_acquire(100, duration::millis(400)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(500)));
    REQUIRE(l.held());
    CHECK(value_at(n, to, "jobs") == edgelock_test::hex(l.token()));
    CHECK(n.node(old).count_of("SET") == 1);
}

TEST_CASE(
    "a Cluster node's acquire goes with the set-up of the seed, and of the master a MOVED "
    "names",
    "[client][sim][cluster][handshake]") {
    const bool on_seed = GENERATE(true, false);
    CAPTURE(on_seed);
    sim::net n(613);
    sim::slot_cluster k(n, 3);
    fixed_round_trip(n);
    const std::string name = k.name_on(on_seed ? 0 : 2);
    const url_list urls({k.url({0})});
    edgelock::client<1, 2> c;
    REQUIRE(c.configure(urls.data(), urls.size(), {}) == client_errc::ok);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, name.c_str(), edgelock_test::fast_lock_options()) == client_errc::ok);
    const instant start = n.now();
    const std::uint64_t moved = k.moved;
    const edgelock::op_result r = l.try_acquire();
    INFO(edgelock_test::what(r));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    const std::uint64_t maps = n.node(k.masters[0]).count_of("CLUSTER");
    if (on_seed) {
        // The seed's TCP handshake, then its set-up and the acquire; no map
        // is read, as no request went astray.
        CHECK(round_trips(n, start) == 2.0);
        CHECK(k.moved == moved);
        CHECK(maps == 0);
    } else {
        // The same to the seed, which answers MOVED; then the same to the
        // master it names. The MOVED has the map read, once.
        CHECK(round_trips(n, start) == 4.0);
        CHECK(k.moved == moved + 1);
        CHECK(maps == 1);
    }
    const int master = k.masters[on_seed ? 0u : 2u];
    CHECK(value_at(n, master, name) == edgelock_test::hex(l.token()));
    CHECK(l.release().event.kind == lock_event_kind::released);
    CHECK(value_at(n, master, name).empty());
}
