// lock::on_key_changed driven by hand: a waiting acquisition tries again at
// once, one whose round is out tries again as soon as it ends busy, and every
// other state ignores it. Also: a node that answered "busy" is owed no
// cleanup, one that did not answer is.
#include <catch2/catch.hpp>

#include <cstring>
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
using edgelock::lock_state;
using edgelock_test::counter_random;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::speaks_set;
using edgelock_test::take;
using edgelock_test::told_caps;

namespace {

const instant t0{3000000};
const char* const busy_reply = "*2\r\n:0\r\n:800\r\n";
const char* const won_reply = "*2\r\n:1\r\n:0\r\n";

struct waiter {
    counter_random rnd;
    edgelock::lock l;

    explicit waiter(std::uint8_t nodes = 1) {
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.max_tries = 100;
        o.wait = duration::seconds(5);
        o.retry_min = o.retry_max = duration::seconds(1);  // polling: far away
        REQUIRE(l.configure("jobs", nodes, o, rnd.source()) == lock_errc::ok);
    }
};

}  // namespace

TEST_CASE("notify: a waiting acquisition tries again at once", "[lock][notify]") {
    waiter w;
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    reply(w.l, 0, take(w.l, 0).tag, busy_reply, t0 + duration::millis(1));
    REQUIRE(w.l.state() == lock_state::retry_wait);
    CHECK(w.l.next_deadline() >= t0 + duration::seconds(1));
    CHECK(w.l.next_send(0) == edgelock::lock::outgoing::none);  // busy: no cleanup owed

    REQUIRE(w.l.on_key_changed(t0 + duration::millis(5)) == lock_errc::ok);
    CHECK(w.l.state() == lock_state::acquiring);
    const sent again = take(w.l, 0);
    CHECK(again.bytes.find("EVALSHA") != std::string::npos);
    reply(w.l, 0, again.tag, won_reply, t0 + duration::millis(6));
    lock_event ev;
    REQUIRE(w.l.poll_event(ev));
    CHECK(ev.kind == lock_event_kind::acquired);
    // The validity counts from the round that won, not the first one.
    CHECK(ev.validity_deadline == t0 + duration::millis(5) + duration::millis(988));
}

TEST_CASE("notify: a change during a round makes the next one start at once", "[lock][notify]") {
    waiter w;
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    const sent first = take(w.l, 0);
    REQUIRE(w.l.on_key_changed(t0 + duration::millis(1)) == lock_errc::ok);  // still out
    CHECK(w.l.state() == lock_state::acquiring);
    CHECK(w.l.next_send(0) == edgelock::lock::outgoing::none);  // nothing sent twice
    reply(w.l, 0, first.tag, busy_reply, t0 + duration::millis(2));
    REQUIRE(w.l.state() == lock_state::retry_wait);
    CHECK(w.l.next_deadline() == t0 + duration::millis(2));  // now, not the retry delay
    w.l.on_timeout(t0 + duration::millis(2));
    CHECK(w.l.state() == lock_state::acquiring);
    reply(w.l, 0, take(w.l, 0).tag, busy_reply, t0 + duration::millis(3));
    // That change is spent: the next wait is the retry delay again.
    CHECK(w.l.next_deadline() >= t0 + duration::millis(3) + duration::seconds(1));
}

TEST_CASE("notify: other states ignore a change", "[lock][notify]") {
    SECTION("unconfigured") {
        edgelock::lock l;
        CHECK(l.on_key_changed(t0) == lock_errc::not_configured);
    }
    waiter w;
    SECTION("idle") {
        CHECK(w.l.on_key_changed(t0) == lock_errc::ok);
        CHECK(w.l.state() == lock_state::idle);
        CHECK(w.l.next_send(0) == edgelock::lock::outgoing::none);
    }
    SECTION("held: a renew of our own key, say") {
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, won_reply, t0 + duration::millis(1));
        const instant deadline = w.l.next_deadline();
        CHECK(w.l.on_key_changed(t0 + duration::millis(2)) == lock_errc::ok);
        CHECK(w.l.state() == lock_state::held);
        CHECK(w.l.next_deadline() == deadline);
        CHECK(w.l.next_send(0) == edgelock::lock::outgoing::none);
    }
    SECTION("a wait whose time is up ends busy, without another round") {
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.max_tries = 100;
        o.wait = duration::millis(10);
        o.retry_min = o.retry_max = duration::millis(5);
        counter_random rnd;
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        const sent s = take(l, 0);
        REQUIRE(l.on_key_changed(t0 + duration::millis(1)) == lock_errc::ok);
        reply(l, 0, s.tag, busy_reply, t0 + duration::millis(20));  // past the wait
        lock_event ev;
        REQUIRE(l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::busy);
        CHECK(l.state() == lock_state::idle);
    }
}

