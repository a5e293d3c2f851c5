// Standby services and runaway jobs, against a real redis-server: a standby
// (`run --wait forever`) runs its command once the holder releases or dies,
// and `run --max-hold` stops a job that held the lock too long (SIGTERM,
// SIGKILL after the grace), releases the lock and exits 75.
#include <catch2/catch.hpp>

#include <string>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

TEST_CASE("cli standby: --wait forever runs the command once the holder releases", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-standby"};
    const std::string key = "cli-standby";
    const std::string go = dir / "go";
    const std::string done = dir / "holder-done";
    // The holder runs until the test says go, then leaves a mark as it ends.
    agent_run holder({"run", "-N", redis_url(srv), key, "--", "sh", "-c",
                      "while [ ! -e '" + go + "' ]; do sleep 0.02; done; touch '" + done + "'"},
                     {});
    REQUIRE(wait_for([&] { return lock_exists(admin, key) == 1; }, 10.0));
    agent_run standby({"run", "-w", "forever", "-N", redis_url(srv), key, "--", "sh", "-c",
                       "test -e '" + done + "' && echo after the holder"},
                      {});
    sleep_ms(300);  // the standby is waiting, not done
    CHECK(standby.proc.running());
    REQUIRE(write_file(go, ""));
    const run_result h = holder.finish(10.0);
    const run_result s = standby.finish(10.0);
    INFO(show(holder.args, h) << "\n" << show(standby.args, s));
    CHECK(h.status == 0);
    CHECK(s.status == 0);
    CHECK(s.out == "after the holder\n");
    CHECK(lock_exists(admin, key) == 0);
}

TEST_CASE("cli standby: --wait forever takes over from a holder killed with its job", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-standby-dead";
    // No release: the key goes at the end of its ttl.
    agent_run holder({"run", "-t", "2s", "-N", redis_url(srv), key, "--", "sleep", "30"}, {});
    REQUIRE(wait_for([&] { return lock_exists(admin, key) == 1; }, 10.0));
    agent_run standby(
        {"run", "-w", "forever", "-N", redis_url(srv), key, "--", "echo", "took over"}, {});
    sleep_ms(300);
    CHECK(standby.proc.running());
    holder.proc.kill_group(SIGKILL);
    holder.proc.signal(SIGKILL);
    const run_result s = standby.finish(15.0);
    INFO(show(standby.args, s));
    CHECK(s.status == 0);
    CHECK(s.out == "took over\n");
}

TEST_CASE("cli max-hold: the job is stopped, the lock released, 75", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-max-hold";
    SECTION("a job that ends on SIGTERM") {
        const strings args{"run",   "-t", "5s",           "--max-hold",
                           "500ms", "-N", redis_url(srv), key,
                           "--",    "sh", "-c",           "sleep 30; echo finished"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 75);
        CHECK(r.out.empty());
        CHECK(contains(r.err, "--max-hold"));
        CHECK(lock_exists(admin, key) == 0);
    }
    SECTION("a job that ignores SIGTERM gets SIGKILL after the grace") {
        const strings args{"run",          "-t",
                           "5s",           "--max-hold",
                           "500ms",        "--grace",
                           "500ms",        "-N",
                           redis_url(srv), key,
                           "--",           "sh",
                           "-c",           "trap '' TERM; sleep 30; echo finished"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 75);
        CHECK(r.out.empty());
        CHECK(lock_exists(admin, key) == 0);
    }
    SECTION("a job that ends before it is not touched") {
        const strings args{"run", "--max-hold", "10s",  "-N",  redis_url(srv),
                           key,   "--",         "echo", "done"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(r.out == "done\n");
        CHECK(lock_exists(admin, key) == 0);
    }
}

TEST_CASE("cli max-hold: refused where it cannot hold", "[cli]") {
    const strings bad[] = {
        {"acquire", "--max-hold", "1s", "k"},
        {"run", "--max-hold", "0", "k", "--", "true"},
        {"run", "--max-hold", "soon", "k", "--", "true"},
        {"run", "-w", "always", "k", "--", "true"},
    };
    for (const strings& args : bad) {
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 64);
    }
}
