// The edgelock agent (the `edgelock` binary) end to end, against real
// redis-server processes (tests/integration/redis_server.hpp) and against
// fake_redis (tests/tools/fake_redis.cpp), a server that answers badly on
// purpose: run and its child's status, environment, renewal, lost locks and
// signals; conflicts and waiting; mutual exclusion of concurrent agents;
// Redlock with dead and hostile nodes, fencing across node failures;
// acquire/renew/release/status; usage errors; passwords; hostile servers.
//
// Bad input: a usage error is exit 64 with one line on stderr, and it must not
// touch the network (the nodes named are a listening socket the test owns,
// which must not see a single connection); a bad TOKEN leaves a held lock as
// it was. A hostile server must end in 69 or 1 within bounded time with
// nothing acquired: a command given to `run` is never started, `status` never
// reports the lock held; every fake_redis mode, alone and among real nodes.
//
// Built with EDGELOCK_CLI_PATH (the agent) and EDGELOCK_FAKE_REDIS_PATH.
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

using edgelock_test::agent;
using edgelock_test::agent_run;
using edgelock_test::clip;
using edgelock_test::contains;
using edgelock_test::exit_conflict;
using edgelock_test::exit_lost;
using edgelock_test::exit_unavailable;
using edgelock_test::exit_usage;
using edgelock_test::fake_redis;
using edgelock_test::file_exists;
using edgelock_test::key_of;
using edgelock_test::lock_exists;
using edgelock_test::loopback_listener;
using edgelock_test::mono_s;
using edgelock_test::node_list;
using edgelock_test::one_line;
using edgelock_test::positive;
using edgelock_test::read_file;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::redis_url;
using edgelock_test::run_result;
using edgelock_test::show;
using edgelock_test::sleep_ms;
using edgelock_test::temp_dir;
using edgelock_test::wait_for;
using edgelock_test::wall_s;
using edgelock_test::write_file;

namespace {

using strings = std::vector<std::string>;

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

strings lines_of(const std::string& s) {
    strings out;
    std::istringstream in(s);
    std::string line;
    while (std::getline(in, line)) {
        out.push_back(line);
    }
    return out;
}

bool is_token(const std::string& s) {
    return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// GET {key}: the value, or "" when the key does not exist.
std::string get(redis_client& c, const std::string& key) {
    const edgelock_test::reply r = c.command({"GET", key_of(key)});
    return r.type == '$' || r.type == '+' ? r.text : std::string();
}

long long pttl(redis_client& c, const std::string& key) {
    return c.command({"PTTL", key_of(key)}).integer;
}

const char* const valid_token = "00112233445566778899aabbccddeeff";

// Every fake_redis mode (tests/tools/fake_redis.cpp).
const char* const all_modes[] = {
    "silent",      "reset",       "close",           "trickle", "garbage",
    "huge-length", "length-2-63", "negative-length", "deep",    "no-cr",
    "big-error",   "wrong-type",  "ok-then-garbage", "random"};

// What every agent run against hostile nodes must end with.
void check_not_acquired(const strings& args, const run_result& r, const std::string& mode) {
    INFO("fake_redis " << mode << "\n" << show(args, r));
    CHECK((r.status == exit_unavailable || r.status == exit_conflict));
    CHECK(r.seconds < 10.0);
}

}  // namespace

// --- run --------------------------------------------------------------------

TEST_CASE("cli: run passes the child's exit status through", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-run-status";

    struct row {
        const char* script;
        int status;
    };
    const row rows[] = {
        {"exit 0", 0},
        {"exit 7", 7},
        {"exit 255", 255},
        {"kill -TERM $$", 128 + SIGTERM},
        {"kill -KILL $$", 128 + SIGKILL},
    };
    for (const row& w : rows) {
        const strings args{"run", "-N", redis_url(srv), key, "--", "sh", "-c", w.script};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == w.status);
        CHECK(lock_exists(admin, key) == 0);  // released when the child exited
    }

    const strings args{"run", "-N", redis_url(srv), key, "--", "true"};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK(r.seconds < 3.0);
}

