// Random schedules over the topologies a lock node can be, with waiters told
// of releases (CLIENT TRACKING: RESP3 pushes, or RESP2 through a
// subscription), checked by driver/sim_schedule.hpp:
//
//   standalone - 1, 3 or 5 independent masters (a Redlock), each accepting
//                tracking or refusing it; faults as in test_lock_sim_random.cpp
//                plus connections cut. Mutual exclusion and fencing hold.
//   sentinel   - one redis-sentinel:// node: a master, 1-2 replicas, 1-3
//                sentinels (down, slow, or told of a failover late, so they
//                answer stale; one that never confirms SUBSCRIBE, one that
//                floods +switch-master to a replica and back). Failovers promote a replica while
//                the lock is contended. Mutual exclusion and fencing hold when the replica is an
//                exact copy and the old master stops taking writes at the failover (killed, or
//                READONLY at once). A replica that lost the last writes, or an old master that
//                takes writes until it is demoted later, can lose a lock (two holders): those
//                schedules are drawn too, and there only weak fencing is
//                asserted (a token above every section that had ended before
//                its acquisition began); their overlaps are counted.
//   cluster    - one redis-cluster:// node on 2-3 masters (client<N, 3>), seeds
//                one or two of them; the lock's slot migrates (IMPORTING /
//                MIGRATING, keys moved, slot handed over) while contended, so
//                requests meet ASK, TRYAGAIN and MOVED. Keys move with their
//                ttls: mutual exclusion and fencing hold. A master may
//                misroute for a while (MOVED to itself, MOVED naming another
//                slot, ASK to a master that answers MOVED back): its redirects
//                are capped per request, so each round ends, and the lock is
//                still held by one at a time.
//
// Each topology also asserts that its paths ran, over all its schedules:
// invalidations reached clients and clients acted on them at once (RESP3 and
// RESP2 alike), +switch-master reached a client and a promoted replica then
// served lock requests, MOVED and ASK were answered.
//
// Counts scale with EDGELOCK_SIM_SCHEDULES. To look into a failure:
// EDGELOCK_SIM_ONLY=<schedule> EDGELOCK_SIM_TRACE=1 with the test's name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "driver/sim_schedule.hpp"
#include "sim/sentinel.hpp"
#include "sim/slot_cluster.hpp"

using namespace edgelock_test;

