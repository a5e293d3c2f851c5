// The lock machine against the simulated cluster: one scenario per Redlock rule.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/cluster.hpp"
#include "sim/recorder.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock::lock_mode;
using edgelock::lock_state;

namespace {

std::size_t count_sends(const std::vector<std::pair<int, std::string>>& log, int node,
                        const edgelock::lock_script& s) {
    // Cleanups go out as EVAL, round requests as EVALSHA; these tests preload
    // the scripts, so no request is counted twice for a NOSCRIPT retry.
    const std::string sha(s.sha1.data, s.sha1.size);
    const std::string text(s.text.data, s.text.size);
    std::size_t n = 0;
    for (const auto& [ni, bytes] : log) {
        if (ni == node &&
            (bytes.find(sha) != std::string::npos || bytes.find(text) != std::string::npos)) {
            ++n;
        }
    }
    return n;
}

}  // namespace

TEST_CASE("a majority of nodes wins the lock", "[redlock][sim]") {
    sim::cluster c(5, 1);
    sim::recorder rec(c);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    edgelock::lock& l = c.add_lock(a, "jobs", opt);
    c.crash(3);
    c.crash(4);
    const instant t0 = c.now();
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    REQUIRE(c.run_until(t0 + duration::millis(100)));
    REQUIRE(rec.count(lock_event_kind::acquired) == 1);
    const auto& ev = rec.events.back().ev;
    // validity = ttl - elapsed - (1% of ttl + 2 ms)
    CHECK(ev.validity_deadline <= t0 + duration::millis(1000 - 12));
    CHECK(ev.validity_deadline > t0 + duration::millis(1000 - 12 - 10));
    CHECK(l.state() == lock_state::held);
    for (int i = 0; i < 3; ++i) {
        CHECK(sim::value_at(c, i, "jobs") == sim::token_hex(l));
    }
    REQUIRE(l.release(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(rec.events.back().ev.kind == lock_event_kind::released);
    for (int i = 0; i < 3; ++i) {
        CHECK(sim::value_at(c, i, "jobs").empty());
    }
}

TEST_CASE("a minority fails and releases everywhere", "[redlock][sim]") {
    sim::cluster c(5, 2);
    sim::recorder rec(c);
    std::vector<std::pair<int, std::string>> sent;
    c.on_send = [&](int, int node, const std::string& b) { sent.emplace_back(node, b); };
    const int a = c.add_client();
    edgelock::lock& l = c.add_lock(a, "jobs", sim::fast_options());
    for (int i = 0; i < 3; ++i) {
        sim::hold_as(c, i, "jobs", "someone-else", duration::millis(700));
    }
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(200)));
    REQUIRE(rec.count(lock_event_kind::busy) == 1);
    const auto& ev = rec.events.back().ev;
    CHECK(ev.holder_ttl_ms > 0);
    CHECK(ev.holder_ttl_ms <= 700);
    CHECK(l.state() == lock_state::idle);
    for (int i = 0; i < 5; ++i) {
        INFO("node " << i);
        CHECK(count_sends(sent, i, edgelock::script_release) >= 1);
    }
    for (int i = 0; i < 3; ++i) {
        CHECK(sim::value_at(c, i, "jobs") == "someone-else");
    }
    CHECK(sim::value_at(c, 3, "jobs").empty());
    CHECK(sim::value_at(c, 4, "jobs").empty());
}

TEST_CASE("too few nodes up is a failure, not busy", "[redlock][sim]") {
    sim::cluster c(3, 3);
    sim::recorder rec(c);
    const int a = c.add_client();
    edgelock::lock& l = c.add_lock(a, "jobs", sim::fast_options());
    c.crash(1);
    c.crash(2);
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(200)));
    REQUIRE(rec.count(lock_event_kind::failed) == 1);
    CHECK(rec.events.back().ev.reason == lock_failure::no_quorum);
    CHECK(sim::value_at(c, 0, "jobs").empty());
}

TEST_CASE("a round that outlasts ttl - drift fails", "[redlock][sim]") {
    sim::cluster c(3, 4);
    sim::recorder rec(c);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.ttl = duration::millis(100);
    opt.node_timeout = duration::millis(99);
    edgelock::lock& l = c.add_lock(a, "jobs", opt);
    sim::preload_scripts(c);
    for (int i = 0; i < 3; ++i) {
        c.faults(i).latency_min_us = 98000;  // round trip 98 ms > 100 - (1 + 2) ms
        c.faults(i).latency_max_us = 98000;
    }
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(500)));
    REQUIRE(rec.count(lock_event_kind::failed) == 1);
    CHECK(rec.events.back().ev.reason == lock_failure::expired);
    for (int i = 0; i < 3; ++i) {
        CHECK(sim::value_at(c, i, "jobs").empty());
    }
}

