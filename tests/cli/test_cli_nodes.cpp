// The agent while it holds a lock and while nodes fail: renewal past the ttl,
// a lost lock stopping the child (SIGTERM, SIGKILL after the grace, 75),
// renewals that time out, Redlock with dead and hostile nodes, fencing tokens
// across nodes that die and come back empty.
//
// Timing checks are sanity bounds several times what a run needs.
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/sentinel_fixture.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"
#include "tools/url.hpp"

#ifndef EDGELOCK_CLI_PATH
#error "build with -DEDGELOCK_CLI_PATH=\"/path/to/edgelock\""
#endif
#ifndef EDGELOCK_FAKE_REDIS_PATH
#error "build with -DEDGELOCK_FAKE_REDIS_PATH=\"/path/to/fake_redis\""
#endif

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

// --- renewal and lost locks ---------------------------------------------------

TEST_CASE("cli: run renews the lock while the child outlives the ttl", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-renew";

    agent_run a({"run", "-t", "1s", "-N", redis_url(srv), key, "--", "sleep", "3"}, {});
    REQUIRE(wait_for([&] { return is_token(lock_value(admin, key)); }, 3.0));
    const std::string token = lock_value(admin, key);
    const double until = mono_s() + 2.3;
    int samples = 0;
    int missing = 0;
    long long max_pttl = 0;
    while (mono_s() < until) {
        const long long t = lock_pttl(admin, key);
        ++samples;
        missing += (t <= 0 || lock_value(admin, key) != token) ? 1 : 0;
        max_pttl = std::max(max_pttl, t);
        sleep_ms(100);
    }
    const run_result r = a.finish(15.0);
    INFO(show(a.args, r));
    INFO(samples << " samples, " << missing << " without our key; largest PTTL " << max_pttl);
    CHECK(missing == 0);
    CHECK(max_pttl <= 1000);
    CHECK(r.status == 0);
    CHECK(r.seconds >= 3.0);
    CHECK(lock_exists(admin, key) == 0);
}

