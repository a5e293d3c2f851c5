// A node's connection through the real driver on virtual time: the
// reconnect backoff, a connect or a set-up that never completes, and a node
// that stops answering (stall_timeout).
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock::node_error;
using edgelock::node_state;
using edgelock::port::net_status;
using edgelock_test::event_log;
using edgelock_test::node_urls;

namespace {

// When the client began connecting to `node`, in order.
std::vector<instant> connect_times(const sim::net& n, int node) {
    std::vector<instant> out;
    for (const auto& r : n.connects) {
        if (r.node == node) {
            out.push_back(r.at);
        }
    }
    return out;
}

// The backoff before attempt k + 1 after k consecutive failures (k from 1):
// reconnect_min doubled k - 1 times, at most reconnect_max.
std::uint64_t backoff_cap(const edgelock::client_options& o, std::size_t failures) {
    std::uint64_t d = o.reconnect_min.us;
    for (std::size_t i = 1; i < failures && d < o.reconnect_max.us; ++i) {
        d *= 2;
    }
    return d < o.reconnect_max.us ? d : o.reconnect_max.us;
}

}  // namespace

TEST_CASE("reconnects back off exponentially, with jitter, from reconnect_min to reconnect_max",
          "[client][sim]") {
    sim::net n(101);
    n.add_nodes(1);
    n.crash(0);  // every connect refused
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock::client_options co;
    co.reconnect_min = duration::millis(40);
    co.reconnect_max = duration::millis(700);
    edgelock_test::configure(c, urls, co);
    sim::event_loop loop(n);
    loop.add(c);
    event_log log;
    edgelock::client_lock l;
    // An acquisition that keeps trying wants the node the whole time.
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    log.attach(l);
    REQUIRE(l.start_acquire(UINT32_MAX, duration::seconds(12)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::seconds(10)));

    const std::vector<instant> tries = connect_times(n, 0);
    REQUIRE(tries.size() >= 12);
    for (const auto& r : n.connects) {
        CHECK(r.status == net_status::refused);
    }
    CHECK(c.node(0).error == node_error::refused);
    std::set<std::uint64_t> gaps_at_max;
    for (std::size_t k = 1; k < tries.size(); ++k) {
        const std::uint64_t cap = backoff_cap(co, k);
        const std::uint64_t gap = (tries[k] - tries[k - 1]).us;
        INFO("attempt " << k << ": waited " << gap << " us, cap " << cap << " us");
        CHECK(gap >= cap / 2);
        CHECK(gap <= cap);
        if (cap == co.reconnect_max.us) {
            gaps_at_max.insert(gap);
        }
    }
    // Jittered: attempts at the cap do not all wait the same.
    CHECK(gaps_at_max.size() >= 3);

    // A successful set-up resets the backoff: the first wait after the next
    // failure is at most reconnect_min again.
    n.restart(0, false);
    REQUIRE(loop.run_for(duration::millis(800)));
    REQUIRE(log.count(lock_event_kind::acquired) == 1);
    CHECK(c.node(0).state == node_state::ready);
    CHECK(c.node(0).error == node_error::none);
    const std::size_t before = connect_times(n, 0).size();
    const instant crashed = n.now();
    n.crash(0);
    REQUIRE(loop.run_for(duration::millis(200)));
    const std::vector<instant> again = connect_times(n, 0);
    REQUIRE(again.size() > before);
    const std::uint64_t first_gap = (again[before] - crashed).us;
    CHECK(first_gap >= co.reconnect_min.us / 2);
    CHECK(first_gap <= co.reconnect_min.us);
    l.start_release();
    REQUIRE(loop.run_for(duration::millis(100)));
}

TEST_CASE("a refusal seen when the connect finishes backs off alike", "[client][sim]") {
    sim::net n(102);
    n.add_nodes(1);
    n.faults(0).refuse_late = true;
    n.crash(0);
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock::client_options co;
    co.reconnect_min = duration::millis(50);
    co.reconnect_max = duration::millis(50);
    edgelock_test::configure(c, urls, co);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    const edgelock::op_result r = l.try_acquire();
    INFO(edgelock_test::what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::failed);
    CHECK(r.event.reason == lock_failure::no_quorum);
    CHECK(c.node(0).error == node_error::refused);
    CHECK(c.node(0).state == node_state::backoff);
    for (const auto& rec : n.connects) {
        CHECK(rec.status == net_status::in_progress);  // the refusal came later
    }
}

