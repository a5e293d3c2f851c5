// The Redis Cluster fixture itself (cluster_fixture.hpp), without the
// library's client: the cluster comes up whole, master_of() names the master
// that takes a slot's writes, a slot moved by hand step by step redirects as
// Redis says it should (ASK while migrating, MOVED after), and a failover and
// a kill -9 end with the replica serving the slot.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "integration/cluster_fixture.hpp"
#include "integration/cluster_ops.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"

using namespace edgelock_test;

namespace {

// The reply's text begins with `prefix` ("MOVED", "ASK").
bool starts(const reply& r, const std::string& prefix) {
    return r.type == '-' && r.text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

TEST_CASE("cluster fixture: six nodes, slots served, moved by hand, failed over",
          "[integration][cluster][fixture]") {
    const double t0 = mono_s();
    cluster_deployment d;
    INFO("the cluster came up in " << mono_s() - t0 << " s");
    for (const auto& s : d.servers) {
        redis_client c(s->port());
        const std::string info = c.command({"CLUSTER", "INFO"}).text;
        CHECK(info_field(info, "cluster_state") == "ok");
        CHECK(info_field(info, "cluster_known_nodes") == "6");
        CHECK(info_field(info, "cluster_size") == "3");
        CHECK(info_field(info, "cluster_slots_assigned") == "16384");
    }
    const std::vector<redis_server*> masters = d.masters();
    REQUIRE(masters.size() == 3);
    CHECK(d.url().compare(0, 16, "redis-cluster://") == 0);
    for (redis_server* m : masters) {
        CHECK(role(d.replica_of(*m)) == "slave");
    }

    // A key of each master: its slot as the server computes it, served
    // there, MOVED elsewhere; where_is() finds it there only.
    std::vector<std::string> names;
    for (redis_server* m : masters) {
        const std::string name = d.name_on(*m, "fixture");
        names.push_back(name);
        const int slot = slot_of_lock(name);
        REQUIRE(&d.master_of(slot) == m);
        redis_client c(m->port());
        CHECK(c.command({"CLUSTER", "KEYSLOT", key_of(name)}).integer == slot);
        CHECK(c.command({"SET", key_of(name), "v", "PX", "60000"}).text == "OK");
        CHECK(d.where_is(key_of(name)) == m);
        for (redis_server* other : masters) {
            if (other != m) {
                redis_client o(other->port());
                CHECK(starts(o.command({"GET", key_of(name)}), "MOVED"));
            }
        }
    }

    // The first name's slot moves from its master to the second's, a step
    // at a time.
    const std::string key = key_of(names[0]);
    const int slot = slot_of_lock(names[0]);
    redis_server& from = *masters[0];
    redis_server& to = *masters[1];
    d.begin_migration(slot, from, to);
    redis_client src(from.port());
    CHECK(src.command({"GET", key}).text == "v");  // still here: served
    const std::string absent = name_in_slot(slot, "fixture-absent");
    CHECK(starts(src.command({"GET", key_of(absent)}), "ASK"));
    CHECK(d.where_is(key) == &from);
    CHECK(d.migrate_keys(slot, from, to) == 1);
    CHECK(d.where_is(key) == &to);
    CHECK(starts(src.command({"GET", key}), "ASK"));
    CHECK(d.value_on(to, key) == "v");
    d.end_migration(slot, from, to);
    CHECK(&d.master_of(slot) == &to);
    const reply moved = src.command({"GET", key});
    CHECK(starts(moved, "MOVED"));
    CHECK(moved.text.find(":" + std::to_string(to.port())) != std::string::npos);

    // CLUSTER FAILOVER on the new owner's replica: the replica serves the
    // slot, with the key.
    redis_server& replica = d.failover(to);
    CHECK(role(replica) == "master");
    CHECK(role(to) == "slave");
    CHECK(&d.master_of(slot) == &replica);
    CHECK(d.where_is(key) == &replica);

    // kill -9 of the third master: its replica takes its slots over.
    const int third = slot_of_lock(names[2]);
    redis_server& dead = *masters[2];
    const double killed = mono_s();
    redis_server& promoted = d.kill_and_promote(dead);
    INFO("promotion after kill -9 took " << mono_s() - killed << " s");
    CHECK_FALSE(cluster_deployment::alive(dead));
    CHECK(&d.master_of(third) == &promoted);
    CHECK(d.masters().size() == 3);
    for (const auto& s : d.servers) {
        if (cluster_deployment::alive(*s)) {
            CHECK(cluster_deployment::cluster_info(*s, "cluster_state") == "ok");
        }
    }
}
