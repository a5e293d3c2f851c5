// Random schedules with late bytes (driver/late_faults.hpp) on the
// topologies a lock node can be, as test_lock_sim_topology.cpp runs them
// without late bytes, checked by driver/sim_schedule.hpp (at most one
// holder, fencing tokens in order):
//
//   sentinel - one redis-sentinel:// node: a master, 1-2 replicas, 1-3
//              sentinels; a failover promotes an exact copy while the lock
//              is contended, and the old master is killed or answers
//              READONLY at once (the failovers that keep the lock safe).
//              Late requests to the old master then find it gone or refusing.
//   cluster  - one redis-cluster:// node on 2-3 masters; the lock's slot
//              migrates (IMPORTING / MIGRATING, keys moved, slot handed
//              over) while contended, so late requests may meet ASK or MOVED.
//
// The data nodes' way in slows now and then and their closed connections'
// requests may come up to two ttls late; the lock modes are drawn per
// schedule. EDGELOCK_SIM_ONLY=<seed> EDGELOCK_SIM_TRACE=1 replays one.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "driver/late_faults.hpp"
#include "driver/sim_schedule.hpp"
#include "sim/sentinel.hpp"
#include "sim/slot_cluster.hpp"

using namespace edgelock_test;

namespace {

enum class topology : std::uint8_t { sentinel, cluster };

void run_topology(std::uint64_t seed, topology kind, late_tally& t) {
    schedule s(seed, 4700 + static_cast<std::uint64_t>(kind));
    std::mt19937_64& rng = s.rng;
    late_lock_options(rng, s.opt);
    const std::uint64_t mode_pick = pick(rng, 0, 2);
    s.opt.mode = mode_pick == 0   ? lock_mode::plain
                 : mode_pick == 1 ? lock_mode::reentrant
                                  : lock_mode::fenced;
    edgelock::client_options co = late_client_options(rng);
    co.sentinel_timeout = duration::millis(pick(rng, 30, 150));
    const std::uint64_t ttl_us = s.opt.ttl.us;
    const std::uint64_t horizon = s.now() + pick(rng, 500, 3000) * 1000;

    std::string url;
    std::vector<int> data;
    std::unique_ptr<sim::sentinel_group> group;
    std::unique_ptr<sim::slot_cluster> slots;
    if (kind == topology::sentinel) {
        group = std::make_unique<sim::sentinel_group>(s.net, static_cast<int>(pick(rng, 2, 3)),
                                                      static_cast<int>(pick(rng, 1, 3)));
        url = group->url();
        data.push_back(group->master);
        data.insert(data.end(), group->replicas.begin(), group->replicas.end());
    } else {
        slots = std::make_unique<sim::slot_cluster>(s.net, static_cast<int>(pick(rng, 2, 3)));
        url = (rng() & 1) != 0 ? slots->url({0}) : slots->url({1, 0});
        data = slots->masters;
    }
    const bool tracking = (rng() & 1) != 0;
    for (int i = 0; i < s.net.node_count(); ++i) {
        sim::node_faults& f = s.net.faults(i);
        f.latency_min_us = pick(rng, 200, 2000);
        f.latency_max_us = f.latency_min_us + pick(rng, 0, 3000);
        s.net.node(i).tracking = tracking;
    }
    const edgelock::str_view view(url.data(), url.size());
    const int clients = static_cast<int>(pick(rng, 2, 4));
    for (int i = 0; i < clients; ++i) {
        auto c = std::make_unique<contender>();
        c->owner = "client-" + std::to_string(i);
        REQUIRE(c->client->configure(&view, 1, co) == client_errc::ok);
        c->attempts_left = static_cast<int>(pick(rng, 2, 4));
        s.who.push_back(std::move(c));
    }
    for (int i = 0; i < clients; ++i) {
        contender& c = s.at(i);
        edgelock::lock_options o = s.opt;
        if (o.mode == lock_mode::reentrant) {
            o.owner = edgelock::str_view(c.owner.data(), c.owner.size());
        }
        REQUIRE(c.lock.attach(*c.client, "res", o) == client_errc::ok);
        c.lock.set_callback(&schedule::on_event, &s);
        s.loop.add(*c.client);
    }
    if (s.trace) {
        std::printf("seed %llu topology %d clients %d mode %d ttl %llu url %s\n",
                    static_cast<unsigned long long>(seed), static_cast<int>(kind), clients,
                    static_cast<int>(s.opt.mode), static_cast<unsigned long long>(ttl_us),
                    url.c_str());
        s.net.on_command = [&s](int node, std::uint64_t conn,
                                const std::vector<std::string>& argv) {
            trace_command(s, node, conn, argv);
        };
    }
    add_late_faults(s, data, horizon, give_up_after{co.connect_timeout, co.stall_timeout});
    if (kind == topology::sentinel) {
        sim::sentinel_group& g = *group;
        const int to = g.replicas[static_cast<std::size_t>(pick(rng, 0, g.replicas.size() - 1))];
        const sim::old_master fate =
            (rng() & 1) != 0 ? sim::old_master::killed : sim::old_master::demoted;
        const std::uint64_t at = s.now() + pick(rng, ttl_us / 2, horizon - s.now());
        s.net.at(instant{at}, [&g, &s, to, fate] {
            if (s.trace) {
                std::printf("%llu failover to %d fate %d\n",
                            static_cast<unsigned long long>(s.now()), to, static_cast<int>(fate));
            }
            g.promote(to, true, fate);
        });
    } else {
        sim::slot_cluster& k = *slots;
        const int slot = sim::slot_cluster::slot_of("res");
        const int from = k.owner(slot);
        const int to = static_cast<int>(
            (static_cast<std::uint64_t>(from) + pick(rng, 1, k.masters.size() - 1)) %
            k.masters.size());
        std::uint64_t at = s.now() + pick(rng, 0, horizon - s.now());
        s.net.at(instant{at}, [&k, slot, to] { k.begin(slot, to); });
        at += pick(rng, 0, 2 * ttl_us);
        s.net.at(instant{at}, [&k, slot] { k.move_keys(slot); });
        at += pick(rng, 0, 2 * ttl_us);
        s.net.at(instant{at}, [&k, slot] { k.hand_over(slot); });
    }
    for (int i = 0; i < clients; ++i) {
        s.schedule_attempt(i);
    }
    // Sentinel watches and Cluster connections keep reconnecting to what is
    // down: the run ends at a time every attempt has ended by (each of up to
    // four: begun within a ttl, a wait, a hold of up to two ttls, and time
    // for the release).
    const std::uint64_t attempt_us = 3 * ttl_us + s.opt.wait.us + 1000000;
    finish(s, s.loop.run_until(instant{horizon + 4 * attempt_us}, 400000));
    t.add(seed, s, 1);
}

}  // namespace

TEST_CASE("late bytes: mutual exclusion over random schedules on a Sentinel-managed master",
          "[sim][late][sentinel]") {
    run_late_configuration("sentinel", [](std::uint64_t seed, late_tally& t) {
        run_topology(seed, topology::sentinel, t);
    });
}

TEST_CASE("late bytes: mutual exclusion over random schedules on a Cluster",
          "[sim][late][cluster]") {
    run_late_configuration("cluster", [](std::uint64_t seed, late_tally& t) {
        run_topology(seed, topology::cluster, t);
    });
}
