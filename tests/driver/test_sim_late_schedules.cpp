// Random schedules with late bytes (driver/late_faults.hpp): contending
// clients whose connections are given up while their way in is slow, and
// whose given-up requests reach the nodes up to two ttls later, on one node
// and under Redlock over three, in every mode, and for semaphores. Checked
// as the other random schedules are (driver/sim_schedule.hpp: at most one
// holder, fencing tokens in order; driver/permit_schedule.hpp: at most n
// holders, each its own permit), with the crashes, pauses and latency spikes
// of sim_schedule.hpp's faults in half of them.
//
// Each configuration runs every schedule and reports how many violated the
// checks, and the first; it also requires that the fault fired: connections
// given up, requests held back and run after their connection closed.
// EDGELOCK_SIM_SCHEDULES scales the counts (a tenth of it per
// configuration); EDGELOCK_SIM_ONLY=<seed> EDGELOCK_SIM_TRACE=1 runs one
// schedule of each configuration and prints every request and event.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "driver/late_faults.hpp"
#include "driver/permit_schedule.hpp"
#include "driver/sim_schedule.hpp"

using namespace edgelock_test;

namespace {

// What a schedule's world needs besides its checker: nodes, clients, faults.
void build(schedule& s, int nodes, int clients, int attempts_max, const std::string& note) {
    std::mt19937_64& rng = s.rng;
    s.net.add_nodes(nodes);
    const bool tracking = (rng() & 1) != 0;
    for (int i = 0; i < nodes; ++i) {
        sim::node_faults& f = s.net.faults(i);
        f.latency_min_us = pick(rng, 200, 2000);
        f.latency_max_us = f.latency_min_us + pick(rng, 0, 3000);
        s.net.node(i).tracking = tracking;
    }
    const edgelock::client_options co = late_client_options(rng);
    s.urls = std::make_unique<node_urls>(s.net, nodes);
    for (int i = 0; i < clients; ++i) {
        auto c = std::make_unique<contender>();
        c->owner = "client-" + std::to_string(i);
        configure(*c->client, *s.urls, co);
        c->attempts_left = static_cast<int>(pick(rng, 2, static_cast<std::uint64_t>(attempts_max)));
        s.who.push_back(std::move(c));
    }
    if (s.trace) {
        std::printf(
            "%s nodes=%d clients=%d mode=%d ttl=%llu timeout=%llu connect=%llu stall=%llu\n",
            note.c_str(), nodes, clients, static_cast<int>(s.opt.mode),
            static_cast<unsigned long long>(s.opt.ttl.us),
            static_cast<unsigned long long>(s.opt.node_timeout.us),
            static_cast<unsigned long long>(co.connect_timeout.us),
            static_cast<unsigned long long>(co.stall_timeout.us));
        s.net.on_command = [&s](int node, std::uint64_t conn,
                                const std::vector<std::string>& argv) {
            trace_command(s, node, conn, argv);
        };
    }
    const std::uint64_t horizon = s.now() + pick(rng, 500, 3000) * 1000;
    std::vector<int> all;
    for (int i = 0; i < nodes; ++i) {
        all.push_back(i);
    }
    add_late_faults(s, all, horizon, give_up_after{co.connect_timeout, co.stall_timeout});
    if ((rng() & 1) != 0) {
        s.add_faults(nodes, horizon);
    }
    for (int i = 0; i < clients; ++i) {
        s.schedule_attempt(i);
    }
}

void run_lock(std::uint64_t seed, int nodes, lock_mode mode, late_tally& t) {
    schedule s(seed, 4500 + static_cast<std::uint64_t>(nodes) * 4 + static_cast<int>(mode));
    late_lock_options(s.rng, s.opt);
    s.opt.mode = mode;
    const int clients = static_cast<int>(pick(s.rng, 2, 4));
    build(s, nodes, clients, 4, "seed " + std::to_string(seed));
    for (int i = 0; i < clients; ++i) {
        contender& c = s.at(i);
        edgelock::lock_options o = s.opt;
        if (mode == lock_mode::reentrant) {
            o.owner = edgelock::str_view(c.owner.data(), c.owner.size());
        }
        REQUIRE(c.lock.attach(*c.client, "res", o) == client_errc::ok);
        c.lock.set_callback(&schedule::on_event, &s);
        s.loop.add(*c.client);
    }
    finish(s, s.loop.run_until_idle(400000));
    t.add(seed, s, nodes);
}

void run_permits(std::uint64_t seed, int nodes, int limit, late_tally& t) {
    permit_schedule p(seed, 4600 + static_cast<std::uint64_t>(nodes * 8 + limit), limit);
    schedule& s = p.s;
    late_lock_options(s.rng, s.opt);
    s.opt.permits = static_cast<std::uint8_t>(limit);
    s.opt.mode = (seed & 1) != 0 ? lock_mode::fenced : lock_mode::plain;
    constexpr int clients = 5;
    p.permit.assign(clients, -1);
    build(s, nodes, clients, 4, "seed " + std::to_string(seed));
    for (int i = 0; i < clients; ++i) {
        contender& c = s.at(i);
        REQUIRE(c.lock.attach(*c.client, "res", s.opt) == client_errc::ok);
        c.lock.set_callback(&permit_schedule::on_event, &p);
        s.loop.add(*c.client);
    }
    finish(s, s.loop.run_until_idle(400000));
    t.add(seed, s, nodes);
}

void locks(int nodes, lock_mode mode, const char* mode_name) {
    const std::string what =
        std::to_string(nodes) + (nodes == 1 ? " node, " : " nodes, ") + mode_name;
    run_late_configuration(
        what, [nodes, mode](std::uint64_t seed, late_tally& t) { run_lock(seed, nodes, mode, t); });
}

void permits(int nodes, int limit) {
    const std::string what = std::to_string(nodes) + (nodes == 1 ? " node, " : " nodes, ") +
                             std::to_string(limit) + " permits";
    run_late_configuration(what, [nodes, limit](std::uint64_t seed, late_tally& t) {
        run_permits(seed, nodes, limit, t);
    });
}

}  // namespace

TEST_CASE("late bytes: mutual exclusion over random schedules on one node", "[sim][late]") {
    SECTION("plain") {
        locks(1, lock_mode::plain, "plain");
    }
    SECTION("reentrant") {
        locks(1, lock_mode::reentrant, "reentrant");
    }
    SECTION("fenced") {
        locks(1, lock_mode::fenced, "fenced");
    }
}

TEST_CASE("late bytes: mutual exclusion over random schedules under Redlock of three",
          "[sim][late][redlock]") {
    SECTION("plain") {
        locks(3, lock_mode::plain, "plain");
    }
    SECTION("reentrant") {
        locks(3, lock_mode::reentrant, "reentrant");
    }
    SECTION("fenced") {
        locks(3, lock_mode::fenced, "fenced");
    }
}

TEST_CASE("late bytes: at most n holders of a semaphore over random schedules",
          "[sim][late][permits]") {
    SECTION("one node, 2 permits") {
        permits(1, 2);
    }
    SECTION("one node, 3 permits") {
        permits(1, 3);
    }
    SECTION("Redlock over three nodes, 2 permits") {
        permits(3, 2);
    }
    SECTION("Redlock over three nodes, 3 permits") {
        permits(3, 3);
    }
}
