// lock::redirected, driven by hand: a request a Cluster node answered with
// MOVED or ASK ran nothing, so it goes out again, the same bytes and tag, in
// the same round and before its deadline; a tag that is not the current
// round's changes nothing. A cleanup goes out again only when nothing of the
// lock went out behind it.
#include <catch2/catch.hpp>

#include <string>

#include "edgelock/lock.hpp"
#include "tools/random.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock;
using edgelock::lock_errc;
using edgelock::lock_event;
using edgelock::lock_event_kind;
using edgelock::lock_state;
using edgelock_test::counter_random;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;

namespace {

const instant t0{1000000};

struct one_node {
    counter_random rnd;
    lock l;

    explicit one_node(edgelock::lock_mode mode = edgelock::lock_mode::plain) {
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.mode = mode;
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    }
};

lock_event next_event(lock& l) {
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    return ev;
}

}  // namespace

TEST_CASE("redirect: a redirected acquire goes out again, the same request", "[lock][cluster]") {
    for (const auto mode : {edgelock::lock_mode::plain, edgelock::lock_mode::reentrant,
                            edgelock::lock_mode::fenced}) {
        INFO(static_cast<int>(mode));
        one_node n(mode);
        REQUIRE(n.l.acquire(t0) == lock_errc::ok);
        const sent first = take(n.l, 0);
        CHECK(n.l.next_send(0) == lock::outgoing::none);
        REQUIRE(n.l.redirected(0, first.tag) == lock_errc::ok);
        REQUIRE(n.l.next_send(0) == lock::outgoing::request);
        const sent again = take(n.l, 0);
        CHECK(again.bytes == first.bytes);
        CHECK(again.tag == first.tag);
        CHECK(n.l.state() == lock_state::acquiring);
        reply(n.l, 0, again.tag, "*2\r\n:1\r\n:1\r\n", t0 + duration::millis(2));
        CHECK(next_event(n.l).kind == lock_event_kind::acquired);
    }
}

TEST_CASE("redirect: renew and release are sent again, and a stale tag is ignored",
          "[lock][cluster]") {
    one_node n;
    REQUIRE(n.l.acquire(t0) == lock_errc::ok);
    const sent acquire = take(n.l, 0);
    reply(n.l, 0, acquire.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
    REQUIRE(next_event(n.l).kind == lock_event_kind::acquired);

    // The acquire's round is over: its tag names nothing to send.
    REQUIRE(n.l.redirected(0, acquire.tag) == lock_errc::ok);
    CHECK(n.l.next_send(0) == lock::outgoing::none);

    REQUIRE(n.l.renew(t0 + duration::millis(10)) == lock_errc::ok);
    const sent renew = take(n.l, 0);
    REQUIRE(n.l.redirected(0, renew.tag) == lock_errc::ok);
    const sent renew_again = take(n.l, 0);
    CHECK(renew_again.bytes == renew.bytes);
    reply(n.l, 0, renew_again.tag, ":1\r\n", t0 + duration::millis(11));
    CHECK(next_event(n.l).kind == lock_event_kind::renewed);

    REQUIRE(n.l.release(t0 + duration::millis(20)) == lock_errc::ok);
    const sent release = take(n.l, 0);
    REQUIRE(n.l.redirected(0, release.tag) == lock_errc::ok);
    const sent release_again = take(n.l, 0);
    CHECK(release_again.bytes == release.bytes);
    reply(n.l, 0, release_again.tag, ":1\r\n", t0 + duration::millis(21));
    const lock_event ev = next_event(n.l);
    CHECK(ev.kind == lock_event_kind::released);
    CHECK(ev.nodes == 1);
    CHECK(n.l.redirected(1, release.tag) == lock_errc::bad_node);
}

TEST_CASE("redirect: a request redirected past its deadline still fails in time",
          "[lock][cluster]") {
    one_node n;
    REQUIRE(n.l.acquire(t0) == lock_errc::ok);
    const sent first = take(n.l, 0);
    REQUIRE(n.l.redirected(0, first.tag) == lock_errc::ok);
    // Nowhere to send it again: the round ends at its deadline, a "no".
    const instant deadline = n.l.next_deadline();
    REQUIRE(deadline <= t0 + edgelock_test::lock_test_options().node_timeout);
    n.l.on_timeout(deadline);
    const lock_event ev = next_event(n.l);
    CHECK(ev.kind == lock_event_kind::failed);
    CHECK(n.l.state() == lock_state::idle);
}

TEST_CASE("redirect: a cleanup goes out again, also with the next round's acquire behind it",
          "[lock][cluster]") {
    one_node n;
    REQUIRE(n.l.set_retry(2, duration::seconds(5)) == lock_errc::ok);
    REQUIRE(n.l.acquire(t0) == lock_errc::ok);
    const sent first = take(n.l, 0);
    // An error is a "no": the round fails, and its cleanup is queued.
    reply(n.l, 0, first.tag, "-ERR no\r\n", t0 + duration::millis(1));
    REQUIRE(n.l.state() == lock_state::retry_wait);
    REQUIRE(n.l.next_send(0) == lock::outgoing::cleanup);
    const sent cleanup = take(n.l, 0);

    SECTION("nothing behind it: the same cleanup again") {
        REQUIRE(n.l.redirected(0, cleanup.tag) == lock_errc::ok);
        REQUIRE(n.l.next_send(0) == lock::outgoing::cleanup);
        CHECK(take(n.l, 0).bytes == cleanup.bytes);
    }
    SECTION("the next round's acquire behind it: again, since it names round 1's token alone") {
        // The acquire has a token of its own: the cleanup landing after it
        // cannot delete the key it took (lock.hpp, "Tokens").
        n.l.on_timeout(n.l.next_deadline());
        REQUIRE(n.l.state() == lock_state::acquiring);
        const sent second = take(n.l, 0);
        REQUIRE(n.l.redirected(0, cleanup.tag) == lock_errc::ok);
        REQUIRE(n.l.next_send(0) == lock::outgoing::cleanup);
        CHECK(take(n.l, 0).bytes == cleanup.bytes);
        reply(n.l, 0, second.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(100));
        lock_event ev;
        while (n.l.poll_event(ev) && ev.kind != lock_event_kind::acquired) {
        }
        CHECK(ev.kind == lock_event_kind::acquired);
        CHECK(n.l.next_send(0) == lock::outgoing::none);
        CHECK(second.bytes.find(cleanup.bytes) == std::string::npos);
    }
}
