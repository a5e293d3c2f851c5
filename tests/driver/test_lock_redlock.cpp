// The lock through the real driver against simulated nodes: one scenario per
// Redlock rule (sim/cluster.hpp: clients set up first, watchdog off).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/cluster.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock::lock_state;

TEST_CASE("a majority of nodes wins the lock", "[redlock][sim]") {
    sim::cluster c(5, 1);
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    c.crash(3);
    c.crash(4);
    const instant t0 = c.now();
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_until(t0 + duration::millis(100)));
    REQUIRE(c.count(lock_event_kind::acquired) == 1);
    const auto& ev = c.events.back().ev;
    // validity = ttl - elapsed - (1% of ttl + 2 ms)
    CHECK(ev.validity_deadline <= t0 + duration::millis(1000 - 12));
    CHECK(ev.validity_deadline > t0 + duration::millis(1000 - 12 - 10));
    CHECK(l.state() == lock_state::held);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.value_at(i, "jobs") == edgelock_test::hex(l.token()));
    }
    REQUIRE(l.start_release() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(c.events.back().ev.kind == lock_event_kind::released);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.value_at(i, "jobs").empty());
    }
}

TEST_CASE("a minority fails and releases wherever the key may be ours", "[redlock][sim]") {
    sim::cluster c(5, 2);
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    for (int i = 0; i < 3; ++i) {
        c.hold_as(i, "jobs", "someone-else", duration::millis(700));
    }
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(200)));
    REQUIRE(c.count(lock_event_kind::busy) == 1);
    const auto& ev = c.events.back().ev;
    CHECK(ev.holder_ttl_ms > 0);
    CHECK(ev.holder_ttl_ms <= 700);
    CHECK(l.state() == lock_state::idle);
    for (int i = 0; i < 5; ++i) {
        INFO("node " << i);
        // The busy nodes said the key is another's; the others may hold ours.
        if (i < 3) {
            CHECK(c.count_script(i, edgelock::script_release) == 0);
        } else {
            CHECK(c.count_script(i, edgelock::script_release) >= 1);
        }
    }
    for (int i = 0; i < 3; ++i) {
        CHECK(c.value_at(i, "jobs") == "someone-else");
    }
    CHECK(c.value_at(3, "jobs").empty());
    CHECK(c.value_at(4, "jobs").empty());
}

TEST_CASE("too few nodes up is a failure, not busy", "[redlock][sim]") {
    sim::cluster c(3, 3);
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    c.crash(1);
    c.crash(2);
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(200)));
    REQUIRE(c.count(lock_event_kind::failed) == 1);
    CHECK(c.events.back().ev.reason == lock_failure::no_quorum);
    CHECK(c.value_at(0, "jobs").empty());
}

TEST_CASE("a round that outlasts ttl - drift fails", "[redlock][sim]") {
    sim::cluster c(3, 4);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.ttl = duration::millis(100);
    opt.node_timeout = duration::millis(99);
    edgelock::client_lock& l = c.add_lock(a, "jobs", opt);
    for (int i = 0; i < 3; ++i) {
        c.faults(i).latency_min_us = 98000;  // round trip 98 ms > 100 - (1 + 2) ms
        c.faults(i).latency_max_us = 98000;
    }
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(500)));
    REQUIRE(c.count(lock_event_kind::failed) == 1);
    CHECK(c.events.back().ev.reason == lock_failure::expired);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.value_at(i, "jobs").empty());
    }
}

TEST_CASE("late replies are ignored and a late successful acquire is undone", "[redlock][sim]") {
    sim::cluster c(3, 5);
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    SECTION("after a won round: the late node just holds our key") {
        c.faults(2).latency_min_us = c.faults(2).latency_max_us = 300000;
        REQUIRE(c.acquire(l) == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(400)));
        CHECK(c.count(lock_event_kind::acquired) == 1);
        CHECK(c.events.size() == 1);
        CHECK(l.state() == lock_state::held);
        CHECK(c.value_at(2, "jobs") == edgelock_test::hex(l.token()));
    }
    SECTION("after a lost round: every late SET is released") {
        c.faults(1).latency_min_us = c.faults(1).latency_max_us = 300000;
        c.faults(2).latency_min_us = c.faults(2).latency_max_us = 300000;
        REQUIRE(c.acquire(l) == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(60)));
        REQUIRE(c.count(lock_event_kind::failed) == 1);
        CHECK(l.state() == lock_state::idle);
        REQUIRE(c.run_for(duration::seconds(2)));
        CHECK(c.events.size() == 1);  // late replies make no events
        for (int i = 0; i < 3; ++i) {
            CHECK(c.value_at(i, "jobs").empty());
        }
        // The failure cleanup, then one more per late success.
        CHECK(c.count_script(1, edgelock::script_release) == 2);
        CHECK(c.count_script(2, edgelock::script_release) == 2);
        CHECK(c.count_script(0, edgelock::script_release) == 1);
    }
}

