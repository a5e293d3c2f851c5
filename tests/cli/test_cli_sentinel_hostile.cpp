// The agent under hostile sentinels (fake_redis's sentinel mode,
// tests/tools/fake_sentinel.hpp), with real redis-servers as the masters:
// one that floods +switch-master between two masters, and one that answers
// where the master is but never confirms the watch's SUBSCRIBE while
// another announces a switch. What the agent must show: switches follow the
// reconnect backoff, a lock written on a master the node left is deleted
// there, and a watch that hears nothing moves to the next sentinel, so the
// switch is followed and a held lock checked on the new master at once; a
// lock kept across a lone false switch is deleted on the old master; and a
// switch heard while the master is down is where the node reconnects, even
// when the sentinel asked would still name the old one.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/files.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// The connections a redis-server accepted since its start (INFO stats).
long long connections(redis_client& c) {
    const std::string text = c.command({"INFO", "stats"}).text;
    const std::string field = "total_connections_received:";
    const std::size_t at = text.find(field);
    return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + field.size());
}

std::string loopback(const redis_server& s) {
    return "127.0.0.1:" + std::to_string(s.port());
}

}  // namespace

TEST_CASE("cli sentinel: a +switch-master flood is followed at the backoff, no key left behind",
          "[cli][sentinel]") {
    redis_server a;
    redis_server b;
    redis_client ca(a.port());
    redis_client cb(b.port());
    // The master flips between a and b every millisecond, and the watch is
    // told of every flip.
    fake_redis sentinel("sentinel", 30,
                        {"--master", loopback(a), "--switch-to", loopback(b), "--flip-every", "1"});
    const std::string node = "redis-sentinel://127.0.0.1:" + sentinel.port + "/mymaster";
    // Another owner holds "flood-busy" on both: the agent tries for 1.5 s.
    ca.command({"SET", key_of("flood-busy"), "another-owner", "PX", "30000"});
    cb.command({"SET", key_of("flood-busy"), "another-owner", "PX", "30000"});
    const long long a0 = connections(ca);
    const long long b0 = connections(cb);
    const strings busy{"acquire", "-t", "5s", "-w", "1500ms", "-N", node, "flood-busy"};
    const run_result r = agent(busy, {}, 20.0);
    const long long to_a = connections(ca) - a0;
    const long long to_b = connections(cb) - b0;
    INFO(show(busy, r));
    INFO("connections in " << r.seconds << " s: " << to_a << " to a, " << to_b << " to b");
    // Busy, or (the node mostly backing off) not reachable in time.
    CHECK((r.status == exit_conflict || r.status == exit_unavailable));
    // The switches go through the reconnect backoff (100 ms doubling to 2 s):
    // a handful of connections to each, where there were hundreds a second.
    CHECK(to_a <= 20);
    CHECK(to_b <= 20);
    // Clean-ups delete by our token only: the other owner's keys stay.
    CHECK(ca.command({"GET", key_of("flood-busy")}).text == "another-owner");
    CHECK(cb.command({"GET", key_of("flood-busy")}).text == "another-owner");

    // A job under the same sentinel: wherever the lock was written, its key
    // is gone once the agent is. The lock may be lost (a master without the
    // key), and then the agent says so; or, as above, every try may find the
    // node waiting out its backoff (a try fails at once on a node that is
    // not connected), and the agent says the node was not reachable.
    const strings job{"run", "-t",    "5s", "-w", "2s", "-N",
                      node,  "flood", "--", "sh", "-c", "sleep 1"};
    const run_result j = agent(job, {}, 20.0);
    INFO(show(job, j));
    CHECK((j.status == 0 || j.status == exit_lost || j.status == exit_unavailable));
    if (j.status == exit_unavailable) {
        CHECK(contains(j.err, "waiting to reconnect"));
    }
    CHECK(lock_exists(ca, "flood") == 0);
    CHECK(lock_exists(cb, "flood") == 0);
}

