// Helpers of the told-waiter tests (test_client_notify*.cpp): waiters whose
// retry delay is 3 s, so one that acquires well within it was told; an
// action on a thread of its own after a delay; and the check that a waiter
// is told when another client's hold of the key ends.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"

namespace edgelock_test {

// A sanity bound, several times what a told handoff needs; the retry delay
// is 3000 ms.
constexpr double told_bound_ms = 1500;

inline edgelock::lock_options waiting_options() {
    edgelock::lock_options o = options(5000, 200);
    o.retry_min = edgelock::duration::millis(3000);
    o.retry_max = edgelock::duration::millis(3000);
    return o;
}

// Runs `action` on its own thread after `after_ms`, joined on destruction.
struct later {
    std::thread t;
    later(int after_ms, std::function<void()> action)
        : t([after_ms, action] {
              std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
              action();
          }) {}
    ~later() { t.join(); }
};

// A waiter of `l` acquires once the other client's hold of the key ends by
// `act` 150 ms in (nothing: it expires), within the told bound and without a
// poll. `asks`: its name is not yet tracked on `c`'s connection, so it asks.
inline void told_when_gone(redis_server& srv, edgelock::client_base& c, edgelock::client_lock& l,
                           const std::vector<std::string>& hold,
                           const std::vector<std::string>& act, bool asks = true) {
    redis_client admin(srv.port());
    REQUIRE(admin.command(hold).text == "OK");
    // Where the name is tracked already, the hold is pushed: heard while
    // idle, it costs nothing (heard while acquiring, a try).
    REQUIRE(c.run_for(edgelock::duration::millis(30)) == edgelock::client_errc::ok);
    REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
    const edgelock::instant t0 = edgelock::port::now();
    edgelock::op_result r;
    {
        redis_client actor(srv.port());
        const later go(150, [&] {
            if (!act.empty()) {
                actor.command(act);
            }
        });
        r = l.acquire(edgelock::duration::seconds(6));
    }
    INFO(what(r));
    REQUIRE(r.event.kind == edgelock::lock_event_kind::acquired);
    CHECK(ms_since(t0) < told_bound_ms);
    CHECK(admin.command({"GET", hold.at(1)}).text == hex(l.token()));
    // The SET that found the key taken, then the script (behind the
    // waiter's CLIENT TRACKING, its name as a prefix, the first time), then
    // the one attempt it was told to make (PTTL, SET: no script): no polls.
    CHECK(command_calls(admin, "client|tracking") == (asks ? 1 : 0));
    CHECK(command_calls(admin, "client|caching") == 0);
    CHECK(command_calls(admin, "pttl") == 2);  // the script's, and the told try's
    CHECK(command_calls(admin, "evalsha") == 1);
    must_release(l);
}

}  // namespace edgelock_test
