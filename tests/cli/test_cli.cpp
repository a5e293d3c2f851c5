// The edgelock agent (the `edgelock` binary) end to end, against real
// redis-server processes (tests/integration/redis_server.hpp) and against
// fake_redis (tests/tools/fake_redis.cpp), a server that answers badly on
// purpose: run and its child's status, environment, renewal, lost locks and
// signals; conflicts and waiting; mutual exclusion of concurrent agents;
// Redlock with dead and hostile nodes, fencing across node failures;
// acquire/renew/release/status; usage errors; passwords; hostile servers.
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
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"

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
using edgelock_test::file_exists;
using edgelock_test::lock_exists;
using edgelock_test::lock_key;
using edgelock_test::mono_s;
using edgelock_test::one_line;
using edgelock_test::positive;
using edgelock_test::process;
using edgelock_test::read_file;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::run_result;
using edgelock_test::show;
using edgelock_test::temp_dir;
using edgelock_test::url;
using edgelock_test::wait_for;
using edgelock_test::write_file;

namespace {

using strings = std::vector<std::string>;

std::string join(const strings& parts, const std::string& sep) {
    std::string s;
    for (const std::string& p : parts) {
        s += (s.empty() ? "" : sep) + p;
    }
    return s;
}

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
    const edgelock_test::reply r = c.command({"GET", lock_key(key)});
    return r.type == '$' || r.type == '+' ? r.text : std::string();
}

long long pttl(redis_client& c, const std::string& key) {
    return c.command({"PTTL", lock_key(key)}).integer;
}

