// The agent waiting for a busy lock on a server that tells it, without end,
// that the key changed (fake_redis push-flood: 6,000 pushes a second, for the
// key or as flushes, while the holder and its ttl stay as they were): the
// waiter's tries stay near what a polling waiter makes, however many pushes
// come (told_pace.hpp), and in a Redlock the noisy node does not drive
// rounds on the honest ones.
//
// Bounds: a 2-s wait at the pace's most (two told tries at once, then
// 50, 100, 200, 200... ms apart) makes about 14 tries, and a loaded machine
// adds a few (a node that misses its node_timeout gets a cleanup); a try per
// push, or per round trip, makes hundreds to thousands. 45 leaves room.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/url.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

constexpr long max_tries = 45;

// Acquire attempts a fake counted: the SET and every acquire script.
long attempts(const std::map<std::string, long>& tally) {
    long n = 0;
    for (const char* name : {"SET", "EVALSHA", "EVAL"}) {
        const auto it = tally.find(name);
        n += it == tally.end() ? 0 : it->second;
    }
    return n;
}

}  // namespace

TEST_CASE("cli pushes: a flood of invalidations or flushes paces a waiter's tries",
          "[cli][notify]") {
    temp_dir dir;
    struct one {
        std::string flush;
        std::string tally;
        std::unique_ptr<fake_redis> fake;
        std::unique_ptr<agent_run> acquire;
    };
    std::vector<one> all;
    for (const char* flush : {"no", "yes"}) {
        one o;
        o.flush = flush;
        o.tally = dir.path + "/tally-" + flush;
        o.fake = std::make_unique<fake_redis>("push-flood", 20,
                                              strings{"--flush", flush, "--tally", o.tally});
        o.acquire = std::make_unique<agent_run>(
            strings{"acquire", "-w", "2s", "-N", o.fake->url(), "cli-pushes"}, strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        const run_result r = o.acquire->finish(20.0);
        sleep_ms(100);  // the tally's last write
        const std::map<std::string, long> tally = read_tally(o.tally);
        INFO("flush " << o.flush << "\n" << show(o.acquire->args, r));
        INFO("acquire attempts " << attempts(tally));
        CHECK(r.status == exit_conflict);
        CHECK(tally.count("CLIENT TRACKING") == 1);  // it was told
        CHECK(attempts(tally) >= 2);                 // and tried again
        CHECK(attempts(tally) <= max_tries);
    }
}

TEST_CASE("cli pushes: one noisy node of a Redlock does not drive rounds on the others",
          "[cli][notify][redlock]") {
    temp_dir dir;
    redis_server a;
    redis_server b;
    redis_client ca(a.port());
    redis_client cb(b.port());
    // Held by another on the honest nodes too, past the wait: their answers
    // never end it early, whatever the fake's.
    for (redis_client* c : {&ca, &cb}) {
        REQUIRE(
            c->command({"SET", key_of("cli-pushes-redlock"), valid_token, "PX", "60000"}).text ==
            "OK");
        c->command({"CONFIG", "RESETSTAT"});
    }
    const std::string tally = dir.path + "/tally";
    fake_redis noisy("push-flood", 20, strings{"--tally", tally});
    const std::string nodes = noisy.url() + "," + redis_url(a.port()) + "," + redis_url(b.port());
    const run_result r =
        agent(strings{"acquire", "-w", "2s", "-N", nodes, "cli-pushes-redlock"}, strings{}, 20.0);
    sleep_ms(100);
    INFO(show(strings{"acquire", "-w", "2s", "-N", nodes}, r));
    CHECK(r.status == exit_conflict);
    for (redis_client* c : {&ca, &cb}) {
        // The scripts: a SET counted there may be one a script ran.
        const long long scripts = command_calls(*c, "evalsha") + command_calls(*c, "eval");
        INFO("acquire attempts on an honest node " << scripts);
        CHECK(scripts >= 1);
        CHECK(scripts <= max_tries);
    }
    CHECK(attempts(read_tally(tally)) <= max_tries);
}
