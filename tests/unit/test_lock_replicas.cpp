// lock_options::min_replicas, driven by hand: WAIT follows every acquire and
// renew request (never a release or a cleanup, never after the one-command
// SET, which is not used with it), a node counts only when WAIT's count is
// high enough, and a node that took the key without enough replicas has it
// taken back; the failure says why. Options that cannot work are refused.
#include <catch2/catch.hpp>

#include <string>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "tools/random.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock::lock_state;
using edgelock_test::counter_random;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;

namespace {

const instant t0{1000000};

lock_event next_event(edgelock::lock& l) {
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    return ev;
}

const std::string wait_2_25 = "*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$2\r\n25\r\n";

struct nodes {
    counter_random rnd;
    edgelock::lock l;

    explicit nodes(std::uint8_t count = 1) {
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.min_replicas = 2;
        o.replica_timeout = duration::millis(25);
        REQUIRE(l.configure("jobs", count, o, rnd.source()) == lock_errc::ok);
        for (std::uint8_t i = 0; i < count; ++i) {
            REQUIRE(l.set_node_caps(i, edgelock_test::speaks_set(true)) == lock_errc::ok);
        }
    }
};

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("replicas: WAIT follows the acquire script, and its count decides", "[lock][replicas]") {
    nodes n;
    REQUIRE(n.l.acquire(t0) == lock_errc::ok);
    const sent s = take(n.l, 0);
    // The script, not the one-command SET, though the node speaks it; as
    // EVAL, since WAIT behind a NOSCRIPT would hold the connection.
    CHECK(s.bytes.find("$4\r\nEVAL\r\n") == 4);
    CHECK(s.bytes.find(std::string(edgelock::script_acquire.text.data,
                                   edgelock::script_acquire.text.size)) != std::string::npos);
    CHECK(ends_with(s.bytes, wait_2_25));
    REQUIRE(s.following == 1);
    CHECK(s.following_tag != s.tag);

    SECTION("enough replicas: acquired") {
        reply(n.l, 0, s.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
        lock_event ev;
        CHECK_FALSE(n.l.poll_event(ev));  // not before WAIT has said
        CHECK(n.l.state() == lock_state::acquiring);
        reply(n.l, 0, s.following_tag, ":2\r\n", t0 + duration::millis(2));
        CHECK(next_event(n.l).kind == lock_event_kind::acquired);
        CHECK(n.l.state() == lock_state::held);
    }
    SECTION("too few: failed, not replicated, and the key taken back") {
        reply(n.l, 0, s.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
        reply(n.l, 0, s.following_tag, ":1\r\n", t0 + duration::millis(26));
        const lock_event ev = next_event(n.l);
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(ev.reason == lock_failure::not_replicated);
        const sent cleanup = take(n.l, 0);
        CHECK(cleanup.bytes.find("EVAL") != std::string::npos);
        CHECK(cleanup.bytes.find("WAIT") == std::string::npos);
        CHECK(cleanup.following == 0);
    }
    SECTION("WAIT refused (an ACL, a proxy): not replicated either") {
        reply(n.l, 0, s.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
        reply(n.l, 0, s.following_tag, "-NOPERM no WAIT for you\r\n", t0 + duration::millis(2));
        CHECK(next_event(n.l).reason == lock_failure::not_replicated);
    }
    SECTION("busy: WAIT's count says nothing") {
        reply(n.l, 0, s.tag, "*2\r\n:0\r\n:900\r\n", t0 + duration::millis(1));
        const lock_event ev = next_event(n.l);
        CHECK(ev.kind == lock_event_kind::busy);
        reply(n.l, 0, s.following_tag, ":2\r\n", t0 + duration::millis(2));
        lock_event more;
        CHECK_FALSE(n.l.poll_event(more));
        CHECK(n.l.state() == lock_state::idle);
    }
    SECTION("no WAIT answer before the node timeout: no") {
        reply(n.l, 0, s.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
        n.l.on_timeout(n.l.next_deadline());
        CHECK(next_event(n.l).kind == lock_event_kind::failed);
        CHECK(take(n.l, 0).bytes.find("EVAL") != std::string::npos);  // taken back
    }
}

TEST_CASE("replicas: NOSCRIPT's WAIT is passed over, the resend's counts", "[lock][replicas]") {
    nodes n;
    REQUIRE(n.l.acquire(t0) == lock_errc::ok);
    const sent first = take(n.l, 0);
    reply(n.l, 0, first.tag, "-NOSCRIPT No matching script\r\n", t0 + duration::millis(1));
    reply(n.l, 0, first.following_tag, ":0\r\n", t0 + duration::millis(1));
    lock_event ev;
    CHECK_FALSE(n.l.poll_event(ev));
    const sent again = take(n.l, 0);
    CHECK(again.bytes.find("EVAL") != std::string::npos);
    CHECK(ends_with(again.bytes, wait_2_25));
    reply(n.l, 0, again.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(2));
    reply(n.l, 0, again.following_tag, ":3\r\n", t0 + duration::millis(3));
    CHECK(next_event(n.l).kind == lock_event_kind::acquired);
}

TEST_CASE("replicas: a renew counts with WAIT too, a release has none", "[lock][replicas]") {
    nodes n;
    REQUIRE(n.l.acquire(t0) == lock_errc::ok);
    const sent a = take(n.l, 0);
    reply(n.l, 0, a.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
    reply(n.l, 0, a.following_tag, ":2\r\n", t0 + duration::millis(2));
    REQUIRE(next_event(n.l).kind == lock_event_kind::acquired);

    REQUIRE(n.l.renew(t0 + duration::millis(10)) == lock_errc::ok);
    const sent r = take(n.l, 0);
    CHECK(r.bytes.find(std::string(edgelock::script_renew.text.data,
                                   edgelock::script_renew.text.size)) != std::string::npos);
    CHECK(ends_with(r.bytes, wait_2_25));
    reply(n.l, 0, r.tag, ":1\r\n", t0 + duration::millis(11));
    reply(n.l, 0, r.following_tag, ":0\r\n", t0 + duration::millis(36));
    const lock_event ev = next_event(n.l);
    CHECK(ev.kind == lock_event_kind::renew_failed);
    CHECK(ev.reason == lock_failure::not_replicated);
    CHECK(n.l.state() == lock_state::renewing);  // tries again after the retry delay

    const instant retry = n.l.next_deadline();
    n.l.on_timeout(retry);
    const sent r2 = take(n.l, 0);
    reply(n.l, 0, r2.tag, ":1\r\n", retry + duration::millis(1));
    reply(n.l, 0, r2.following_tag, ":2\r\n", retry + duration::millis(2));
    CHECK(next_event(n.l).kind == lock_event_kind::renewed);

    REQUIRE(n.l.release(t0 + duration::millis(100)) == lock_errc::ok);
    const sent rel = take(n.l, 0);
    CHECK(rel.following == 0);
    CHECK(rel.bytes.find("WAIT") == std::string::npos);
}

TEST_CASE("replicas: under Redlock only nodes with their replicas count", "[lock][replicas]") {
    nodes n(3);
    REQUIRE(n.l.acquire(t0) == lock_errc::ok);
    sent s[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        s[i] = take(n.l, i);
        reply(n.l, i, s[i].tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
    }
    reply(n.l, 0, s[0].following_tag, ":2\r\n", t0 + duration::millis(2));
    reply(n.l, 1, s[1].following_tag, ":0\r\n", t0 + duration::millis(2));
    lock_event ev;
    CHECK_FALSE(n.l.poll_event(ev));  // 1 yes, 1 no: the third decides
    reply(n.l, 2, s[2].following_tag, ":5\r\n", t0 + duration::millis(3));
    CHECK(next_event(n.l).kind == lock_event_kind::acquired);
}

TEST_CASE("bad input: min_replicas with a timeout that cannot work is refused",
          "[lock][replicas][bad-input]") {
    counter_random rnd;
    edgelock::lock l;
    edgelock::lock_options o = edgelock_test::lock_test_options();
    o.min_replicas = 1;
    o.replica_timeout = duration::millis(0);
    CHECK(l.configure("jobs", 1, o, rnd.source()) == lock_errc::bad_replicas);
    o.replica_timeout = o.node_timeout;
    CHECK(l.configure("jobs", 1, o, rnd.source()) == lock_errc::bad_replicas);
    o.replica_timeout = duration::micros(500);  // WAIT counts milliseconds
    CHECK(l.configure("jobs", 1, o, rnd.source()) == lock_errc::bad_replicas);
    CHECK(l.state() == lock_state::unconfigured);
    o.replica_timeout = o.node_timeout - duration::millis(1);
    CHECK(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    o.min_replicas = 0;
    o.replica_timeout = duration::millis(0);  // not used: fine
    CHECK(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    CHECK(std::string(edgelock::describe(lock_errc::bad_replicas)).find("replica") !=
          std::string::npos);
}
