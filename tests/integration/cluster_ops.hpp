// Test fixture: what a test does to a Redis Cluster (cluster_fixture.hpp):
// a slot moved by hand, step by step as redis-cli --cluster reshard does it;
// a failover asked of a replica; kill -9 of a master and its replica's
// promotion. cluster_deployment is the running cluster with these.
//
//   edgelock_test::cluster_deployment d;
//   redis_server& m = d.master_of(slot);
//   d.migrate_slot(slot, m, other);    // or its steps, one by one
//   redis_server& promoted = d.failover(m);
//
// end_migration(), failover() and kill_and_promote() return once the cluster
// agrees on the change; kill_master() as soon as the master is dead, and
// promoted() says when its replica took over. Their waits run `idle`
// between two looks (running_cluster::wait_until()).
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "integration/cluster_fixture.hpp"
#include "integration/redis_server.hpp"
#include "integration/sentinel_fixture.hpp"

namespace edgelock_test {

struct cluster_deployment : running_cluster {
    // --- a slot moved by hand, in the steps of redis-cli --cluster reshard ---

    // 1. The target imports the slot from the source.
    void set_importing(int slot, redis_server& from, redis_server& to) const {
        redis_client c(to.port());
        const reply r =
            c.command({"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", id_of(from)});
        INFO(r.text);
        REQUIRE(r.text == "OK");
    }
    // 2. The source migrates it to the target: from now on it answers ASK for
    // the slot's keys it does not have.
    void set_migrating(int slot, redis_server& from, redis_server& to) const {
        redis_client c(from.port());
        const reply r =
            c.command({"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", id_of(to)});
        INFO(r.text);
        REQUIRE(r.text == "OK");
    }
    void begin_migration(int slot, redis_server& from, redis_server& to) const {
        set_importing(slot, from, to);
        set_migrating(slot, from, to);
    }
    // 3. Every key of the slot moves (MIGRATE ... KEYS, a batch at a time);
    // returns how many.
    int migrate_keys(int slot, redis_server& from, redis_server& to) const {
        redis_client c(from.port());
        int moved = 0;
        for (;;) {
            const reply keys = c.command({"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "100"});
            if (keys.elements.empty()) {
                return moved;
            }
            std::vector<std::string> args = {
                "MIGRATE", "127.0.0.1", std::to_string(to.port()), "", "0", "5000", "KEYS"};
            for (const reply& k : keys.elements) {
                args.push_back(k.text);
            }
            const reply r = c.command(args);
            INFO(r.text);
            REQUIRE(r.text == "OK");
            moved += static_cast<int>(keys.elements.size());
        }
    }
    // 4. The slot is the target's: told to the target, the source, then every
    // other master; done when every live node sees it so.
    void end_migration(int slot, redis_server& from, redis_server& to,
                       const idle_fn& idle = {}) const {
        const std::string to_id = id_of(to);
        std::vector<redis_server*> order = {&to, &from};
        for (redis_server* m : masters()) {
            if (m != &to && m != &from) {
                order.push_back(m);
            }
        }
        for (redis_server* m : order) {
            redis_client c(m->port());
            const reply r = c.command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", to_id});
            INFO("SETSLOT NODE on port " << m->port() << ": " << r.text);
            REQUIRE(r.text == "OK");
        }
        wait_until([&] { return everyone_says(slot, to_id); }, 10, idle);
    }
    void migrate_slot(int slot, redis_server& from, redis_server& to,
                      const idle_fn& idle = {}) const {
        begin_migration(slot, from, to);
        migrate_keys(slot, from, to);
        end_migration(slot, from, to, idle);
    }

    // --- failovers ---

    // CLUSTER FAILOVER on a replica of `master`; returns once the replica is
    // the master, the old one its replica, and the cluster agrees and is ok.
    redis_server& failover(redis_server& master, const idle_fn& idle = {}) const {
        redis_server& r = replica_of(master);
        // A manual failover the master does not complete in time (its
        // replica not caught up on a busy machine) is given up by the
        // server: asked again, within the bound.
        const double until = mono_s() + 30;
        for (;;) {
            {
                redis_client c(r.port());
                const reply ok = c.command({"CLUSTER", "FAILOVER"});
                INFO(ok.text);
                REQUIRE(ok.text == "OK");
            }
            const double asked = mono_s();
            while (role(r) != "master" && mono_s() < asked + 8) {
                if (idle) {
                    idle();
                } else {
                    sleep_ms(20);
                }
            }
            if (role(r) == "master") {
                break;
            }
            INFO("CLUSTER FAILOVER did not promote the replica within 30 s");
            REQUIRE(mono_s() < until);
        }
        INFO("after CLUSTER FAILOVER");
        wait_until([&] { return role(master) == "slave" && settled(); }, 30, idle);
        return r;
    }

    // kill -9 of `master`; returns its replica, promoted later (promoted()).
    redis_server& kill_master(redis_server& master) const {
        redis_server& r = replica_of(master);
        master.kill();
        return r;
    }
    // The replica is a master and the cluster agrees and is ok again.
    bool promoted(redis_server& replica) const { return role(replica) == "master" && settled(); }
    redis_server& kill_and_promote(redis_server& master, const idle_fn& idle = {}) const {
        redis_server& r = kill_master(master);
        INFO("after kill -9 of a master");
        wait_until([&] { return promoted(r); }, 30, idle);
        return r;
    }
};

}  // namespace edgelock_test