TEST_CASE("cli sentinel: a watch whose SUBSCRIBE is never confirmed moves to the next sentinel",
          "[cli][sentinel]") {
    redis_server a;
    redis_server b;  // the new master, without the key
    redis_client ca(a.port());
    redis_client cb(b.port());
    // The first sentinel answers where the master is, then never confirms
    // the watch; the second announces the switch to b a second in.
    fake_redis mute("sentinel", 30, {"--master", loopback(a), "--no-confirm", "1"});
    fake_redis loud(
        "sentinel", 30,
        {"--master", loopback(a), "--switch-to", loopback(b), "--switch-after", "1000"});
    temp_dir dir;
    const std::string done = dir.path + "/done";
    const long long b0 = connections(cb);
    // ttl 20 s: the watchdog's renew is due 6.7 s in, long after the job's 4 s.
    const strings args{
        "run",
        "-t",
        "20s",
        "-N",
        "redis-sentinel://127.0.0.1:" + mute.port + ",127.0.0.1:" + loud.port + "/mymaster",
        "silent-watch",
        "--",
        "sh",
        "-c",
        "sleep 4; touch " + done};
    const run_result r = agent(args, {}, 20.0);
    const long long to_b = connections(cb) - b0;
    INFO(show(args, r));
    INFO("ended after " << r.seconds << " s; " << to_b << " connections to b");
    // The switch was heard (from the second sentinel) and followed: the
    // lock's node went to b, renewed at once, found no key there and said
    // the lock was lost, stopping the job before its end.
    CHECK(to_b > 0);
    CHECK(r.status == exit_lost);
    CHECK_FALSE(file_exists(done));
}

TEST_CASE("cli sentinel: a lock kept across a lone false switch is deleted on the old master",
          "[cli][sentinel]") {
    redis_server a;
    redis_server b;  // another master, not a's replica: no key there
    redis_client ca(a.port());
    redis_client cb(b.port());
    // One switch, 500 ms in, after a quiet spell: taken for a failover, so
    // the held lock keeps its key on a, and b's renew finds none.
    fake_redis sentinel(
        "sentinel", 30,
        {"--master", loopback(a), "--switch-to", loopback(b), "--switch-after", "500"});
    // ttl 20 s: a key left on a would outlive the agent by far.
    const strings args{"run",
                       "-t",
                       "20s",
                       "-N",
                       "redis-sentinel://127.0.0.1:" + sentinel.port + "/mymaster",
                       "false-switch",
                       "--",
                       "sh",
                       "-c",
                       "sleep 3"};
    const run_result r = agent(args, {}, 20.0);
    INFO(show(args, r));
    INFO("ended after " << r.seconds << " s");
    // Lost on b, and said so; a, still a master others use, is not left
    // blocked: the node went back once to delete the key there by its token.
    CHECK(r.status == exit_lost);
    CHECK(lock_exists(ca, "false-switch") == 0);
    CHECK(lock_exists(cb, "false-switch") == 0);
}

TEST_CASE("cli sentinel: a switch heard while the master is down is where the node reconnects",
          "[cli][sentinel]") {
    redis_server a;
    redis_server b;
    redis_client cb(b.port());
    // a is down from the start; the sentinel announces b 500 ms in, but,
    // not caught up, still names a when asked.
    const std::string dead = loopback(a);
    a.kill();
    fake_redis sentinel(
        "sentinel", 30,
        {"--master", dead, "--switch-to", loopback(b), "--switch-after", "500", "--stale", "1"});
    const strings args{"acquire",
                       "-t",
                       "20s",
                       "-w",
                       "3s",
                       "-N",
                       "redis-sentinel://127.0.0.1:" + sentinel.port + "/mymaster",
                       "heard-while-down"};
    const run_result r = agent(args, {}, 20.0);
    INFO(show(args, r));
    INFO("ended after " << r.seconds << " s");
    // The watch heard b while the node backed off from a: the next connect
    // went to b, not to the sentinel, which would have named a again.
    CHECK(r.status == 0);
    CHECK(lock_exists(cb, "heard-while-down") == 1);
}