TEST_CASE("a node already holding our token counts as a yes", "[redlock][sim]") {
    sim::cluster c(3, 6);
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    c.hold_as(2, "jobs", "someone-else", duration::millis(900));
    c.hold_as(1, "jobs", "someone-else", duration::millis(900));
    // The nodes sit on the requests a moment: once the round has begun (and
    // its token is known), node 0 already has our token before running it
    // (as after a retransmitted SET), node 1 frees up, node 2 stays taken.
    for (int i = 0; i < 3; ++i) {
        c.pause(i, duration::millis(1));
    }
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::micros(100)));
    REQUIRE(l.state() == lock_state::acquiring);
    c.hold_as(0, "jobs", edgelock_test::hex(l.token()), duration::millis(50));
    c.node(1).data.clear();
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(c.count(lock_event_kind::acquired) == 1);
    // The acquire script treated it as ours, and re-armed it with the full ttl.
    CHECK(c.node(0).find("jobs", c.now().us)->expire_at > c.now().us + 800000);
}

TEST_CASE("renew extends the validity", "[redlock][sim]") {
    sim::cluster c(3, 7);
    for (int i = 0; i < 3; ++i) {
        c.node(i).cache_scripts();  // one request per renew, no NOSCRIPT
    }
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(300)));
    const instant v1 = l.validity_deadline();
    REQUIRE(l.start_renew() == client_errc::ok);
    // A second renew joins the first: one round, one outcome.
    CHECK(l.start_renew() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(c.count(lock_event_kind::renewed) == 1);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.count_script(i, edgelock::script_renew) == 1);
    }
    CHECK(l.validity_deadline() > v1 + duration::millis(250));
    CHECK(c.events.back().ev.validity_deadline == l.validity_deadline());
}

TEST_CASE("renew that cannot win a quorum reports lost by the validity deadline",
          "[redlock][sim]") {
    sim::cluster c(3, 8);
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(l.held());
    const instant v = l.validity_deadline();
    SECTION("nodes paused: no reply ever comes") {
        c.pause(1, duration::seconds(10));
        c.pause(2, duration::seconds(10));
        REQUIRE(l.start_renew() == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(1)));
        CHECK(l.machine().next_deadline() <= v);
        REQUIRE(c.run_until(v + duration::millis(500)));
        REQUIRE(c.count(lock_event_kind::lost) == 1);
        CHECK(c.last()->at <= v);
        CHECK(c.last()->ev.reason == lock_failure::validity_ended);
    }
    SECTION("nodes crashed: renew keeps trying, then lost") {
        c.crash(0);
        c.crash(2);
        REQUIRE(l.start_renew() == client_errc::ok);
        REQUIRE(c.run_until(v + duration::millis(500)));
        REQUIRE(c.count(lock_event_kind::lost) == 1);
        CHECK(c.last()->at <= v);
    }
    SECTION("keys gone on a majority: lost at once") {
        c.node(0).data.clear();
        c.node(1).data.clear();
        const instant asked = c.now();
        REQUIRE(l.start_renew() == client_errc::ok);
        REQUIRE(c.run_until(v));
        REQUIRE(c.count(lock_event_kind::lost) == 1);
        CHECK(c.last()->ev.reason == lock_failure::not_ours);
        CHECK(c.last()->at < asked + duration::millis(60));
    }
    SECTION("no renew at all: lost at the deadline") {
        REQUIRE(c.run_until(v + duration::millis(10)));
        REQUIRE(c.count(lock_event_kind::lost) == 1);
        CHECK(c.last()->at == v);
    }
    CHECK(l.state() == lock_state::idle);
}

TEST_CASE("renew never resurrects an expired lock unless asked", "[redlock][sim]") {
    for (bool resurrect : {false, true}) {
        sim::cluster c(1, 9);
        const int a = c.add_client();
        auto opt = sim::fast_options();
        opt.renew_resurrects = resurrect;
        edgelock::client_lock& l = c.add_lock(a, "jobs", opt);
        REQUIRE(c.acquire(l) == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(100)));
        REQUIRE(l.held());
        c.node(0).data.clear();  // expired early (evicted, say)
        REQUIRE(l.start_renew() == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(100)));
        if (resurrect) {
            CHECK(c.count(lock_event_kind::renewed) == 1);
            CHECK(c.value_at(0, "jobs") == edgelock_test::hex(l.token()));
        } else {
            CHECK(c.count(lock_event_kind::lost) == 1);
            CHECK(c.value_at(0, "jobs").empty());
        }
    }
}