TEST_CASE("cli: run gives the child EDGELOCK_KEY and the agent's environment", "[cli]") {
    redis_server srv;
    temp_dir dir;
    const std::string key = "cli-run-env";
    const std::string out = dir / "env";
    const strings args{"run",
                       "-N",
                       redis_url(srv),
                       key,
                       "--",
                       "sh",
                       "-c",
                       "printf '%s|%s|%s' \"$EDGELOCK_KEY\" \"${EDGELOCK_FENCING_TOKEN-unset}\" "
                       "\"$EDGELOCK_TEST_MARK\" > '" +
                           out + "'"};
    const run_result r = agent(args, {"EDGELOCK_TEST_MARK=kept"});
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK(read_file(out) == key + "|unset|kept");
}

TEST_CASE("cli: run --fencing gives the child increasing fencing tokens", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string key = "cli-run-fencing";

    long long previous = 0;
    for (int i = 0; i < 3; ++i) {
        const std::string out = dir / ("fence" + std::to_string(i));
        const strings args{
            "run",          "--fencing", "-N",
            redis_url(srv), key,         "--",
            "sh",           "-c",        "printf '%s' \"$EDGELOCK_FENCING_TOKEN\" > '" + out + "'"};
        const run_result r = agent(args);
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        const std::string text = read_file(out);
        INFO("EDGELOCK_FENCING_TOKEN='" << text << "', previous " << previous);
        const long long token = positive(text);
        CHECK(token > 0);
        CHECK(token > previous);
        previous = token;
        CHECK(lock_exists(admin, key) == 0);
    }

    // acquire --fencing on the same key continues the sequence.
    const strings args{"acquire", "--fencing", "-t", "5s", "-N", redis_url(srv), key};
    const run_result r = agent(args);
    INFO(show(args, r));
    REQUIRE(r.status == 0);
    const strings out = lines_of(r.out);
    REQUIRE(out.size() == 2);
    CHECK(is_token(out[0]));
    CHECK(positive(out[1]) > previous);
}

TEST_CASE("cli: run forwards SIGTERM, SIGINT and SIGHUP to the child", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string key = "cli-run-signals";

    struct row {
        int sig;
        const char* name;
    };
    const row rows[] = {{SIGTERM, "TERM"}, {SIGINT, "INT"}, {SIGHUP, "HUP"}};
    for (const row& w : rows) {
        const std::string started = dir / (std::string("started-") + w.name);
        const strings args{"run",
                           "-N",
                           redis_url(srv),
                           key,
                           "--",
                           "sh",
                           "-c",
                           std::string("trap 'exit 3' ") + w.name + "; touch '" + started +
                               "'; while :; do sleep 0.05; done"};
        agent_run a(args, {});
        const bool child_started = wait_for([&] { return file_exists(started); }, 5.0);
        a.proc.signal(w.sig);  // the agent only, not its process group
        const run_result r = a.finish(10.0);
        INFO("signal " << w.name << "\n" << show(args, r));
        REQUIRE(child_started);
        CHECK(r.status == 3);
        CHECK(lock_exists(admin, key) == 0);
    }
}

// --- conflicts and waiting --------------------------------------------------