TEST_CASE("late replies are ignored and a late successful acquire is undone", "[redlock][sim]") {
    sim::cluster c(3, 5);
    sim::recorder rec(c);
    std::vector<std::pair<int, std::string>> sent;
    c.on_send = [&](int, int node, const std::string& b) { sent.emplace_back(node, b); };
    const int a = c.add_client();
    edgelock::lock& l = c.add_lock(a, "jobs", sim::fast_options());
    sim::preload_scripts(c);
    SECTION("after a won round: the late node just holds our key") {
        c.faults(2).latency_min_us = c.faults(2).latency_max_us = 300000;
        REQUIRE(l.acquire(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(c.now() + duration::millis(400)));
        CHECK(rec.count(lock_event_kind::acquired) == 1);
        CHECK(rec.events.size() == 1);
        CHECK(l.state() == lock_state::held);
        CHECK(sim::value_at(c, 2, "jobs") == sim::token_hex(l));
    }
    SECTION("after a lost round: every late SET is released") {
        c.faults(1).latency_min_us = c.faults(1).latency_max_us = 300000;
        c.faults(2).latency_min_us = c.faults(2).latency_max_us = 300000;
        REQUIRE(l.acquire(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(c.now() + duration::millis(60)));
        REQUIRE(rec.count(lock_event_kind::failed) == 1);
        CHECK(l.state() == lock_state::idle);
        REQUIRE(c.run_until(c.now() + duration::seconds(2)));
        CHECK(rec.events.size() == 1);  // late replies make no events
        for (int i = 0; i < 3; ++i) {
            CHECK(sim::value_at(c, i, "jobs").empty());
        }
        // The failure cleanup, then one more per late success.
        CHECK(count_sends(sent, 1, edgelock::script_release) == 2);
        CHECK(count_sends(sent, 2, edgelock::script_release) == 2);
        CHECK(count_sends(sent, 0, edgelock::script_release) == 1);
    }
}

TEST_CASE("a node already holding our token counts as a yes", "[redlock][sim]") {
    sim::cluster c(3, 6);
    sim::recorder rec(c);
    const int a = c.add_client();
    edgelock::lock& l = c.add_lock(a, "jobs", sim::fast_options());
    sim::hold_as(c, 2, "jobs", "someone-else", duration::millis(900));
    sim::hold_as(c, 1, "jobs", "someone-else", duration::millis(900));
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    // Before the first byte goes out, node 0 already has our token (as after a
    // retransmitted SET): the acquire script must treat it as ours. Node 1
    // frees up, node 2 stays with the other holder.
    sim::hold_as(c, 0, "jobs", sim::token_hex(l), duration::millis(50));
    c.node(1).data.clear();
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(rec.count(lock_event_kind::acquired) == 1);
    // ... and re-arm it with the full ttl.
    CHECK(c.node(0).find("{jobs}", c.now().us)->expire_at > c.now().us + 800000);
}

TEST_CASE("renew extends the validity", "[redlock][sim]") {
    sim::cluster c(3, 7);
    sim::recorder rec(c);
    const int a = c.add_client();
    edgelock::lock& l = c.add_lock(a, "jobs", sim::fast_options());
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(300)));
    const instant v1 = l.validity_deadline();
    REQUIRE(l.renew(c.now()) == lock_errc::ok);
    CHECK(l.renew(c.now()) == lock_errc::busy);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(rec.count(lock_event_kind::renewed) == 1);
    CHECK(l.validity_deadline() > v1 + duration::millis(250));
    CHECK(rec.events.back().ev.validity_deadline == l.validity_deadline());
}

