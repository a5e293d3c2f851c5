// The agent and redis-py's Lock on one name: `edgelock run` must not start a
// job while another Redis lock client of the fleet holds its name, and that
// client must be refused while the agent's job runs. The issue as a user met
// it: another client held `nightly-upload`, and `edgelock run nightly-upload`
// ran the job too.
#include <catch2/catch.hpp>

#include <string>

#include "cli/agent_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/redis_py.hpp"
#include "tools/url.hpp"

using namespace edgelock_test;

TEST_CASE("cli interop: run refuses a name redis-py holds, and holds it against redis-py",
          "[cli][interop]") {
    const bool fenced = GENERATE(false, true);
    INFO((fenced ? "fenced" : "plain"));
    redis_server srv;
    redis_client admin(srv.port());
    const std::string name = "nightly-upload";
    strings mode;
    if (fenced) {
        mode.push_back("--fencing");
    }

    // redis-py holds: the job does not run, the agent says conflict and
    // leaves redis-py's lock as it was.
    const std::string got = redis_py(srv.port(), name, {"acquire", "10000"});
    REQUIRE(got.compare(0, 9, "acquired ") == 0);
    strings args{"run", "-N", redis_url(srv)};
    args.insert(args.end(), mode.begin(), mode.end());
    strings refused = args;
    refused.insert(refused.end(), {name, "--", "echo", "ran"});
    const run_result r = agent(refused);
    INFO(show(refused, r));
    CHECK(r.status == exit_conflict);
    CHECK_FALSE(contains(r.out, "ran"));
    CHECK(admin.command({"GET", name}).text == got.substr(9));
    CHECK(redis_py(srv.port(), name, {"release", got.substr(9)}) == "released");

    // The agent holds: redis-py, asked from inside the job, is refused.
    strings holds = args;
    holds.insert(holds.end(), {name, "--", redis_py_python, redis_py_script(),
                               std::to_string(srv.port()), name, "acquire", "10000"});
    const run_result h = agent(holds);
    INFO(show(holds, h));
    CHECK(h.status == 0);
    CHECK(contains(h.out, "refused"));
    CHECK(lock_exists(admin, name) == 0);
}
