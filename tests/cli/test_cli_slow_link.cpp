// The agent with a Sentinel node on a slow link: a real sentinel and the
// master it names, each behind a fault proxy that delays every chunk 150 ms
// each way (a 300 ms round trip, as over a satellite link). With the default
// ttl the sentinel has half of the 1 s connect allowance to answer, and the
// job runs; the library's 250 ms sentinel_timeout alone would be less than
// the one round trip the question takes (exit 69, "sentinel").
#include <catch2/catch.hpp>

#include <string>

#include "cli/agent_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/proc.hpp"

#ifndef EDGELOCK_FAULT_PROXY_PATH
#error "build with -DEDGELOCK_FAULT_PROXY_PATH=\"/path/to/fault_proxy\""
#endif

using namespace edgelock_test;

TEST_CASE("cli slow link: a Sentinel node 300 ms away runs the job with the default ttl", "[cli]") {
    redis_server master;
    fault_proxy master_proxy;
    REQUIRE(master_proxy.start(EDGELOCK_FAULT_PROXY_PATH, master.port(), 31, 120));
    // The sentinel names the master at its proxy (and watches it through it:
    // down only after a minute without an answer).
    redis_server sentinel = redis_server::sentinel(
        {"sentinel monitor mymaster 127.0.0.1 " + std::to_string(master_proxy.port()) + " 1",
         "sentinel down-after-milliseconds mymaster 60000"});
    fault_proxy sentinel_proxy;
    REQUIRE(sentinel_proxy.start(EDGELOCK_FAULT_PROXY_PATH, sentinel.port(), 32, 120));
    REQUIRE(master_proxy.command("delay both 150"));
    REQUIRE(sentinel_proxy.command("delay both 150"));
    const std::string url =
        "redis-sentinel://127.0.0.1:" + std::to_string(sentinel_proxy.port()) + "/mymaster";
    const std::string key = "cli-slow-sentinel";
    redis_client m(master.port());
    const strings args{"run", "-N", url, key, "--", "sh", "-c", "echo ran"};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK(r.out == "ran\n");
    CHECK(lock_exists(m, key) == 0);
}
