// Random schedules for semaphores (lock_options::permits = n): contending
// clients and faulty nodes, on one node and under Redlock over three,
// through the real driver (client<N>, client_lock, its watchdog) on the test
// port, as test_lock_sim_random.cpp runs them for a lock, checked by
// driver/permit_schedule.hpp: at most n holders, each its own permit, and
// (fenced) tokens in order.
//
// Restarts that lose the keyspace happen only after the node was down
// longer than the ttl (sim_schedule.hpp's faults), as for the lock tests.
// EDGELOCK_SIM_ONLY=<seed> EDGELOCK_SIM_TRACE=1 runs one schedule of each
// configuration and prints every request and event.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "driver/permit_schedule.hpp"
#include "driver/sim_schedule.hpp"

using namespace edgelock_test;

namespace {

constexpr std::uint64_t seeds_per_configuration = 40;

struct totals {
    std::uint64_t schedules = 0;
    std::uint64_t acquisitions = 0;
    std::uint64_t fenced = 0;  // acquisitions that carried a token
    std::uint64_t full = 0;    // schedules in which n holders held at once
};

// One schedule: five clients, a semaphore of `limit` permits on `nodes`
// nodes, plain or fenced by the seed's parity.
outcome run_schedule(std::uint64_t seed, int nodes, int limit, totals& sum) {
    permit_schedule p(seed, 101 + static_cast<std::uint64_t>(nodes * 8 + limit), limit);
    schedule& s = p.s;
    std::mt19937_64& rng = s.rng;
    s.net.add_nodes(nodes);
    const bool scripts_load = (rng() & 3) != 0;
    const bool tracking = (rng() & 1) != 0;

    edgelock::lock_options& opt = s.opt;
    opt.permits = static_cast<std::uint8_t>(limit);
    opt.mode = (seed & 1) != 0 ? lock_mode::fenced : lock_mode::plain;
    opt.ttl = duration::millis(pick(rng, 40, 300));
    opt.node_timeout = duration::millis(pick(rng, 2, 25));
    opt.retry_min = duration::millis(pick(rng, 1, 10));
    opt.retry_max = opt.retry_min + duration::millis(pick(rng, 0, 30));
    opt.max_tries = static_cast<std::uint32_t>(pick(rng, 1, 4));
    opt.wait = duration::millis(pick(rng, 20, 400));
    if ((rng() & 1) != 0) {
        opt.holder = "host=gw-7 pid=4242";
    }
    if (nodes >= 3 && (rng() & 3) == 0) {
        opt.quorum = static_cast<std::uint8_t>(nodes / 2 + 2);
    }
    const double losses[] = {0.0, 0.0, 0.01, 0.05};
    for (int i = 0; i < nodes; ++i) {
        sim::node_faults& f = s.net.faults(i);
        f.latency_min_us = pick(rng, 20, 2000);
        f.latency_max_us = f.latency_min_us + pick(rng, 0, 8000);
        f.loss = losses[pick(rng, 0, 3)];
        s.net.node(i).tracking = tracking;
        if (!scripts_load) {
            s.net.node(i).refusals["SCRIPT LOAD"] =
                "NOPERM this user has no permissions to run the 'script|load' command";
        }
    }
    edgelock::client_options co;
    co.connect_timeout = duration::millis(pick(rng, 250, 1000));
    co.reconnect_min = duration::millis(pick(rng, 1, 100));
    co.reconnect_max = co.reconnect_min + duration::millis(pick(rng, 0, 500));
    co.stall_timeout = duration::millis(pick(rng, 250, 5000));
    co.resp3 = pick(rng, 0, 2) == 0;
    s.urls = std::make_unique<edgelock_test::node_urls>(s.net, nodes);

    constexpr int clients = 5;
    p.permit.assign(clients, -1);
    for (int i = 0; i < clients; ++i) {
        auto c = std::make_unique<contender>();
        c->owner = "client-" + std::to_string(i);
        edgelock_test::configure(*c->client, *s.urls, co);
        s.who.push_back(std::move(c));
    }
    for (int i = 0; i < clients; ++i) {
        contender& c = s.at(i);
        REQUIRE(c.lock.attach(*c.client, "res", opt) == client_errc::ok);
        c.lock.set_callback(&permit_schedule::on_event, &p);
        s.loop.add(*c.client);
        c.attempts_left = static_cast<int>(pick(rng, 1, 4));
    }
    if (s.trace) {
        std::printf("seed %llu nodes=%d permits=%d mode=%d ttl=%llu timeout=%llu tracking=%d\n",
                    static_cast<unsigned long long>(seed), nodes, limit, static_cast<int>(opt.mode),
                    static_cast<unsigned long long>(opt.ttl.us),
                    static_cast<unsigned long long>(opt.node_timeout.us), tracking ? 1 : 0);
        s.net.on_command = [&s](int node, std::uint64_t conn,
                                const std::vector<std::string>& argv) {
            trace_command(s, node, conn, argv);
        };
    }

    const std::uint64_t horizon = s.now() + pick(rng, 200, 1500) * 1000;
    for (int i = 0; i < clients; ++i) {
        s.schedule_attempt(i);
    }
    s.add_faults(nodes, horizon);
    finish(s, s.loop.run_until_idle(400000));

    ++sum.schedules;
    sum.acquisitions += s.out.acquisitions;
    sum.fenced += p.tokens.size();
    sum.full += p.most == limit ? 1 : 0;
    return s.out;
}

void run_configuration(int nodes, int limit) {
    totals sum;
    std::uint64_t first = 0;
    std::uint64_t count = seeds_per_configuration;
    if (const char* only = std::getenv("EDGELOCK_SIM_ONLY")) {
        first = std::strtoull(only, nullptr, 10);
        count = 1;
    }
    for (std::uint64_t seed = first; seed < first + count; ++seed) {
        INFO("nodes " << nodes << ", permits " << limit << ", schedule " << seed);
        const outcome o = run_schedule(seed, nodes, limit, sum);
        if (!o.violation.empty()) {
            FAIL("nodes " << nodes << ", permits " << limit << ", schedule " << seed << ": "
                          << o.violation);
        }
    }
    std::printf(
        "permits: %d nodes, %d permits: %llu schedules, %llu acquisitions (%llu fenced), "
        "%llu with every permit held at once\n",
        nodes, limit, static_cast<unsigned long long>(sum.schedules),
        static_cast<unsigned long long>(sum.acquisitions),
        static_cast<unsigned long long>(sum.fenced), static_cast<unsigned long long>(sum.full));
    if (count == seeds_per_configuration) {
        // The checks had something to check: contention up to the limit,
        // and tokens to compare.
        CHECK(sum.acquisitions > sum.schedules);
        CHECK(sum.full > 0);
        CHECK(sum.fenced > sum.schedules / 4);
    }
}

}  // namespace

TEST_CASE("sim permits: at most n holders, each its own permit, over random schedules",
          "[sim][permits]") {
    SECTION("one node, 2 permits") {
        run_configuration(1, 2);
    }
    SECTION("one node, 3 permits") {
        run_configuration(1, 3);
    }
    SECTION("Redlock over three nodes, 2 permits") {
        run_configuration(3, 2);
    }
    SECTION("Redlock over three nodes, 3 permits") {
        run_configuration(3, 3);
    }
}
