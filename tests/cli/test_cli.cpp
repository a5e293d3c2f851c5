// The edgelock agent (the `edgelock` binary) end to end against real
// redis-server processes: run and its child's status, environment, fencing
// tokens and signals; conflicts and waiting; mutual exclusion of concurrent
// agents. Renewal, lost locks and failing nodes: test_cli_nodes.cpp. The
// other commands, usage errors and passwords: test_cli_commands.cpp. Hostile
// servers: test_cli_hostile.cpp.
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
#include "edgelock/lock_scripts.hpp"
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
    REQUIRE(lock_value(admin, key) == token);

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
    CHECK(lock_value(admin, key) == token);  // the holder still holds it
    CHECK(lock_pttl(admin, key) > 5000);
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

TEST_CASE("cli: run -w is told of the release, and does not poll", "[cli][notify]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-wait-told";
    REQUIRE(admin.command({"SET", key_of(key), "someone-else", "PX", "20000"}).text == "OK");
    // The scripts cached, as by an earlier run: no NOSCRIPT in the counts.
    load_scripts(admin);
    REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
    agent_run a({"run", "-w", "10s", "-N", redis_url(srv), key, "--", "true"}, {});
    sleep_ms(1500);  // polling (a retry every 50 to 200 ms) would send 7 to 30 attempts
    const double freed = mono_s();
    // The holder's release, as another edgelock agent sends it (with the
    // marks that tell waiters).
    REQUIRE(admin.command(marked_release(key, "someone-else")).integer == 1);
    const run_result r = a.finish(10.0);
    INFO(show(a.args, r));
    CHECK(r.status == 0);
    CHECK(mono_s() - freed < 2.0);  // a sanity bound; the push takes well under a millisecond
    CHECK(lock_exists(admin, key) == 0);
    // The acquire script with the holder record (busy: its SET NX and PTTL
    // count), then CLIENT TRACKING for the renewal mark, alone; the other
    // release (its release mark a SET); after the push the acquire script
    // (SET NX, and the record's SET), and our release (the release mark's
    // SET): one CLIENT TRACKING, one PTTL, no polling.
    CHECK(edgelock_test::command_calls(admin, "evalsha") == 3);
    CHECK(edgelock_test::command_calls(admin, "client|tracking") == 1);
    CHECK(edgelock_test::command_calls(admin, "pttl") == 1);
    CHECK(edgelock_test::command_calls(admin, "set") == 5);
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
    CHECK(lock_value(admin, key) == "holder");
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
    CHECK(contains(r.err,
                   "edgelock: cannot run '/nonexistent/edgelock-test-command': No such "
                   "file or directory\n"));
    CHECK(lock_exists(admin, key) == 0);

    // Not executable: 126, with its reason.
    const strings not_exec{"run", "-N", redis_url(srv), key, "--", "/dev/null"};
    const run_result n = agent(not_exec);
    INFO(show(not_exec, n));
    CHECK(n.status == 126);
    CHECK(contains(n.err, "edgelock: cannot run '/dev/null': Permission denied\n"));
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
