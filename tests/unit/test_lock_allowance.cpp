// How long a round waits for its nodes (lock_options::node_timeout): with no
// node_timeout, as long as the lock can use the replies, so that a reply made
// late by a slow, lossy link (TCP resending a segment, a SYN) still counts.
// An acquire round waits half of what the ttl leaves after the drift; a
// renew round until the hold's validity ends. With a node_timeout, that.
#include <catch2/catch.hpp>

#include <cstdint>

#include "edgelock/lock.hpp"
#include "edgelock/redlock.hpp"
#include "tools/random.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event;
using edgelock::lock_event_kind;
using edgelock::lock_state;
using edgelock_test::counter_random;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;

namespace {

const char* const yes = "*2\r\n:1\r\n:1\r\n";

edgelock::lock_options link_sized() {
    edgelock::lock_options o;  // the library's defaults: no node_timeout
    o.ttl = duration::seconds(4);
    return o;
}

duration half_of_what_drift_leaves(const edgelock::lock_options& o) {
    const duration drift = edgelock::redlock_drift(o.ttl, o.drift_ppm, o.drift_fixed);
    return duration::micros((o.ttl.us - drift.us) / 2);
}

// Drains the machine's events: how many, and the last one.
struct drained {
    int count = 0;
    lock_event last;
};
drained events(edgelock::lock& l) {
    drained d;
    lock_event ev;
    while (l.poll_event(ev)) {
        ++d.count;
        d.last = ev;
    }
    return d;
}

}  // namespace

TEST_CASE("allowance: the default waits for an acquire as long as half the ttl is left",
          "[lock][allowance]") {
    counter_random rnd;
    edgelock::lock l;
    const edgelock::lock_options o = link_sized();
    REQUIRE(o.node_timeout.us == 0);
    REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    const duration allowance = half_of_what_drift_leaves(o);
    CHECK(l.round_allowance() == allowance);
    const instant t0{1000000};
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    const sent a = take(l, 0);
    // The round's deadline is the allowance, not 50 ms.
    CHECK(l.next_deadline() == t0 + allowance);
    // A reply 1.5 s late (a lost segment resent on a 600 ms link) wins.
    const instant late = t0 + duration::millis(1500);
    l.on_timeout(late);  // a spurious wake-up changes nothing
    REQUIRE(l.state() == lock_state::acquiring);
    reply(l, 0, a.tag, yes, late);
    REQUIRE(l.state() == lock_state::held);
    CHECK(events(l).last.kind == lock_event_kind::acquired);
    // Validity from the round's start, as Redlock counts it.
    CHECK(l.validity_deadline() ==
          edgelock::redlock_validity_deadline(
              t0, o.ttl, edgelock::redlock_drift(o.ttl, o.drift_ppm, o.drift_fixed)));
}

TEST_CASE("allowance: an acquire round with no reply in it fails at its end", "[lock][allowance]") {
    counter_random rnd;
    edgelock::lock l;
    const edgelock::lock_options o = link_sized();
    REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    const instant t0{1000000};
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    take(l, 0);
    const instant end = t0 + l.round_allowance();
    l.on_timeout(instant{end.us - 1});
    CHECK(l.state() == lock_state::acquiring);
    l.on_timeout(end);
    CHECK(l.state() == lock_state::idle);
    CHECK(events(l).last.kind == lock_event_kind::failed);
}

TEST_CASE("allowance: a late renew is waited for until the validity ends, and counts",
          "[lock][allowance]") {
    counter_random rnd;
    edgelock::lock l;
    const edgelock::lock_options o = link_sized();
    REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    instant now{1000000};
    REQUIRE(l.acquire(now) == lock_errc::ok);
    reply(l, 0, take(l, 0).tag, yes, now);
    REQUIRE(l.state() == lock_state::held);
    events(l);
    const instant validity = l.validity_deadline();
    now = now + duration::millis(1333);
    REQUIRE(l.renew(now) == lock_errc::ok);
    const sent r = take(l, 0);
    const instant sent_at = now;
    // No renew_failed while the reply is only late: the round's end is the
    // validity deadline.
    CHECK(l.next_deadline() == validity);
    now = now + duration::millis(1900);
    l.on_timeout(now);
    CHECK(l.state() == lock_state::renewing);
    CHECK(events(l).count == 0);
    reply(l, 0, r.tag, ":1\r\n", now);
    REQUIRE(l.state() == lock_state::held);
    CHECK(events(l).last.kind == lock_event_kind::renewed);
    CHECK(l.validity_deadline() ==
          edgelock::redlock_validity_deadline(
              sent_at, o.ttl, edgelock::redlock_drift(o.ttl, o.drift_ppm, o.drift_fixed)));
}

TEST_CASE("allowance: a renew never answered ends as lost at the validity deadline",
          "[lock][allowance]") {
    counter_random rnd;
    edgelock::lock l;
    REQUIRE(l.configure("jobs", 1, link_sized(), rnd.source()) == lock_errc::ok);
    instant now{1000000};
    REQUIRE(l.acquire(now) == lock_errc::ok);
    reply(l, 0, take(l, 0).tag, yes, now);
    events(l);
    REQUIRE(l.renew(now + duration::seconds(1)) == lock_errc::ok);
    take(l, 0);
    const instant validity = l.validity_deadline();
    l.on_timeout(validity);
    CHECK_FALSE(l.held(validity));
    CHECK(events(l).last.kind == lock_event_kind::lost);
}

TEST_CASE("allowance: a node_timeout bounds every round, renews too", "[lock][allowance]") {
    counter_random rnd;
    edgelock::lock l;
    edgelock::lock_options o = link_sized();
    o.node_timeout = duration::millis(200);
    REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    CHECK(l.round_allowance() == duration::millis(200));
    instant now{1000000};
    REQUIRE(l.acquire(now) == lock_errc::ok);
    reply(l, 0, take(l, 0).tag, yes, now);
    REQUIRE(l.state() == lock_state::held);
    events(l);
    REQUIRE(l.renew(now) == lock_errc::ok);
    take(l, 0);
    CHECK(l.next_deadline() == now + duration::millis(200));
    l.on_timeout(now + duration::millis(200));
    CHECK(l.state() == lock_state::renewing);
    CHECK(events(l).last.kind == lock_event_kind::renew_failed);
}
