// The plain acquire as one SET NX PX GET, driven by hand: what goes out on a
// node that speaks it and on one that does not, and every answer that SET can
// get (nil, our own token, another's, another type, a syntax error, +OK, an
// error, a timeout), each checked against what the machine sends next and
// the event it ends in.
#include <catch2/catch.hpp>

#include <string>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "tools/hex.hpp"
#include "tools/random.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock::lock_mode;
using edgelock::lock_state;
using edgelock_test::counter_random;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::speaks_set;
using edgelock_test::take;
using edgelock_test::told_caps;

namespace {

const instant t0{1000000};

std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

std::string set_request(const edgelock::lock& l, const char* name = "jobs") {
    std::string want = "*7\r\n$3\r\nSET\r\n" + bulk(name) + bulk(edgelock_test::hex(l.token()));
    return want + bulk("NX") + bulk("PX") + bulk("1000") + bulk("GET");
}

bool is_script(const sent& s, const edgelock::lock_script& script) {
    return s.bytes.find(std::string(script.sha1.data, script.sha1.size)) != std::string::npos ||
           s.bytes.find(std::string(script.text.data, script.text.size)) != std::string::npos;
}

lock_event next_event(edgelock::lock& l) {
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    return ev;
}

struct one_node {
    counter_random rnd;
    edgelock::lock l;

    explicit one_node(lock_mode mode = lock_mode::plain, bool speaks = true,
                      std::uint32_t tries = 1) {
        edgelock::lock_options o = edgelock_test::lock_test_options(mode);
        o.max_tries = tries;
        o.retry_min = o.retry_max = duration::millis(10);
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        REQUIRE(l.set_node_caps(0, speaks_set(speaks)) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
    }
};

}  // namespace

TEST_CASE("set acquire: a node that speaks it gets one SET, nil acquires", "[lock][set]") {
    one_node n;
    const sent s = take(n.l, 0);
    CHECK(s.bytes == set_request(n.l));
    CHECK(n.l.next_send(0) == edgelock::lock::outgoing::none);
    SECTION("RESP2 nil") {
        reply(n.l, 0, s.tag, "$-1\r\n", t0 + duration::millis(1));
    }
    SECTION("RESP3 null") {
        reply(n.l, 0, s.tag, "_\r\n", t0 + duration::millis(1));
    }
    const lock_event ev = next_event(n.l);
    CHECK(ev.kind == lock_event_kind::acquired);
    CHECK(n.l.state() == lock_state::held);
    // Renew and release stay compare-and-set scripts.
    REQUIRE(n.l.renew(t0 + duration::millis(2)) == lock_errc::ok);
    CHECK(is_script(take(n.l, 0), edgelock::script_renew));
}

TEST_CASE("set acquire: scripts where the node does not speak it or the mode needs them",
          "[lock][set]") {
    SECTION("not said: the default") {
        counter_random rnd;
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 1, edgelock_test::lock_test_options(), rnd.source()) ==
                lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        CHECK(is_script(take(l, 0), edgelock::script_acquire));
    }
    SECTION("said no") {
        one_node n(lock_mode::plain, false);
        CHECK(is_script(take(n.l, 0), edgelock::script_acquire));
    }
    SECTION("fenced: the counter needs the script") {
        one_node n(lock_mode::fenced);
        CHECK(is_script(take(n.l, 0), edgelock::script_fenced_acquire));
    }
    SECTION("reentrant: a hash") {
        one_node n(lock_mode::reentrant);
        CHECK(is_script(take(n.l, 0), edgelock::script_reentrant_acquire));
    }
    SECTION("a bad node index changes nothing") {
        one_node n;
        CHECK(n.l.set_node_caps(1, speaks_set(false)) == lock_errc::bad_node);
        CHECK(take(n.l, 0).bytes == set_request(n.l));
    }
}

