// The agent under a name server that never answers (tests/tools/stuck_dns.hpp:
// a private mount namespace whose resolv.conf points at a socket that reads
// nothing): a Redlock whose third node is given by that name acquires on the
// other two and keeps its keys there for the whole job; a single named node
// gives up by its deadline with the reason. Needs root (skipped otherwise).
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
#include "tools/net.hpp"
#include "tools/skip.hpp"
#include "tools/stuck_dns.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// The name nobody answers for.
const std::string stuck_name = "never.edgelock.test";

}  // namespace

TEST_CASE("cli dns: a Redlock keeps its quorum while one node's name never resolves",
          "[cli][asan]") {
    const stuck_dns dns(5);  // each query hangs 5 s: longer than the ttl
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    redis_server a;
    redis_server b;
    redis_client ca(a.port());
    redis_client cb(b.port());
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string ended = dir / "ended";
    const std::string nodes = redis_url(a) + "," + redis_url(b) + ",redis://" + stuck_name + ":" +
                              std::to_string(free_port());
    // ttl 2 s, renewed every 667 ms: a loop held up by one lookup (5 s) loses
    // the keys on both servers long before the job ends.
    const strings args{
        "run",         "-t", "2s", "-N", nodes,
        "dns-redlock", "--", "sh", "-c", "touch " + started + "; sleep 6; touch " + ended};
    process p(dns.wrap(agent_argv(args)), {});
    double gone = 0;  // seconds the job ran with the key gone from a quorum
    std::size_t samples = 0;
    double last = mono_s();
    while (p.running() && mono_s() - last < 30) {
        sleep_ms(50);
        const double now = mono_s();
        if (file_exists(started) && !file_exists(ended)) {
            ++samples;
            const int held = (lock_exists(ca, "dns-redlock") == 1 ? 1 : 0) +
                             (lock_exists(cb, "dns-redlock") == 1 ? 1 : 0);
            if (held < 2) {  // 2 of 3 is the quorum, and the third never had it
                gone += now - last;
            }
        }
        last = now;
    }
    const run_result r = p.finish(10.0);
    INFO(show(args, r));
    INFO("the job ran " << gone << " s with the key gone from a quorum");
    CHECK(r.status == 0);
    CHECK(samples > 50);  // the job ran, and was watched while it did
    CHECK(gone == 0);
    CHECK(lock_exists(ca, "dns-redlock") == 0);  // released
    CHECK(lock_exists(cb, "dns-redlock") == 0);
}

TEST_CASE("cli dns: a single node whose name never resolves gives up by its deadline",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    // ttl 5 s: a node has 1 s to resolve and connect, and a try one node
    // timeout (500 ms) more; the resolver alone would take 5 s a query.
    const strings args{
        "acquire",   "-t", "5s", "-N", "redis://" + stuck_name + ":" + std::to_string(free_port()),
        "dns-single"};
    process p(dns.wrap(agent_argv(args)), {});
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == exit_unavailable);
    CHECK(contains(r.err, "host name did not resolve in time"));
    CHECK(r.seconds < 3.0);
}

TEST_CASE("cli dns: signals reach the job while a node's name never resolves", "[cli][asan]") {
    const stuck_dns dns(5);
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    redis_server a;
    redis_server b;
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string nodes = redis_url(a) + "," + redis_url(b) + ",redis://" + stuck_name + ":" +
                              std::to_string(free_port());
    const strings args{"run",        "-t", "2s", "-N", nodes,
                       "dns-signal", "--", "sh", "-c", "touch " + started + "; exec sleep 30"};
    process p(dns.wrap(agent_argv(args)), {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 10.0));
    sleep_ms(1500);  // renewals and reconnects of the third node under way
    // The agent is the process unshare and sh exec'd into: the same pid.
    const double sent = mono_s();
    p.signal(SIGTERM);
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == 128 + SIGTERM);  // the job's: it got the signal
    CHECK(mono_s() - sent < 1.5);
}
