// Random schedules on independent nodes: contending clients, faulty nodes,
// and the two safety properties that must survive them all (mutual exclusion
// and fencing, checked by driver/sim_schedule.hpp), through the real driver
// (client<N>, client_lock, its watchdog) on the test port. The Sentinel and
// Cluster topologies, and notification, are in test_lock_sim_topology.cpp.
//
// Each client is its own client<N> with its own connections, driven by one
// event loop (sim/event_loop.hpp). The simulation keeps the drift bound
// trivially (one clock for all), so a violation is a bug in the library, not
// bad luck. Restarts that lose the keyspace happen only after the node was
// down longer than the ttl (Redlock's delayed restart), in the fencing runs
// too: a counter lost with the keyspace starts again from the server clock.
//
// Besides the lock's shape (nodes, ttl, node_timeout, mode, quorum, losses,
// crashes, restarts, pauses, latency spikes), each schedule draws the
// client's: timeouts and backoff, RESP2 or RESP3, a password, a database,
// and nodes that refuse SCRIPT LOAD (so requests go by NOSCRIPT and EVAL).
//
// EDGELOCK_SIM_SCHEDULES raises (or lowers) the schedule counts for long runs.
// To look into a failure: EDGELOCK_SIM_ONLY=<schedule> EDGELOCK_SIM_TRACE=1
// runs that one schedule and prints every request and event.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "driver/sim_schedule.hpp"

using namespace edgelock_test;

namespace {

// One schedule. fenced: fenced mode only.
outcome run_schedule(std::uint64_t seed, bool fenced) {
    schedule s(seed, fenced ? 17 : 3);
    std::mt19937_64& rng = s.rng;
    static const int sizes[] = {1, 2, 3, 3, 5, 5, 7};
    const int n = sizes[pick(rng, 0, sizeof sizes / sizeof sizes[0] - 1)];
    s.net.add_nodes(n);
    const bool scripts_load = (rng() & 3) != 0;

    edgelock::lock_options& opt = s.opt;
    opt.ttl = duration::millis(pick(rng, 40, 300));
    opt.node_timeout = duration::millis(pick(rng, 2, 25));
    opt.retry_min = duration::millis(pick(rng, 1, 10));
    opt.retry_max = opt.retry_min + duration::millis(pick(rng, 0, 30));
    opt.max_tries = static_cast<std::uint32_t>(pick(rng, 1, 4));
    opt.wait = duration::millis(pick(rng, 20, 400));
    const std::uint64_t mode_pick = pick(rng, 0, 2);
    opt.mode = fenced
                   ? lock_mode::fenced
                   : (mode_pick == 0 ? lock_mode::plain
                                     : (mode_pick == 1 ? lock_mode::reentrant : lock_mode::fenced));
    if (n >= 3 && (rng() & 3) == 0) {
        opt.quorum =
            static_cast<std::uint8_t>(static_cast<std::uint64_t>(n / 2 + 1) + pick(rng, 0, 1));
    }
    const double losses[] = {0.0, 0.0, 0.01, 0.05};
    for (int i = 0; i < n; ++i) {
        sim::node_faults& f = s.net.faults(i);
        f.latency_min_us = pick(rng, 20, 2000);
        f.latency_max_us = f.latency_min_us + pick(rng, 0, 8000);
        f.loss = losses[pick(rng, 0, 3)];
    }
    const int clients = static_cast<int>(pick(rng, 2, 4));

    // The client's side of the schedule. Timeouts stay above the slowest
    // round trip a latency spike can make, so every node can be reached again.
    edgelock::client_options co;
    co.connect_timeout = duration::millis(pick(rng, 250, 1000));
    co.reconnect_min = duration::millis(pick(rng, 1, 100));
    co.reconnect_max = co.reconnect_min + duration::millis(pick(rng, 0, 500));
    co.stall_timeout = duration::millis(pick(rng, 250, 5000));
    co.resp3 = pick(rng, 0, 2) == 0;
    co.client_name = (rng() & 1) != 0 ? "edgelock" : "";
    const bool password = (rng() & 3) == 0;
    const std::string db = (rng() & 3) == 0 ? "/" + std::to_string(pick(rng, 1, 15)) : "";
    for (int i = 0; i < n; ++i) {
        if (password) {
            s.net.node(i).password = "s3cret";
        }
        if (!scripts_load) {
            s.net.node(i).refusals["SCRIPT LOAD"] =
                "NOPERM this user has no permissions to run the 'script|load' command";
        }
    }
    s.urls = std::make_unique<edgelock_test::node_urls>(s.net, n, password ? ":s3cret" : "", db);

    for (int i = 0; i < clients; ++i) {
        auto c = std::make_unique<contender>();
        c->owner = "client-" + std::to_string(i);
        edgelock_test::configure(*c->client, *s.urls, co);
        s.who.push_back(std::move(c));
    }
    for (int i = 0; i < clients; ++i) {
        contender& c = s.at(i);
        auto o = opt;
        if (o.mode == lock_mode::reentrant) {
            o.owner = edgelock::str_view(c.owner.data(), c.owner.size());
        }
        REQUIRE(c.lock.attach(*c.client, "res", o) == client_errc::ok);
        c.lock.set_callback(&schedule::on_event, &s);
        s.loop.add(*c.client);
        c.attempts_left = static_cast<int>(pick(rng, 1, 3));
    }

    if (s.trace) {
        std::printf("seed %llu n=%d clients=%d mode=%d ttl=%llu timeout=%llu quorum=%d resp3=%d\n",
                    static_cast<unsigned long long>(seed), n, clients, static_cast<int>(opt.mode),
                    static_cast<unsigned long long>(opt.ttl.us),
                    static_cast<unsigned long long>(opt.node_timeout.us),
                    static_cast<int>(s.at(0).lock.machine().quorum()), co.resp3 ? 1 : 0);
        s.net.on_command = [&s](int node, std::uint64_t conn,
                                const std::vector<std::string>& argv) {
            trace_command(s, node, conn, argv);
        };
    }

    const std::uint64_t horizon = s.now() + pick(rng, 200, 1500) * 1000;
    for (int i = 0; i < clients; ++i) {
        s.schedule_attempt(i);
    }
    s.add_faults(n, horizon);

    finish(s, s.loop.run_until_idle(400000));
    return s.out;
}

}  // namespace

