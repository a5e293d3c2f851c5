// Issue 45's scenario, against a real redis-server behind the fault proxy:
// agent X starts while its link to the node is slow (client to server delayed
// well past the connect allowance), so its first connection's set-up goes
// unanswered and X connects again; the delay is lifted once the proxy holds
// that first connection's bytes. X acquires on its second connection and runs
// its job; agent Y then waits for the same key. The acquire X had sent behind
// the first set-up, and the cleanup of that failed round, were written
// before X closed the socket: they reach the server late. They must not free
// X's hold: the key still holds what X's job runs under, and Y's job never
// runs while X's does. As a plain lock and as a semaphore of one permit.
//
// Each step waits on an event, not on a time: the proxy holding X's first
// bytes (until the test lets them go); X's job's start mark; the proxy having
// ended X's first connection, which it does only after delivering everything
// queued on it and the server closing it (Redis executes what it read before
// it sees the end). Then
// either the key still holds X's token, and X's job is let go, or it does
// not, and Y is given the lock's waiting time to start. The jobs' own marks
// judge: Y's job notes whether X's job had ended (X's job marks its end on
// any way out but SIGKILL, which the agent sends only a grace after SIGTERM).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/proc.hpp"

#ifndef EDGELOCK_FAULT_PROXY_PATH
#error "build with -DEDGELOCK_FAULT_PROXY_PATH=\"/path/to/fault_proxy\""
#endif

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// Client to server: X's first connection's bytes are held until the test
// lets them go (the proxy's longest delay, cut short by `deliver`). At -t 1s
// the connect allowance is 200 ms: X's first set-up is not answered in it,
// and X connects again (after a backoff of at most 100 ms) and acquires
// while those bytes wait, however slow the machine.
constexpr int hold_ms = 600000;
constexpr int tries = 3;

// A number from the proxy's status line ("ended=3" -> 3).
long long proxy_field(fault_proxy& proxy, const std::string& name) {
    const std::string status = proxy.ask("status");
    const std::string key = " " + name + "=";
    const std::size_t at = status.find(key);
    INFO("status: " << status);
    REQUIRE(at != std::string::npos);
    return std::atoll(status.c_str() + at + key.size());
}

// The value of the key X's hold lives in: the lock's, or the first permit's
// (the only one of a semaphore of one); "" when it is free.
std::string hold_value(redis_client& admin, const std::string& name, bool semaphore) {
    const reply r = admin.command({"GET", semaphore ? permit_key_of(name, 0) : key_of(name)});
    return r.type == '$' ? r.text : std::string();
}

void late_bytes_try(fault_proxy& proxy, redis_client& admin, const std::string& name,
                    bool semaphore) {
    temp_dir dir{"edgelock-late-bytes"};
    const std::string x_started = dir / "x-started";
    const std::string x_ended = dir / "x-ended";
    const std::string go = dir / "go";
    const std::string y_saw = dir / "y-saw";
    strings common{"run", "-t", "1s", "-w", "5s", "-N", redis_url(proxy.port())};
    if (semaphore) {
        common.insert(common.end(), {"--permits", "1"});
    }
    const auto args = [&](const std::string& job) {
        strings a = common;
        a.insert(a.end(), {name, "--", "sh", "-c", job});
        return a;
    };
    // X's job marks its start, runs until told, and marks its end on its way
    // out, by the agent's SIGTERM too.
    const std::string x_job = "touch '" + x_started + "'; trap \"touch '" + x_ended +
                              "'; exit 143\" TERM INT HUP; while [ ! -e '" + go +
                              "' ]; do sleep 0.02; done; touch '" + x_ended + "'";
    // Y's job notes whether X's had ended when it began.
    const std::string y_job =
        "if [ -e '" + x_ended + "' ]; then echo after; else echo during; fi > '" + y_saw + "'";

    const long long accepted = proxy_field(proxy, "accepted");
    const long long ended = proxy_field(proxy, "ended");
    REQUIRE(proxy.command("delay up " + std::to_string(hold_ms)));
    agent_run x(args(x_job), {});
    // X's first connection's bytes are in the proxy: from now on, new bytes
    // pass at once, those keep their schedule.
    REQUIRE(wait_for([&] { return proxy_field(proxy, "queued_up") > 0; }, 10.0));
    REQUIRE(proxy.command("delay up 0"));
    REQUIRE(wait_for([&] { return file_exists(x_started); }, 10.0));
    // The scene is set: X connected again, and its first connection's bytes
    // are still on their way.
    CHECK(proxy_field(proxy, "accepted") >= accepted + 2);
    REQUIRE(proxy_field(proxy, "queued_up") > 0);
    const std::string x_token = hold_value(admin, name, semaphore);
    REQUIRE(!x_token.empty());

    agent_run y(args(y_job), {});
    // Land X's first connection's acquire and cleanup now, while X holds
    // and Y waits. Then its end: all it carried was executed.
    REQUIRE(proxy.command("deliver up"));
    REQUIRE(wait_for([&] { return proxy_field(proxy, "ended") > ended; }, 10.0));
    const std::string after = hold_value(admin, name, semaphore);
    CHECK(after == x_token);
    if (after != x_token) {
        // X's hold was freed under its job: Y, waiting, takes it.
        wait_for([&] { return file_exists(y_saw); }, 5.0);
    }
    write_file(go, "\n");
    const run_result rx = x.finish(20.0);
    const run_result ry = y.finish(20.0);
    INFO(show(x.args, rx));
    INFO(show(y.args, ry));
    REQUIRE(file_exists(y_saw));
    CHECK(read_file(y_saw) == "after\n");
    CHECK(rx.status == 0);
    CHECK(ry.status == 0);
}

}  // namespace

TEST_CASE("cli late bytes: a first connection's late acquire and cleanup free no later hold",
          "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    load_scripts(admin);  // as an earlier run would have left them
    fault_proxy proxy;
    REQUIRE(proxy.start(EDGELOCK_FAULT_PROXY_PATH, srv.port(), 45, 300));
    for (const bool semaphore : {false, true}) {
        for (int i = 0; i < tries; ++i) {
            const std::string name =
                std::string(semaphore ? "late-permit-" : "late-lock-") + std::to_string(i);
            INFO(name);
            late_bytes_try(proxy, admin, name, semaphore);
        }
    }
}
