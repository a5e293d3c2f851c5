// Every acquire round has its own token (lock.hpp, "Tokens"): what each
// request names, driven by hand, so that no request of an earlier round or
// of a dropped connection can act on a later hold whenever it lands. And the
// waiters that back off: a round split between contenders, and a semaphore's
// try on a hint that did not win, wait their retry delay.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

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
using edgelock::lock_mode;
using edgelock::lock_state;
using edgelock_test::counter_random;
using edgelock_test::hex;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;
using edgelock_test::words;

namespace {

bool is_hex_token(const std::string& w) {
    return w.size() == 32 && w.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The token a request names: its one word of 32 hex digits, or a reentrant
// hold's field ('#' and the token).
std::string token_in(const sent& s) {
    std::string found;
    for (const std::string& w : words(s.bytes)) {
        const std::string t = !w.empty() && w[0] == '#' ? w.substr(1) : w;
        if (is_hex_token(t)) {
            REQUIRE(found.empty());
            found = t;
        }
    }
    REQUIRE(!found.empty());
    return found;
}

bool is_script(const sent& s, const edgelock::lock_script& script) {
    const std::vector<std::string> w = words(s.bytes);
    return w.size() > 1 &&
           (w[1] == edgelock_test::text(script.sha1) || w[1] == edgelock_test::text(script.text));
}

edgelock::lock_options retrying(lock_mode mode) {
    edgelock::lock_options o = edgelock_test::lock_test_options(mode);
    o.max_tries = 100;
    o.wait = duration::seconds(60);
    o.retry_min = duration::millis(100);
    o.retry_max = duration::millis(100);
    if (mode == lock_mode::reentrant) {
        o.owner = "agent-7/task-3";
    }
    return o;
}

const edgelock::lock_script& acquire_script(lock_mode mode) {
    return mode == lock_mode::reentrant ? edgelock::script_reentrant_acquire
           : mode == lock_mode::fenced  ? edgelock::script_fenced_acquire
                                        : edgelock::script_acquire;
}
const edgelock::lock_script& release_script(lock_mode mode) {
    return mode == lock_mode::reentrant ? edgelock::script_reentrant_release
                                        : edgelock::script_release;
}

// The one node answers "acquired" in each mode's words.
const char* const yes = "*2\r\n:1\r\n:1\r\n";

// A lock of `nodes` nodes in `mode`, retrying, its acquisition started at `now`.
struct started {
    counter_random rnd;
    edgelock::lock l;
    started(std::uint8_t nodes, instant now, const edgelock::lock_options& o) {
        REQUIRE(l.configure("jobs", nodes, o, rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(now) == lock_errc::ok);
    }
};

}  // namespace

TEST_CASE("each acquire round names its own token, and its cleanup only that one",
          "[lock][tokens]") {
    const lock_mode mode = GENERATE(lock_mode::plain, lock_mode::reentrant, lock_mode::fenced);
    INFO("mode " << static_cast<int>(mode));
    instant now{1000000};
    started st(1, now, retrying(mode));
    edgelock::lock& l = st.l;

    // Round 1: its acquire goes out, then the connection drops (the bytes
    // may still land, seconds later).
    const sent a1 = take(l, 0);
    REQUIRE(is_script(a1, acquire_script(mode)));
    const std::string t1 = token_in(a1);
    CHECK(t1 == hex(l.token()));
    REQUIRE(l.on_disconnected(0, now) == lock_errc::ok);
    REQUIRE(l.state() == lock_state::retry_wait);

    // The failed round's cleanup names round 1's token.
    const sent c1 = take(l, 0);
    REQUIRE(is_script(c1, release_script(mode)));
    CHECK(token_in(c1) == t1);
    // It is cut off too: sent again on the next connection, same token.
    REQUIRE(l.on_disconnected(0, now) == lock_errc::ok);
    const sent c1again = take(l, 0);
    CHECK(token_in(c1again) == t1);

    // Round 2 has a token of its own, and wins with it.
    now = l.next_deadline();
    l.on_timeout(now);
    REQUIRE(l.state() == lock_state::acquiring);
    const sent a2 = take(l, 0);
    const std::string t2 = token_in(a2);
    CHECK(t2 != t1);
    reply(l, 0, c1again.tag, mode == lock_mode::reentrant ? ":-1\r\n" : ":0\r\n", now);
    reply(l, 0, a2.tag, yes, now);
    REQUIRE(l.state() == lock_state::held);
    CHECK(hex(l.token()) == t2);

    // Round 1's acquire lands late and succeeds: its own key is undone, by
    // round 1's token, which the hold does not have.
    reply(l, 0, a1.tag, yes, now);
    REQUIRE(l.next_send(0) == edgelock::lock::outgoing::cleanup);
    const sent undo = take(l, 0);
    CHECK(token_in(undo) == t1);

    // The hold's renew and release name the hold's token.
    REQUIRE(l.renew(now) == lock_errc::ok);
    const sent r = take(l, 0);
    CHECK(token_in(r) == t2);
    reply(l, 0, r.tag, ":1\r\n", now);
    REQUIRE(l.release(now) == lock_errc::ok);
    CHECK(token_in(take(l, 0)) == t2);
}

TEST_CASE("a lost hold's cleanup goes out in every mode, naming the lost round alone",
          "[lock][tokens]") {
    const lock_mode mode = GENERATE(lock_mode::plain, lock_mode::reentrant, lock_mode::fenced);
    INFO("mode " << static_cast<int>(mode));
    instant now{1000000};
    started st(1, now, retrying(mode));
    edgelock::lock& l = st.l;
    const sent a = take(l, 0);
    reply(l, 0, a.tag, yes, now);
    REQUIRE(l.state() == lock_state::held);
    const std::string held = hex(l.token());

    // The validity ends with no renew answered: lost.
    now = l.validity_deadline();
    l.on_timeout(now);
    lock_event ev;
    bool lost = false;
    while (l.poll_event(ev)) {
        lost = lost || ev.kind == lock_event_kind::lost;
    }
    REQUIRE(lost);
    // A reentrant cleanup takes only the lost hold's own field, so it is as
    // safe to send as a compare-and-delete.
    REQUIRE(l.next_send(0) == edgelock::lock::outgoing::cleanup);
    const sent c = take(l, 0);
    REQUIRE(is_script(c, release_script(mode)));
    CHECK(token_in(c) == held);

    // The next acquisition's first round names another token.
    REQUIRE(l.acquire(now) == lock_errc::ok);
    CHECK(token_in(take(l, 0)) != held);
}

TEST_CASE("a reentrant request names the owner and its own hold's field", "[lock][tokens]") {
    const instant now{1000000};
    started st(1, now, retrying(lock_mode::reentrant));
    edgelock::lock& l = st.l;
    const sent a = take(l, 0);
    const std::string hold = "#" + hex(l.token());
    CHECK(words(a.bytes) == edgelock_test::evalsha(edgelock::script_reentrant_acquire, {"jobs"},
                                                   {"agent-7/task-3", "1000", hold}));
    reply(l, 0, a.tag, yes, now);
    REQUIRE(l.renew(now) == lock_errc::ok);
    const sent r = take(l, 0);
    const std::vector<std::string> w = words(r.bytes);
    REQUIRE(w.size() >= 3);
    CHECK(w[w.size() - 3] == "agent-7/task-3");
    CHECK(w.back() == hold);
}

TEST_CASE("a Redlock round split between contenders waits its retry delay",
          "[lock][tokens][backoff]") {
    instant now{1000000};
    started st(3, now, retrying(lock_mode::plain));
    edgelock::lock& l = st.l;
    // Node 0 ours, 1 and 2 another's; node 1 pushes while the round is out,
    // before its answer (which, on the same connection, already saw that
    // change), and node 0 after its own.
    for (std::uint8_t n = 0; n < 3; ++n) {
        const sent s = take(l, n);
        if (n == 1) {
            REQUIRE(l.on_key_changed(1, now) == lock_errc::ok);
        }
        reply(l, n, s.tag, n == 0 ? yes : "*2\r\n:0\r\n:900\r\n", now);
        if (n == 0) {
            REQUIRE(l.on_key_changed(0, now) == lock_errc::ok);
        }
    }
    // Not at once: the retry delay.
    REQUIRE(l.state() == lock_state::retry_wait);
    CHECK(l.next_deadline() >= now + duration::millis(100));
    // A push from node 0 (another waiter's cleanup where we were) does not
    // cut it short; one from node 1, which said busy, does: its holder let go.
    REQUIRE(l.on_key_changed(0, now + duration::millis(10)) == lock_errc::ok);
    CHECK(l.state() == lock_state::retry_wait);
    CHECK(l.next_deadline() >= now + duration::millis(100));
    REQUIRE(l.on_key_changed(1, now + duration::millis(20)) == lock_errc::ok);
    CHECK(l.state() == lock_state::acquiring);
    now = now + duration::millis(20);
    for (std::uint8_t n = 0; n < 3; ++n) {
        if (l.next_send(n) == edgelock::lock::outgoing::cleanup) {
            take(l, n);
        }
        const sent s = take(l, n);
        reply(l, n, s.tag, "*2\r\n:0\r\n:900\r\n", now);
    }
    REQUIRE(l.state() == lock_state::retry_wait);

    // A round that found every node busy, with nothing of ours taken, is
    // not split: a push then starts the next round at once.
    now = l.next_deadline();
    l.on_timeout(now);
    REQUIRE(l.state() == lock_state::acquiring);
    for (std::uint8_t n = 0; n < 3; ++n) {
        if (l.next_send(n) == edgelock::lock::outgoing::cleanup) {
            take(l, n);  // the last round's cleanup on node 0
        }
        const sent s = take(l, n);
        reply(l, n, s.tag, "*2\r\n:0\r\n:900\r\n", now);
    }
    REQUIRE(l.state() == lock_state::retry_wait);
    REQUIRE(l.on_key_changed(2, now) == lock_errc::ok);
    CHECK(l.state() == lock_state::acquiring);
}

TEST_CASE("a split Redlock round told by a busy node after its answer tries again at once",
          "[lock][tokens][backoff]") {
    instant now{1000000};
    started st(3, now, retrying(lock_mode::plain));
    edgelock::lock& l = st.l;
    // Node 0 ours, 1 and 2 another's, whose release reaches node 1 just
    // after node 1 answered busy (another client's Redlock release, node by
    // node), before node 2 answers: that is news, not the collision's echo.
    for (std::uint8_t n = 0; n < 3; ++n) {
        const sent s = take(l, n);
        reply(l, n, s.tag, n == 0 ? yes : "*2\r\n:0\r\n:900\r\n", now);
        if (n == 1) {
            REQUIRE(l.on_key_changed(1, now) == lock_errc::ok);
        }
    }
    REQUIRE(l.state() == lock_state::retry_wait);
    CHECK(l.next_deadline() == now);
}

TEST_CASE("a semaphore's try on a hint that did not win waits its retry delay",
          "[lock][tokens][backoff]") {
    edgelock::lock_options o = retrying(lock_mode::plain);
    o.permits = 2;
    instant now{1000000};
    started st(3, now, o);
    edgelock::lock& l = st.l;
    // Permits held crosswise: whichever permit a round asks for, a quorum
    // has it taken, and one node names the other free.
    auto round = [&] {
        for (std::uint8_t n = 0; n < 3; ++n) {
            if (l.next_send(n) == edgelock::lock::outgoing::cleanup) {
                take(l, n);
            }
            const sent s = take(l, n);
            reply(l, n, s.tag,
                  n == 0 ? "*3\r\n:0\r\n:900\r\n:-1\r\n" : "*3\r\n:0\r\n:900\r\n:1\r\n", now);
        }
    };
    round();
    // The first hint is tried at once.
    REQUIRE(l.state() == lock_state::retry_wait);
    CHECK(l.next_deadline() == now);
    l.on_timeout(now);
    REQUIRE(l.state() == lock_state::acquiring);
    round();
    // The try on the hint did not win: not another at once, though a node
    // named a free permit again.
    REQUIRE(l.state() == lock_state::retry_wait);
    CHECK(l.next_deadline() >= now + duration::millis(100));
    // A push from a node that said busy is heard: its holder may have let go.
    REQUIRE(l.on_key_changed(1, now) == lock_errc::ok);
    CHECK(l.state() == lock_state::acquiring);
}