TEST_CASE("mutual exclusion over random schedules", "[redlock][sim]") {
    const std::uint64_t schedules = schedule_count();
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t acquisitions = 0;
    if (const char* only = std::getenv("EDGELOCK_SIM_ONLY")) {
        // The one schedule asked for (any number), checked like any other.
        const std::uint64_t s = std::strtoull(only, nullptr, 10);
        const outcome o = run_schedule(s, false);
        if (!o.violation.empty()) {
            FAIL("schedule " << s << ": " << o.violation);
        }
        return;
    }
    for (std::uint64_t s = 0; s < schedules; ++s) {
        INFO("schedule " << s);  // for a REQUIRE that fails inside it
        const outcome o = run_schedule(s, false);
        acquisitions += o.acquisitions;
        if (!o.violation.empty()) {
            FAIL("schedule " << s << ": " << o.violation);
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("mutual exclusion: %llu schedules, %llu acquisitions, %.2f s\n",
                static_cast<unsigned long long>(schedules),
                static_cast<unsigned long long>(acquisitions), secs);
    CHECK(acquisitions > schedules / 2);
}

TEST_CASE("fencing tokens strictly increase across random acquisitions", "[redlock][sim]") {
    const std::uint64_t wanted = schedule_count();
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t acquisitions = 0;
    const char* only = std::getenv("EDGELOCK_SIM_ONLY");
    std::uint64_t s = only ? std::strtoull(only, nullptr, 10) : 0;
    while (acquisitions < wanted) {
        INFO("schedule " << s);  // for a REQUIRE that fails inside it
        const outcome o = run_schedule(s, true);
        acquisitions += o.acquisitions;
        if (!o.violation.empty()) {
            FAIL("schedule " << s << ": " << o.violation);
        }
        if (only) {
            return;  // the one schedule asked for, checked like any other
        }
        ++s;
        REQUIRE(s < 20 * wanted);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("fencing: %llu acquisitions over %llu schedules, %.2f s\n",
                static_cast<unsigned long long>(acquisitions), static_cast<unsigned long long>(s),
                secs);
}