TEST_CASE("NOSCRIPT falls back to EVAL once per node and connection", "[lock][sim]") {
    sim::cluster c(3, 13);
    for (int i = 0; i < 3; ++i) {
        // An ACL without SCRIPT LOAD: the scripts reach the nodes by EVAL.
        c.node(i).refusals["SCRIPT LOAD"] = "NOPERM no permissions to run 'script|load'";
        c.node(i).version = "6.2.14";  // the acquire is a script too
    }
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(l.held());
    for (int i = 0; i < 3; ++i) {
        CHECK(c.node(i).noscripts == 1);
        CHECK(c.node(i).evals == 1);
    }
    // The renew script is not cached either, and the connection knows the
    // cache was empty: its text goes at once.
    REQUIRE(l.start_renew() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(c.count(lock_event_kind::renewed) == 1);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.node(i).noscripts == 1);
        CHECK(c.node(i).evals == 2);
    }
    REQUIRE(l.start_renew() == client_errc::ok);  // now cached: EVALSHA only
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(c.count(lock_event_kind::renewed) == 2);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.node(i).noscripts == 1);
        CHECK(c.node(i).evals == 2);
    }
    // A restart with AOF keeps the key but not the script cache. The new
    // connection knows nothing of it: EVALSHA, NOSCRIPT, then EVAL; the
    // others' connections send the release's text at once.
    c.crash(1);
    c.restart(1, true);
    REQUIRE(c.run_for(duration::millis(25)));  // reconnected after its backoff
    REQUIRE(l.start_release() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(c.events.back().ev.kind == lock_event_kind::released);
    CHECK(c.events.back().ev.nodes == 3);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.value_at(i, "jobs").empty());
        CHECK(c.node(i).noscripts == (i == 1 ? 2u : 1u));
    }
}

TEST_CASE("retrying mode waits out a holder", "[lock][sim]") {
    sim::cluster c(3, 14);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.max_tries = 100;
    opt.wait = duration::seconds(2);
    opt.retry_min = duration::millis(20);
    opt.retry_max = duration::millis(40);
    edgelock::client_lock& l = c.add_lock(a, "jobs", opt);
    for (int i = 0; i < 3; ++i) {
        c.hold_as(i, "jobs", "someone-else", duration::millis(300));
    }
    const instant t0 = c.now();
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_until(t0 + duration::millis(900)));
    REQUIRE(c.count(lock_event_kind::acquired) == 1);
    CHECK(c.events.size() == 1);
    CHECK(c.events.back().at >= t0 + duration::millis(300));
    CHECK(c.events.back().at < t0 + duration::millis(400));

    // A second contender gives up at its wait deadline.
    REQUIRE(l.start_renew() == client_errc::ok);
    auto opt2 = opt;
    opt2.wait = duration::millis(500);
    edgelock::client_lock& l2 = c.add_lock(a, "jobs", opt2);
    const instant t1 = c.now();
    REQUIRE(c.acquire(l2) == client_errc::ok);
    REQUIRE(c.run_until(t1 + duration::millis(600)));
    REQUIRE(c.count(lock_event_kind::renewed) == 1);
    REQUIRE(c.count(lock_event_kind::busy) == 1);
    CHECK(c.last()->ev.kind == lock_event_kind::busy);
    // The last round begins before the wait ends, and ends within its
    // node_timeout.
    CHECK(c.last()->at <= t1 + opt2.wait + opt2.node_timeout);
    CHECK(c.last()->at + opt.retry_max + duration::millis(60) > t1 + opt2.wait);
    CHECK(l2.state() == lock_state::idle);
}

TEST_CASE("locks sharing connections are pipelined", "[lock][sim]") {
    sim::cluster c(3, 15);
    const int a = c.add_client();
    std::vector<edgelock::client_lock*> locks;
    for (int i = 0; i < 8; ++i) {
        locks.push_back(&c.add_lock(a, "job-" + std::to_string(i), sim::fast_options()));
    }
    for (auto* l : locks) {
        REQUIRE(c.acquire(*l) == client_errc::ok);
    }
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(c.count(lock_event_kind::acquired) == 8);
    for (auto* l : locks) {
        REQUIRE(l->start_release() == client_errc::ok);
    }
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(c.count(lock_event_kind::released) == 8);
    // Every node had one connection: the locks shared it.
    for (int i = 0; i < 3; ++i) {
        std::size_t connects = 0;
        for (const auto& r : c.network().connects) {
            connects += r.node == i ? 1 : 0;
        }
        CHECK(connects == 1);
    }
}

TEST_CASE("a release tells nodes that no longer held the key from silent ones", "[redlock][sim]") {
    sim::cluster c(5, 3);
    const int a = c.add_client();
    edgelock::client_lock& l = c.add_lock(a, "jobs", sim::fast_options());
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(l.held());
    // Taken on two nodes (evicted, then someone else's), silent on one.
    c.hold_as(0, "jobs", "someone-else", duration::millis(700));
    c.hold_as(1, "jobs", "someone-else", duration::millis(700));
    c.crash(4);
    REQUIRE(l.start_release() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(300)));
    REQUIRE(c.events.back().ev.kind == lock_event_kind::released);
    CHECK(c.events.back().ev.nodes == 2);
    CHECK(c.events.back().ev.absent == 2);
    CHECK(c.value_at(0, "jobs") == "someone-else");
}
