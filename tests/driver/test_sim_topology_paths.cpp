// One scenario per path of the driver that only a topology reaches, on
// virtual time: a waiter woken by a RESP3 push, a RESP2 waiter woken through
// its subscription, +switch-master moving the lock connection, a failover
// followed after READONLY, MOVED re-routing and ASK during a migration.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

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
using edgelock_test::event_log;
using edgelock_test::url_list;
using edgelock_test::value_at;

namespace {

using client_type = edgelock::client<1, 3>;

void configure(edgelock::client_base& c, const url_list& urls,
               const edgelock::client_options& o = {}) {
    REQUIRE(c.configure(urls.data(), urls.size(), o) == client_errc::ok);
}

// A waiter polls only after the holder's ttl: a wake-up well before it was told.
edgelock::lock_options slow_poll() {
    edgelock::lock_options o = edgelock_test::fast_lock_options();
    o.retry_min = duration::millis(400);
    o.retry_max = duration::millis(400);
    return o;
}

std::size_t connects_since(const sim::net& n, int node, instant since) {
    std::size_t k = 0;
    for (const auto& r : n.connects) {
        k += r.node == node && r.at >= since ? 1u : 0u;
    }
    return k;
}

// The waiter is told of the release and acquires at once, long before its poll.
void waiter_told(bool resp3, edgelock::lock_mode mode = edgelock::lock_mode::plain) {
    CAPTURE(resp3, static_cast<int>(mode));
    sim::net n(resp3 ? 3101 : 3102);
    n.add_nodes(1);
    n.node(0).tracking = true;
    const url_list urls({n.url(0)});
    edgelock::client_options co;
    co.resp3 = resp3;
    client_type a;
    client_type b;
    configure(a, urls, co);
    configure(b, urls, co);
    sim::event_loop loop(n);
    loop.add(a);
    loop.add(b);
    edgelock::client_lock la;
    edgelock::client_lock lb;
    edgelock::lock_options o = slow_poll();
    o.mode = mode;
    REQUIRE(la.attach(a, "jobs", o) == client_errc::ok);
    REQUIRE(lb.attach(b, "jobs", o) == client_errc::ok);
    event_log log;
    log.attach(la);
    log.attach(lb);

    REQUIRE(la.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));
    REQUIRE(la.held());
    REQUIRE(lb.start_acquire(10, duration::seconds(2)) == client_errc::ok);
    // A plain waiter asks to be told right after its SET finds the key
    // taken (the same round reads the holder's ttl); the scripts of the
    // other modes read it in one go, so their waiter asks with its next try,
    // at its first poll (400 ms).
    REQUIRE(loop.run_for(duration::millis(mode == edgelock::lock_mode::plain ? 100 : 500)));
    CHECK(!lb.held());
    CHECK(b.node(0).tracking);
    const std::uint64_t before = n.pushes_delivered;
    const instant released = n.now();
    REQUIRE(la.start_release() == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));
    REQUIRE(lb.held());
    const auto* got = log.last(&lb);
    REQUIRE(got != nullptr);
    CHECK(got->ev.kind == lock_event_kind::acquired);
    CHECK(got->at - released < duration::millis(30));
    CHECK(n.pushes_delivered > before);
    CHECK(n.node(0).clients.invalidations >= 1);
    if (!resp3) {
        CHECK(n.node(0).count_of("SUBSCRIBE") >= 2);  // one per client
    }
}

}  // namespace

TEST_CASE("a RESP3 waiter is woken by the invalidation push", "[client][sim][notify]") {
    waiter_told(true);
}

TEST_CASE("a RESP2 waiter is woken through its subscription", "[client][sim][notify]") {
    waiter_told(false);
}

TEST_CASE("a fenced or reentrant waiter, whose tries are scripts, is woken too",
          "[client][sim][notify]") {
    for (const edgelock::lock_mode mode :
         {edgelock::lock_mode::fenced, edgelock::lock_mode::reentrant}) {
        waiter_told(true, mode);
        waiter_told(false, mode);
    }
}