// Seconds since the epoch, as `date +%s.%N` prints them in a child.
double real_s() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
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
        const strings args{"run", "-N", url(srv), key, "--", "sh", "-c", w.script};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == w.status);
        CHECK(lock_exists(admin, key) == 0);  // released when the child exited
    }

    const strings args{"run", "-N", url(srv), key, "--", "true"};
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
                       url(srv),
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
            "run",    "--fencing", "-N",
            url(srv), key,         "--",
            "sh",     "-c",        "printf '%s' \"$EDGELOCK_FENCING_TOKEN\" > '" + out + "'"};
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
    const strings args{"acquire", "--fencing", "-t", "5s", "-N", url(srv), key};
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
                           url(srv),
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

    const strings hold{"acquire", "-t", "10s", "-N", url(srv), key};
    const run_result h = agent(hold);
    INFO(show(hold, h));
    REQUIRE(h.status == 0);
    const std::string token = lines_of(h.out).at(0);
    REQUIRE(get(admin, key) == token);

    {
        const strings args{"run", "-n", "-N", url(srv), key, "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_conflict);
        CHECK(r.seconds < 3.0);
    }
    {
        const strings args{"run", "-n", "-E", "42", "-N", url(srv), key, "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 42);
        CHECK(r.seconds < 3.0);
    }
    {
        const strings args{"run", "-N", url(srv), key, "--", "true"};  // default: one try
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_conflict);
        CHECK(r.seconds < 3.0);
    }
    {
        const strings args{"acquire", "-N", url(srv), key};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_conflict);
        CHECK(r.out.empty());
    }
    {
        const strings args{"run", "-q", "-n", "-N", url(srv), key, "--", "true"};
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

    REQUIRE(admin.command({"SET", lock_key(key), "someone-else", "PX", "500"}).text == "OK");
    const strings args{"run", "-w", "1s", "-N", url(srv), key, "--", "true"};
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
    REQUIRE(admin.command({"SET", lock_key(key), "holder", "PX", "20000"}).text == "OK");

    agent_run a({"run", "-w", "20s", "-N", url(srv), key, "--", "touch", dir / "ran"}, {});
    ::usleep(300000);
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
    const strings args{"run", "-N", url(srv), key, "--", "/nonexistent/edgelock-test-command"};
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
            urls.push_back(url(*servers[i]));
        }
        const std::string key = "cli-mutex-" + std::to_string(nodes);
        const std::string counter = dir / ("counter" + std::to_string(nodes));
        write_file(counter, "0\n");
        const std::string racy =
            "n=$(cat '" + counter + "'); sleep 0.05; echo $((n+1)) > '" + counter + "'";

        std::vector<std::unique_ptr<agent_run>> runs;
        for (int i = 0; i < 8; ++i) {
            runs.push_back(std::make_unique<agent_run>(
                strings{"run", "-w", "20s", "-N", join(urls, ","), key, "--", "sh", "-c", racy},
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

    agent_run a({"run", "-t", "1s", "-N", url(srv), key, "--", "sleep", "3"}, {});
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
        ::usleep(100000);
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
    agent_run a({"run", "-t", "1s", "--grace", "500ms", "-N", url(srv), key, "--", "sh", "-c",
                 "trap \"echo term >> '" + got_term + "'\" TERM; touch '" + started +
                     "'; while :; do sleep 0.05; done"},
                {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    REQUIRE(is_token(get(admin, key)));
    ::usleep(200000);
    // Someone else takes the key: the agent's next renew finds it not ours.
    REQUIRE(admin.command({"SET", lock_key(key), "other", "PX", "60000"}).text == "OK");
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
    agent_run a({"run", "-t", "2s", "--grace", "500ms", "-N", url(srv), key, "--", "sh", "-c",
                 "trap \"echo term >> '" + got_term + "'\" TERM; touch '" + started +
                     "'; while :; do date +%s.%N >> '" + beats + "'; sleep 0.05; done"},
                {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    ::usleep(300000);
    // The node stops answering: no renew succeeds after this instant, so the
    // lock's validity ends at most a ttl (2 s) later.
    const double paused = real_s();
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
        urls.push_back(url(*servers.back()));
    }
    const std::string nodes = join(urls, ",");
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
        std::unique_ptr<process> server;
        std::unique_ptr<agent_run> run;
    };
    std::vector<one> all;
    for (const char* m : modes) {
        one o;
        o.mode = m;
        o.server = std::make_unique<process>(
            strings{EDGELOCK_FAKE_REDIS_PATH, m, "--seconds", "60"}, strings{});
        const std::string port = o.server->read_line(5.0);
        INFO("fake_redis " << m);
        REQUIRE(positive(port) > 0);
        const std::string nodes =
            url(a) + "," + url(b) + ",redis://127.0.0.1:" + port;  // quorum 2 of 3
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
    process silent({EDGELOCK_FAKE_REDIS_PATH, "silent", "--seconds", "60"}, {});
    process garbage({EDGELOCK_FAKE_REDIS_PATH, "garbage", "--seconds", "60"}, {});
    const std::string p1 = silent.read_line(5.0);
    const std::string p2 = garbage.read_line(5.0);
    REQUIRE(positive(p1) > 0);
    REQUIRE(positive(p2) > 0);
    const strings args{"run",
                       "-N",
                       url(a) + ",redis://127.0.0.1:" + p1 + ",redis://127.0.0.1:" + p2,
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
        urls.push_back(url(*servers.back()));
    }
    const std::string nodes = join(urls, ",");
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
        urls.push_back(url(*servers.back()));
    }
    const std::string nodes = join(urls, ",");
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

TEST_CASE("cli: acquire --fencing prints the fencing token on line 2", "[cli]") {
    redis_server srv;
    const strings args{"acquire", "--fencing", "-t", "5s", "-N", url(srv), "cli-acquire-fenced"};
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
        const strings args{"acquire", "-t", w.ttl, "-N", url(srv), key};
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
        const run_result r = agent(args, {"EDGELOCK_NODES=" + url(srv)});
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        CHECK(get(admin, "cli-env-nodes") == lines_of(r.out).at(0));
    }
    {
        const strings args{"run", "-N", url(srv), "cli-env-override", "--", "true"};
        const run_result r = agent(args, {"EDGELOCK_NODES=" + url(dead)});
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
}

// --- usage errors ------------------------------------------------------------------

TEST_CASE("cli: usage errors are 64 with one line on stderr", "[cli]") {
    redis_server srv;  // so that an agent that does not refuse finds a server
    const std::string n = url(srv);
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
        {"TLS URL", {"run", "-N", "rediss://127.0.0.1:6379", "k", "--", "true"}},
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
        const strings args{"acquire",  "-t", "5s",     "--password-file",
                           dir / "pw", "-N", url(srv), "cli-pw-file"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(r.out.size() == 33);
    }
    {
        const strings args{"acquire",          "-t", "5s",     "--password-file",
                           dir / "pw-newline", "-N", url(srv), "cli-pw-file-newline"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
    {
        const strings args{"run", "-N", url(srv), "cli-pw-env", "--", "true"};
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
         {"acquire", "--password-file", dir / "wrong", "-N", url(srv), "cli-pw-wrong"}},
        {"no password", {"acquire", "-N", url(srv), "cli-pw-none"}},
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
        std::unique_ptr<process> server;
        std::unique_ptr<agent_run> acquire;
        std::unique_ptr<agent_run> run;
    };
    std::vector<one> all;
    // Every mode at once: the slow ones (silent, trickle) wait on the agent's
    // timeouts side by side.
    for (const char* m : modes) {
        one o;
        o.mode = m;
        o.server = std::make_unique<process>(
            strings{EDGELOCK_FAKE_REDIS_PATH, m, "--seconds", "60"}, strings{});
        const std::string port = o.server->read_line(5.0);
        INFO("fake_redis " << m);
        REQUIRE(positive(port) > 0);
        const std::string node = "redis://127.0.0.1:" + port;
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
        CHECK(o.server->running());  // the fake itself survived the agent
        o.server->kill_group(SIGKILL);
    }
}
