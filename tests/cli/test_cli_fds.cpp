// The agent whose client holds more fds than two per node of the most a
// lock takes (2 * lock_max_nodes, 18): a client with extra Cluster
// connections may hold up to its fd_capacity(), and the agent's poll loop
// must wait on every one of them.
//
// A redis-cluster:// node seeded with the first port of fake_redis's
// moved-chain ring (tests/tools/moved_chain.hpp) makes the agent open a
// connection to every port of the ring, chasing MOVED answers (four a
// round, the cap, so over a few rounds): the node's own and its nine extra
// Cluster connections. The ring's set-up answers
// make each a RESP2 connection with a subscription of its own, so ten ports
// are twenty sockets, and nothing is ever acquired: the run ends 69, in
// bounded time.
//
// The count is sampled from /proc/PID/fd while the agent runs. The agent's
// sockets are its client's connections, no more (its stdio and signal pipe
// are not sockets), so the sockets counted are the fds its poll loop must
// watch, less the signal pipe. A sanitized agent that indexes past its poll
// array dies there: the [asan] tag has the sanitizer build run this.
#include <dirent.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "edgelock/lock.hpp"
#include "tools/clock.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// fake_redis moved-chain: `count` ports in a ring, started and their numbers
// read (one line, in ring order). The process helper kills it at the end of
// the test.
struct moved_chain_ring {
    std::unique_ptr<process> server;
    strings ports;

    moved_chain_ring(int count, int seconds) {
        server = std::make_unique<process>(
            strings{EDGELOCK_FAKE_REDIS_PATH, "moved-chain", "--ports", std::to_string(count),
                    "--seconds", std::to_string(seconds)},
            strings{});
        const std::string line = server->read_line(5.0);
        std::istringstream in(line);
        for (std::string p; in >> p;) {
            ports.push_back(p);
        }
        INFO("fake_redis moved-chain printed '" << line << "'");
        REQUIRE(static_cast<int>(ports.size()) == count);
        for (const std::string& p : ports) {
            REQUIRE(positive(p) > 0);
        }
    }
};

// The sockets `pid` holds now; 0 when it has none or is gone.
int sockets_of(pid_t pid) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
        return 0;
    }
    int sockets = 0;
    while (const dirent* e = ::readdir(d)) {
        char target[64];
        const std::string link = dir + "/" + e->d_name;
        const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
        if (n > 0 && std::string(target, static_cast<std::size_t>(n)).rfind("socket:", 0) == 0) {
            ++sockets;
        }
    }
    ::closedir(d);
    return sockets;
}

}  // namespace

TEST_CASE("cli fds: the agent with more than 18 live fds", "[cli][fds][asan]") {
    // What a poll loop sized by the nodes alone has room for.
    constexpr int old_room = 2 * edgelock::lock_max_nodes;
    // The node's own connection and its nine extra ones: one per port.
    moved_chain_ring ring(10, 30);
    const std::string node = "redis-cluster://127.0.0.1:" + ring.ports[0];
    // A round follows a request through four MOVED answers, four ports
    // further round the ring, and the next round starts where the last one
    // was sent: rounds for 2 s take the agent round the whole ring.
    const strings args{"run", "-w", "2s", "-t", "3s", "-N", node, "cli-fds", "--", "true"};

    agent_run a(args, sanitizer_env());
    const double bound = 10.0;
    const double until = mono_s() + bound;
    int peak = 0;
    // Every millisecond: the whole run takes a fraction of a second.
    while (a.proc.running() && mono_s() < until) {
        peak = std::max(peak, sockets_of(a.proc.pid()));
        sleep_ms(1);
    }
    INFO("sockets at most: " << peak);
    const run_result r = a.finish(1.0);
    INFO(show(args, r));
    // A sanitized agent that dies at its 19th fd may die between two samples.
    if (peak <= old_room && !sanitizer_report(r.err)) {
        FAIL_CHECK("the agent never held more than " << old_room
                                                     << " sockets: the case was not exercised");
    }
    CHECK(r.seconds < bound);
    CHECK((r.status == exit_unavailable || r.status == exit_conflict));
    CHECK_FALSE(sanitizer_report(r.err));
    // Why it failed: the redirects, or a round still following them when
    // the try's time was up.
    CHECK(contains(r.err, "no quorum of nodes reachable"));
    CHECK((contains(r.err, "redirected 5 times in one round (last: MOVED ") ||
           contains(r.err, "no answer within the ")));
    CHECK(ring.server->running());  // and the ring outlived its client
}
