// The watchdog through the real driver on virtual time, when its wake-up or
// its renew's reply comes late: a lock whose validity deadline has passed is
// never reported held, and is reported lost, even where a renew could still
// have reached the keys in time.
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
using edgelock::lock_state;
using edgelock_test::event_log;
using edgelock_test::is_renew;
using edgelock_test::node_urls;

namespace {

struct fixture {
    sim::net n{401};
    std::vector<instant> renews;  // when a renew reached a node
    std::unique_ptr<node_urls> urls;
    edgelock::client<3> c;
    sim::event_loop loop{n};
    event_log log;
    edgelock::client_lock l;

    fixture() {
        n.add_nodes(3);
        for (int i = 0; i < 3; ++i) {
            n.faults(i).latency_min_us = n.faults(i).latency_max_us = 2000;
            n.node(i).cache_scripts();  // one renew request per renew, no NOSCRIPT
        }
        n.on_command = [this](int, std::uint64_t, const std::vector<std::string>& argv) {
            if (is_renew(argv)) {
                renews.push_back(n.now());
            }
        };
        urls = std::make_unique<node_urls>(n);
        edgelock_test::configure(c, *urls);
        loop.add(c);
        REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
        log.attach(l);
    }

    void acquire() {
        REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
        REQUIRE(loop.run_for(duration::millis(20)));
        REQUIRE(log.count(lock_event_kind::acquired) == 1);
        REQUIRE(l.held());
    }

    // The keys are still ours on every node: a renew sent now would succeed.
    void keys_still_there() {
        for (int i = 0; i < 3; ++i) {
            REQUIRE(edgelock_test::value_at(n, i, "jobs") == edgelock_test::hex(l.token()));
        }
    }
};

}  // namespace

TEST_CASE("a watchdog woken after the validity deadline reports lost, not renewed",
          "[client][sim][watchdog]") {
    fixture f;
    f.acquire();
    const instant validity = f.l.validity_deadline();
    // The process sleeps (a suspend, a long pause) through the watchdog's
    // renew at ttl / 3 and past the validity deadline; the network goes on.
    f.n.advance(validity - f.n.now() + duration::millis(5));
    f.keys_still_there();

    SECTION("event loop: the overdue wake-up") {
        CHECK_FALSE(f.l.held());  // before the client has run at all
        CHECK(f.c.next_deadline() <= f.n.now());
        const instant woke = f.n.now();
        f.c.on_timeout();
        REQUIRE(f.log.events.size() == 2);
        CHECK(f.log.last()->ev.kind == lock_event_kind::lost);
        CHECK(f.log.last()->ev.reason == lock_failure::validity_ended);
        CHECK(f.log.last()->at == woke);
    }
    SECTION("blocking: a renew asked for after the deadline") {
        const edgelock::op_result r = f.l.renew();
        INFO(edgelock_test::what(r));
        CHECK(r.error == client_errc::not_held);
        CHECK(f.l.last_event().kind == lock_event_kind::lost);
        CHECK(f.l.last_event().reason == lock_failure::validity_ended);
    }
    REQUIRE(f.loop.run_for(duration::millis(200)));
    CHECK(f.renews.empty());  // nothing was renewed behind the lost report
    CHECK(f.log.count(lock_event_kind::renewed) == 0);
    CHECK(f.log.count(lock_event_kind::lost) == 1);
    CHECK_FALSE(f.l.held());
    CHECK(f.l.state() == lock_state::idle);
}

TEST_CASE("a watchdog woken late but within the validity still renews", "[client][sim][watchdog]") {
    fixture f;
    f.acquire();
    const instant validity = f.l.validity_deadline();
    f.n.advance(validity - f.n.now() - duration::millis(100));
    CHECK(f.l.held());
    f.c.on_timeout();  // the renew goes out now, 667 ms late
    REQUIRE(f.loop.run_for(duration::millis(20)));
    REQUIRE(f.log.count(lock_event_kind::renewed) == 1);
    CHECK(f.renews.size() == 3);
    CHECK(f.l.validity_deadline() > validity + duration::millis(500));
    CHECK(f.l.held());
    f.l.start_release();
    REQUIRE(f.loop.run_for(duration::millis(20)));
    CHECK(f.log.last()->ev.kind == lock_event_kind::released);
}

TEST_CASE("a renew whose replies come after the validity deadline does not bring the lock back",
          "[client][sim][watchdog]") {
    fixture f;
    f.acquire();
    const instant validity = f.l.validity_deadline();
    // From now on replies take 2 s to come back; requests still arrive in 1 ms.
    for (int i = 0; i < 3; ++i) {
        f.n.faults(i).reply_delay_us = 2000000;
    }
    REQUIRE(f.loop.run_until(validity + duration::seconds(3)));
    // Renews ran on the nodes before the deadline: their late replies say yes.
    REQUIRE_FALSE(f.renews.empty());
    CHECK(f.renews.front() < validity);
    CHECK(f.log.count(lock_event_kind::renew_failed) >= 1);
    REQUIRE(f.log.count(lock_event_kind::lost) == 1);
    CHECK(f.log.last()->ev.kind == lock_event_kind::lost);
    CHECK(f.log.last()->at == validity);
    CHECK(f.log.last()->ev.reason == lock_failure::validity_ended);
    CHECK(f.log.count(lock_event_kind::renewed) == 0);
    CHECK_FALSE(f.l.held());
    CHECK(f.l.state() == lock_state::idle);
}

// A watchdog renew queued while a node was still connecting must not outlive
// the `lost` that ends the lock: start_acquire() used to answer busy until
// that renew would have begun (node_timeout later), though the application
// started nothing. Found by the random schedules (mutual exclusion, schedule
// 53353).
TEST_CASE("after lost, a renew queued by the watchdog does not keep a new acquisition out",
          "[client][sim][watchdog]") {
    sim::net n(601);
    n.add_nodes(3);
    for (int i = 0; i < 3; ++i) {
        n.faults(i).latency_min_us = n.faults(i).latency_max_us = 2000;
    }
    node_urls urls(n);
    edgelock::client<3> c;
    edgelock::client_options co;
    co.reconnect_min = duration::millis(20);
    co.reconnect_max = duration::millis(40);
    edgelock_test::configure(c, urls, co);
    REQUIRE(c.connect(n.now() + duration::seconds(1)) == 3);
    sim::event_loop loop(n);
    loop.add(c);
    // The watchdog renews at ttl / 3 = 100 ms; a renew that waits for a
    // connecting node waits node_timeout, longer than the validity left.
    edgelock::lock_options lo = edgelock_test::fast_lock_options();
    lo.ttl = duration::millis(300);
    lo.node_timeout = duration::millis(250);
    event_log log;
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", lo) == client_errc::ok);
    log.attach(l);
    // Node 2 goes silent: its connection breaks and a new one never completes.
    n.faults(2).connect_hangs = true;
    n.cut(2);
    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(60)));
    REQUIRE(log.count(lock_event_kind::acquired) == 1);
    REQUIRE(c.node(2).state == edgelock::node_state::connecting);
    for (int step = 0; step < 500 && log.count(lock_event_kind::lost) == 0; ++step) {
        REQUIRE(loop.run_for(duration::millis(1)));
    }
    REQUIRE(log.count(lock_event_kind::lost) == 1);
    CHECK(log.count(lock_event_kind::renewed) == 0);
    CHECK(log.last()->ev.reason == lock_failure::validity_ended);
    REQUIRE(l.state() == lock_state::idle);
    // Nothing of the application's is in progress: it may try again at once.
    CHECK(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
}
