// Helpers shared by the agent's tests (test_cli*.cpp): run the edgelock
// binary (EDGELOCK_CLI_PATH) with arguments and an environment, and fail the
// test, with everything it printed, when a run outlasts its bound.
//
//   const run_result r = agent({"acquire", "-N", redis_url(srv), "k"});
//   REQUIRE(r.status == 0);
#pragma once

#include <signal.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_helpers.hpp"
#include "edgelock/lock_scripts.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/proc.hpp"
#include "tools/url.hpp"

#ifndef EDGELOCK_CLI_PATH
#error "build with -DEDGELOCK_CLI_PATH=\"/path/to/edgelock\""
#endif
#ifndef EDGELOCK_FAKE_REDIS_PATH
#error "build with -DEDGELOCK_FAKE_REDIS_PATH=\"/path/to/fake_redis\""
#endif

namespace edgelock_test {

using strings = std::vector<std::string>;

// The agent's exit codes (src/cli/options.hpp).
constexpr int exit_conflict = 1;
constexpr int exit_usage = 64;
constexpr int exit_unavailable = 69;
constexpr int exit_lost = 75;

// EXISTS on the lock named `name`: 1 held, 0 free.
inline long long lock_exists(redis_client& c, const std::string& name) {
    return c.command({"EXISTS", key_of(name)}).integer;
}

inline bool contains(const std::string& hay, const std::string& needle) {
    return hay.find(needle) != std::string::npos;
}

// edgelock's scripts into the server's cache, as an earlier run would have
// left them: no NOSCRIPT round trip on a first request. A Redlock test that
// expects every node to hold the key needs the nodes to answer alike: a
// node that answers after the quorum has its acquire undone.
inline void load_scripts(redis_client& c) {
    for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
        const edgelock::lock_script& s = *edgelock::lock_scripts_all[i];
        REQUIRE(c.command({"SCRIPT", "LOAD", std::string(s.text.data, s.text.size)}).text ==
                std::string(s.sha1.data, s.sha1.size));
    }
}

inline bool starts_with(const std::string& s, const std::string& head) {
    return s.compare(0, head.size(), head) == 0;
}

inline std::string clip(const std::string& s) {
    return s.size() <= 600 ? s : s.substr(0, 600) + "...(" + std::to_string(s.size()) + " bytes)";
}

// For INFO: what a run ended with.
inline std::string show(const strings& args, const run_result& r) {
    std::string a;
    for (const std::string& s : args) {
        a += " " + clip(s);
    }
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", r.seconds);
    return "edgelock" + a + "\n  -> status " + std::to_string(r.status) + " in " + secs +
           " s\n  stdout: '" + clip(r.out) + "'\n  stderr: '" + clip(r.err) + "'";
}

