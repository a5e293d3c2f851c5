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
#include "cli/dns_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/net.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// A run of the agent under `dns` to its end, with what every such run must
// show: the status, no sanitizer finding, and an end within `bound` seconds.
run_result bounded(const stuck_dns& dns, const strings& args, int status, double bound) {
    process p = agent_under(dns, args);
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    CHECK(r.status == status);
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(r.seconds < bound);
    return r;
}

}  // namespace

TEST_CASE("cli dns: a Redlock keeps its quorum while a sentinel switches to a name",
          "[cli][asan]") {
    const stuck_dns dns(5);  // each query hangs 5 s: longer than the ttl
    if (!usable(dns)) {
        return;
    }
    redis_server a;
    redis_server b;
    redis_server c;  // the sentinel's master, by address, then by name
    redis_client ca(a.port());
    redis_client cb(b.port());
    redis_client cc(c.port());
    const std::string c_port = std::to_string(c.port());
    for (redis_client* n : {&ca, &cb, &cc}) {
        load_scripts(*n);  // every node answers its first acquire alike
    }
    // The switch comes 1.5 s after the sentinel started: the job has been
    // running a second or so, on all three nodes.
    fake_redis sentinel("sentinel", 60,
                        {"--master", "127.0.0.1:" + c_port, "--switch-to",
                         stuck_name + ":" + c_port, "--switch-after", "1500"});
    job_watch w;
    const std::string nodes = redis_url(a) + "," + redis_url(b) +
                              ",redis-sentinel://127.0.0.1:" + sentinel.port + "/mymaster";
    // ttl 2 s, renewed every 667 ms: a loop held up by one lookup (5 s) loses
    // the keys on both servers long before the job ends (the agent that
    // looked names up on its loop ran the job some 2.7 s without a quorum,
    // then ended 75).
    const strings args{"run", "-t", "2s", "-N", nodes, "dns-switch", "--", "sh", "-c", w.job(6)};
    process p = agent_under(dns, args);
    bool on_c = false;   // the sentinel's first master held the key
    bool off_c = false;  // and lost it while the job ran: the switch was followed
    w.watch(
        p,
        [&] {  // 2 of 3 is the quorum, and the third is lost to the name
            return lock_exists(ca, "dns-switch") == 1 && lock_exists(cb, "dns-switch") == 1;
        },
        [&] {
            const bool held_c = lock_exists(cc, "dns-switch") == 1;
            on_c = on_c || held_c;
            off_c = off_c || (on_c && !held_c);
        });
    const run_result r = p.finish(10.0);
    INFO(show(args, r));
    INFO("the job ran " << w.gone << " s with the key gone from a quorum");
    CHECK(r.status == 0);
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(w.samples > 50);  // the job ran, and was watched while it did
    CHECK(on_c);            // the sentinel's node took part
    CHECK(off_c);           // and left its first master for the name
    CHECK(w.gone == 0);
    CHECK(lock_exists(ca, "dns-switch") == 0);  // released
    CHECK(lock_exists(cb, "dns-switch") == 0);
}

TEST_CASE("cli dns: a sentinel's master whose name never resolves gives up by its deadline",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!usable(dns)) {
        return;
    }
    fake_redis sentinel("sentinel", 60,
                        {"--master", stuck_name + ":" + std::to_string(free_port())});
    const std::string node = "redis-sentinel://127.0.0.1:" + sentinel.port + "/mymaster";
    // ttl 5 s: the sentinel's answer, the lookup and the connect share a
    // node's 1 s, and a try takes one node timeout (500 ms) more. Looked up
    // on the agent's loop, the name held it 5 s a query, three queries a try.
    const strings args{"acquire", "-t", "5s", "-N", node, "dns-sentinel"};
    const run_result r = bounded(dns, args, exit_unavailable, 3.0);
    CHECK(contains(r.err, "host name did not resolve in time"));
}

TEST_CASE("cli dns: a Cluster redirection to a name that never resolves ends within the ttl",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!usable(dns)) {
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
    const run_result r = bounded(dns, args, exit_unavailable, 0.7);
    CHECK(contains(r.err, "no quorum of nodes reachable"));
}

TEST_CASE("cli dns: a sentinel whose name never resolves does not keep the next one from answering",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!usable(dns)) {
        return;
    }
    redis_server master;
    fake_redis sentinel("sentinel", 60, {"--master", "127.0.0.1:" + std::to_string(master.port())});
    // The first sentinel by a name nobody answers for, the second by address:
    // the name's lookup, still running, must not hold up the address.
    const std::string node =
        "redis-sentinel://" + stuck_name + ":26379,127.0.0.1:" + sentinel.port + "/mymaster";
    const strings args{"acquire", "-t", "5s", "-w", "10s", "-N", node, "dns-rotation"};
    // The first sentinel's 250 ms, then the second's answer.
    const run_result r = bounded(dns, args, 0, 3.0);
    CHECK(is_token(lines_of(r.out).empty() ? std::string() : lines_of(r.out)[0]));
}

TEST_CASE("cli dns: a master switched from a name that never resolves to an address is followed",
          "[cli][asan]") {
    const stuck_dns dns(5);
    if (!usable(dns)) {
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
    // The switch comes at 1 s; the name's lookup, still running then, must
    // not hold up the address (it did until the resolver gave up, 5 s on).
    bounded(dns, args, 0, 3.0);
}
