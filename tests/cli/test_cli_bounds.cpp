// One try (-w 0, the default) is bounded as README says: a node has two
// tenths of the ttl (at most 1 s) to be looked up, connected and set up, and
// the round a tenth more; silent servers and silent sentinels alike.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

TEST_CASE("cli: one try against silent nodes ends within three tenths of the ttl", "[cli]") {
    fake_redis silent("silent", 60);
    std::string sentinels;
    for (int i = 0; i < 8; ++i) {
        sentinels += (i == 0 ? "" : ",") + std::string("127.0.0.1:") + silent.port;
    }
    struct row {
        const char* what;
        strings args;
    };
    const row rows[] = {
        {"a silent server", {"acquire", "-w", "0", "-t", "1s", "-N", silent.url(), "bound-1"}},
        {"eight silent sentinels",
         {"acquire", "-t", "1s", "-N", "redis-sentinel://" + sentinels + "/mymaster", "bound-2"}},
        {"run, a silent server", {"run", "-t", "1s", "-N", silent.url(), "bound-3", "--", "true"}},
    };
    for (const row& r : rows) {
        const run_result res = agent(r.args);
        INFO(r.what << "\n" << show(r.args, res));
        CHECK(res.status == exit_unavailable);
        // 200 ms to connect and 100 ms for the round, with room for starting
        // a process on a loaded machine; it took the fixed 1 s connect
        // allowance (and 250 ms per sentinel) before.
        CHECK(res.seconds < 0.7);
    }
}