TEST_CASE("switch-master moves the lock connection to the new master", "[client][sim][sentinel]") {
    sim::net n(3103);
    sim::sentinel_group g(n, 2, 2);
    const int old = g.master;
    const int to = g.replicas[0];
    const url_list urls({g.url()});
    client_type c;
    configure(c, urls);
    sim::event_loop loop(n);
    loop.add(c);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(200)));
    REQUIRE(l.held());  // the watch is up while a lock is held

    // The old master stays a master taking writes: only the announcement
    // can move the client.
    const instant failover = n.now();
    n.at(n.now(), [&g, to] { g.promote(to, true, sim::old_master::kept); });
    REQUIRE(loop.run_for(duration::millis(100)));
    CHECK(g.switches == 2);
    CHECK(n.node(g.sentinels[0]).count_of("SUBSCRIBE") +
              n.node(g.sentinels[1]).count_of("SUBSCRIBE") >=
          1);
    CHECK(n.pushes_delivered >= 1);
    CHECK(connects_since(n, to, failover) >= 1);
    REQUIRE(l.start_release() == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));
    const std::uint64_t at_old = n.node(old).lock_requests();
    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));
    REQUIRE(l.held());
    CHECK(value_at(n, to, "jobs") == edgelock_test::hex(l.machine().token()));
    CHECK(n.node(old).lock_requests() == at_old);
}

TEST_CASE("a failover is followed after READONLY once the sentinels know",
          "[client][sim][sentinel]") {
    sim::net n(3104);
    sim::sentinel_group g(n, 2, 1);
    const int old = g.master;
    const int to = g.replicas[0];
    const url_list urls({g.url()});
    client_type c;
    configure(c, urls);
    sim::event_loop loop(n);
    loop.add(c);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(c.connect(n.now() + duration::seconds(1)) == 1);

    // Demoted at once, the sentinels told 300 ms later: nothing is announced
    // before the client meets READONLY, and they answer stale till then.
    g.promote(to, true, sim::old_master::demoted, false);
    n.at(n.now() + duration::millis(300), [&g] { g.tell(0); });
    const std::uint64_t refused = n.node(old).lock_requests();
    // Tries enough for the wait: while the node is between masters each
    // fails at once, a retry delay apart.
    REQUIRE(l.start_acquire(1000, duration::seconds(2)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(800)));
    REQUIRE(l.held());
    CHECK(n.node(old).lock_requests() > refused);  // met READONLY there first
    CHECK(value_at(n, to, "jobs") != "");
    CHECK(g.asked >= 2);
}

TEST_CASE("MOVED re-routes a Cluster lock to the master that serves its slot",
          "[client][sim][cluster]") {
    sim::net n(3105);
    sim::slot_cluster k(n, 3);
    const std::string name = k.name_on(2);
    const int slot = sim::slot_cluster::slot_of(name);
    const url_list urls({k.url({0})});
    client_type c;
    configure(c, urls);
    sim::event_loop loop(n);
    loop.add(c);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, name.c_str(), edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(200)));
    REQUIRE(l.held());
    CHECK(value_at(n, k.masters[2], name) != "");
    REQUIRE(l.start_release() == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));

    // The slot moves to master 1 while the client is idle: its next request
    // goes to master 2, which answers MOVED.
    k.begin(slot, 1);
    k.move_keys(slot);
    k.hand_over(slot);
    const std::uint64_t moved = k.moved;
    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(200)));
    REQUIRE(l.held());
    CHECK(k.moved > moved);
    CHECK(value_at(n, k.masters[1], name) != "");
    CHECK(value_at(n, k.masters[2], name) == "");
}

TEST_CASE("ASK sends a request where the migrating slot's key now is", "[client][sim][cluster]") {
    sim::net n(3106);
    sim::slot_cluster k(n, 2);
    const std::string name = k.name_on(0);
    const int slot = sim::slot_cluster::slot_of(name);
    const url_list urls({k.url({0})});
    client_type a;
    client_type b;
    configure(a, urls);
    configure(b, urls);
    sim::event_loop loop(n);
    loop.add(a);
    loop.add(b);
    edgelock::client_lock la;
    edgelock::client_lock lb;
    REQUIRE(la.attach(a, name.c_str(), edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(lb.attach(b, name.c_str(), edgelock_test::fast_lock_options()) == client_errc::ok);
    event_log log;
    log.attach(lb);
    REQUIRE(la.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(200)));
    REQUIRE(la.held());
    const std::string value = value_at(n, k.masters[0], name);
    REQUIRE(value != "");

    // Migrating, its key already moved: master 0 answers ASK, master 1 runs
    // what follows ASKING.
    k.begin(slot, 1);
    k.move_keys(slot);
    REQUIRE(lb.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(200)));
    CHECK(log.count(lock_event_kind::busy) == 1);
    CHECK(k.asks >= 1);
    CHECK(value_at(n, k.masters[1], name) == value);
    const std::uint64_t asks = k.asks;
    REQUIRE(la.start_release() == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));
    CHECK(!la.held());
    CHECK(k.asks > asks);
    CHECK(value_at(n, k.masters[1], name) == "");
}
