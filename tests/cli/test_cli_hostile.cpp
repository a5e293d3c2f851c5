// The agent against fake_redis (tests/tools/fake_redis.cpp), a server that
// answers badly on purpose: every mode must end in 69 or 1 within bounded time
// with nothing acquired; a command given to `run` is never started, `status`
// never reports the lock held; every mode alone and among real nodes.
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

// --- hostile servers ---------------------------------------------------------------

TEST_CASE("cli: hostile servers: 69 or 1, in bounded time, never a crash", "[cli]") {
    const char* modes[] = {"silent",  "reset",       "close",           "trickle",
                           "garbage", "huge-length", "negative-length", "deep",
                           "no-cr",   "big-error",   "wrong-type",      "ok-then-garbage"};
    struct one {
        std::string mode;
        std::unique_ptr<fake_redis> fake;
        std::unique_ptr<agent_run> acquire;
        std::unique_ptr<agent_run> run;
    };
    std::vector<one> all;
    // Every mode at once: the slow ones (silent, trickle) wait on the agent's
    // timeouts side by side: a try's, half of what -t 4s leaves after the
    // drift.
    for (const char* m : modes) {
        one o;
        o.mode = m;
        o.fake = std::make_unique<fake_redis>(m, 60);
        const std::string node = o.fake->url();
        o.acquire = std::make_unique<agent_run>(
            strings{"acquire", "-t", "4s", "-N", node, std::string("cli-hostile-") + m}, strings{});
        o.run =
            std::make_unique<agent_run>(strings{"run", "-t", "4s", "-N", node,
                                                std::string("cli-hostile-run-") + m, "--", "true"},
                                        strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        const run_result a = o.acquire->finish(30.0);
        const run_result r = o.run->finish(30.0);
        INFO("fake_redis " << o.mode << "\n"
                           << show(o.acquire->args, a) << "\n"
                           << show(o.run->args, r));
        CHECK((a.status == exit_unavailable || a.status == exit_conflict));
        CHECK((r.status == exit_unavailable || r.status == exit_conflict));
        CHECK(a.out.empty());
        CHECK(a.seconds < 10.0);
        CHECK(r.seconds < 10.0);
        CHECK(o.fake->server->running());  // the fake itself survived the agent
        o.fake->server->kill_group(SIGKILL);
    }
}

TEST_CASE("cli bad input: random bytes and 2^63 lengths: 69 or 1, nothing acquired",
          "[cli][bad-input]") {
    temp_dir dir;
    for (const char* mode : {"random", "length-2-63"}) {
        fake_redis f(mode);
        const std::string ran = dir / (std::string("ran-") + mode);
        const std::string key = std::string("cli-bad-") + mode;
        std::vector<std::unique_ptr<agent_run>> runs;
        runs.push_back(std::make_unique<agent_run>(
            strings{"acquire", "-t", "4s", "-N", f.url(), key}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"run", "-t", "4s", "-N", f.url(), key, "--", "touch", ran}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"run", "-t", "4s", "-w", "2s", "-N", f.url(), key, "--", "touch", ran},
            strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"renew", "-N", f.url(), key, valid_token}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"release", "-t", "4s", "-N", f.url(), key, valid_token}, strings{}));
        for (auto& a : runs) {
            const run_result r = a->finish();
            check_not_acquired(a->args, r, mode);
            CHECK(r.out.empty());
        }
        const strings st{"status", "-N", f.url(), key};
        const run_result s = agent(st);
        INFO(show(st, s));
        CHECK(s.status == exit_unavailable);
        CHECK_FALSE(contains(s.out, "held"));
        CHECK(s.seconds < 10.0);
        CHECK_FALSE(file_exists(ran));  // the command never ran
        CHECK(f.server->running());     // and the fake survived its clients
    }
}