TEST_CASE("cli: a lost lock stops the child: SIGTERM, SIGKILL after the grace, 75", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string key = "cli-lost";
    const std::string started = dir / "started";
    const std::string got_term = dir / "term";

    // The child notes SIGTERM and carries on: only SIGKILL stops it.
    agent_run a({"run", "-t", "1s", "--grace", "500ms", "-N", redis_url(srv), key, "--", "sh", "-c",
                 "trap \"echo term >> '" + got_term + "'\" TERM; touch '" + started +
                     "'; while :; do sleep 0.05; done"},
                {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    REQUIRE(is_token(lock_value(admin, key)));
    sleep_ms(200);
    // Someone else takes the key: the agent's next renew finds it not ours.
    REQUIRE(admin.command({"SET", key_of(key), "other", "PX", "60000"}).text == "OK");
    const double taken = mono_s();
    const run_result r = a.finish(15.0);
    const double after = mono_s() - taken;
    INFO(show(a.args, r));
    INFO("exited " << after << " s after the key was taken");
    CHECK(r.status == exit_lost);
    CHECK(after < 6.0);
    CHECK(contains(read_file(got_term), "term"));  // SIGTERM came first, SIGKILL ended it
    CHECK(lock_value(admin, key) == "other");      // never deletes what it does not own
}

TEST_CASE("cli: renewals that time out stop the child before the validity ends", "[cli]") {
    redis_server srv;
    temp_dir dir;
    const std::string key = "cli-lost-timeout";
    const std::string started = dir / "started";
    const std::string beats = dir / "beats";
    const std::string got_term = dir / "term";

    // The child notes the time every 50 ms and carries on after SIGTERM.
    agent_run a({"run", "-t", "2s", "--grace", "500ms", "-N", redis_url(srv), key, "--", "sh", "-c",
                 "trap \"echo term >> '" + got_term + "'\" TERM; touch '" + started +
                     "'; while :; do date +%s.%N >> '" + beats + "'; sleep 0.05; done"},
                {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    sleep_ms(300);
    // The node stops answering: no renew succeeds after this instant, so the
    // lock's validity ends at most a ttl (2 s) later.
    const double paused = wall_s();
    const double paused_mono = mono_s();
    srv.pause();
    const run_result r = a.finish(15.0);
    const double after = mono_s() - paused_mono;
    srv.resume();

    const strings hb = lines_of(read_file(beats));
    REQUIRE_FALSE(hb.empty());
    const double last = std::stod(hb.back());
    INFO(show(a.args, r));
    INFO("agent exited " << after << " s after the pause; the child's last beat came "
                         << (last - paused) << " s after it (the validity ends by 2 s)");
    CHECK(r.status == exit_lost);
    CHECK(last - paused < 2.0);  // dead before another owner could hold the lock
    CHECK(after < 4.0);
    CHECK(contains(read_file(got_term), "term"));
}

// --- Redlock with dead nodes ----------------------------------------------------

TEST_CASE("cli: 2 of 5 nodes down still lock, 3 down is 69", "[cli]") {
    std::vector<std::unique_ptr<redis_server>> servers;
    strings urls;
    for (int i = 0; i < 5; ++i) {
        servers.push_back(std::make_unique<redis_server>());
        urls.push_back(redis_url(*servers.back()));
    }
    const std::string nodes = node_list(urls);
    const std::string key = "cli-quorum";
    servers[0]->kill();
    servers[1]->kill();

    {
        const strings args{"run", "-N", nodes, key, "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(r.seconds < 5.0);
    }
    {
        const strings args{"acquire", "-t", "10s", "-N", nodes, key};
        const run_result r = agent(args);
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        const std::string token = lines_of(r.out).at(0);
        for (int i = 2; i < 5; ++i) {
            redis_client admin(servers[static_cast<std::size_t>(i)]->port());
            CHECK(lock_value(admin, key) == token);
        }
        const strings rel{"release", "-N", nodes, key, token};
        const run_result rr = agent(rel);
        INFO(show(rel, rr));
        CHECK(rr.status == 0);
    }

    servers[2]->kill();
    {
        const strings args{"run", "-N", nodes, key, "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_unavailable);
        CHECK_FALSE(r.err.empty());
        CHECK(r.seconds < 5.0);
    }
    {
        const strings args{"acquire", "-N", nodes, key};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_unavailable);
        CHECK(r.out.empty());
    }
}

TEST_CASE("cli: one hostile node of three does not stop the lock, two do", "[cli]") {
    redis_server a;
    redis_server b;
    const char* modes[] = {"silent", "trickle",   "garbage",    "deep",
                           "reset",  "big-error", "wrong-type", "ok-then-garbage"};
    struct one {
        std::string mode;
        std::unique_ptr<fake_redis> fake;
        std::unique_ptr<agent_run> run;
    };
    std::vector<one> all;
    for (const char* m : modes) {
        one o;
        o.mode = m;
        o.fake = std::make_unique<fake_redis>(m, 60);
        const std::string nodes =
            node_list({redis_url(a), redis_url(b), o.fake->url()});  // quorum 2 of 3
        // At -t 4s a connect has 1.8 s: the agent leaves once the silent
        // node's set-up, with requests behind it, is given up.
        o.run =
            std::make_unique<agent_run>(strings{"run", "-t", "4s", "-N", nodes,
                                                std::string("cli-one-hostile-") + m, "--", "true"},
                                        strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        const run_result r = o.run->finish(30.0);
        INFO("fake_redis " << o.mode << "\n" << show(o.run->args, r));
        CHECK(r.status == 0);
        CHECK(r.seconds < 5.0);
    }

    // Two of three hostile: no quorum.
    fake_redis silent("silent", 60);
    fake_redis garbage("garbage", 60);
    REQUIRE(positive(silent.port) > 0);
    REQUIRE(positive(garbage.port) > 0);
    const strings args{"run",
                       "-t",
                       "4s",
                       "-N",
                       node_list({redis_url(a), silent.url(), garbage.url()}),
                       "cli-two-hostile",
                       "--",
                       "true"};
    const run_result r = agent(args, {}, 30.0);
    INFO(show(args, r));
    CHECK((r.status == exit_unavailable || r.status == exit_conflict));
    CHECK(r.seconds < 10.0);
    redis_client admin(a.port());
    CHECK(lock_exists(admin, "cli-two-hostile") == 0);  // the partial acquisition undone
}

TEST_CASE("cli: fencing tokens keep increasing as nodes die and come back empty", "[cli]") {
    std::vector<std::unique_ptr<redis_server>> servers;
    strings urls;
    for (int i = 0; i < 3; ++i) {
        servers.push_back(std::make_unique<redis_server>());
        urls.push_back(redis_url(*servers.back()));
    }
    const std::string nodes = node_list(urls);
    const std::string key = "cli-fencing-failover";
    temp_dir dir;
    auto fenced_run = [&](int i) {
        const std::string out = dir / ("fence" + std::to_string(i));
        const strings args{
            "run", "--fencing", "-N",
            nodes, key,         "--",
            "sh",  "-c",        "printf '%s' \"$EDGELOCK_FENCING_TOKEN\" > '" + out + "'"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        return positive(read_file(out));
    };

    const long long t1 = fenced_run(1);
    servers[0]->kill();
    const long long t2 = fenced_run(2);
    servers[0]->restart();  // empty: no persistence
    servers[1]->kill();
    const long long t3 = fenced_run(3);
    servers[1]->restart();
    servers[2]->kill();
    const long long t4 = fenced_run(4);
    INFO("tokens " << t1 << " " << t2 << " " << t3 << " " << t4);
    CHECK(t1 > 0);
    CHECK(t2 > t1);
    CHECK(t3 > t2);
    CHECK(t4 > t3);
}

TEST_CASE("cli: --min-replicas counts a node once its replicas have the key", "[cli]") {
    replicated_pair pair;
    redis_server& master = pair.master;
    const std::string key = "cli-replicas";
    {
        const strings args{"run", "--min-replicas", "1", "-N", redis_url(master), key, "--",
                           "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
    {
        // Two asked of a master with one: 69, with the reason, and no key left.
        const strings args{"run", "--min-replicas", "2", "-N", redis_url(master), key, "--",
                           "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_unavailable);
        CHECK(contains(r.err, "too few replicas"));
        CHECK(r.seconds < 5.0);
        redis_client admin(master.port());
        CHECK(lock_exists(admin, key) == 0);
    }
    for (const char* bad : {"256", "-1", "x", ""}) {
        const strings args{"run", "--min-replicas", bad, "-N", redis_url(master), key, "--",
                           "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_usage);
    }
}

TEST_CASE("cli: a Sentinel-managed master, alone or in a Redlock with plain nodes", "[cli]") {
    sentinel_deployment d("s3cret");
    redis_server other1;
    redis_server other2;
    temp_dir dir{"edgelock-cli-sentinel"};
    const std::string pw = dir / "sentinel-pw";
    REQUIRE(write_file(pw, "s3cret\n"));
    REQUIRE(::chmod(pw.c_str(), 0600) == 0);
    const std::string key = "cli-sentinel";
    {
        const strings args{"run", "--sentinel-password-file", pw, "-N", d.url(), key, "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
    {
        // -N splits where a new URL begins: the sentinel list stays one node.
        const std::string nodes = d.url() + "," + redis_url(other1) + "," + redis_url(other2);
        redis_client c1(other1.port());
        redis_client c2(other2.port());
        load_scripts(c1);  // as on the master, which the run above reached
        load_scripts(c2);
        const strings args{"acquire", "--sentinel-password-file", pw, "-N", nodes, key};
        const run_result r = agent(args);
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        const std::string token = lines_of(r.out).at(0);
        redis_client m(d.master.port());
        redis_client a(other1.port());
        redis_client b(other2.port());
        CHECK(lock_value(m, key) == token);
        CHECK(lock_value(a, key) == token);
        CHECK(lock_value(b, key) == token);
    }
    {
        // Without the sentinels' password: no quorum of one, 69, and why.
        const strings args{"run", "-N", d.url(), key + "-2", "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_unavailable);
        CHECK(contains(r.err, "sentinel"));
    }
}

TEST_CASE("cli: the Sentinel master killed under a running job ends it, never hangs", "[cli]") {
    sentinel_deployment d;
    temp_dir dir{"edgelock-cli-sentinel-kill"};
    const std::string started = dir / "started";
    // A job longer than the ttl: the agent must renew on whichever master
    // the sentinels name, or stop the job when it cannot.
    agent_run run({"run", "-t", "3s", "--grace", "1s", "-N", d.url(), "cli-sentinel-kill", "--",
                   "sh", "-c", "touch " + started + "; sleep 8"},
                  {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 10.0));
    d.master.kill();
    const double killed = mono_s();
    const run_result r = run.finish(30.0);
    INFO(show(run.args, r));
    // 0: renewed on the promoted replica throughout; 75: the lock was lost
    // (or about to be) and the job stopped. Either way, in bounded time.
    CHECK((r.status == 0 || r.status == exit_lost));
    CHECK(mono_s() - killed < 15.0);
}
