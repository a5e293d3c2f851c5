// The agent with a redis-cluster:// node whose masters misroute on purpose
// (fake_redis cluster, tests/tools/fake_cluster.hpp): what it sends is
// bounded however they answer, and a key it wrote where an ASK sent it is
// taken back there before it exits.
//
// - A redirect loop (MOVED to itself, MOVED naming another slot, ASK to a
//   master that answers MOVED back) costs a round a few requests, not as
//   many as the node timeout leaves room for: a request is followed through
//   at most four redirects, the fifth counts as the node's "no", and the
//   agent says so. The slot map is asked at most once a second per node.
// - The same while holding (the key granted, then every renew MOVED): a
//   few renew scripts per renew round.
// - An acquire sent by ASK to B, whose round then fails (B's WAIT says no
//   replica has the key, and the agent asked for one): the cleanup goes to
//   B, behind ASKING, before the agent exits, and B has no key left.
//
// Each run is one try with a short ttl; the counts come from the fake's
// --tally. Bounds are on counts only.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// fake_redis cluster --behave NAME: its two ports read (A, then B), its
// tally in `dir`. The process helper kills it at the end of the test.
struct fake_cluster_masters {
    std::unique_ptr<process> server;
    std::string a;
    std::string b;
    std::string tally;

    fake_cluster_masters(const std::string& behave, const temp_dir& dir) : tally(dir / "tally") {
        server = std::make_unique<process>(strings{EDGELOCK_FAKE_REDIS_PATH, "cluster", "--behave",
                                                   behave, "--seconds", "20", "--tally", tally},
                                           strings{});
        const std::string line = server->read_line(5.0);
        std::istringstream in(line);
        in >> a >> b;
        INFO("fake_redis cluster --behave " << behave << " printed '" << line << "'");
        REQUIRE(positive(a) > 0);
        REQUIRE(positive(b) > 0);
    }
    std::string url() const { return "redis-cluster://127.0.0.1:" + a; }
    // The tally once the fake has written all it was asked (it writes every
    // 20 ms while counts change): the same twice, 100 ms apart; at most 3 s.
    std::map<std::string, long> counted() const {
        std::map<std::string, long> last = read_tally(tally);
        for (int i = 0; i < 30; ++i) {
            ::usleep(100 * 1000);
            std::map<std::string, long> now = read_tally(tally);
            if (now == last && !now.empty()) {
                break;
            }
            last = now;
        }
        return last;
    }
};

// Lock requests counted: the SET acquire and every script.
long lock_requests(std::map<std::string, long>& t) {
    return t["SET"] + t["EVALSHA"] + t["EVAL"];
}

}  // namespace

TEST_CASE("cli cluster hostile: a redirect loop costs a round a few requests",
          "[cli][cluster][hostile]") {
    for (const char* behave : {"moved-self", "wrong-slot", "ask-moved"}) {
        temp_dir dir{"edgelock-cli-cluster-loop"};
        fake_cluster_masters fake(behave, dir);
        const strings args{"acquire", "-t", "1s", "-N", fake.url(), "cluster-loop"};
        const run_result r = agent(args);
        std::map<std::string, long> t = fake.counted();
        INFO("--behave " << behave << "\n"
                         << show(args, r) << "\nlock requests " << lock_requests(t)
                         << ", CLUSTER SLOTS " << t["CLUSTER SLOTS"] << ", ASKING " << t["ASKING"]);
        CHECK(r.status == exit_unavailable);
        CHECK(contains(r.err, "redirected 5 times in one round (last: "));
        // One round: the SET acquire sent five times, the fifth redirect
        // its "no"; then the failed round's cleanup, once before the agent
        // exits.
        CHECK(lock_requests(t) >= 5);
        CHECK(lock_requests(t) <= 10);
        CHECK(t["ASKING"] <= 10);
        // At set-up, and at most once more (a second after, were the
        // round that long).
        CHECK(t["CLUSTER SLOTS"] <= 2);
    }
}

TEST_CASE("cli cluster hostile: MOVED to itself under a held lock bounds its renews",
          "[cli][cluster][hostile]") {
    temp_dir dir{"edgelock-cli-cluster-renew"};
    fake_cluster_masters fake("grant-then-moved", dir);
    // The first renew, a third of the ttl after the acquire, misses its
    // quorum: the agent says why, stops the job a grace before the validity
    // ends (the grace that fits, 327 ms) and releases. Renew rounds a retry
    // delay (50-200 ms) apart until the job is gone, at most a whole
    // validity (about 20 of them), and the release, each request sent at
    // most five times and once more on the redirect's own round: a loop
    // that did not stop would send thousands.
    const strings args{"run", "-t", "1s", "-N", fake.url(), "cluster-renew", "--", "sleep", "3"};
    const run_result r = agent(args);
    std::map<std::string, long> t = fake.counted();
    INFO(show(args, r) << "\nSET " << t["SET"] << ", scripts " << t["EVALSHA"] + t["EVAL"]
                       << ", CLUSTER SLOTS " << t["CLUSTER SLOTS"]);
    CHECK(t["SET"] == 0);  // the acquire went as the script, with the holder record
    CHECK(r.status == exit_lost);
    CHECK(contains(r.err, "redirected 5 times in one round (last: MOVED "));
    CHECK(t["EVALSHA"] + t["EVAL"] <= 130);
    CHECK(t["CLUSTER SLOTS"] <= 3);
}

TEST_CASE("cli cluster hostile: a failed acquire sent by ASK leaves no key where it went",
          "[cli][cluster][hostile]") {
    for (const char* command : {"acquire", "run"}) {
        temp_dir dir{"edgelock-cli-cluster-ask"};
        fake_cluster_masters fake("ask-grant", dir);
        const std::string name = std::string("cluster-ask-") + command;
        strings args{command, "-t", "10s", "--min-replicas", "1", "-N", fake.url(), name};
        if (std::string(command) == "run") {
            args.insert(args.end(), {"--", "true"});
        }
        const run_result r = agent(args);
        std::map<std::string, long> t = fake.counted();
        redis_client b(static_cast<std::uint16_t>(positive(fake.b)));
        const std::string left = b.command({"GET", key_of(name)}).text;
        const long long exists = b.command({"EXISTS", key_of(name)}).integer;
        INFO(show(args, r) << "\nASKING " << t["ASKING"] << ", scripts " << t["EVALSHA"] + t["EVAL"]
                           << ", key left on B: '" << left << "'");
        CHECK(r.status == exit_unavailable);
        CHECK(contains(r.err, "too few replicas"));
        CHECK(t["WAIT"] >= 1);  // the acquire reached B and took the key there
        CHECK(exists == 0);     // and it is gone
    }
}