TEST_CASE("cli bad input: no hostile server lets a command run or reports a lock held",
          "[cli][bad-input]") {
    temp_dir dir;
    std::vector<std::unique_ptr<fake_redis>> fakes;
    for (const char* m : fake_redis_modes) {
        fakes.push_back(std::make_unique<fake_redis>(m));
    }
    // Waves, so that 14 slow modes wait on the agents' timeouts side by side
    // without 84 agents at once.
    struct one {
        std::string mode;
        std::unique_ptr<agent_run> first;
        std::unique_ptr<agent_run> second;
    };
    std::vector<one> all;
    for (const auto& f : fakes) {
        const std::string key = "cli-bad-all-" + f->mode;
        one o;
        o.mode = f->mode;
        o.first = std::make_unique<agent_run>(
            strings{"run", "-t", "4s", "-N", f->url(), key, "--", "touch", dir / f->mode},
            strings{});
        o.second = std::make_unique<agent_run>(strings{"status", "-t", "4s", "-N", f->url(), key},
                                               strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        const run_result r = o.first->finish();
        check_not_acquired(o.first->args, r, o.mode);
        const run_result s = o.second->finish();
        INFO("fake_redis " << o.mode << "\n" << show(o.second->args, s));
        CHECK(s.status == exit_unavailable);
        CHECK_FALSE(contains(s.out, "held"));
        CHECK(s.seconds < 10.0);
        CHECK_FALSE(file_exists(dir / o.mode));
    }
    all.clear();
    for (const auto& f : fakes) {
        const std::string key = "cli-bad-all-" + f->mode;
        one o;
        o.mode = f->mode;
        o.first = std::make_unique<agent_run>(
            strings{"renew", "-t", "10s", "-N", f->url(), key, valid_token}, strings{});
        o.second = std::make_unique<agent_run>(
            strings{"release", "-t", "4s", "-N", f->url(), key, valid_token}, strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        check_not_acquired(o.first->args, o.first->finish(), o.mode);
        check_not_acquired(o.second->args, o.second->finish(), o.mode);
    }
    // And what an operator asks: status and list, as JSON, never show a
    // hostile server's answer as a lock.
    all.clear();
    for (const auto& f : fakes) {
        const std::string key = "cli-bad-all-" + f->mode;
        one o;
        o.mode = f->mode;
        o.first = std::make_unique<agent_run>(
            strings{"status", "-t", "4s", "--json", "-N", f->url(), key}, strings{});
        o.second = std::make_unique<agent_run>(
            strings{"list", "-t", "4s", "--json", "-N", f->url()}, strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        const run_result s = o.first->finish();
        const run_result l = o.second->finish();
        INFO("fake_redis " << o.mode << "\n"
                           << show(o.first->args, s) << "\n"
                           << show(o.second->args, l));
        CHECK(s.status == exit_unavailable);
        CHECK(contains(s.out, "\"held\":false"));
        CHECK(l.status == exit_unavailable);
        CHECK(l.out == "{\"locks\":[],\"truncated\":false}\n");
        CHECK(s.seconds < 10.0);
        CHECK(l.seconds < 10.0);
    }
    for (const auto& f : fakes) {
        INFO("fake_redis " << f->mode);
        CHECK(f->server->running());
    }
}

TEST_CASE("cli bad input: random and 2^63 nodes among real ones", "[cli][bad-input]") {
    redis_server a;
    redis_server b;
    redis_client admin(a.port());
    fake_redis random("random");
    fake_redis huge("length-2-63");
    temp_dir dir;

    // One hostile node of three: the quorum of two real ones holds the lock.
    for (const fake_redis* f : {&random, &huge}) {
        const std::string ran = dir / ("one-" + f->mode);
        const strings args{"run",
                           "-N",
                           node_list({redis_url(a), redis_url(b), f->url()}),
                           "cli-bad-one-" + f->mode,
                           "--",
                           "touch",
                           ran};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(r.seconds < 5.0);
        CHECK(file_exists(ran));
    }

    // Two of three: no quorum, the command never runs, the real node is left clean.
    const std::string ran = dir / "two";
    const strings args{
        "run",   "-N", node_list({redis_url(a), random.url(), huge.url()}), "cli-bad-two", "--",
        "touch", ran};
    const run_result r = agent(args, {}, 30.0);
    INFO(show(args, r));
    CHECK((r.status == exit_unavailable || r.status == exit_conflict));
    CHECK(r.seconds < 10.0);
    CHECK_FALSE(file_exists(ran));
    CHECK(admin.command({"EXISTS", key_of("cli-bad-two")}).integer == 0);
    CHECK(random.server->running());
    CHECK(huge.server->running());
}