TEST_CASE("notify: a failed round cleans up only where the key may be ours", "[lock][notify]") {
    waiter w(3);
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    const sent a = take(w.l, 0);
    const sent b = take(w.l, 1);
    take(w.l, 2);
    reply(w.l, 0, a.tag, busy_reply, t0 + duration::millis(1));
    reply(w.l, 1, b.tag, busy_reply, t0 + duration::millis(1));  // 2 of 3 busy: lost
    REQUIRE(w.l.state() == lock_state::retry_wait);
    CHECK(w.l.next_send(0) == edgelock::lock::outgoing::none);
    CHECK(w.l.next_send(1) == edgelock::lock::outgoing::none);
    // Node 2 has not answered: its acquire may yet land.
    CHECK(w.l.next_send(2) == edgelock::lock::outgoing::cleanup);
}

TEST_CASE("notify: told, a waiter polls only as a fallback", "[lock][notify]") {
    waiter w;
    SECTION("not told: the retry delay") {
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, busy_reply, t0 + duration::millis(1));
        CHECK(w.l.next_deadline() == t0 + duration::millis(1) + duration::seconds(1));
    }
    SECTION("told: the holder's ttl plus the retry delay") {
        REQUIRE(w.l.set_node_caps(0, told_caps()) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, busy_reply, t0 + duration::millis(1));  // 800 ms left
        CHECK(w.l.next_deadline() ==
              t0 + duration::millis(1) + duration::millis(800) + duration::seconds(1));
    }
    SECTION("told, a holder beyond the wait: one last try a node_timeout before its end") {
        REQUIRE(w.l.set_node_caps(0, told_caps()) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, "*2\r\n:0\r\n:60000\r\n", t0 + duration::millis(1));
        const instant last =
            t0 + (duration::seconds(5) - duration::millis(50) - duration::micros(1));
        CHECK(w.l.next_deadline() == last);
        w.l.on_timeout(last);
        reply(w.l, 0, take(w.l, 0).tag, "*2\r\n:0\r\n:59000\r\n", last + duration::millis(1));
        lock_event ev;
        REQUIRE(w.l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::busy);  // within the wait
    }
    SECTION("told, the ttl unknown: the retry delay") {
        REQUIRE(w.l.set_node_caps(0, told_caps()) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, "*2\r\n:0\r\n:-1\r\n", t0 + duration::millis(1));
        CHECK(w.l.next_deadline() == t0 + duration::millis(1) + duration::seconds(1));
    }
    CHECK(w.l.set_node_caps(1, told_caps()) == lock_errc::bad_node);
}

