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
    SECTION("told: just after the holder's ttl") {
        REQUIRE(w.l.set_node_caps(0, told_caps()) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, "*2\r\n:0\r\n:2500\r\n", t0 + duration::millis(1));
        CHECK(w.l.next_deadline() == t0 + duration::millis(1) + duration::millis(2501));
    }
    SECTION("told, a ttl shorter than retry_min: retry_min") {
        REQUIRE(w.l.set_node_caps(0, told_caps()) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, busy_reply, t0 + duration::millis(1));  // 800 ms left
        CHECK(w.l.next_deadline() == t0 + duration::millis(1) + duration::seconds(1));
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

TEST_CASE("notify: a told node's requests go alone and its renews write the renewal mark",
          "[lock][notify]") {
    waiter w;
    edgelock::lock_node_caps caps = told_caps();
    SECTION("the acquire script and the release: nothing ahead") {
        REQUIRE(w.l.set_node_caps(0, caps) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        char buf[edgelock::lock_max_request];
        const edgelock::lock_transmit t = w.l.poll_transmit(0, buf, sizeof buf);
        REQUIRE(t.error == lock_errc::ok);
        CHECK(t.preceding == 0);
        CHECK(std::string(buf, t.size).rfind("*6\r\n$7\r\nEVALSHA\r\n", 0) == 0);
        reply(w.l, 0, t.tag, won_reply, t0 + duration::millis(1));
        REQUIRE(w.l.release(t0 + duration::millis(2)) == lock_errc::ok);
        char rel[edgelock::lock_max_request];
        const edgelock::lock_transmit r = w.l.poll_transmit(0, rel, sizeof rel);
        CHECK(r.preceding == 0);
        CHECK(std::string(rel, r.size).find("PTTL") == std::string::npos);
    }
    SECTION("the SET acquire: nothing ahead") {
        caps.set_nx_get = true;
        REQUIRE(w.l.set_node_caps(0, caps) == lock_errc::ok);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        char buf[edgelock::lock_max_request];
        const edgelock::lock_transmit t = w.l.poll_transmit(0, buf, sizeof buf);
        CHECK(t.preceding == 0);
        CHECK(std::string(buf, t.size).rfind("*7\r\n$3\r\nSET\r\n", 0) == 0);
    }
    SECTION("a renew names the lock's key and its renewal mark") {
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, won_reply, t0 + duration::millis(1));
        REQUIRE(w.l.renew(t0 + duration::millis(2)) == lock_errc::ok);
        const sent renew = take(w.l, 0);
        char mark[edgelock::lock_key_capacity];
        const std::size_t size =
            edgelock::lock_key("jobs", edgelock::lock_key_kind::renewal_mark, mark, sizeof mark);
        REQUIRE(size == 8);
        const std::string head =
            "*7\r\n$7\r\nEVALSHA\r\n$40\r\n" +
            std::string(edgelock::script_renew.sha1.data, edgelock::script_renew.sha1.size) +
            "\r\n$1\r\n2\r\n$4\r\njobs\r\n$8\r\n" + std::string(mark, size);
        CHECK(renew.bytes.rfind(head, 0) == 0);
        CHECK(w.l.is_renewal_mark(edgelock::str_view(mark, size)));
        CHECK_FALSE(w.l.is_renewal_mark("jobs"));
        CHECK_FALSE(w.l.is_renewal_mark(edgelock::str_view(mark, size - 1)));
        CHECK_FALSE(w.l.is_release_mark(edgelock::str_view(mark, size)));
        char out[edgelock::lock_key_capacity];
        REQUIRE(w.l.renewal_mark(out) == size);
        CHECK(std::string(out, size) == std::string(mark, size));
        mark[size - 1] = static_cast<char>(mark[size - 1] ^ 1);
        CHECK_FALSE(w.l.is_renewal_mark(edgelock::str_view(mark, size)));
        mark[size - 1] = static_cast<char>(mark[size - 1] ^ 1);
        mark[0] = 'J';  // another name's mark: "Jobs:r.."
        CHECK_FALSE(w.l.is_renewal_mark(edgelock::str_view(mark, size)));
        mark[0] = 'j';
        CHECK(w.l.is_renewal_mark(edgelock::str_view(mark, size)));
    }
    SECTION("a release names the key, the renewal mark and the release mark") {
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, won_reply, t0 + duration::millis(1));
        REQUIRE(w.l.release(t0 + duration::millis(2)) == lock_errc::ok);
        const sent release = take(w.l, 0);
        char renewal[edgelock::lock_key_capacity];
        const std::size_t renewal_size = edgelock::lock_key(
            "jobs", edgelock::lock_key_kind::renewal_mark, renewal, sizeof renewal);
        char mark[edgelock::lock_key_capacity];
        const std::size_t size =
            edgelock::lock_key("jobs", edgelock::lock_key_kind::release_mark, mark, sizeof mark);
        REQUIRE(size == 10);
        CHECK(std::string(mark, renewal_size) == std::string(renewal, renewal_size));
        const std::string head =
            "*7\r\n$7\r\nEVALSHA\r\n$40\r\n" +
            std::string(edgelock::script_release.sha1.data, edgelock::script_release.sha1.size) +
            "\r\n$1\r\n3\r\n$4\r\njobs\r\n$8\r\n" + std::string(renewal, renewal_size) +
            "\r\n$10\r\n" + std::string(mark, size) + "\r\n";
        CHECK(release.bytes.rfind(head, 0) == 0);
        CHECK(w.l.is_release_mark(edgelock::str_view(mark, size)));
        CHECK_FALSE(w.l.is_renewal_mark(edgelock::str_view(mark, size)));
        CHECK_FALSE(w.l.is_release_mark(edgelock::str_view(renewal, renewal_size)));
        CHECK_FALSE(w.l.is_release_mark(edgelock::str_view(mark, size - 1)));
    }
}