TEST_CASE("set acquire: a key found taken is asked again by script in the same round",
          "[lock][set]") {
    one_node n(lock_mode::plain, true, 2);
    const sent s = take(n.l, 0);
    SECTION("another's token: busy with the holder's ttl") {
        reply(n.l, 0, s.tag, bulk("someone-else"), t0 + duration::millis(1));
    }
    SECTION("another type (a hash): WRONGTYPE is busy too") {
        reply(n.l, 0, s.tag,
              "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
              t0 + duration::millis(1));
    }
    lock_event ev;
    CHECK_FALSE(n.l.poll_event(ev));
    CHECK(n.l.state() == lock_state::acquiring);
    const sent again = take(n.l, 0);
    CHECK(is_script(again, edgelock::script_acquire));
    reply(n.l, 0, again.tag, "*2\r\n:0\r\n:700\r\n", t0 + duration::millis(2));
    CHECK(n.l.state() == lock_state::retry_wait);
    // The next round of this acquisition: the script straight away.
    n.l.on_timeout(t0 + duration::millis(30));
    const sent second = take(n.l, 0);  // no cleanup: the node said busy
    CHECK(is_script(second, edgelock::script_acquire));
    reply(n.l, 0, second.tag, "*2\r\n:0\r\n:650\r\n", t0 + duration::millis(31));
    ev = next_event(n.l);
    CHECK(ev.kind == lock_event_kind::busy);
    CHECK(ev.holder_ttl_ms == 650);
    // A new acquisition tries the SET again.
    REQUIRE(n.l.acquire(t0 + duration::millis(40)) == lock_errc::ok);
    CHECK(take(n.l, 0).bytes == set_request(n.l));
}

TEST_CASE("set acquire: the script after the SET can still win the key", "[lock][set]") {
    one_node n;
    const sent s = take(n.l, 0);
    reply(n.l, 0, s.tag, bulk("someone-else"), t0 + duration::millis(1));
    const sent again = take(n.l, 0);
    reply(n.l, 0, again.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(2));  // freed meanwhile
    CHECK(next_event(n.l).kind == lock_event_kind::acquired);
}

TEST_CASE("set acquire: our own token is re-armed by the script", "[lock][set]") {
    one_node n;
    const sent s = take(n.l, 0);
    // The key holds this acquisition's token: a request of ours landed
    // earlier; the SET left its ttl as it was, so it is not yet a yes.
    reply(n.l, 0, s.tag, bulk(edgelock_test::hex(n.l.token())), t0 + duration::millis(1));
    lock_event ev;
    CHECK_FALSE(n.l.poll_event(ev));
    const sent again = take(n.l, 0);
    CHECK(is_script(again, edgelock::script_acquire));
    SECTION("the script answers") {
        reply(n.l, 0, again.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(2));
        CHECK(next_event(n.l).kind == lock_event_kind::acquired);
    }
    SECTION("it does not: no answer, not busy (the key was ours)") {
        n.l.on_timeout(t0 + duration::millis(50));
        const lock_event end = next_event(n.l);
        CHECK(end.kind == lock_event_kind::failed);
        CHECK(end.reason == lock_failure::no_quorum);
    }
}

TEST_CASE("set acquire: a syntax error (Redis < 7) means scripts from then on", "[lock][set]") {
    one_node n;
    const sent s = take(n.l, 0);
    reply(n.l, 0, s.tag, "-ERR syntax error\r\n", t0 + duration::millis(1));
    const sent again = take(n.l, 0);
    CHECK(is_script(again, edgelock::script_acquire));
    reply(n.l, 0, again.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(2));
    CHECK(next_event(n.l).kind == lock_event_kind::acquired);
    REQUIRE(n.l.release(t0 + duration::millis(3)) == lock_errc::ok);
    const sent rel = take(n.l, 0);
    reply(n.l, 0, rel.tag, ":1\r\n", t0 + duration::millis(4));
    CHECK(next_event(n.l).kind == lock_event_kind::released);
    // The driver still says the node speaks it; the node said otherwise.
    REQUIRE(n.l.set_node_caps(0, speaks_set(true)) == lock_errc::ok);
    REQUIRE(n.l.acquire(t0 + duration::millis(5)) == lock_errc::ok);
    CHECK(is_script(take(n.l, 0), edgelock::script_acquire));
}

TEST_CASE("set acquire: +OK (GET ignored) is acquired, and no SET is sent again", "[lock][set]") {
    one_node n;
    const sent s = take(n.l, 0);
    reply(n.l, 0, s.tag, "+OK\r\n", t0 + duration::millis(1));
    CHECK(next_event(n.l).kind == lock_event_kind::acquired);
    REQUIRE(n.l.release(t0 + duration::millis(2)) == lock_errc::ok);
    reply(n.l, 0, take(n.l, 0).tag, ":1\r\n", t0 + duration::millis(3));
    CHECK(next_event(n.l).kind == lock_event_kind::released);
    REQUIRE(n.l.acquire(t0 + duration::millis(4)) == lock_errc::ok);
    CHECK(is_script(take(n.l, 0), edgelock::script_acquire));
}