TEST_CASE("cli: a held lock is a conflict: 1, or the -E code, at once", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-conflict";

    const strings hold{"acquire", "-t", "10s", "-N", redis_url(srv), key};
    const run_result h = agent(hold);
    INFO(show(hold, h));
    REQUIRE(h.status == 0);
    const std::string token = lines_of(h.out).at(0);
    REQUIRE(get(admin, key) == token);

    {
        const strings args{"run", "-n", "-N", redis_url(srv), key, "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_conflict);
        CHECK(r.seconds < 3.0);
    }
    {
        const strings args{"run", "-n", "-E", "42", "-N", redis_url(srv), key, "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 42);
        CHECK(r.seconds < 3.0);
    }
    {
        const strings args{"run", "-N", redis_url(srv), key, "--", "true"};  // default: one try
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_conflict);
        CHECK(r.seconds < 3.0);
    }
    {
        const strings args{"acquire", "-N", redis_url(srv), key};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_conflict);
        CHECK(r.out.empty());
    }
    {
        const strings args{"run", "-q", "-n", "-N", redis_url(srv), key, "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_conflict);
        CHECK(r.err.empty());
    }
    CHECK(get(admin, key) == token);  // the holder still holds it
    CHECK(pttl(admin, key) > 5000);
}

TEST_CASE("cli: run -w waits for the holder's lock to expire", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-wait";

    REQUIRE(admin.command({"SET", key_of(key), "someone-else", "PX", "500"}).text == "OK");
    const strings args{"run", "-w", "1s", "-N", redis_url(srv), key, "--", "true"};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK(r.seconds > 0.2);  // it cannot have had the lock before the expiry
    CHECK(r.seconds < 3.0);
    CHECK(lock_exists(admin, key) == 0);
}

TEST_CASE("cli: a signal while waiting for the lock ends the wait, no command run", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string key = "cli-wait-signal";
    REQUIRE(admin.command({"SET", key_of(key), "holder", "PX", "20000"}).text == "OK");

    agent_run a({"run", "-w", "20s", "-N", redis_url(srv), key, "--", "touch", dir / "ran"}, {});
    sleep_ms(300);
    const double sent = mono_s();
    a.proc.signal(SIGTERM);
    const run_result r = a.finish(10.0);
    INFO(show(a.args, r));
    CHECK(r.status != 0);
    CHECK(mono_s() - sent < 2.0);
    CHECK_FALSE(file_exists(dir / "ran"));
    CHECK(get(admin, key) == "holder");
}

TEST_CASE("cli: run of a command that cannot be started is 127, lock released", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-run-enoent";
    const strings args{"run", "-N", redis_url(srv),
                       key,   "--", "/nonexistent/edgelock-test-command"};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == 127);  // as env(1) and timeout(1) say it
    CHECK_FALSE(r.err.empty());
    CHECK(lock_exists(admin, key) == 0);
}

// --- mutual exclusion ---------------------------------------------------------

TEST_CASE("cli: concurrent runs exclude each other", "[cli]") {
    std::vector<std::unique_ptr<redis_server>> servers;
    for (int i = 0; i < 3; ++i) {
        servers.push_back(std::make_unique<redis_server>());
    }
    temp_dir dir;

    for (std::size_t nodes : {std::size_t{1}, std::size_t{3}}) {
        strings urls;
        for (std::size_t i = 0; i < nodes; ++i) {
            urls.push_back(redis_url(*servers[i]));
        }
        const std::string key = "cli-mutex-" + std::to_string(nodes);
        const std::string counter = dir / ("counter" + std::to_string(nodes));
        write_file(counter, "0\n");
        const std::string racy =
            "n=$(cat '" + counter + "'); sleep 0.05; echo $((n+1)) > '" + counter + "'";

        std::vector<std::unique_ptr<agent_run>> runs;
        for (int i = 0; i < 8; ++i) {
            runs.push_back(std::make_unique<agent_run>(
                strings{"run", "-w", "20s", "-N", node_list(urls), key, "--", "sh", "-c", racy},
                strings{}));
        }
        for (auto& a : runs) {
            const run_result r = a->finish(40.0);
            INFO(nodes << " node(s)\n" << show(a->args, r));
            CHECK(r.status == 0);
        }
        INFO(nodes << " node(s)");
        CHECK(read_file(counter) == "8\n");
        for (std::size_t i = 0; i < nodes; ++i) {
            redis_client admin(servers[i]->port());
            CHECK(lock_exists(admin, key) == 0);
        }
    }
}

// --- renewal and lost locks ---------------------------------------------------

