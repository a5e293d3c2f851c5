// The agent under a name server that never answers (tests/tools/stuck_dns.hpp),
// given numeric URLs only: the host names come from the servers. A sentinel
// announcing a master by name (Sentinel's announce-hostnames: in its answer
// to get-master-addr-by-name and in +switch-master) and a Cluster node
// redirecting to one (cluster-preferred-endpoint-type hostname: MOVED) send
// the agent to the same lookups as a name in a URL, under the same bound: a
// Redlock keeps its quorum on the other nodes while one follows a switch to a
// name, and a single node gives up by its deadline with the reason. The
// servers are fake_redis's sentinel and moved-chain modes
// (tests/tools/fake_sentinel.hpp, moved_chain.hpp). Needs root (skipped
// otherwise).
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

TEST_CASE("cli dns: a Redlock keeps its quorum while a sentinel switches to a name",
          "[cli][asan]") {
    const stuck_dns dns(5);  // each query hangs 5 s: longer than the ttl
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    redis_server a;
    redis_server b;
    redis_server c;  // the sentinel's master, by address, then by name
    redis_client ca(a.port());
    redis_client cb(b.port());
    redis_client cc(c.port());
    const std::string c_port = std::to_string(c.port());
    // The switch comes 1.5 s after the sentinel started: the job has been
    // running a second or so, on all three nodes.
    fake_redis sentinel("sentinel", 60,
                        {"--master", "127.0.0.1:" + c_port, "--switch-to",
                         stuck_name + ":" + c_port, "--switch-after", "1500"});
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string ended = dir / "ended";
    const std::string nodes = redis_url(a) + "," + redis_url(b) +
                              ",redis-sentinel://127.0.0.1:" + sentinel.port + "/mymaster";
    // ttl 2 s, renewed every 667 ms: a loop held up by one lookup (5 s) loses
    // the keys on both servers long before the job ends (the agent that
    // looked names up on its loop ran the job some 2.7 s without a quorum,
    // then ended 75).
    const strings args{
        "run",        "-t", "2s", "-N", nodes,
        "dns-switch", "--", "sh", "-c", "touch " + started + "; sleep 6; touch " + ended};
    process p(dns.wrap(agent_argv(args)), sanitizer_env());
    double gone = 0;  // seconds the job ran with the key gone from a quorum
    std::size_t samples = 0;
    bool on_c = false;   // the sentinel's first master held the key
    bool off_c = false;  // and lost it while the job ran: the switch was followed
    double last = mono_s();
    while (p.running() && mono_s() - last < 30) {
        sleep_ms(50);
        const double now = mono_s();
        if (file_exists(started) && !file_exists(ended)) {
            ++samples;
            const int held = (lock_exists(ca, "dns-switch") == 1 ? 1 : 0) +
                             (lock_exists(cb, "dns-switch") == 1 ? 1 : 0);
            if (held < 2) {  // 2 of 3 is the quorum, and the third is lost to the name
                gone += now - last;
            }
            const bool held_c = lock_exists(cc, "dns-switch") == 1;
            on_c = on_c || held_c;
            off_c = off_c || (on_c && !held_c);
        }
        last = now;
    }
    const run_result r = p.finish(10.0);
    INFO(show(args, r));
    INFO("the job ran " << gone << " s with the key gone from a quorum");
    CHECK(r.status == 0);
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(samples > 50);  // the job ran, and was watched while it did
    CHECK(on_c);          // the sentinel's node took part
    CHECK(off_c);         // and left its first master for the name
    CHECK(gone == 0);
    CHECK(lock_exists(ca, "dns-switch") == 0);  // released
    CHECK(lock_exists(cb, "dns-switch") == 0);
}

TEST_CASE("cli dns: a sentinel's master whose name never resolves gives up by its deadline",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    fake_redis sentinel("sentinel", 60,
                        {"--master", stuck_name + ":" + std::to_string(free_port())});
    const std::string node = "redis-sentinel://127.0.0.1:" + sentinel.port + "/mymaster";
    // ttl 5 s: the sentinel's answer, the lookup and the connect share a
    // node's 1 s, and a try takes one node timeout (500 ms) more. Looked up
    // on the agent's loop, the name held it 5 s a query, three queries a try.
    const strings args{"acquire", "-t", "5s", "-N", node, "dns-sentinel"};
    process p(dns.wrap(agent_argv(args)), sanitizer_env());
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == exit_unavailable);
    CHECK(contains(r.err, "host name did not resolve in time"));
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(r.seconds < 3.0);
}

TEST_CASE("cli dns: a Cluster redirection to a name that never resolves ends within the ttl",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    // One port of the ring: every key's request is MOVED to the same port,
    // under the name.
    fake_redis seed("moved-chain", 60, {"--ports", "1", "--moved-host", stuck_name});
    const std::string node = "redis-cluster://127.0.0.1:" + seed.port;
    // ttl 1 s: the round, its redirection included, has 100 ms. Looked up on
    // the agent's loop, the name held it for the resolver's 5 s. (The
    // redirected connection is still looking the name up when the round
    // ends, so the node has no reason of its own to report yet.)
    const strings args{"acquire", "-t", "1s", "-N", node, "dns-cluster"};
    process p(dns.wrap(agent_argv(args)), sanitizer_env());
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == exit_unavailable);
    CHECK(contains(r.err, "no quorum of nodes reachable"));
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(r.seconds < 0.7);
}

TEST_CASE("cli dns: a sentinel whose name never resolves does not keep the next one from answering",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    redis_server master;
    fake_redis sentinel("sentinel", 60, {"--master", "127.0.0.1:" + std::to_string(master.port())});
    // The first sentinel by a name nobody answers for, the second by address:
    // the name's lookup, still running, must not hold up the address.
    const std::string node =
        "redis-sentinel://" + stuck_name + ":26379,127.0.0.1:" + sentinel.port + "/mymaster";
    const strings args{"acquire", "-t", "5s", "-w", "10s", "-N", node, "dns-rotation"};
    process p(dns.wrap(agent_argv(args)), sanitizer_env());
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK(is_token(lines_of(r.out).empty() ? std::string() : lines_of(r.out)[0]));
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(r.seconds < 3.0);  // the first sentinel's 250 ms, then the second's answer
}

TEST_CASE("cli dns: a master switched from a name that never resolves to an address is followed",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    redis_server master;
    const std::string port = std::to_string(master.port());
    // The master by a name nobody answers for, then, after a second, by address.
    fake_redis sentinel("sentinel", 60,
                        {"--master", stuck_name + ":" + port, "--switch-to", "127.0.0.1:" + port,
                         "--switch-after", "1000"});
    const strings args{"acquire",
                       "-t",
                       "5s",
                       "-w",
                       "10s",
                       "-N",
                       "redis-sentinel://127.0.0.1:" + sentinel.port + "/mymaster",
                       "dns-back"};
    process p(dns.wrap(agent_argv(args)), sanitizer_env());
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK_FALSE(sanitizer_report(r.err));
    // The switch comes at 1 s; the name's lookup, still running then, must
    // not hold up the address (it did until the resolver gave up, 5 s on).
    CHECK(r.seconds < 3.0);
}
