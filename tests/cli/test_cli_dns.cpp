// The agent under a name server that never answers (tests/tools/stuck_dns.hpp:
// a private mount namespace whose resolv.conf points at a socket that reads
// nothing), with a node given by that name in its URL: a Redlock acquires on
// the other two nodes and keeps its keys there for the whole job, signals
// still reach the job, and a single named node gives up by its deadline with
// the reason. Needs root (skipped otherwise).
#include <signal.h>
#include <catch2/catch.hpp>

#include <string>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "cli/dns_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/net.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// Two servers and the name nobody answers for: a Redlock whose quorum (2 of
// 3) the two must keep alone.
struct two_and_a_name {
    redis_server a;
    redis_server b;
    redis_client ca{a.port()};
    redis_client cb{b.port()};
    std::string nodes = redis_url(a) + "," + redis_url(b) + ",redis://" + stuck_name + ":" +
                        std::to_string(free_port());

    bool quorum(const std::string& name) {
        return lock_exists(ca, name) == 1 && lock_exists(cb, name) == 1;
    }
};

}  // namespace

TEST_CASE("cli dns: a Redlock keeps its quorum while one node's name never resolves",
          "[cli][asan]") {
    const stuck_dns dns(5);  // each query hangs 5 s: longer than the ttl
    if (!usable(dns)) {
        return;
    }
    two_and_a_name servers;
    job_watch w;
    // ttl 2 s, renewed every 667 ms: a loop held up by one lookup (5 s) loses
    // the keys on both servers long before the job ends.
    const strings args{"run",         "-t", "2s", "-N", servers.nodes,
                       "dns-redlock", "--", "sh", "-c", w.job(6)};
    process p = agent_under(dns, args);
    w.watch(
        p, [&] { return servers.quorum("dns-redlock"); }, [] {});
    const run_result r = p.finish(10.0);
    INFO(show(args, r));
    INFO("the job ran " << w.gone << " s with the key gone from a quorum");
    CHECK(r.status == 0);
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(w.samples > 50);  // the job ran, and was watched while it did
    CHECK(w.gone == 0);
    CHECK(lock_exists(servers.ca, "dns-redlock") == 0);  // released
    CHECK(lock_exists(servers.cb, "dns-redlock") == 0);
}

TEST_CASE("cli dns: a single node whose name never resolves gives up by its deadline",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!usable(dns)) {
        return;
    }
    // ttl 5 s: a node has 1 s to resolve and connect, and a try one node
    // timeout (500 ms) more; the resolver alone would take 5 s a query.
    const strings args{
        "acquire",   "-t", "5s", "-N", "redis://" + stuck_name + ":" + std::to_string(free_port()),
        "dns-single"};
    process p = agent_under(dns, args);
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == exit_unavailable);
    CHECK(contains(r.err, "host name did not resolve in time"));
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(r.seconds < 3.0);
}

TEST_CASE("cli dns: signals reach the job while a node's name never resolves", "[cli][asan]") {
    const stuck_dns dns(5);
    if (!usable(dns)) {
        return;
    }
    two_and_a_name servers;
    job_watch w;
    const strings args{"run",        "-t", "2s", "-N", servers.nodes,
                       "dns-signal", "--", "sh", "-c", "touch " + w.started + "; exec sleep 30"};
    process p = agent_under(dns, args);
    REQUIRE(wait_for([&] { return file_exists(w.started); }, 10.0));
    sleep_ms(1500);  // renewals and reconnects of the third node under way
    const double sent = mono_s();
    p.signal(SIGTERM);
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == 128 + SIGTERM);  // the job's: it got the signal
    CHECK(mono_s() - sent < 1.5);
}