TEST_CASE("set acquire: other answers are a no, never a yes", "[lock][set]") {
    const char* answers[] = {
        "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
        "-NOPERM this user has no permissions to run the 'set' command\r\n",
        "-READONLY You can't write against a read only replica.\r\n",
        ":1\r\n",
        "*1\r\n:1\r\n",
        "+QUEUED\r\n",
        "#t\r\n",
    };
    for (const char* answer : answers) {
        INFO(answer);
        one_node n;
        const sent s = take(n.l, 0);
        reply(n.l, 0, s.tag, answer, t0 + duration::millis(1));
        const lock_event ev = next_event(n.l);
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(ev.reason == lock_failure::no_quorum);
        CHECK_FALSE(n.l.held(t0 + duration::millis(1)));
    }
}

TEST_CASE("set acquire: a node that said taken and then went quiet counts as busy", "[lock][set]") {
    one_node n;
    const sent s = take(n.l, 0);
    reply(n.l, 0, s.tag, bulk("someone-else"), t0 + duration::millis(1));
    take(n.l, 0);  // the script, never answered
    SECTION("timeout") {
        n.l.on_timeout(t0 + duration::millis(50));
    }
    SECTION("disconnect") {
        REQUIRE(n.l.on_disconnected(0, t0 + duration::millis(5)) == lock_errc::ok);
    }
    const lock_event ev = next_event(n.l);
    CHECK(ev.kind == lock_event_kind::busy);
    CHECK(ev.holder_ttl_ms == -1);  // unknown: the script did not say
}

TEST_CASE("set acquire: a late nil is undone by a compare-and-delete", "[lock][set]") {
    one_node n;
    const sent s = take(n.l, 0);
    n.l.on_timeout(t0 + duration::millis(50));
    CHECK(next_event(n.l).kind == lock_event_kind::failed);
    // The SET landed after all: the key is ours and nobody would delete it.
    std::string cleanup;
    if (n.l.next_send(0) == edgelock::lock::outgoing::cleanup) {
        cleanup = take(n.l, 0).bytes;  // the failure's own cleanup
    }
    reply(n.l, 0, s.tag, "$-1\r\n", t0 + duration::millis(60));
    REQUIRE(n.l.next_send(0) == edgelock::lock::outgoing::cleanup);
    const sent undo = take(n.l, 0);
    CHECK(is_script(undo, edgelock::script_release));
    CHECK(undo.bytes.find(edgelock_test::hex(n.l.token())) != std::string::npos);
    // A late "taken" undoes nothing.
    one_node m;
    const sent t = take(m.l, 0);
    m.l.on_timeout(t0 + duration::millis(50));
    if (m.l.next_send(0) == edgelock::lock::outgoing::cleanup) {
        take(m.l, 0);
    }
    reply(m.l, 0, t.tag, bulk("someone-else"), t0 + duration::millis(60));
    CHECK(m.l.next_send(0) == edgelock::lock::outgoing::none);
}

TEST_CASE("set acquire: Redlock, one SET per node, each answer on its own", "[lock][set]") {
    counter_random rnd;
    edgelock::lock l;
    REQUIRE(l.configure("jobs", 3, edgelock_test::lock_test_options(), rnd.source()) ==
            lock_errc::ok);
    REQUIRE(l.set_node_caps(0, speaks_set(true)) == lock_errc::ok);
    REQUIRE(l.set_node_caps(1, speaks_set(false)) == lock_errc::ok);
    REQUIRE(l.set_node_caps(2, speaks_set(true)) == lock_errc::ok);
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    const sent a = take(l, 0);
    const sent b = take(l, 1);
    const sent c = take(l, 2);
    CHECK(a.bytes == set_request(l));
    CHECK(is_script(b, edgelock::script_acquire));
    CHECK(c.bytes == set_request(l));
    reply(l, 0, a.tag, "$-1\r\n", t0 + duration::millis(1));
    reply(l, 2, c.tag, bulk("someone-else"), t0 + duration::millis(1));
    lock_event ev;
    CHECK_FALSE(l.poll_event(ev));
    reply(l, 1, b.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(2));
    CHECK(next_event(l).kind == lock_event_kind::acquired);  // 2 of 3
}