TEST_CASE("notify: a release answered TRYAGAIN goes again without its marks, same round",
          "[lock][notify]") {
    waiter w;
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    reply(w.l, 0, take(w.l, 0).tag, won_reply, t0 + duration::millis(1));
    lock_event ev;
    REQUIRE(w.l.poll_event(ev));
    REQUIRE(w.l.release(t0 + duration::millis(10)) == lock_errc::ok);
    const sent marked = take(w.l, 0);
    CHECK(marked.bytes.find("$1\r\n3\r\n$4\r\njobs\r\n") != std::string::npos);
    reply(w.l, 0, marked.tag, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
          t0 + duration::millis(11));
    REQUIRE(w.l.next_send(0) == edgelock::lock::outgoing::request);
    const sent alone = take(w.l, 0);
    CHECK(alone.bytes.find("$1\r\n1\r\n$4\r\njobs\r\n") != std::string::npos);
    reply(w.l, 0, alone.tag, ":1\r\n", t0 + duration::millis(12));
    REQUIRE(w.l.poll_event(ev));
    CHECK(ev.kind == lock_event_kind::released);
}

TEST_CASE("notify: a renew answered TRYAGAIN goes again without its mark, same round",
          "[lock][notify]") {
    waiter w;
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    reply(w.l, 0, take(w.l, 0).tag, won_reply, t0 + duration::millis(1));
    lock_event ev;
    REQUIRE(w.l.poll_event(ev));
    for (std::uint64_t i = 0; i < 2; ++i) {  // each renew tries the pair first
        const instant at = t0 + duration::millis(10 + 10 * i);
        REQUIRE(w.l.renew(at) == lock_errc::ok);
        const sent pair = take(w.l, 0);
        CHECK(pair.bytes.find("$1\r\n2\r\n$4\r\njobs\r\n") != std::string::npos);
        reply(w.l, 0, pair.tag, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
              at + duration::millis(1));
        REQUIRE(w.l.next_send(0) == edgelock::lock::outgoing::request);
        const sent alone = take(w.l, 0);
        CHECK(alone.bytes.find("$1\r\n1\r\n$4\r\njobs\r\n") != std::string::npos);
        reply(w.l, 0, alone.tag, ":1\r\n", at + duration::millis(2));
        REQUIRE(w.l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::renewed);
    }
    // Twice in one round is a failed renew, as any error.
    REQUIRE(w.l.renew(t0 + duration::millis(40)) == lock_errc::ok);
    const std::string tryagain = "-TRYAGAIN Multiple keys request during rehashing of slot\r\n";
    reply(w.l, 0, take(w.l, 0).tag, tryagain, t0 + duration::millis(41));
    reply(w.l, 0, take(w.l, 0).tag, tryagain, t0 + duration::millis(42));
    CHECK(w.l.next_send(0) == edgelock::lock::outgoing::none);
    REQUIRE(w.l.poll_event(ev));
    CHECK(ev.kind == lock_event_kind::renew_failed);
}

