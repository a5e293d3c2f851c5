// What the lock cannot promise is found and said: a lock key that vanished
// under the command (evicted, deleted) ends the run in 75, and silent nodes
// do not count as such; an evicting maxmemory-policy is a warning; a replica
// and a server's error reply are each node's reason on stderr; no password
// reaches the command's environment. Against real redis-servers.
#include <signal.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/url.hpp"

using edgelock_test::agent;
using edgelock_test::agent_run;
using edgelock_test::alive;
using edgelock_test::contains;
using edgelock_test::exit_conflict;
using edgelock_test::exit_lost;
using edgelock_test::exit_unavailable;
using edgelock_test::file_exists;
using edgelock_test::key_of;
using edgelock_test::lock_exists;
using edgelock_test::mono_s;
using edgelock_test::node_list;
using edgelock_test::pid_in;
using edgelock_test::process;
using edgelock_test::process_state;
using edgelock_test::read_file;
using edgelock_test::reaper;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::redis_url;
using edgelock_test::run_result;
using edgelock_test::show;
using edgelock_test::sleep_ms;
using edgelock_test::temp_dir;
using edgelock_test::wait_for;
using edgelock_test::write_file;

TEST_CASE("cli safety: a key deleted under the command makes run exit 75", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string go = dir / "go";
    // ttl 30 s: no renewal comes before the command ends; only the release
    // can find the key gone.
    agent_run a({"run", "-N", redis_url(srv), "safety-deleted", "--", "sh", "-c",
                 "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.02; done"},
                {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    REQUIRE(admin.command({"DEL", key_of("safety-deleted")}).integer == 1);
    write_file(go, "\n");
    const run_result res = a.finish(10.0);
    INFO(show(a.args, res));
    CHECK(res.status == exit_lost);
    CHECK(contains(res.err, "no longer held"));
}

TEST_CASE("cli safety: a key evicted under memory pressure makes run exit 75", "[cli]") {
    redis_server srv({"--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"});
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string go = dir / "go";
    agent_run a({"run", "-N", redis_url(srv), "safety-evicted", "--", "sh", "-c",
                 "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.02; done"},
                {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    const std::string big(64 * 1024, 'x');
    int writes = 0;
    while (lock_exists(admin, "safety-evicted") == 1 && writes < 2000) {
        admin.command({"SET", "filler:" + std::to_string(writes++), big});
    }
    INFO("filler writes: " << writes);
    REQUIRE(lock_exists(admin, "safety-evicted") == 0);
    write_file(go, "\n");
    const run_result res = a.finish(10.0);
    INFO(show(a.args, res));
    CHECK(res.status == exit_lost);
    CHECK(contains(res.err, "no longer held"));
    // Said at set-up, before the command ran.
    CHECK(contains(res.err, "warning: node " + redis_url(srv) + ": maxmemory-policy allkeys-lru"));
}

TEST_CASE("cli safety: an evicting maxmemory-policy is a warning, silenced by -q", "[cli]") {
    redis_server srv({"--maxmemory", "100mb", "--maxmemory-policy", "volatile-ttl"});
    const run_result loud = agent({"run", "-N", redis_url(srv), "safety-warn", "--", "true"});
    INFO(show({"run"}, loud));
    CHECK(loud.status == 0);
    CHECK(contains(loud.err, "maxmemory-policy volatile-ttl"));
    const run_result quiet =
        agent({"run", "-q", "-N", redis_url(srv), "safety-warn", "--", "true"});
    CHECK(quiet.status == 0);
    CHECK(quiet.err.empty());
    redis_server safe({"--maxmemory", "100mb", "--maxmemory-policy", "noeviction"});
    const run_result fine = agent({"run", "-N", redis_url(safe), "safety-warn", "--", "true"});
    CHECK(fine.status == 0);
    CHECK(fine.err.empty());
}

TEST_CASE("cli safety: a replica is refused with its reason (69)", "[cli]") {
    redis_server master;
    redis_server replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
    const run_result res = agent({"run", "-N", redis_url(replica), "safety-replica", "--", "true"});
    INFO(show({"run"}, res));
    CHECK(res.status == exit_unavailable);
    CHECK(contains(res.err, "node " + redis_url(replica) + ": a replica"));
}

TEST_CASE("cli safety: a server's error reply to the lock request reaches stderr", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    // The connection's user may touch no key of the lock's: the server
    // refuses the script with NOPERM. (A key of another type is no error:
    // it is another client's lock, test_cli_interop.cpp.)
    REQUIRE(admin.command({"ACL", "SETUSER", "default", "resetkeys", "~unrelated:*"}).text == "OK");
    const run_result res = agent({"run", "-N", redis_url(srv), "safety-refused", "--", "true"});
    INFO(show({"run"}, res));
    CHECK(res.status == exit_unavailable);
    CHECK(contains(res.err, "node " + redis_url(srv) + ": the server refused the request: NOPERM"));

    SECTION("one of three nodes refusing, one busy, one free: exit 1 and the refusal") {
        // The refusal decides the round (one yes, one busy), so it is in
        // before the agent reports; with two busy it could come too late.
        redis_server b;
        redis_server c;
        redis_client admin_b(b.port());
        REQUIRE(admin_b.command({"SET", key_of("safety-refused"), "someone", "PX", "60000"}).text ==
                "OK");
        const run_result mixed =
            agent({"run", "-N", node_list({redis_url(srv), redis_url(b), redis_url(c)}),
                   "safety-refused", "--", "true"});
        INFO(show({"run", "3 nodes"}, mixed));
        CHECK(mixed.status == exit_conflict);
        CHECK(contains(mixed.err,
                       "node " + redis_url(srv) + ": the server refused the request: NOPERM"));
    }
}

TEST_CASE("cli safety: the command's environment carries no password", "[cli]") {
    const std::string secret = "s3cret-Pw-4711";
    redis_server srv({"--requirepass", secret});
    const std::string plain = redis_url(srv);
    const std::string with_pw = redis_url(srv, ":" + secret);

    SECTION("REDISCLI_AUTH") {
        const run_result res =
            agent({"run", "-N", plain, "safety-env", "--", "env"}, {"REDISCLI_AUTH=" + secret});
        INFO(show({"run", "--", "env"}, res));
        REQUIRE(res.status == 0);
        CHECK(contains(res.out, "EDGELOCK_KEY=safety-env"));
        CHECK_FALSE(contains(res.out, secret));
    }
    SECTION("a password in EDGELOCK_NODES") {
        const run_result res =
            agent({"run", "safety-env", "--", "env"}, {"EDGELOCK_NODES=" + with_pw});
        INFO(show({"run", "--", "env"}, res));
        REQUIRE(res.status == 0);
        CHECK_FALSE(contains(res.out, secret));
        CHECK(contains(res.out, "EDGELOCK_NODES=" + plain + "\n"));
    }
    SECTION("every URL of the list, with -N in charge") {
        // -N names the node; the list in the environment only passes through.
        const std::string list = "redis://:" + secret + "@127.0.0.2:6380,redis://user:" + secret +
                                 "%40x@[::1]:6381/2,unix:///run/r@dis.sock?db=1";
        const run_result res =
            agent({"run", "-N", with_pw, "safety-env", "--", "env"}, {"EDGELOCK_NODES=" + list});
        INFO(show({"run", "--", "env"}, res));
        REQUIRE(res.status == 0);
        CHECK_FALSE(contains(res.out, secret));
        CHECK(contains(res.out,
                       "EDGELOCK_NODES=redis://127.0.0.2:6380,redis://[::1]:6381/2,"
                       "unix:///run/r@dis.sock?db=1\n"));
    }
}

TEST_CASE("cli safety: a node silent at the release does not count as the key gone", "[cli]") {
    redis_server a;
    redis_server b;
    redis_server c;
    redis_client admin_c(c.port());
    for (const redis_server* srv : {&a, &b, &c}) {
        // As an earlier run would: a NOSCRIPT would leave a node without the
        // key (the round decided on the two others), and this test needs a's.
        redis_client admin(srv->port());
        load_scripts(admin);
    }
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string go = dir / "go";
    const std::string nodes = node_list({redis_url(a), redis_url(b), redis_url(c)});
    agent_run run({"run", "-N", nodes, "safety-silent", "--", "sh", "-c",
                   "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.02; done"},
                  {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    // Gone from c, still held on a; b says nothing: no quorum is known to
    // have lost the key.
    REQUIRE(admin_c.command({"DEL", key_of("safety-silent")}).integer == 1);
    b.pause();
    write_file(go, "\n");
    const run_result res = run.finish(10.0);
    b.resume();
    INFO(show(run.args, res));
    CHECK(res.status == 0);
}
