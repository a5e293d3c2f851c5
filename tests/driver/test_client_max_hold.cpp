// watchdog_options::max_hold through the real driver on virtual time: a lock
// held that long is let go at that instant: its owner hears `lost` (reason
// held_too_long), no renew goes out after it, the release takes the keys off
// every node, and a new acquisition starts its own clock.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock_test::event_log;
using edgelock_test::is_renew;
using edgelock_test::node_urls;

namespace {

const event_log::entry* first_of(const event_log& log, lock_event_kind kind) {
    for (const event_log::entry& e : log.events) {
        if (e.ev.kind == kind) {
            return &e;
        }
    }
    return nullptr;
}

}  // namespace

TEST_CASE("max_hold: a lock held that long is let go, its owner told first",
          "[client][sim][watchdog]") {
    sim::net n(411);
    n.add_nodes(3);
    std::vector<instant> renews;  // when a renew reached a node
    for (int i = 0; i < 3; ++i) {
        n.faults(i).latency_min_us = n.faults(i).latency_max_us = 2000;
        n.node(i).cache_scripts();
    }
    n.on_command = [&](int, std::uint64_t, const std::vector<std::string>& argv) {
        if (is_renew(argv)) {
            renews.push_back(n.now());
        }
    };
    node_urls urls(n);
    edgelock::client<3> c;
    edgelock_test::configure(c, urls);
    sim::event_loop loop(n);
    loop.add(c);
    edgelock::watchdog_options w;
    w.renew_every = duration::millis(200);
    w.max_hold = duration::millis(700);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options(), w) == client_errc::ok);
    event_log log;
    log.attach(l);

    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(2000)));
    const event_log::entry* acquired = first_of(log, lock_event_kind::acquired);
    const event_log::entry* lost = first_of(log, lock_event_kind::lost);
    const event_log::entry* released = first_of(log, lock_event_kind::released);
    REQUIRE(acquired != nullptr);
    REQUIRE(lost != nullptr);
    REQUIRE(released != nullptr);
    CHECK(lost->ev.reason == lock_failure::held_too_long);
    CHECK(lost->at == acquired->at + w.max_hold);
    CHECK(lost < released);  // told before the release's own event
    CHECK(released->ev.nodes == 3);
    CHECK(log.count(lock_event_kind::lost) == 1);
    CHECK_FALSE(l.held());
    // Renewed every 200 ms while held (3 renews, each on 3 nodes); none after.
    CHECK(renews.size() == 9);
    for (const instant at : renews) {
        CHECK(at < lost->at);
    }
    for (int i = 0; i < 3; ++i) {
        CHECK(edgelock_test::value_at(n, i, "jobs").empty());
    }

    // A new acquisition has its own max_hold.
    const std::size_t before = log.events.size();
    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(600)));
    CHECK(l.held());
    CHECK(log.count(lock_event_kind::lost) == 1);
    REQUIRE(loop.run_for(duration::millis(200)));
    CHECK_FALSE(l.held());
    CHECK(log.count(lock_event_kind::lost) == 2);
    CHECK(log.events.size() > before);
}

TEST_CASE("max_hold: a lock released before it, or never given one, is not let go",
          "[client][sim][watchdog]") {
    sim::net n(412);
    n.add_nodes(1);
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock_test::configure(c, urls);
    sim::event_loop loop(n);
    loop.add(c);
    edgelock::watchdog_options w;
    w.max_hold = duration::millis(300);
    edgelock::client_lock limited;
    edgelock::client_lock unlimited;
    REQUIRE(limited.attach(c, "limited", edgelock_test::fast_lock_options(), w) == client_errc::ok);
    REQUIRE(unlimited.attach(c, "unlimited", edgelock_test::fast_lock_options()) ==
            client_errc::ok);
    event_log log;
    log.attach(limited);
    log.attach(unlimited);
    REQUIRE(limited.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(unlimited.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));
    REQUIRE(limited.held());
    REQUIRE(limited.start_release() == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(3000)));
    CHECK(log.count(lock_event_kind::lost) == 0);
    CHECK_FALSE(limited.held());
    CHECK(unlimited.held());  // renewed by the watchdog all along
}