TEST_CASE("notify: on a told node only an acquire script asks to be tracked", "[lock][notify]") {
    waiter w;
    edgelock::lock_node_caps caps = told_caps();
    const std::string caching = "*3\r\n$6\r\nCLIENT\r\n$7\r\nCACHING\r\n$3\r\nyes\r\n";
    SECTION("the acquire script: CLIENT CACHING yes first, its reply to be dropped") {
        REQUIRE(w.l.set_node_caps(0, caps) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        char buf[edgelock::lock_max_request];
        const edgelock::lock_transmit t = w.l.poll_transmit(0, buf, sizeof buf);
        REQUIRE(t.error == lock_errc::ok);
        CHECK(t.preceding == 1);
        const std::string bytes(buf, t.size);
        CHECK(bytes.rfind(caching, 0) == 0);
        CHECK(bytes.find("EVALSHA", caching.size()) == caching.size() + 8);  // after *5 $7
        reply(w.l, 0, t.tag, won_reply, t0 + duration::millis(1));
        REQUIRE(w.l.release(t0 + duration::millis(2)) == lock_errc::ok);
        char rel[edgelock::lock_max_request];
        const edgelock::lock_transmit r = w.l.poll_transmit(0, rel, sizeof rel);
        CHECK(r.preceding == 0);  // a release is not tracked
        CHECK(std::string(rel, r.size).find("CACHING") == std::string::npos);
    }
    SECTION("the SET acquire: not read-only, nothing to track") {
        caps.set_nx_get = true;
        REQUIRE(w.l.set_node_caps(0, caps) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        char buf[edgelock::lock_max_request];
        const edgelock::lock_transmit t = w.l.poll_transmit(0, buf, sizeof buf);
        CHECK(t.preceding == 0);
        CHECK(std::string(buf, t.size).rfind("*7\r\n$3\r\nSET\r\n", 0) == 0);
    }
    SECTION("a buffer too small for both writes nothing and says what both need") {
        REQUIRE(w.l.set_node_caps(0, caps) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        char big[edgelock::lock_max_request];
        edgelock::lock twin;
        counter_random rnd;
        edgelock::lock_options o = edgelock_test::lock_test_options();
        REQUIRE(twin.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        REQUIRE(twin.acquire(t0) == lock_errc::ok);
        const std::size_t alone = twin.poll_transmit(0, big, sizeof big).size;
        for (std::size_t cap : {std::size_t{10}, caching.size(), caching.size() + alone - 1}) {
            char small[edgelock::lock_max_request];
            std::memset(small, 0x5a, sizeof small);
            const edgelock::lock_transmit t = w.l.poll_transmit(0, small, cap);
            CHECK(t.error == lock_errc::buffer_too_small);
            CHECK(t.size == caching.size() + alone);
            CHECK(small[0] == 0x5a);
            CHECK(small[caching.size()] == 0x5a);
        }
        const edgelock::lock_transmit t = w.l.poll_transmit(0, big, caching.size() + alone);
        CHECK(t.error == lock_errc::ok);
        CHECK(t.size == caching.size() + alone);
    }
}

TEST_CASE("notify: a told waiter's next try is CLIENT CACHING yes, PTTL and SET, no script",
          "[lock][notify]") {
    waiter w;
    edgelock::lock_node_caps caps = told_caps();
    caps.set_nx_get = true;
    REQUIRE(w.l.set_node_caps(0, caps) == lock_errc::ok);
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    // The first try: SET alone; it finds the key taken, and the script goes
    // in the same round (behind CLIENT CACHING yes: tracked, the ttl said).
    const sent first = take(w.l, 0);
    CHECK(first.bytes.rfind("*7\r\n$3\r\nSET\r\n", 0) == 0);
    reply(w.l, 0, first.tag, "$32\r\n0123456789abcdef0123456789abcdef\r\n",
          t0 + duration::millis(1));
    const sent script = take(w.l, 0);
    CHECK(script.bytes.find("EVALSHA") != std::string::npos);
    reply(w.l, 0, script.tag, busy_reply, t0 + duration::millis(2));
    REQUIRE(w.l.state() == lock_state::retry_wait);

    // Told of a change: CLIENT CACHING yes, PTTL (tracked, the holder's
    // ttl), then SET, whose "taken" is the answer: no script.
    REQUIRE(w.l.on_key_changed(t0 + duration::millis(5)) == lock_errc::ok);
    char buf[edgelock::lock_max_request];
    const edgelock::lock_transmit t = w.l.poll_transmit(0, buf, sizeof buf);
    REQUIRE(t.error == lock_errc::ok);
    const std::string bytes(buf, t.size);
    const std::string head =
        "*3\r\n$6\r\nCLIENT\r\n$7\r\nCACHING\r\n$3\r\nyes\r\n"
        "*2\r\n$4\r\nPTTL\r\n$4\r\njobs\r\n*7\r\n$3\r\nSET\r\n";
    CHECK(bytes.rfind(head, 0) == 0);
    CHECK(t.preceding == 2);
    REQUIRE(t.preceding_tag != 0);
    reply(w.l, 0, t.preceding_tag, ":700\r\n", t0 + duration::millis(6));
    SECTION("taken: busy, with the PTTL's ttl") {
        reply(w.l, 0, t.tag, "$32\r\nfedcba9876543210fedcba9876543210\r\n",
              t0 + duration::millis(6));
        CHECK(w.l.next_send(0) == edgelock::lock::outgoing::none);  // no script, no cleanup
        CHECK(w.l.state() == lock_state::retry_wait);
        w.l.on_key_changed(t0 + duration::millis(7));
        const sent third = take(w.l, 0);
        CHECK(third.bytes.find("PTTL") != std::string::npos);
        reply(w.l, 0, third.tag, "_\r\n", t0 + duration::millis(8));
        lock_event ev;
        REQUIRE(w.l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::acquired);
    }
    SECTION("free: the SET took it") {
        reply(w.l, 0, t.tag, "_\r\n", t0 + duration::millis(6));
        lock_event ev;
        REQUIRE(w.l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::acquired);
    }
    SECTION("the last try: the busy event says the PTTL's ttl") {
        reply(w.l, 0, t.tag, "$32\r\nfedcba9876543210fedcba9876543210\r\n",
              t0 + duration::seconds(6));  // past the wait: no try after this one
        lock_event ev;
        REQUIRE(w.l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::busy);
        CHECK(ev.holder_ttl_ms == 700);
    }
}
