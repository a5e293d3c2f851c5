// The agent with a Redis Cluster node (redis-cluster://, against the
// three-master cluster of tests/integration/cluster_fixture.hpp): a run
// holds its key on the master that serves the key's slot, and there only,
// while its command runs, and deletes it after; the same in a Redlock of a
// standalone server and the cluster; and kill -9 of that master under a job
// longer than the ttl ends the run, 0 or 75, in bounded time.
//
// The seeds given are two of the masters, and the key's slot is never on
// the first: the node's own connection goes there, so the lock's requests
// reach the key's master through a MOVED from it, or through the slot map
// when that came first.
//
// Timing checks are sanity bounds several times what a run needs.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/cluster_fixture.hpp"
#include "integration/cluster_ops.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/url.hpp"

#ifndef EDGELOCK_CLI_PATH
#error "build with -DEDGELOCK_CLI_PATH=\"/path/to/edgelock\""
#endif

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// redis-cluster://127.0.0.1:P1,127.0.0.1:P2: those servers as the seeds.
std::string seeds_url(const std::vector<redis_server*>& seeds) {
    std::string hosts;
    for (const redis_server* s : seeds) {
        hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s->port());
    }
    return "redis-cluster://" + hosts;
}

// `edgelock run -t 3s -N nodes name -- JOB`, where JOB says it started,
// then waits for the test's word: it exits 0 once `go` exists, 1 when it
// did not come within 10 s.
strings run_until(const std::string& nodes, const std::string& name, const std::string& started,
                  const std::string& go) {
    const std::string job = "touch '" + started + "'; i=0; while [ ! -e '" + go +
                            "' ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; [ -e '" + go +
                            "' ]";
    return {"run", "-t", "3s", "-N", nodes, name, "--", "sh", "-c", job};
}

}  // namespace

TEST_CASE("cli cluster: run holds the key on the master of its slot, and there only",
          "[cli][cluster]") {
    cluster_deployment d;
    const std::vector<redis_server*> m = d.masters();
    REQUIRE(m.size() == 3);
    const std::string nodes = seeds_url({m[0], m[1]});
    temp_dir dir{"edgelock-cli-cluster"};
    // A key on the second seed, and one on the master that is no seed.
    for (std::size_t i = 1; i < 3; ++i) {
        redis_server& owner = *m[i];
        const std::string name = d.name_on(owner, "cli-cluster");
        const std::string key = key_of(name);
        INFO("lock " << name << ", slot " << slot_of_lock(name) << ", master on port "
                     << owner.port());
        REQUIRE(&d.master_of(slot_of_lock(name)) != m[0]);
        const std::string started = dir / ("started" + std::to_string(i));
        const std::string go = dir / ("go" + std::to_string(i));

        agent_run run(run_until(nodes, name, started, go), {});
        REQUIRE(wait_for([&] { return file_exists(started); }, 10.0));
        CHECK(d.where_is(key) == &owner);  // on no other master
        CHECK(is_token(cluster_deployment::value_on(owner, key)));
        REQUIRE(write_file(go, ""));
        const double told = mono_s();
        const run_result r = run.finish(30.0);
        INFO(show(run.args, r));
        CHECK(r.status == 0);
        CHECK(mono_s() - told < 5.0);
        CHECK(d.where_is(key) == nullptr);
    }
}

TEST_CASE("cli cluster: a Redlock of a standalone server and a cluster", "[cli][cluster]") {
    cluster_deployment d;
    redis_server standalone;
    redis_client admin(standalone.port());
    const std::vector<redis_server*> m = d.masters();
    REQUIRE(m.size() == 3);
    redis_server& owner = *m[2];
    // -N splits where a new URL begins: the seed list stays one node.
    const std::string nodes = redis_url(standalone) + "," + seeds_url({m[0], m[1]});
    const std::string name = d.name_on(owner, "cli-cluster-redlock");
    const std::string key = key_of(name);
    temp_dir dir{"edgelock-cli-cluster-redlock"};
    const std::string started = dir / "started";
    const std::string go = dir / "go";

    agent_run run(run_until(nodes, name, started, go), {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 10.0));
    const std::string token = lock_value(admin, name);
    CHECK(is_token(token));
    CHECK(d.where_is(key) == &owner);
    CHECK(cluster_deployment::value_on(owner, key) == token);  // one lock, one token
    REQUIRE(write_file(go, ""));
    const run_result r = run.finish(30.0);
    INFO(show(run.args, r));
    CHECK(r.status == 0);
    CHECK(lock_exists(admin, name) == 0);
    CHECK(d.where_is(key) == nullptr);
}

TEST_CASE("cli cluster: kill -9 of the key's master under a running job ends it, never hangs",
          "[cli][cluster]") {
    cluster_deployment d;
    const std::vector<redis_server*> m = d.masters();
    REQUIRE(m.size() == 3);
    redis_server& master = *m[2];
    const std::string name = d.name_on(master, "cli-cluster-kill");
    const std::string key = key_of(name);
    temp_dir dir{"edgelock-cli-cluster-kill"};
    const std::string started = dir / "started";
    // A job longer than the ttl: the agent must renew on the replica the
    // cluster promotes, or stop the job when it cannot.
    constexpr double ttl_s = 3.0;
    agent_run run({"run", "-t", "3s", "--grace", "1s", "-N", seeds_url({m[0], m[1]}), name, "--",
                   "sh", "-c", "touch '" + started + "'; sleep 5"},
                  {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 10.0));
    REQUIRE(d.where_is(key) == &master);
    redis_server& replica = d.kill_master(master);
    const double killed = mono_s();
    const run_result r = run.finish(30.0);
    const double after = mono_s() - killed;
    INFO(show(run.args, r));
    INFO("exited " << after << " s after the kill");
    // 0: renewed on the promoted replica throughout; 75: the lock was lost
    // (or about to be) and the job stopped. Either way, in bounded time.
    CHECK((r.status == 0 || r.status == exit_lost));
    CHECK(after < ttl_s + 5.0);
    // Once the replica took over, the key is there or nowhere: never on
    // another master.
    cluster_deployment::wait_until([&] { return d.promoted(replica); }, 20);
    redis_server* const on = d.where_is(key);
    CHECK((on == nullptr || on == &replica));
}