TEST_CASE("notify: a renew heard moves a told waiter's poll, and only that", "[lock][notify]") {
    waiter w;
    REQUIRE(w.l.set_node_caps(0, told_caps()) == lock_errc::ok);
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    reply(w.l, 0, take(w.l, 0).tag, "*2\r\n:0\r\n:2500\r\n", t0 + duration::millis(1));
    const instant poll = t0 + duration::millis(1) + duration::millis(2501);
    REQUIRE(w.l.next_deadline() == poll);
    SECTION("renewed: the poll waits the holder's ttl again from then, and no try goes") {
        const instant at = t0 + duration::millis(500);
        REQUIRE(w.l.on_key_renewed(0, at) == lock_errc::ok);
        CHECK(w.l.state() == lock_state::retry_wait);
        CHECK(w.l.next_send(0) == edgelock::lock::outgoing::none);
        CHECK(w.l.next_deadline() == at + duration::millis(2501));
        // A release after it is still a try at once.
        REQUIRE(w.l.on_key_changed(at + duration::millis(1)) == lock_errc::ok);
        CHECK(w.l.state() == lock_state::acquiring);
    }
    SECTION("a try already due (the key changed) is not put off") {
        REQUIRE(w.l.on_key_changed(t0 + duration::millis(5)) == lock_errc::ok);
        reply(w.l, 0, take(w.l, 0).tag, "*2\r\n:0\r\n:-1\r\n", t0 + duration::millis(6));
        const instant due = w.l.next_deadline();  // the ttl unknown: the retry delay
        REQUIRE(w.l.on_key_renewed(0, t0 + duration::millis(7)) == lock_errc::ok);
        CHECK(w.l.next_deadline() == due);
    }
    SECTION("near the wait's end: the last try stays where it was") {
        REQUIRE(w.l.on_key_renewed(0, t0 + duration::millis(1000)) == lock_errc::ok);
        REQUIRE(w.l.on_key_renewed(0, t0 + duration::millis(2600)) == lock_errc::ok);
        CHECK(w.l.state() == lock_state::retry_wait);
        CHECK(w.l.next_deadline() ==
              t0 + (duration::seconds(5) - duration::millis(50) - duration::micros(1)));
    }
    SECTION("the mark heard within a third of the ttl of the key's end: its expiry, a try now") {
        // The key can be gone at 2501 ms (2500 ms left at 1 ms), and a third
        // of the ttl is 833 ms: heard at 1667 ms it is a renew (gone at
        // 4167 ms now, the poll just after); heard at 3400 ms, within a third
        // of that, the mark expired with the key.
        REQUIRE(w.l.on_key_renewed(0, t0 + duration::millis(1668)) == lock_errc::ok);
        CHECK(w.l.state() == lock_state::acquiring);
    }
    SECTION("the mark heard with most of the ttl left, then near its end") {
        REQUIRE(w.l.on_key_renewed(0, t0 + duration::millis(1667)) == lock_errc::ok);
        CHECK(w.l.state() == lock_state::retry_wait);
        CHECK(w.l.next_deadline() == t0 + duration::millis(4168));
        REQUIRE(w.l.on_key_renewed(0, t0 + duration::millis(3400)) == lock_errc::ok);
        CHECK(w.l.state() == lock_state::acquiring);
        CHECK(w.l.next_send(0) == edgelock::lock::outgoing::request);
    }
}

TEST_CASE("notify: an untold waiter ignores a renew heard", "[lock][notify]") {
    waiter w;
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    reply(w.l, 0, take(w.l, 0).tag, busy_reply, t0 + duration::millis(1));
    const instant due = w.l.next_deadline();
    REQUIRE(w.l.on_key_renewed(0, t0 + duration::millis(300)) == lock_errc::ok);
    CHECK(w.l.next_deadline() == due);
    edgelock::lock idle;
    CHECK(idle.on_key_renewed(0, t0) == lock_errc::not_configured);
}

TEST_CASE("notify: a told waiter's next try is PTTL and SET, no script", "[lock][notify]") {
    waiter w;
    edgelock::lock_node_caps caps = told_caps();
    caps.set_nx_get = true;
    REQUIRE(w.l.set_node_caps(0, caps) == lock_errc::ok);
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    // The first try: SET alone; it finds the key taken, and the script goes
    // in the same round (the ttl said).
    const sent first = take(w.l, 0);
    CHECK(first.bytes.rfind("*7\r\n$3\r\nSET\r\n", 0) == 0);
    reply(w.l, 0, first.tag, "$32\r\n0123456789abcdef0123456789abcdef\r\n",
          t0 + duration::millis(1));
    const sent script = take(w.l, 0);
    CHECK(script.bytes.find("EVALSHA") != std::string::npos);
    reply(w.l, 0, script.tag, busy_reply, t0 + duration::millis(2));
    REQUIRE(w.l.state() == lock_state::retry_wait);

    // Told of a change: PTTL (the holder's ttl), then SET, whose "taken" is
    // the answer: no script.
    REQUIRE(w.l.on_key_changed(t0 + duration::millis(5)) == lock_errc::ok);
    char buf[edgelock::lock_max_request];
    // A buffer too small for both writes nothing and says what both need.
    std::memset(buf, 0x5a, sizeof buf);
    const edgelock::lock_transmit cut = w.l.poll_transmit(0, buf, 40);
    CHECK(cut.error == lock_errc::buffer_too_small);
    CHECK(cut.size > 40);
    CHECK(buf[0] == 0x5a);
    const edgelock::lock_transmit t = w.l.poll_transmit(0, buf, sizeof buf);
    CHECK(t.size == cut.size);
    REQUIRE(t.error == lock_errc::ok);
    const std::string bytes(buf, t.size);
    const std::string head = "*2\r\n$4\r\nPTTL\r\n$4\r\njobs\r\n*7\r\n$3\r\nSET\r\n";
    CHECK(bytes.rfind(head, 0) == 0);
    CHECK(t.preceding == 1);
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