namespace {

enum class topology : std::uint8_t { standalone, sentinel, cluster };

// What a topology's schedules did, summed.
struct tally {
    std::uint64_t schedules = 0;
    std::uint64_t acquisitions = 0;
    std::uint64_t lossy = 0;
    std::uint64_t overlaps = 0;
    std::uint64_t pushed[2] = {0, 0};  // RESP2, RESP3 schedules where invalidations arrived
    std::uint64_t acted[2] = {0, 0};   // ... and a client sent at that instant
    std::uint64_t switched = 0;        // +switch-master reached a client
    std::uint64_t followed = 0;        // a promoted replica served lock requests
    std::uint64_t failovers = 0;
    std::uint64_t moved = 0;
    std::uint64_t asks = 0;
    std::uint64_t misrouted = 0;      // answers of a misrouting master
    std::uint64_t misroute_peak = 0;  // the most in one schedule
};

void common_options(schedule& s, bool fenced) {
    std::mt19937_64& rng = s.rng;
    edgelock::lock_options& opt = s.opt;
    opt.ttl = duration::millis(pick(rng, 60, 300));
    opt.node_timeout = duration::millis(pick(rng, 5, 25));
    // Slow polling, so a waiter told of a release is told well before it polls.
    opt.retry_min = duration::millis(pick(rng, 5, 60));
    opt.retry_max = opt.retry_min + duration::millis(pick(rng, 0, 60));
    opt.max_tries = static_cast<std::uint32_t>(pick(rng, 1, 4));
    opt.wait = duration::millis(pick(rng, 50, 500));
    const std::uint64_t mode_pick = pick(rng, 0, 2);
    opt.mode = fenced || mode_pick == 2
                   ? lock_mode::fenced
                   : (mode_pick == 0 ? lock_mode::plain : lock_mode::reentrant);
}

outcome run_topology(std::uint64_t seed, topology kind, bool fenced, tally& t) {
    schedule s(seed, 1000 + 10 * static_cast<std::uint64_t>(kind) + (fenced ? 1 : 0));
    std::mt19937_64& rng = s.rng;
    common_options(s, fenced);
    const std::uint64_t ttl_us = s.opt.ttl.us;
    edgelock::client_options co;
    co.connect_timeout = duration::millis(pick(rng, 250, 600));
    co.reconnect_min = duration::millis(pick(rng, 1, 30));
    co.reconnect_max = co.reconnect_min + duration::millis(pick(rng, 0, 100));
    co.sentinel_timeout = duration::millis(pick(rng, 30, 150));
    co.resp3 = (rng() & 1) != 0;
    const bool tracking_everywhere = (rng() & 3) != 0;
    const std::uint64_t horizon = s.now() + pick(rng, 300, 1500) * 1000;

    std::vector<std::string> urls;
    std::unique_ptr<sim::sentinel_group> group;
    std::unique_ptr<sim::slot_cluster> slots;
    int data_count = 0;
    int promoted = -1;
    if (kind == topology::standalone) {
        static const int sizes[] = {1, 1, 3, 5};
        data_count = sizes[pick(rng, 0, 3)];
        s.net.add_nodes(data_count);
        for (int i = 0; i < data_count; ++i) {
            urls.push_back(s.net.url(i));
        }
    } else if (kind == topology::sentinel) {
        const int data = static_cast<int>(pick(rng, 2, 3));
        const int watchers = static_cast<int>(pick(rng, 1, 3));
        group = std::make_unique<sim::sentinel_group>(s.net, data, watchers);
        data_count = data;
        urls.push_back(group->url());
    } else {
        const int masters = static_cast<int>(pick(rng, 2, 3));
        slots = std::make_unique<sim::slot_cluster>(s.net, masters);
        data_count = masters;
        urls.push_back((rng() & 1) != 0 ? slots->url({0}) : slots->url({1, 0}));
    }
    for (int i = 0; i < s.net.node_count(); ++i) {
        sim::node_faults& f = s.net.faults(i);
        f.latency_min_us = pick(rng, 100, 2000);
        f.latency_max_us = f.latency_min_us + pick(rng, 0, 4000);
        s.net.node(i).tracking = tracking_everywhere || (rng() & 1) != 0;
    }
    // The schedule's own URL list, kept alive with the clients.
    auto list = std::make_unique<std::vector<std::string>>(urls);
    std::vector<edgelock::str_view> views;
    for (const std::string& u : *list) {
        views.emplace_back(u.data(), u.size());
    }

    const int clients = static_cast<int>(pick(rng, 2, 4));
    for (int i = 0; i < clients; ++i) {
        auto c = std::make_unique<contender>();
        c->owner = "client-" + std::to_string(i);
        REQUIRE(c->client->configure(views.data(), views.size(), co) == client_errc::ok);
        s.who.push_back(std::move(c));
    }
    for (int i = 0; i < clients; ++i) {
        contender& c = s.at(i);
        auto o = s.opt;
        if (o.mode == lock_mode::reentrant) {
            o.owner = edgelock::str_view(c.owner.data(), c.owner.size());
        }
        REQUIRE(c.lock.attach(*c.client, "res", o) == client_errc::ok);
        c.lock.set_callback(&schedule::on_event, &s);
        s.loop.add(*c.client);
        c.attempts_left = static_cast<int>(pick(rng, 2, 4));
    }
    if (s.trace) {
        std::printf("seed %llu topology %d nodes %d clients %d mode %d ttl %llu resp3 %d url %s\n",
                    static_cast<unsigned long long>(seed), static_cast<int>(kind), data_count,
                    clients, static_cast<int>(s.opt.mode), static_cast<unsigned long long>(ttl_us),
                    co.resp3 ? 1 : 0, urls[0].c_str());
        s.net.on_command = [&s](int node, std::uint64_t conn,
                                const std::vector<std::string>& argv) {
            trace_command(s, node, conn, argv);
        };
    }
    for (int i = 0; i < clients; ++i) {
        s.schedule_attempt(i);
    }

    auto note = [&s](const std::string& what) {
        if (s.trace) {
            std::printf("%llu %s\n", static_cast<unsigned long long>(s.now()), what.c_str());
        }
    };
    if (kind == topology::standalone) {
        s.add_faults(data_count, horizon);
        if ((rng() & 1) != 0) {
            const int node =
                static_cast<int>(pick(rng, 0, static_cast<std::uint64_t>(data_count - 1)));
            s.net.at(instant{s.now() + pick(rng, 0, horizon - s.now())}, [&s, node, note] {
                note("cut " + std::to_string(node));
                s.net.cut(node);
            });
        }
    } else if (kind == topology::sentinel) {
        sim::sentinel_group& g = *group;
        const bool exact = (rng() % 3) != 0;
        const std::uint64_t fate_pick = pick(rng, 0, 3);
        const sim::old_master fate = fate_pick == 0   ? sim::old_master::killed
                                     : fate_pick == 3 ? sim::old_master::kept
                                                      : sim::old_master::demoted;
        s.lossy = !exact || fate == sim::old_master::kept;
        const std::uint64_t at = s.now() + pick(rng, ttl_us / 2, horizon - s.now());
        const int to = g.replicas[static_cast<std::size_t>(pick(rng, 0, g.replicas.size() - 1))];
        promoted = to;
        if (!exact) {
            // The replica's copy is from a while before: what came since is lost.
            s.net.at(instant{at - pick(rng, 1000, ttl_us)}, [&g, to] { g.sync(to); });
        }
        const bool late = (rng() & 1) != 0;
        s.net.at(instant{at}, [&g, to, exact, fate, late, note] {
            note("failover to " + std::to_string(to) + " exact " + std::to_string(exact) +
                 " fate " + std::to_string(static_cast<int>(fate)));
            g.promote(to, exact, fate, !late);
        });
        for (std::size_t i = 0; late && i < g.sentinels.size(); ++i) {
            // Told late, one by one: stale answers until then.
            s.net.at(instant{at + pick(rng, 0, 300000)}, [&g, i] { g.tell(static_cast<int>(i)); });
        }
        if (fate == sim::old_master::kept) {
            const int old = g.master;
            s.net.at(instant{at + pick(rng, 1000, 2 * ttl_us)}, [&g, old, note] {
                note("demote " + std::to_string(old));
                g.demote(old);
            });
        }
        // A sentinel down for a while, or slow.
        if ((rng() & 1) != 0) {
            const int sn =
                g.sentinels[static_cast<std::size_t>(pick(rng, 0, g.sentinels.size() - 1))];
            const std::uint64_t when = s.now() + pick(rng, 0, horizon - s.now());
            s.net.at(instant{when}, [&s, sn] { s.net.crash(sn); });
            s.net.at(instant{when + pick(rng, 1000, 500000)},
                     [&s, sn] { s.net.restart(sn, true); });
        }
        // A sentinel that never confirms the watch's SUBSCRIBE; one that
        // floods +switch-master to a replica and back.
        if ((rng() & 3) == 0) {
            g.muted[static_cast<std::size_t>(pick(rng, 0, g.sentinels.size() - 1))] = 1;
            note("a sentinel never confirms SUBSCRIBE");
        }
        if ((rng() & 3) == 0 && !g.replicas.empty()) {
            const int liar = static_cast<int>(pick(rng, 0, g.sentinels.size() - 1));
            const int named =
                g.replicas[static_cast<std::size_t>(pick(rng, 0, g.replicas.size() - 1))];
            const std::uint64_t every = pick(rng, 1000, 5000);
            std::uint64_t when = s.now() + pick(rng, 0, horizon - s.now());
            for (std::uint64_t k = pick(rng, 10, 200); k > 0; --k, when += every) {
                s.net.at(instant{when}, [&g, liar, named] { g.lie(liar, named); });
            }
        }
        if ((rng() & 3) == 0) {
            s.net.faults(g.sentinels[0]).latency_min_us += pick(rng, 0, 100000);
            s.net.faults(g.sentinels[0]).latency_max_us += pick(rng, 0, 100000);
        }
        // Pauses and latency on the data nodes (never a crash that loses data).
        for (int k = static_cast<int>(pick(rng, 0, 2)); k > 0; --k) {
            const int node =
                static_cast<int>(pick(rng, 0, static_cast<std::uint64_t>(data_count - 1)));
            const std::uint64_t when = s.now() + pick(rng, 0, horizon - s.now());
            const std::uint64_t d = pick(rng, 1000, ttl_us);
            s.net.at(instant{when}, [&s, node, d] { s.net.pause(node, duration::micros(d)); });
        }
    } else {
        sim::slot_cluster& k = *slots;
        const int slot = sim::slot_cluster::slot_of("res");
        const int from = k.owner(slot);
        const int to = static_cast<int>(
            (static_cast<std::uint64_t>(from) + pick(rng, 1, k.masters.size() - 1)) %
            k.masters.size());
        std::uint64_t at = s.now() + pick(rng, 0, horizon - s.now());
        s.net.at(instant{at}, [&k, slot, to, note] {
            note("migrating to " + std::to_string(to));
            k.begin(slot, to);
        });
        at += pick(rng, 0, 2 * ttl_us);
        s.net.at(instant{at}, [&k, slot, note] {
            note("keys moved");
            k.move_keys(slot);
        });
        at += pick(rng, 0, 2 * ttl_us);
        s.net.at(instant{at}, [&k, slot, note] {
            note("slot handed over");
            k.hand_over(slot);
        });
        // Crashes, pauses, latency spikes and cut connections, so tries
        // time out with requests on their way through MOVED and ASK. A crash
        // keeps the master's keyspace: the simulated migration moves keys
        // into a master even while it is down (a real MIGRATE to it would
        // fail), so losing its keyspace on restart would lose a lock no
        // Cluster would have lost.
        s.add_faults(data_count, horizon, 0, true);
        // A master misrouting for a while, in one of the ways a resharding
        // gone wrong can.
        for (int m = static_cast<int>(pick(rng, 0, 2)); m > 0; --m) {
            const int i = static_cast<int>(pick(rng, 0, k.masters.size() - 1));
            const auto how = static_cast<sim::slot_cluster::fault>(pick(rng, 0, 2));
            const std::uint64_t begin = s.now() + pick(rng, 0, horizon - s.now());
            k.misroute(i, how, begin, begin + pick(rng, 1000, 2 * ttl_us));
        }
    }

    const std::uint64_t pushes_before = s.net.pushes_delivered;
    // Sentinel watches and Cluster connections keep reconnecting to what is
    // down, so the run ends at a time every attempt has ended by, not when idle.
    finish(s, s.loop.run_until(instant{horizon + 10000000}, 400000));

    ++t.schedules;
    t.acquisitions += s.out.acquisitions;
    t.lossy += s.lossy ? 1 : 0;
    t.overlaps += s.out.overlaps;
    const int p = co.resp3 ? 1 : 0;
    if (kind != topology::sentinel || group->switches == 0) {
        t.pushed[p] += s.net.pushes_delivered > pushes_before ? 1 : 0;
        t.acted[p] += s.net.sends_on_push > 0 ? 1 : 0;
    }
    if (group) {
        t.failovers += group->failovers;
        t.switched += group->switches > 0 && s.net.pushes_delivered > 0 ? 1u : 0u;
        t.followed += promoted >= 0 && s.net.node(promoted).lock_requests() > 0 ? 1u : 0u;
    }
    if (slots) {
        t.moved += slots->moved;
        t.asks += slots->asks;
        t.misrouted += slots->misrouted;
        t.misroute_peak = std::max(t.misroute_peak, slots->misrouted);
    }
    return s.out;
}

tally run_many(topology kind, bool fenced, std::uint64_t count, const char* what) {
    tally t;
    const auto start = std::chrono::steady_clock::now();
    if (const char* only = std::getenv("EDGELOCK_SIM_ONLY")) {
        const std::uint64_t s = std::strtoull(only, nullptr, 10);
        const outcome o = run_topology(s, kind, fenced, t);
        if (!o.violation.empty()) {
            FAIL(what << " schedule " << s << ": " << o.violation);
        }
        return t;
    }
    for (std::uint64_t s = 0; s < count; ++s) {
        INFO(what << " schedule " << s);  // for a REQUIRE that fails inside it
        const outcome o = run_topology(s, kind, fenced, t);
        if (!o.violation.empty()) {
            FAIL(what << " schedule " << s << ": " << o.violation);
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "%s: %llu schedules (%llu lossy, %llu overlaps there), %llu acquisitions, pushes in "
        "%llu/%llu (RESP2/3), acted on in %llu/%llu, failovers %llu, switch-master heard in "
        "%llu, followed in %llu, MOVED %llu, ASK %llu, misrouted %llu (at most %llu in one), "
        "%.2f s\n",
        what, static_cast<unsigned long long>(t.schedules),
        static_cast<unsigned long long>(t.lossy), static_cast<unsigned long long>(t.overlaps),
        static_cast<unsigned long long>(t.acquisitions),
        static_cast<unsigned long long>(t.pushed[0]), static_cast<unsigned long long>(t.pushed[1]),
        static_cast<unsigned long long>(t.acted[0]), static_cast<unsigned long long>(t.acted[1]),
        static_cast<unsigned long long>(t.failovers), static_cast<unsigned long long>(t.switched),
        static_cast<unsigned long long>(t.followed), static_cast<unsigned long long>(t.moved),
        static_cast<unsigned long long>(t.asks), static_cast<unsigned long long>(t.misrouted),
        static_cast<unsigned long long>(t.misroute_peak), secs);
    CHECK(t.acquisitions > t.schedules);
    return t;
}

bool replaying() {
    return std::getenv("EDGELOCK_SIM_ONLY") != nullptr;
}

// A quarter of the standalone count each: they cost more per schedule.
std::uint64_t topology_schedules() {
    return std::max<std::uint64_t>(schedule_count() / 4, 20);
}

}  // namespace

TEST_CASE("random schedules with waiters told by pushes or a subscription", "[redlock][sim]") {
    const tally t = run_many(topology::standalone, false, topology_schedules(), "notify");
    if (replaying()) {
        return;
    }
    // Both ways of telling ran, and clients acted on what they were told.
    CHECK(t.pushed[0] > t.schedules / 20);
    CHECK(t.pushed[1] > t.schedules / 20);
    CHECK(t.acted[0] > t.schedules / 40);
    CHECK(t.acted[1] > t.schedules / 40);
}

TEST_CASE("random schedules on a Sentinel-managed master with failovers", "[redlock][sim]") {
    const tally t = run_many(topology::sentinel, false, topology_schedules(), "sentinel");
    if (replaying()) {
        return;
    }
    CHECK(t.failovers == t.schedules);
    CHECK(t.switched > t.schedules / 4);
    CHECK(t.followed > t.schedules / 4);
    CHECK(t.lossy > t.schedules / 10);
    CHECK(t.lossy < t.schedules);
}

TEST_CASE("random schedules on a Sentinel-managed master keep fencing tokens ordered",
          "[redlock][sim]") {
    const tally t = run_many(topology::sentinel, true, topology_schedules() / 2, "sentinel fenced");
    if (replaying()) {
        return;
    }
    CHECK(t.failovers == t.schedules);
}

TEST_CASE("random schedules on a Cluster with the lock's slot migrating", "[redlock][sim]") {
    const tally t = run_many(topology::cluster, false, topology_schedules(), "cluster");
    if (replaying()) {
        return;
    }
    CHECK(t.moved > t.schedules / 10);
    CHECK(t.asks > t.schedules / 20);
    CHECK(t.misrouted > t.schedules / 10);
    // Each request is followed through at most four redirects: a few
    // hundred answers in the busiest schedule (over 5,000 when followed
    // up to 250 times, and without end before the cap).
    CHECK(t.misroute_peak < 2000);
}
