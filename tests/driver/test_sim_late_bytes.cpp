// Late bytes, the way issue 45 met them against a real Redis: an agent's
// link is slow while it sets a connection up, so the driver gives the
// connection up (connect_timeout) after writing the set-up, the pipelined
// acquire, and the cleanup of that round (node_timeout ran out first). It
// reconnects and the same acquisition wins on the new connection. The old
// connection's requests reach the server later (close() takes nothing back):
// its acquire, then its cleanup, which deletes a key holding the token it
// names, writes the release mark, and wakes a waiter, which takes the lock
// while the first holder's validity still runs.
//
// The rule that prevents it (DESIGN.md, "Late bytes are real"): each round
// has its own token, so a late request can only act on its own round's key.
// Here on one node, in every mode (a reentrant round that heard nothing
// sends no cleanup: a decrement goes only where an increment is known, so
// there only its acquire comes late); the random schedules are in
// test_sim_late_schedules.cpp. EDGELOCK_SIM_TRACE=1 prints every request.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "driver/sim_schedule.hpp"
#include "edgelock/client.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock::lock_mode;

namespace {

using client_type = edgelock::client<1>;

// Who held when, as the two clients' events say it.
struct holders {
    edgelock::client_lock* x = nullptr;
    edgelock::client_lock* y = nullptr;
    instant t0;
    instant x_acquired = instant::never();
    instant x_valid_until;  // the latest validity X was told, while it takes itself for the holder
    instant x_released = instant::never();
    instant y_acquired = instant::never();
    std::string violation;

    static void on_event(void* ctx, edgelock::client_lock& l, const edgelock::lock_event& ev) {
        static_cast<holders*>(ctx)->event(l, ev);
    }

    void event(edgelock::client_lock& l, const edgelock::lock_event& ev) {
        const instant now = edgelock::port::now();
        if (&l == x) {
            if (ev.kind == lock_event_kind::acquired && x_acquired.is_never()) {
                x_acquired = now;
            }
            if (ev.kind == lock_event_kind::acquired || ev.kind == lock_event_kind::renewed) {
                x_valid_until = ev.validity_deadline;
            }
            if (ev.kind == lock_event_kind::lost) {
                x_valid_until = edgelock::earliest(x_valid_until, now);
            }
            return;
        }
        if (ev.kind == lock_event_kind::acquired) {
            y_acquired = now;
            if (now < x_valid_until && now < x_released && violation.empty()) {
                violation = "two holders at " + ms(now) + ": Y acquired while X (acquired at " +
                            ms(x_acquired) + ") is valid until " + ms(x_valid_until);
            }
        }
    }

    // Virtual time since the test began, in ms.
    std::string ms(instant t) const { return std::to_string((t.us - t0.us) / 1000) + " ms"; }
};

void issue_45(lock_mode mode, std::uint8_t permits) {
    sim::net n(4500 + static_cast<std::uint64_t>(mode) * 8 + permits);
    n.add_nodes(1);
    n.faults(0).latency_min_us = n.faults(0).latency_max_us = 2000;  // 1 ms each way
    n.node(0).tracking = true;                                       // Y is told when the key goes
    n.partial_sends = false;
    const edgelock_test::node_urls urls(n);

    edgelock::client_options co;
    co.connect_timeout = duration::millis(300);
    co.reconnect_min = duration::millis(10);
    co.reconnect_max = duration::millis(20);
    edgelock::lock_options o = edgelock_test::fast_lock_options(mode);
    o.ttl = duration::seconds(3);
    o.node_timeout = duration::millis(100);  // the round gives up before the connection does
    o.retry_min = o.retry_max = duration::millis(400);
    o.permits = permits;

    client_type x_client;
    client_type y_client;
    edgelock_test::configure(x_client, urls, co);
    edgelock_test::configure(y_client, urls, co);
    sim::event_loop loop(n);
    loop.add(x_client);
    loop.add(y_client);
    edgelock::client_lock x;
    edgelock::client_lock y;
    edgelock::lock_options xo = o;
    edgelock::lock_options yo = o;
    xo.owner = "agent-x";  // reentrant: each its own owner
    yo.owner = "agent-y";
    REQUIRE(x.attach(x_client, "jobs", xo) == client_errc::ok);
    REQUIRE(y.attach(y_client, "jobs", yo) == client_errc::ok);
    holders h;
    h.t0 = n.now();
    h.x = &x;
    h.y = &y;
    x.set_callback(&holders::on_event, &h);
    y.set_callback(&holders::on_event, &h);

    // Every request that ran on X's first connection (the net's first), and when.
    std::vector<std::pair<instant, std::string>> first_connection;
    const bool trace = std::getenv("EDGELOCK_SIM_TRACE") != nullptr;
    n.on_command = [&](int node, std::uint64_t conn, const std::vector<std::string>& argv) {
        if (conn == 1) {
            first_connection.emplace_back(n.now(), argv[0]);
        }
        if (trace) {
            edgelock_test::trace_command(n, node, conn, argv);
        }
    };

    // X's link is slow while it sets up: its set-up, acquire and cleanup
    // take 400 ms to reach the node, longer than connect_timeout. Lifted
    // before X reconnects. What the client gives up comes 600 ms after.
    const instant t0 = n.now();
    n.faults(0).request_delay_us = 400000;
    n.at(t0 + duration::millis(250), [&n] { n.faults(0).request_delay_us = 0; });
    n.faults(0).late_delivery = 1.0;
    n.faults(0).late_min_us = n.faults(0).late_max_us = 600000;
    REQUIRE(x.start_acquire(5, duration::seconds(5)) == client_errc::ok);
    // Y comes once X holds, and waits.
    loop.at(t0 + duration::millis(700),
            [&y] { REQUIRE(y.start_acquire(1000, duration::seconds(5)) == client_errc::ok); });
    loop.at(t0 + duration::millis(2500), [&x, &h] {
        if (x.held()) {
            h.x_released = edgelock::port::now();
            REQUIRE(x.start_release() == client_errc::ok);
        }
    });
    REQUIRE(loop.run_until(t0 + duration::seconds(6), 200000));

    // The scenario happened: X gave its first connection up in set-up, won
    // on a later one, and that connection's lock requests ran after X won.
    REQUIRE(x_client.node_stats(0).timeouts >= 1);
    REQUIRE(n.held_back >= 1);
    REQUIRE_FALSE(h.x_acquired.is_never());
    std::size_t late_lock_requests = 0;
    for (const auto& [at, command] : first_connection) {
        const bool lock_request = command == "EVALSHA" || command == "EVAL" || command == "SET";
        if (lock_request && at > h.x_acquired) {
            ++late_lock_requests;
        }
    }
    INFO("X acquired at " << h.ms(h.x_acquired) << "; " << first_connection.size()
                          << " requests ran on its first connection");
    // The acquire (and, but in reentrant mode, its round's cleanup).
    REQUIRE(late_lock_requests >= 1);
    CHECK(h.violation == std::string());
    // Y got the lock after X let it go, not before.
    CHECK(h.y_acquired >= h.x_released);
    CHECK_FALSE(h.y_acquired.is_never());
}

}  // namespace

TEST_CASE("late bytes: a cleanup from an abandoned set-up does not free a later round's hold",
          "[sim][late]") {
    SECTION("plain") {
        issue_45(lock_mode::plain, 0);
    }
    SECTION("fenced") {
        issue_45(lock_mode::fenced, 0);
    }
    SECTION("reentrant") {
        issue_45(lock_mode::reentrant, 0);
    }
    SECTION("a semaphore of one permit") {
        issue_45(lock_mode::plain, 1);
    }
}
