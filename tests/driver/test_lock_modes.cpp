// Reentrant and fenced locks through the real driver against simulated
// nodes (sim/cluster.hpp): holds counted per owner, and fencing tokens that
// only go up, across restarts and Redlock quorums.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/cluster.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::lock_event_kind;
using edgelock::lock_mode;

TEST_CASE("reentrant locks count holds per owner", "[lock][sim]") {
    sim::cluster c(3, 10);
    const int a = c.add_client();
    const int b = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::reentrant;
    opt.owner = "agent-1:task-7";
    edgelock::client_lock& outer = c.add_lock(a, "jobs", opt);
    edgelock::client_lock& inner = c.add_lock(a, "jobs", opt);
    auto other_opt = opt;
    other_opt.owner = "agent-2:task-1";
    edgelock::client_lock& other = c.add_lock(b, "jobs", other_opt);
    auto holds = [&](int node) {
        auto* e = c.node(node).find("jobs", c.now().us);
        if (e == nullptr) {
            return std::string("none");
        }
        return e->fields["agent-1:task-7"];
    };

    REQUIRE(c.acquire(outer) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(c.count(lock_event_kind::acquired) == 1);
    CHECK(c.events.back().ev.holds == 1);
    REQUIRE(c.acquire(inner) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(c.count(lock_event_kind::acquired) == 2);
    CHECK(c.events.back().ev.holds == 2);
    for (int i = 0; i < 3; ++i) {
        CHECK(holds(i) == "2");
    }
    REQUIRE(c.acquire(other) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(c.count(lock_event_kind::busy) == 1);

    REQUIRE(inner.start_release() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    for (int i = 0; i < 3; ++i) {
        CHECK(holds(i) == "1");
    }
    REQUIRE(outer.start_renew() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(c.count(lock_event_kind::renewed) == 1);
    REQUIRE(outer.start_release() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    for (int i = 0; i < 3; ++i) {
        CHECK(holds(i) == "none");
    }
    REQUIRE(c.acquire(other) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    CHECK(other.held());
}

TEST_CASE("fencing tokens on a single node: INCR, never below the server clock", "[lock][sim]") {
    sim::cluster c(1, 11);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::fenced;
    edgelock::client_lock& l = c.add_lock(a, "jobs", opt);
    std::uint64_t last = 0;
    for (int k = 0; k < 3; ++k) {
        // The counter is raised to the server's TIME (microseconds) first.
        const auto clock = static_cast<std::uint64_t>(sim::redis_node::time_us(c.now().us));
        REQUIRE(c.acquire(l) == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(100)));
        REQUIRE(l.held());
        CHECK(l.fence() > clock);
        CHECK(l.fence() < clock + 100000);  // the round ended within 100 ms
        CHECK(l.fence() > last);
        CHECK(c.events.back().ev.fence == l.fence());
        last = l.fence();
        REQUIRE(l.start_release() == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(100)));
    }
    CHECK(c.node(0).find("{jobs}:fence", c.now().us)->str == std::to_string(last));
    // A counter ahead of the clock (set by hand, say) just counts up by one.
    const std::uint64_t ahead = last + 1000000000;
    c.node(0).find("{jobs}:fence", c.now().us)->str = std::to_string(ahead);
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(l.held());
    CHECK(l.fence() == ahead + 1);
}

TEST_CASE("fencing tokens keep increasing after a restart empty or from an old snapshot",
          "[lock][sim]") {
    sim::cluster c(1, 14);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::fenced;
    edgelock::client_lock& l = c.add_lock(a, "jobs", opt);
    auto acquire_release = [&] {
        REQUIRE(c.acquire(l) == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(100)));
        REQUIRE(l.held());
        const std::uint64_t token = l.fence();
        REQUIRE(l.start_release() == client_errc::ok);
        REQUIRE(c.run_for(duration::millis(100)));
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
    REQUIRE(c.run_for(duration::millis(500)));
    c.restart(0, false);
    const std::uint64_t second = acquire_release();
    CHECK(second > first);
    // The node comes back from an old snapshot: its counter went back to 41.
    c.crash(0);
    REQUIRE(c.run_for(duration::millis(500)));
    c.restart(0, true);
    c.node(0).data["{jobs}:fence"] = e;
    CHECK(acquire_release() > second);
}

TEST_CASE("fencing under Redlock takes max + 1 of a quorum and raises it", "[redlock][sim]") {
    sim::cluster c(3, 12);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::fenced;
    edgelock::client_lock& l = c.add_lock(a, "jobs", opt);
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
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(l.held());
    CHECK(l.fence() == x + 6);
    REQUIRE(l.start_release() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    c.restart(0, true);
    c.crash(1);
    REQUIRE(c.run_for(duration::millis(25)));  // past the reconnect backoff
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(l.held());
    CHECK(l.fence() == x + 101);
    CHECK(c.node(2).find("{jobs}:fence", c.now().us)->str == std::to_string(x + 101));
}

TEST_CASE("fencing under Redlock: a node that lost its counter reports its clock",
          "[redlock][sim]") {
    sim::cluster c(3, 15);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::fenced;
    edgelock::client_lock& l = c.add_lock(a, "jobs", opt);
    for (int node = 0; node < 3; ++node) {
        sim::redis_node::entry e;
        e.str = "7";
        c.node(node).data["{jobs}:fence"] = e;
    }
    const auto clock = static_cast<std::uint64_t>(sim::redis_node::time_us(c.now().us));
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(l.held());
    const std::uint64_t first = l.fence();
    CHECK(first > clock);
    REQUIRE(l.start_release() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    // Two of three nodes come back empty: a quorum no longer remembers it.
    c.crash(0);
    c.crash(1);
    REQUIRE(c.run_for(duration::millis(500)));
    c.restart(0, false);
    c.restart(1, false);
    c.crash(2);
    REQUIRE(c.run_for(duration::millis(25)));  // past the reconnect backoff
    REQUIRE(c.acquire(l) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)));
    REQUIRE(l.held());
    CHECK(l.fence() > first);
    const std::string raised = c.node(0).find("{jobs}:fence", c.now().us)->str;
    CHECK(raised == std::to_string(l.fence()));
}

TEST_CASE("reentrant: a lock lost while its node was down cannot touch a later hold of its owner",
          "[lock][sim][reentrant]") {
    sim::cluster c(1, 16);
    const int a = c.add_client();
    auto opt = sim::fast_options();
    opt.mode = lock_mode::reentrant;
    opt.owner = "task-42";
    edgelock::client_lock& first = c.add_lock(a, "jobs", opt, true);  // with its watchdog
    edgelock::client_lock& second = c.add_lock(a, "jobs", opt);
    auto holds = [&] {
        auto* e = c.node(0).find("jobs", c.now().us);
        return e == nullptr ? std::string("none") : e->fields["task-42"];
    };
    REQUIRE(c.acquire(first) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(50)));
    REQUIRE(first.held());
    CHECK(holds() == "1");

    // The node dies: the watchdog's renews cannot reach it, the lock is lost
    // at its validity deadline; then it comes back empty.
    const edgelock::instant validity = first.validity_deadline();
    c.crash(0);
    REQUIRE(c.run_until(validity + duration::millis(10)));
    REQUIRE(c.count(lock_event_kind::lost) == 1);
    CHECK(c.last()->ev.reason == edgelock::lock_failure::validity_ended);
    c.restart(0, false);
    REQUIRE(c.run_for(duration::millis(25)));  // past the reconnect backoff

    // Another lock of the same owner takes the key; whatever the lost one
    // still had lands on this hold: its cleanup, a decrement of its own
    // hold's field, which the key no longer has, changes nothing.
    REQUIRE(c.acquire(second) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(200)));
    REQUIRE(second.held());
    CHECK(holds() == "1");
    CHECK(c.count_script(0, edgelock::script_reentrant_release) == 1);
    CHECK(c.count_script(0, edgelock::script_reentrant_renew) == 0);
    REQUIRE(second.start_release() == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(50)));
    CHECK(holds() == "none");
}