inline strings agent_argv(const strings& args) {
    strings argv{EDGELOCK_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

// The agent still running: spawn, then finish().
struct agent_run {
    strings args;
    process proc;

    agent_run(strings a, const strings& env) : args(std::move(a)), proc(agent_argv(args), env) {}

    run_result finish(double timeout_s = 30.0) {
        const run_result r = proc.finish(timeout_s);
        if (r.timed_out) {
            FAIL("still running after " << timeout_s << " s, killed:\n" << show(args, r));
        }
        return r;
    }
};

// Runs the agent to its end (failing the test if it takes over timeout_s).
inline run_result agent(const strings& args, const strings& env = {}, double timeout_s = 20.0) {
    agent_run a(args, env);
    return a.finish(timeout_s);
}

// The message a usage error must be: exactly one line on stderr.
inline bool one_line(const std::string& s) {
    return !s.empty() && s.back() == '\n' && std::count(s.begin(), s.end(), '\n') == 1;
}

// The pid a child wrote to `path` (`echo $$ > path`), once it is there; 0
// when none came within 5 s.
inline pid_t pid_in(const std::string& path) {
    pid_t pid = 0;
    wait_for(
        [&] {
            std::istringstream in(read_file(path));
            return static_cast<bool>(in >> pid) && pid > 0;
        },
        5.0);
    return pid;
}

// Kills, when the test ends, processes a failing case may have left behind.
struct reaper {
    std::vector<pid_t> pids;
    reaper() = default;
    reaper(const reaper&) = delete;
    reaper& operator=(const reaper&) = delete;
    ~reaper() {
        for (pid_t p : pids) {
            if (alive(p)) {
                ::kill(p, SIGKILL);
            }
        }
    }
};

// A positive decimal integer, or -1.
inline long long positive(const std::string& s) {
    if (s.empty() || s.size() > 18 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return -1;
    }
    const long long v = std::stoll(s);
    return v > 0 ? v : -1;
}

// A fake_redis (tests/tools/fake_redis.cpp) answering in `mode`, with the
// mode's `options`, for up to `seconds`, started and its one port read. The
// process helper kills it at the end of the test.
struct fake_redis {
    std::string mode;
    std::unique_ptr<process> server;
    std::string port;

    explicit fake_redis(const std::string& m, int seconds = 90, const strings& options = {})
        : mode(m) {
        strings argv{EDGELOCK_FAKE_REDIS_PATH, m, "--seconds", std::to_string(seconds)};
        argv.insert(argv.end(), options.begin(), options.end());
        server = std::make_unique<process>(argv, strings{});
        port = server->read_line(5.0);
        INFO("fake_redis " << m);
        REQUIRE(positive(port) > 0);
    }
    std::string url() const { return redis_url(static_cast<std::uint16_t>(positive(port))); }
};

// What a fake_redis started with `--tally path` counted so far: each
// command's name (with its subcommand: "SCRIPT LOAD") and "accepted P" to
// its count; empty before the first write. It is rewritten every 20 ms
// while it changes: wait that long after the client stopped.
inline std::map<std::string, long> read_tally(const std::string& path) {
    std::map<std::string, long> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        const std::size_t space = line.rfind(' ');
        if (space != std::string::npos) {
            out[line.substr(0, space)] = std::stol(line.substr(space + 1));
        }
    }
    return out;
}

// s in lower case (ASCII).
inline std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// s split at newlines.
inline strings lines_of(const std::string& s) {
    strings out;
    std::istringstream in(s);
    std::string line;
    while (std::getline(in, line)) {
        out.push_back(line);
    }
    return out;
}

// 32 lowercase hex digits: an owner token as the agent prints it.
inline bool is_token(const std::string& s) {
    return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// GET of the lock named `name`: its value, or "" when it is free.
inline std::string lock_value(redis_client& c, const std::string& name) {
    const reply r = c.command({"GET", key_of(name)});
    return r.type == '$' || r.type == '+' ? r.text : std::string();
}

// PTTL of the lock named `name`.
inline long long lock_pttl(redis_client& c, const std::string& name) {
    return c.command({"PTTL", key_of(name)}).integer;
}

// A well-formed token that no lock holds.
constexpr const char* valid_token = "00112233445566778899aabbccddeeff";

// Every hostile fake_redis mode (tests/tools/fake_redis.cpp) that serves one
// port; moved-chain, a ring of ports, has a test of its own (test_cli_fds.cpp),
// and sentinel, which answers well, serves test_cli_dns_servers.cpp.
inline constexpr const char* fake_redis_modes[] = {
    "silent",      "reset",       "close",           "trickle", "garbage",
    "huge-length", "length-2-63", "negative-length", "deep",    "no-cr",
    "big-error",   "wrong-type",  "ok-then-garbage", "random"};

// The sanitizer settings the test runs with, for an agent's environment (the
// process helper passes PATH only): left to its defaults, a sanitized agent
// ends a finding with status 1, which is also its "held by another owner".
inline strings sanitizer_env() {
    strings env;
    for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
        if (const char* value = std::getenv(name)) {
            env.push_back(std::string(name) + "=" + value);
        }
    }
    return env;
}

// Whether a sanitizer reported a finding on this stderr (ASan and LSan say
// "...Sanitizer", UBSan "runtime error:").
inline bool sanitizer_report(const std::string& err) {
    return contains(err, "Sanitizer") || contains(err, "runtime error:");
}

// What every agent run against hostile nodes must end with: at -t 4s (or
// less) a try has 2 s, a silent node's connect 1.8 s of it.
inline void check_not_acquired(const strings& args, const run_result& r, const std::string& mode) {
    INFO("fake_redis " << mode << "\n" << show(args, r));
    CHECK((r.status == exit_unavailable || r.status == exit_conflict));
    CHECK(r.seconds < 10.0);
}

}  // namespace edgelock_test