TEST_CASE("a connect that never completes costs a node_timeout, not the connect_timeout",
          "[client][sim]") {
    sim::net n(103);
    n.add_nodes(3);
    for (int i = 0; i < 3; ++i) {
        n.faults(i).latency_min_us = n.faults(i).latency_max_us = 2000;
    }
    edgelock::client_options co;
    co.connect_timeout = duration::seconds(1);
    const edgelock::lock_options lo = edgelock_test::fast_lock_options();  // node_timeout 50 ms

    SECTION("one of three nodes: the round goes ahead on the others") {
        n.faults(2).connect_hangs = true;
        node_urls urls(n);
        edgelock::client<3> c;
        edgelock_test::configure(c, urls, co);
        sim::event_loop loop(n);
        loop.add(c);
        event_log log;
        edgelock::client_lock l;
        REQUIRE(l.attach(c, "jobs", lo) == client_errc::ok);
        log.attach(l);
        const instant t0 = n.now();
        REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
        REQUIRE(loop.run_for(duration::millis(200)));
        REQUIRE(log.count(lock_event_kind::acquired) == 1);
        const instant got = log.last()->at;
        // The operation waited for the connecting node up to node_timeout,
        // then went out to the two that were ready: one round trip more.
        CHECK(got >= t0 + lo.node_timeout);
        CHECK(got <= t0 + lo.node_timeout + duration::millis(5));
        CHECK(c.node(2).state == node_state::connecting);
        CHECK(n.node(2).commands == 0);
        // The node fails for good only at connect_timeout.
        REQUIRE(loop.run_until(t0 + co.connect_timeout + duration::millis(1)));
        CHECK(c.node(2).error == node_error::connect_timeout);
        CHECK(c.node(2).state == node_state::backoff);
        CHECK(l.held());
        l.start_release();
        REQUIRE(loop.run_for(duration::millis(100)));
    }

    SECTION("the only node: the blocking acquire fails within two node_timeouts") {
        n.faults(0).connect_hangs = true;
        node_urls urls(n, 1);
        edgelock::client<1> c;
        edgelock_test::configure(c, urls, co);
        edgelock::client_lock l;
        REQUIRE(l.attach(c, "jobs", lo) == client_errc::ok);
        const instant t0 = n.now();
        const edgelock::op_result r = l.try_acquire();
        INFO(edgelock_test::what(r));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(r.event.reason == lock_failure::no_quorum);
        CHECK(n.now() >= t0 + lo.node_timeout);
        CHECK(n.now() <= t0 + lo.node_timeout + lo.node_timeout);
        CHECK(c.node(0).state == node_state::connecting);
    }

    SECTION("connected, but the set-up is never answered") {
        n.pause(0, duration::seconds(30));  // the kernel accepts; the server is stopped
        node_urls urls(n, 1);
        edgelock::client<1> c;
        edgelock_test::configure(c, urls, co);
        const instant t0 = n.now();
        CHECK(c.connect(t0 + duration::seconds(5)) == 0);
        CHECK(n.now() >= t0 + co.connect_timeout);
        CHECK(n.now() <= t0 + co.connect_timeout + duration::millis(1));
        CHECK(c.node(0).error == node_error::connect_timeout);
        CHECK(c.node(0).state == node_state::backoff);
        // Which part ran out of time: connected, the set-up's replies.
        const edgelock::str_view m = c.node(0).message;
        CHECK(std::string(m.data, m.size) == "no reply to the set-up");
    }
}

TEST_CASE("a node that stops answering is dropped after stall_timeout and connected again",
          "[client][sim]") {
    sim::net n(104);
    n.add_nodes(1);
    n.faults(0).latency_min_us = n.faults(0).latency_max_us = 2000;
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock::client_options co;
    co.stall_timeout = duration::millis(300);
    co.reconnect_min = duration::millis(20);
    co.reconnect_max = duration::millis(40);
    co.connect_timeout = duration::millis(500);
    edgelock_test::configure(c, urls, co);
    sim::event_loop loop(n);
    loop.add(c);
    event_log log;
    edgelock::client_lock l;
    edgelock::lock_options lo = edgelock_test::fast_lock_options();
    lo.ttl = duration::seconds(2);
    REQUIRE(l.attach(c, "jobs", lo) == client_errc::ok);
    log.attach(l);
    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(50)));
    REQUIRE(log.count(lock_event_kind::acquired) == 1);
    const instant acquired = log.last()->at;
    const instant validity = l.validity_deadline();
    REQUIRE(connect_times(n, 0).size() == 1);

    // The server stops (SIGSTOP) before the watchdog's renew, a third of
    // the ttl after the acquire round began (its validity's base).
    n.pause(0, duration::seconds(3));
    REQUIRE(l.machine().validity_base() < acquired);
    const instant renew_sent = l.machine().validity_base() + duration::micros(lo.ttl.us / 3);
    const instant stall_at = renew_sent + co.stall_timeout;
    REQUIRE(loop.run_until(stall_at + co.reconnect_min + duration::millis(1)));
    REQUIRE_FALSE(n.closes.empty());
    CHECK(n.closes.front().by_client);
    CHECK(n.closes.front().at >= stall_at);
    CHECK(n.closes.front().at <= stall_at + duration::millis(1));
    CHECK(c.node(0).error == node_error::stalled);
    // ... and a new connection is under way, after a backoff.
    CHECK(connect_times(n, 0).size() == 2);

    // While the server stays stopped the renew cannot win: lost at the
    // validity deadline, never later.
    REQUIRE(loop.run_until(validity + duration::millis(1)));
    REQUIRE(log.count(lock_event_kind::lost) == 1);
    CHECK(log.last()->at == validity);
    CHECK(log.count(lock_event_kind::renewed) == 0);

    // The server runs again: the node is connected and set up once more, and
    // the lock can be taken again (its key expired meanwhile).
    REQUIRE(loop.run_until(acquired + duration::seconds(4)));
    const edgelock::op_result r = l.try_acquire();
    INFO(edgelock_test::what(r));
    CHECK(r.event.kind == lock_event_kind::acquired);
    CHECK(c.node(0).state == node_state::ready);
    CHECK(c.node(0).error == node_error::none);
    CHECK(l.release().event.kind == lock_event_kind::released);
}