TEST_CASE("renew that cannot win a quorum reports lost by the validity deadline",
          "[redlock][sim]") {
    sim::cluster c(3, 8);
    sim::recorder rec(c);
    const int a = c.add_client();
    edgelock::lock& l = c.add_lock(a, "jobs", sim::fast_options());
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(l.held());
    const instant v = l.validity_deadline();
    SECTION("nodes paused: no reply ever comes") {
        c.pause(1, duration::seconds(10));
        c.pause(2, duration::seconds(10));
        REQUIRE(l.renew(c.now()) == lock_errc::ok);
        CHECK(l.next_deadline() <= v);
        REQUIRE(c.run_until(v + duration::millis(500)));
        REQUIRE(rec.count(lock_event_kind::lost) == 1);
        CHECK(rec.events.back().at <= v);
        CHECK(rec.events.back().ev.reason == lock_failure::validity_ended);
    }
    SECTION("nodes crashed: renew keeps trying, then lost") {
        c.crash(0);
        c.crash(2);
        REQUIRE(l.renew(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(v + duration::millis(500)));
        REQUIRE(rec.count(lock_event_kind::lost) == 1);
        CHECK(rec.events.back().at <= v);
    }
    SECTION("keys gone on a majority: lost at once") {
        c.node(0).data.clear();
        c.node(1).data.clear();
        const instant asked = c.now();
        REQUIRE(l.renew(asked) == lock_errc::ok);
        REQUIRE(c.run_until(v));
        REQUIRE(rec.count(lock_event_kind::lost) == 1);
        CHECK(rec.events.back().ev.reason == lock_failure::not_ours);
        CHECK(rec.events.back().at < asked + duration::millis(60));
    }
    SECTION("no renew at all: lost at the deadline") {
        REQUIRE(c.run_until(v + duration::millis(10)));
        REQUIRE(rec.count(lock_event_kind::lost) == 1);
        CHECK(rec.events.back().at == v);
    }
    CHECK(l.state() == lock_state::idle);
}

TEST_CASE("renew never resurrects an expired lock unless asked", "[redlock][sim]") {
    for (bool resurrect : {false, true}) {
        sim::cluster c(1, 9);
        sim::recorder rec(c);
        const int a = c.add_client();
        auto opt = sim::fast_options();
        opt.renew_resurrects = resurrect;
        edgelock::lock& l = c.add_lock(a, "jobs", opt);
        REQUIRE(l.acquire(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(c.now() + duration::millis(100)));
        REQUIRE(l.held());
        c.node(0).data.clear();  // expired early (evicted, say)
        REQUIRE(l.renew(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(c.now() + duration::millis(100)));
        if (resurrect) {
            CHECK(rec.count(lock_event_kind::renewed) == 1);
            CHECK(sim::value_at(c, 0, "jobs") == sim::token_hex(l));
        } else {
            CHECK(rec.count(lock_event_kind::lost) == 1);
            CHECK(sim::value_at(c, 0, "jobs").empty());
        }
    }
}

TEST_CASE("reentrant locks count holds per owner", "[lock][sim]") {
    sim::cluster c(3, 10);
    sim::recorder rec(c);
    const int a = c.add_client();
    const int b = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::reentrant;
    opt.owner = "agent-1:task-7";
    edgelock::lock& outer = c.add_lock(a, "jobs", opt);
    edgelock::lock& inner = c.add_lock(a, "jobs", opt);
    auto other_opt = opt;
    other_opt.owner = "agent-2:task-1";
    edgelock::lock& other = c.add_lock(b, "jobs", other_opt);
    auto holds = [&](int node) {
        auto* e = c.node(node).find("{jobs}", c.now().us);
        if (e == nullptr) {
            return std::string("none");
        }
        return e->fields["agent-1:task-7"];
    };

    REQUIRE(outer.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(rec.count(lock_event_kind::acquired) == 1);
    CHECK(rec.events.back().ev.holds == 1);
    REQUIRE(inner.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(rec.count(lock_event_kind::acquired) == 2);
    CHECK(rec.events.back().ev.holds == 2);
    for (int i = 0; i < 3; ++i) {
        CHECK(holds(i) == "2");
    }
    REQUIRE(other.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(rec.count(lock_event_kind::busy) == 1);

    REQUIRE(inner.release(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    for (int i = 0; i < 3; ++i) {
        CHECK(holds(i) == "1");
    }
    REQUIRE(outer.renew(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(rec.count(lock_event_kind::renewed) == 1);
    REQUIRE(outer.release(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    for (int i = 0; i < 3; ++i) {
        CHECK(holds(i) == "none");
    }
    REQUIRE(other.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(other.held());
}

TEST_CASE("fencing tokens on a single node: INCR, never below the server clock", "[lock][sim]") {
    sim::cluster c(1, 11);
    sim::recorder rec(c);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::fenced;
    edgelock::lock& l = c.add_lock(a, "jobs", opt);
    std::uint64_t last = 0;
    for (int k = 0; k < 3; ++k) {
        // The counter is raised to the server's TIME (microseconds) first.
        const auto clock = static_cast<std::uint64_t>(sim::redis_node::time_us(c.now().us));
        REQUIRE(l.acquire(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(c.now() + duration::millis(100)));
        REQUIRE(l.held());
        CHECK(l.fence() > clock);
        CHECK(l.fence() < clock + 100000);  // the round ended within 100 ms
        CHECK(l.fence() > last);
        CHECK(rec.events.back().ev.fence == l.fence());
        last = l.fence();
        REQUIRE(l.release(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(c.now() + duration::millis(100)));
    }
    CHECK(c.node(0).find("{jobs}:fence", c.now().us)->str == std::to_string(last));
    // A counter ahead of the clock (set by hand, say) just counts up by one.
    const std::uint64_t ahead = last + 1000000000;
    c.node(0).find("{jobs}:fence", c.now().us)->str = std::to_string(ahead);
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(l.held());
    CHECK(l.fence() == ahead + 1);
}

TEST_CASE("fencing tokens keep increasing after a restart empty or from an old snapshot",
          "[lock][sim]") {
    sim::cluster c(1, 14);
    sim::recorder rec(c);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::fenced;
    edgelock::lock& l = c.add_lock(a, "jobs", opt);
    auto acquire_release = [&] {
        REQUIRE(l.acquire(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(c.now() + duration::millis(100)));
        REQUIRE(l.held());
        const std::uint64_t token = l.fence();
        REQUIRE(l.release(c.now()) == lock_errc::ok);
        REQUIRE(c.run_until(c.now() + duration::millis(100)));
        return token;
    };
    // A small counter as plain INCR leaves it: the clock takes over.
    sim::redis_node::entry e;
    e.str = "41";
    c.node(0).data["{jobs}:fence"] = e;
    const std::uint64_t first = acquire_release();
    CHECK(first > 41);
    // The node loses its keyspace (no persistence): the next token is higher.
    c.crash(0);
    c.run_until(c.now() + duration::millis(500));
    c.restart(0, false);
    const std::uint64_t second = acquire_release();
    CHECK(second > first);
    // The node comes back from an old snapshot: its counter went back to 41.
    c.crash(0);
    c.run_until(c.now() + duration::millis(500));
    c.restart(0, true);
    c.node(0).data["{jobs}:fence"] = e;
    CHECK(acquire_release() > second);
}

TEST_CASE("fencing under Redlock takes max + 1 of a quorum and raises it", "[redlock][sim]") {
    sim::cluster c(3, 12);
    sim::recorder rec(c);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::fenced;
    edgelock::lock& l = c.add_lock(a, "jobs", opt);
    // Counters ahead of every node's clock, so that max + 1 shows.
    const std::uint64_t x =
        static_cast<std::uint64_t>(sim::redis_node::time_us(c.now().us)) + 1000000000000;
    auto counter = [&](int node, std::uint64_t v) {
        sim::redis_node::entry e;
        e.str = std::to_string(v);
        c.node(node).data["{jobs}:fence"] = e;
    };
    // Per-node INCR would hand out x+6 on {1, 2} after x+100 was issued via node 0.
    counter(0, x + 100);
    counter(1, x + 5);
    counter(2, x + 5);
    c.crash(0);
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(l.held());
    CHECK(l.fence() == x + 6);
    REQUIRE(l.release(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    c.restart(0, true);
    c.crash(1);
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(l.held());
    CHECK(l.fence() == x + 101);
    CHECK(c.node(2).find("{jobs}:fence", c.now().us)->str == std::to_string(x + 101));
}

TEST_CASE("fencing under Redlock: a node that lost its counter reports its clock",
          "[redlock][sim]") {
    sim::cluster c(3, 15);
    sim::recorder rec(c);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::fenced;
    edgelock::lock& l = c.add_lock(a, "jobs", opt);
    for (int node = 0; node < 3; ++node) {
        sim::redis_node::entry e;
        e.str = "7";
        c.node(node).data["{jobs}:fence"] = e;
    }
    const auto clock = static_cast<std::uint64_t>(sim::redis_node::time_us(c.now().us));
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(l.held());
    const std::uint64_t first = l.fence();
    CHECK(first > clock);
    REQUIRE(l.release(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    // Two of three nodes come back empty: a quorum no longer remembers it.
    c.crash(0);
    c.crash(1);
    c.run_until(c.now() + duration::millis(500));
    c.restart(0, false);
    c.restart(1, false);
    c.crash(2);
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(l.held());
    CHECK(l.fence() > first);
    const std::string raised = c.node(0).find("{jobs}:fence", c.now().us)->str;
    CHECK(raised == std::to_string(l.fence()));
}

TEST_CASE("NOSCRIPT falls back to EVAL once per node", "[lock][sim]") {
    sim::cluster c(3, 13);
    sim::recorder rec(c);
    const int a = c.add_client();
    edgelock::lock& l = c.add_lock(a, "jobs", sim::fast_options());
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(l.held());
    for (int i = 0; i < 3; ++i) {
        CHECK(c.node(i).noscripts == 1);
        CHECK(c.node(i).evals == 1);
    }
    REQUIRE(l.renew(c.now()) == lock_errc::ok);  // renew script: not cached yet
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(rec.count(lock_event_kind::renewed) == 1);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.node(i).noscripts == 2);
    }
    REQUIRE(l.renew(c.now()) == lock_errc::ok);  // now cached: EVALSHA only
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(rec.count(lock_event_kind::renewed) == 2);
    for (int i = 0; i < 3; ++i) {
        CHECK(c.node(i).noscripts == 2);
    }
    // A restart with AOF keeps the key but not the script cache.
    c.crash(1);
    c.restart(1, true);
    REQUIRE(l.release(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(rec.events.back().ev.kind == lock_event_kind::released);
    for (int i = 0; i < 3; ++i) {
        CHECK(sim::value_at(c, i, "jobs").empty());
    }
}

TEST_CASE("retrying mode waits out a holder", "[lock][sim]") {
    sim::cluster c(3, 14);
    sim::recorder rec(c);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.max_tries = 100;
    opt.wait = duration::seconds(2);
    opt.retry_min = duration::millis(20);
    opt.retry_max = duration::millis(40);
    edgelock::lock& l = c.add_lock(a, "jobs", opt);
    for (int i = 0; i < 3; ++i) {
        sim::hold_as(c, i, "jobs", "someone-else", duration::millis(300));
    }
    const instant t0 = c.now();
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    REQUIRE(c.run_until(t0 + duration::millis(900)));
    REQUIRE(rec.count(lock_event_kind::acquired) == 1);
    CHECK(rec.events.size() == 1);
    CHECK(rec.events.back().at >= t0 + duration::millis(300));
    CHECK(rec.events.back().at < t0 + duration::millis(400));

    // A second contender gives up at its wait deadline.
    REQUIRE(l.renew(c.now()) == lock_errc::ok);
    auto opt2 = opt;
    opt2.wait = duration::millis(500);
    edgelock::lock& l2 = c.add_lock(a, "jobs", opt2);
    const instant t1 = c.now();
    REQUIRE(l2.acquire(t1) == lock_errc::ok);
    REQUIRE(c.run_until(t1 + duration::millis(600)));
    REQUIRE(rec.count(lock_event_kind::renewed) == 1);
    REQUIRE(rec.count(lock_event_kind::busy) == 1);
    CHECK(rec.last()->ev.kind == lock_event_kind::busy);
    CHECK(rec.last()->at <= t1 + opt2.wait);
    CHECK(rec.last()->at + opt.retry_max + duration::millis(60) > t1 + opt2.wait);
    CHECK(l2.state() == lock_state::idle);
}

TEST_CASE("locks sharing connections are pipelined", "[lock][sim]") {
    sim::cluster c(3, 15);
    sim::recorder rec(c);
    const int a = c.add_client();
    std::vector<edgelock::lock*> locks;
    for (int i = 0; i < 8; ++i) {
        locks.push_back(&c.add_lock(a, "job-" + std::to_string(i), sim::fast_options()));
    }
    for (auto* l : locks) {
        REQUIRE(l->acquire(c.now()) == lock_errc::ok);
    }
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(rec.count(lock_event_kind::acquired) == 8);
    for (auto* l : locks) {
        REQUIRE(l->release(c.now()) == lock_errc::ok);
    }
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    CHECK(rec.count(lock_event_kind::released) == 8);
}

TEST_CASE("a release tells nodes that no longer held the key from silent ones", "[redlock][sim]") {
    sim::cluster c(5, 3);
    sim::recorder rec(c);
    const int a = c.add_client();
    edgelock::lock& l = c.add_lock(a, "jobs", sim::fast_options());
    REQUIRE(l.acquire(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(100)));
    REQUIRE(l.held());
    // Taken on two nodes (evicted, then someone else's), silent on one.
    sim::hold_as(c, 0, "jobs", "someone-else", duration::millis(700));
    sim::hold_as(c, 1, "jobs", "someone-else", duration::millis(700));
    c.crash(4);
    REQUIRE(l.release(c.now()) == lock_errc::ok);
    REQUIRE(c.run_until(c.now() + duration::millis(300)));
    REQUIRE(rec.events.back().ev.kind == lock_event_kind::released);
    CHECK(rec.events.back().ev.nodes == 2);
    CHECK(rec.events.back().ev.absent == 2);
    CHECK(sim::value_at(c, 0, "jobs") == "someone-else");
}