TEST_CASE("cli: run renews the lock while the child outlives the ttl", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-renew";

    agent_run a({"run", "-t", "1s", "-N", redis_url(srv), key, "--", "sleep", "3"}, {});
    REQUIRE(wait_for([&] { return is_token(get(admin, key)); }, 3.0));
    const std::string token = get(admin, key);
    const double until = mono_s() + 2.3;
    int samples = 0;
    int missing = 0;
    long long max_pttl = 0;
    while (mono_s() < until) {
        const long long t = pttl(admin, key);
        ++samples;
        missing += (t <= 0 || get(admin, key) != token) ? 1 : 0;
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
    REQUIRE(is_token(get(admin, key)));
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
    CHECK(get(admin, key) == "other");             // never deletes what it does not own
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

TEST_CASE("cli: 2 of 5 nodes down still lock; 3 down is 69", "[cli]") {
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
            CHECK(get(admin, key) == token);
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

TEST_CASE("cli: one hostile node of three does not stop the lock; two do", "[cli]") {
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
        o.run = std::make_unique<agent_run>(
            strings{"run", "-N", nodes, std::string("cli-one-hostile-") + m, "--", "true"},
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
    const strings args{
        "run", "-N",  node_list({redis_url(a), silent.url(), garbage.url()}), "cli-two-hostile",
        "--",  "true"};
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

// --- acquire / renew / release / status ------------------------------------------

TEST_CASE("cli: acquire, renew, release and status", "[cli]") {
    std::vector<std::unique_ptr<redis_server>> servers;
    std::vector<std::unique_ptr<redis_client>> admins;
    strings urls;
    for (int i = 0; i < 3; ++i) {
        servers.push_back(std::make_unique<redis_server>());
        admins.push_back(std::make_unique<redis_client>(servers.back()->port()));
        urls.push_back(redis_url(*servers.back()));
    }
    const std::string nodes = node_list(urls);
    const std::string key = "cli-commands";

    const strings acq{"acquire", "-t", "5s", "-N", nodes, key};
    const run_result a = agent(acq);
    INFO(show(acq, a));
    REQUIRE(a.status == 0);
    const strings out = lines_of(a.out);
    REQUIRE(out.size() == 1);
    const std::string token = out[0];
    CHECK(is_token(token));
    for (auto& c : admins) {
        CHECK(get(*c, key) == token);
        CHECK(pttl(*c, key) <= 5000);
    }

    {
        const strings args{"renew", "-t", "20s", "-N", nodes, key, token};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        for (auto& c : admins) {
            CHECK(pttl(*c, key) > 10000);
        }
    }
    {
        const strings args{"renew", "-t", "20s", "-N", nodes, key, std::string(32, '0')};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status != 0);  // not ours: not renewed
    }

    const strings held_args{"status", "-N", nodes, key};
    const run_result held = agent(held_args);
    {
        INFO(show(held_args, held));
        CHECK(held.status == 0);
        CHECK(contains(lower(held.out), "held"));
        for (const auto& s : servers) {
            CHECK(contains(held.out, "127.0.0.1:" + std::to_string(s->port())));
        }
    }

    {
        const strings args{"release", "-N", nodes, key, std::string(32, 'a')};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 1);
        for (auto& c : admins) {
            CHECK(get(*c, key) == token);
        }
    }
    {
        const strings args{"release", "-N", nodes, key, token};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        for (auto& c : admins) {
            CHECK(lock_exists(*c, key) == 0);
        }
    }
    {
        const strings args{"release", "-N", nodes, key, token};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 1);
    }

    const run_result freed = agent(held_args);
    INFO(show(held_args, freed));
    CHECK(freed.status == 0);
    CHECK(contains(lower(freed.out), "free"));
    CHECK(freed.out != held.out);
}

TEST_CASE("cli bad input: a bad TOKEN leaves a held lock as it was", "[cli][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-bad-token";
    const strings acq{"acquire", "-t", "20s", "-N", redis_url(srv), key};
    const run_result a = agent(acq);
    INFO(show(acq, a));
    REQUIRE(a.status == 0);
    const std::string token = a.out.substr(0, a.out.find('\n'));
    REQUIRE(token.size() == 32);

    std::string upper = token;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    for (const std::string& bad : {token.substr(1), token + "0", "0x" + token.substr(2),
                                   token.substr(0, 31) + "z", std::string()}) {
        for (const char* cmd : {"release", "renew"}) {
            const strings args{cmd, "-t", "60s", "-N", redis_url(srv), key, bad};
            const run_result r = agent(args);
            INFO(show(args, r));
            CHECK(r.status == exit_usage);
            CHECK(admin.command({"GET", key_of(key)}).text == token);
            const long long pttl = admin.command({"PTTL", key_of(key)}).integer;
            CHECK(pttl > 0);
            CHECK(pttl <= 20000);  // not renewed to 60 s
        }
    }
    // The token in upper case is the same token.
    const strings rel{"release", "-N", redis_url(srv), key, upper};
    const run_result r = agent(rel);
    INFO(show(rel, r));
    CHECK(r.status == 0);
    CHECK(admin.command({"EXISTS", key_of(key)}).integer == 0);
}

TEST_CASE("cli: acquire --fencing prints the fencing token on line 2", "[cli]") {
    redis_server srv;
    const strings args{"acquire",      "--fencing",         "-t", "5s", "-N",
                       redis_url(srv), "cli-acquire-fenced"};
    const run_result r = agent(args);
    INFO(show(args, r));
    REQUIRE(r.status == 0);
    const strings out = lines_of(r.out);
    REQUIRE(out.size() == 2);
    CHECK(is_token(out[0]));
    CHECK(positive(out[1]) > 0);
}

TEST_CASE("cli: durations: ms, s, m, h and bare seconds", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    struct row {
        const char* ttl;
        long long min_ms;
        long long max_ms;
    };
    const row rows[] = {
        {"250ms", 1, 250},      {"7", 5000, 7000},        {"10s", 8000, 10000},
        {"2m", 110000, 120000}, {"1h", 3500000, 3600000},
    };
    for (const row& w : rows) {
        const std::string key = std::string("cli-duration-") + w.ttl;
        const strings args{"acquire", "-t", w.ttl, "-N", redis_url(srv), key};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        const long long t = pttl(admin, key);
        INFO("PTTL " << t);
        CHECK(t >= w.min_ms);
        CHECK(t <= w.max_ms);
    }
}

TEST_CASE("cli: nodes from EDGELOCK_NODES, and -N overrides it", "[cli]") {
    redis_server srv;
    redis_server dead;
    dead.kill();
    redis_client admin(srv.port());
    {
        const strings args{"acquire", "-t", "5s", "cli-env-nodes"};
        const run_result r = agent(args, {"EDGELOCK_NODES=" + redis_url(srv)});
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        CHECK(get(admin, "cli-env-nodes") == lines_of(r.out).at(0));
    }
    {
        const strings args{"run", "-N", redis_url(srv), "cli-env-override", "--", "true"};
        const run_result r = agent(args, {"EDGELOCK_NODES=" + redis_url(dead)});
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
}

// --- usage errors ------------------------------------------------------------------

TEST_CASE("cli: usage errors are 64 with one line on stderr", "[cli]") {
    redis_server srv;  // so that an agent that does not refuse finds a server
    const std::string n = redis_url(srv);
    struct row {
        const char* what;
        strings args;
    };
    const std::vector<row> rows = {
        {"unknown option", {"run", "--bogus", "-N", n, "k", "--", "true"}},
        {"bad duration", {"run", "-t", "5x", "-N", n, "k", "--", "true"}},
        {"zero ttl", {"run", "-t", "0", "-N", n, "k", "--", "true"}},
        {"bad wait", {"run", "-w", "soon", "-N", n, "k", "--", "true"}},
        {"not a redis URL", {"run", "-N", "http://x", "k", "--", "true"}},
        {"port out of range", {"run", "-N", "redis://127.0.0.1:70000", "k", "--", "true"}},
        {"port 0", {"run", "-N", "redis://127.0.0.1:0", "k", "--", "true"}},
        {"empty node list", {"run", "-N", "", "k", "--", "true"}},
        {"negative ttl", {"run", "-t", "-5", "-N", n, "k", "--", "true"}},
        {"duration overflow", {"run", "-t", "99999999999999h", "-N", n, "k", "--", "true"}},
        {"renew-every not under the ttl",
         {"run", "-t", "1s", "--renew-every", "2s", "-N", n, "k", "--", "true"}},
        {"conflict exit code out of range", {"run", "-E", "300", "-N", n, "k", "--", "true"}},
        {"empty KEY", {"run", "-N", n, "", "--", "true"}},
        {"bad TOKEN", {"release", "-N", n, "k", "not-hex"}},
        {"command without --", {"run", "-N", n, "k", "true"}},
        {"TLS option without TLS", {"run", "--cacert", "ca.pem", "-N", n, "k", "--", "true"}},
        {"--insecure without TLS", {"run", "--insecure", "-N", n, "k", "--", "true"}},
        {"--cert without --key", {"run", "--tls", "--cert", "c.pem", "-N", n, "k", "--", "true"}},
        {"--key without --cert", {"run", "--tls", "--key", "k.pem", "-N", n, "k", "--", "true"}},
        {"empty --sni", {"run", "--tls", "--sni=", "-N", n, "k", "--", "true"}},
        // With TLS built in, the CA file is read at set-up; without, TLS is
        // refused: a usage error either way, before any node is contacted.
        {"unreadable CA file",
         {"run", "--tls", "--cacert", "/nonexistent/ca.pem", "-N", n, "k", "--", "true"}},
        {"missing command", {"run", "-N", n, "k", "--"}},
        {"missing KEY (run)", {"run", "-N", n}},
        {"missing KEY (acquire)", {"acquire", "-N", n}},
        {"missing TOKEN", {"release", "-N", n, "k"}},
        {"unknown subcommand", {"frobnicate", "-N", n, "k"}},
        {"no subcommand", {}},
    };
    for (const row& w : rows) {
        const run_result r = agent(w.args);
        INFO(w.what << "\n" << show(w.args, r));
        CHECK(r.status == exit_usage);
        CHECK(one_line(r.err));
        CHECK(r.out.empty());
    }
}

TEST_CASE("cli bad input: usage errors are 64, one line, and touch no node", "[cli][bad-input]") {
    loopback_listener node;
    REQUIRE(node.fd() >= 0);
    const std::string n = redis_url(node.port());
    temp_dir dir;
    write_file(dir / "long", std::string(2000, 'p'));
    write_file(dir / "secret-257", std::string(257, 'p') + "\n");
    ::mkdir((dir / "a-directory").c_str(), 0700);
    std::string ten = n;
    for (int i = 1; i < 10; ++i) {
        ten += "," + n;
    }
    const std::string key129(129, 'k');
    const std::string pw257(257, 'p');

    struct row {
        const char* what;
        strings args;
        strings env;
    };
    const std::vector<row> rows = {
        // Durations.
        {"ttl above 24h", {"acquire", "-N", n, "-t", "25h", "k"}, {}},
        {"ttl of 24h and 1ms", {"acquire", "-N", n, "-t", "86400001ms", "k"}, {}},
        {"ttl eaten by the drift (1ms)", {"acquire", "-N", n, "-t", "1ms", "k"}, {}},
        {"ttl eaten by the drift (2ms)", {"acquire", "-N", n, "-t", "2ms", "k"}, {}},
        {"empty duration", {"acquire", "-N", n, "--ttl=", "k"}, {}},
        {"duration with a space", {"acquire", "-N", n, "-t", "5 s", "k"}, {}},
        {"duration in upper case", {"acquire", "-N", n, "-t", "5S", "k"}, {}},
        {"fractional duration", {"acquire", "-N", n, "-t", "1.5s", "k"}, {}},
        {"unit without a number", {"acquire", "-N", n, "-t", "ms", "k"}, {}},
        {"duration with a plus sign", {"acquire", "-N", n, "-t", "+5s", "k"}, {}},
        {"renew-every 0", {"run", "-N", n, "--renew-every", "0", "k", "--", "true"}, {}},
        {"renew-every past the validity",
         {"run", "-N", n, "-t", "30s", "--renew-every", "29700ms", "k", "--", "true"},
         {}},
        {"bad grace", {"run", "-N", n, "--grace", "5x", "k", "--", "true"}, {}},
        {"negative grace", {"run", "-N", n, "--grace=-1s", "k", "--", "true"}, {}},
        {"negative wait", {"acquire", "-N", n, "-w", "-1", "k"}, {}},
        {"wait overflow", {"acquire", "-N", n, "-w", "99999999h", "k"}, {}},
        // -E.
        {"conflict exit code -1", {"acquire", "-N", n, "-E", "-1", "k"}, {}},
        {"conflict exit code 256", {"acquire", "-N", n, "-E", "256", "k"}, {}},
        {"conflict exit code abc", {"acquire", "-N", n, "-E", "abc", "k"}, {}},
        {"conflict exit code 1x", {"acquire", "-N", n, "-E", "1x", "k"}, {}},
        {"empty conflict exit code", {"acquire", "-N", n, "--conflict-exit-code=", "k"}, {}},
        // Options without their value.
        {"-t at the end", {"acquire", "-N", n, "k", "-t"}, {}},
        {"-N at the end", {"acquire", "k", "-N"}, {}},
        {"--password-file at the end", {"acquire", "-N", n, "k", "--password-file"}, {}},
        // Flags given a value.
        {"--nonblock=no", {"acquire", "-N", n, "--nonblock=no", "k"}, {}},
        {"--verbose=0", {"acquire", "-N", n, "--verbose=0", "k"}, {}},
        {"--quiet=no", {"acquire", "-N", n, "--quiet=no", "k"}, {}},
        {"--fencing=no", {"acquire", "-N", n, "--fencing=no", "k"}, {}},
        {"-vq", {"acquire", "-N", n, "-vq", "k"}, {}},
        {"-nv", {"acquire", "-N", n, "-nv", "k"}, {}},
        // KEY, nodes.
        {"KEY of 129 bytes", {"acquire", "-N", n, key129}, {}},
        {"10 nodes", {"acquire", "-N", ten, "k"}, {}},
        {"an empty node between two", {"acquire", "-N", n + ",," + n, "k"}, {}},
        {"a trailing comma", {"acquire", "-N", n + ",", "k"}, {}},
        {"a bad URL after a good one", {"acquire", "-N", n + ",redis://127.0.0.1:0", "k"}, {}},
        {"a user without a password", {"acquire", "-N", redis_url(node.port(), "gw"), "k"}, {}},
        {"db out of range", {"acquire", "-N", n + "/2147483648", "k"}, {}},
        {"relative unix path", {"acquire", "-N", "unix://tmp/redis.sock", "k"}, {}},
        // TOKEN.
        {"TOKEN of 31 hex digits", {"release", "-N", n, "k", std::string(31, 'a')}, {}},
        {"TOKEN of 33 hex digits", {"renew", "-N", n, "k", std::string(33, 'a')}, {}},
        {"TOKEN of 32 non-hex bytes", {"renew", "-N", n, "k", std::string(32, 'g')}, {}},
        {"TOKEN with a 0x prefix", {"release", "-N", n, "k", "0x" + std::string(30, 'a')}, {}},
        {"empty TOKEN", {"release", "-N", n, "k", ""}, {}},
        // Operands.
        {"acquire with an extra operand", {"acquire", "-N", n, "k", "extra"}, {}},
        {"status with an extra operand", {"status", "-N", n, "k", "extra"}, {}},
        {"renew with an extra operand", {"renew", "-N", n, "k", valid_token, "extra"}, {}},
        {"acquire with a command", {"acquire", "-N", n, "k", "--", "true"}, {}},
        // Passwords.
        {"a missing password file", {"acquire", "-N", n, "--password-file", dir / "none", "k"}, {}},
        {"a directory as password file",
         {"acquire", "-N", n, "--password-file", dir / "a-directory", "k"},
         {}},
        {"a password file over 1 KiB",
         {"acquire", "-N", n, "--password-file", dir / "long", "k"},
         {}},
        {"a password of 257 bytes from a file",
         {"acquire", "-N", n, "--password-file", dir / "secret-257", "k"},
         {}},
        // The environment.
        {"EDGELOCK_NODES with an empty node", {"acquire", "k"}, {"EDGELOCK_NODES=" + n + ",," + n}},
        {"EDGELOCK_NODES of a comma", {"acquire", "k"}, {"EDGELOCK_NODES=,"}},
        {"EDGELOCK_NODES not a URL", {"acquire", "k"}, {"EDGELOCK_NODES=127.0.0.1:6379"}},
        {"EDGELOCK_NODES of 10 nodes", {"acquire", "k"}, {"EDGELOCK_NODES=" + ten}},
        // TLS: options that need it, and a CA file that cannot be read (with
        // TLS built in it is read at set-up, before any node; without, TLS is
        // refused): usage errors either way.
        {"a TLS option without TLS", {"acquire", "-N", n, "--cacert", dir / "none", "k"}, {}},
        {"EDGELOCK_NODES with TLS and an unreadable CA",
         {"acquire", "--cacert", dir / "none", "k"},
         {"EDGELOCK_NODES=rediss://127.0.0.1:" + std::to_string(node.port())}},
        {"REDISCLI_AUTH of 257 bytes", {"acquire", "-N", n, "k"}, {"REDISCLI_AUTH=" + pw257}},
    };
    for (const row& w : rows) {
        const run_result r = agent(w.args, w.env);
        INFO(w.what << "\n" << show(w.args, r));
        CHECK(r.status == exit_usage);
        CHECK(one_line(r.err));
        CHECK(r.out.empty());
        CHECK(r.seconds < 5.0);
        CHECK(node.accepted() == 0);
    }

    // The same values, valid: the agent does go to the node (and finds it mute).
    const strings args{"release", "-N", n, "k", valid_token};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == exit_unavailable);
    CHECK(node.accepted() > 0);
}

TEST_CASE("cli: -h prints the usage, -V the version", "[cli]") {
    for (const char* h : {"-h", "--help"}) {
        const strings args{h};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(contains(lower(r.out), "usage"));
        CHECK(contains(r.out, "run"));
    }
    for (const char* v : {"-V", "--version"}) {
        const strings args{v};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK_FALSE(r.out.empty());
    }
}

// --- passwords ---------------------------------------------------------------------

TEST_CASE("cli: passwords from --password-file and REDISCLI_AUTH", "[cli]") {
    redis_server srv({"--requirepass", "pw"});
    temp_dir dir;
    write_file(dir / "pw", "pw");
    write_file(dir / "pw-newline", "pw\n");  // as `echo pw > file` writes it
    write_file(dir / "wrong", "wrong\n");

    {
        const strings args{"acquire",  "-t", "5s",           "--password-file",
                           dir / "pw", "-N", redis_url(srv), "cli-pw-file"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(r.out.size() == 33);
    }
    {
        const strings args{"acquire",          "-t", "5s",           "--password-file",
                           dir / "pw-newline", "-N", redis_url(srv), "cli-pw-file-newline"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
    {
        const strings args{"run", "-N", redis_url(srv), "cli-pw-env", "--", "true"};
        const run_result r = agent(args, {"REDISCLI_AUTH=pw"});
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
    struct row {
        const char* what;
        strings args;
    };
    const std::vector<row> refused = {
        {"wrong password",
         {"acquire", "--password-file", dir / "wrong", "-N", redis_url(srv), "cli-pw-wrong"}},
        {"no password", {"acquire", "-N", redis_url(srv), "cli-pw-none"}},
    };
    for (const row& w : refused) {
        const run_result r = agent(w.args);
        INFO(w.what << "\n" << show(w.args, r));
        CHECK(r.status == exit_unavailable);
        CHECK(r.out.empty());
        const std::string e = lower(r.err);
        CHECK((contains(e, "auth") || contains(e, "password")));
    }
}

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
    // timeouts side by side.
    for (const char* m : modes) {
        one o;
        o.mode = m;
        o.fake = std::make_unique<fake_redis>(m, 60);
        const std::string node = o.fake->url();
        o.acquire = std::make_unique<agent_run>(
            strings{"acquire", "-N", node, std::string("cli-hostile-") + m}, strings{});
        o.run = std::make_unique<agent_run>(
            strings{"run", "-N", node, std::string("cli-hostile-run-") + m, "--", "true"},
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
        runs.push_back(
            std::make_unique<agent_run>(strings{"acquire", "-N", f.url(), key}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"run", "-N", f.url(), key, "--", "touch", ran}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"run", "-w", "2s", "-N", f.url(), key, "--", "touch", ran}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"renew", "-N", f.url(), key, valid_token}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"release", "-N", f.url(), key, valid_token}, strings{}));
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
    for (const char* m : all_modes) {
        fakes.push_back(std::make_unique<fake_redis>(m));
    }
    // Two waves, so that 14 slow modes wait on the agents' timeouts side by side
    // without 56 agents at once.
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
            strings{"run", "-N", f->url(), key, "--", "touch", dir / f->mode}, strings{});
        o.second = std::make_unique<agent_run>(strings{"status", "-N", f->url(), key}, strings{});
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
        o.second = std::make_unique<agent_run>(strings{"release", "-N", f->url(), key, valid_token},
                                               strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        check_not_acquired(o.first->args, o.first->finish(), o.mode);
        check_not_acquired(o.second->args, o.second->finish(), o.mode);
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
