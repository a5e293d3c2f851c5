// Helpers shared by the agent's tests (test_cli*.cpp): run the edgelock
// binary (EDGELOCK_CLI_PATH) with arguments and an environment, and fail the
// test, with everything it printed, when a run outlasts its bound.
//
//   const run_result r = agent({"acquire", "-N", url(srv), "k"});
//   REQUIRE(r.status == 0);
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"

#ifndef EDGELOCK_CLI_PATH
#error "build with -DEDGELOCK_CLI_PATH=\"/path/to/edgelock\""
#endif

namespace edgelock_test {

using strings = std::vector<std::string>;

// The agent's exit codes (src/cli/options.hpp).
constexpr int exit_conflict = 1;
constexpr int exit_usage = 64;
constexpr int exit_unavailable = 69;
constexpr int exit_lost = 75;

// The key of the lock named `name` (a plain lock's key today).
inline std::string lock_key(const std::string& name) {
    return "{" + name + "}";
}

// EXISTS on the lock named `name`: 1 held, 0 free.
inline long long lock_exists(redis_client& c, const std::string& name) {
    return c.command({"EXISTS", lock_key(name)}).integer;
}

inline std::string url(const redis_server& s) {
    return "redis://127.0.0.1:" + std::to_string(s.port());
}

inline bool contains(const std::string& hay, const std::string& needle) {
    return hay.find(needle) != std::string::npos;
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

// A private directory for the files a test's children write, removed after.
struct temp_dir {
    std::string path;
    temp_dir() {
        char tmpl[] = "/tmp/edgelock-cli-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~temp_dir() {
        const std::string cmd = "rm -rf '" + path + "'";
        (void)std::system(cmd.c_str());
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    std::string operator/(const std::string& name) const { return path + "/" + name; }
};

inline void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
}

inline bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// The message a usage error must be: exactly one line on stderr.
inline bool one_line(const std::string& s) {
    return !s.empty() && s.back() == '\n' && std::count(s.begin(), s.end(), '\n') == 1;
}

inline std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Waits up to timeout_s for cond(); true when it held.
template <class F>
bool wait_for(F cond, double timeout_s) {
    const double deadline = mono_s() + timeout_s;
    while (mono_s() < deadline) {
        if (cond()) {
            return true;
        }
        ::usleep(10000);
    }
    return cond();
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

// The state letter of /proc/PID/stat (R, S, T, Z, ...), or 0 when it is gone.
inline char process_state(pid_t pid) {
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t paren = stat.rfind(')');
    return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// Running, sleeping or stopped: not gone and not a zombie.
inline bool alive(pid_t pid) {
    const char state = pid > 0 ? process_state(pid) : 0;
    return state != 0 && state != 'Z' && state != 'X';
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

}  // namespace edgelock_test
