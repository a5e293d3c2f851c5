// Semaphores (lock_options::permits) under Redlock, driven by hand: every
// node of a round is asked for the same permit and only that one, a refusal
// that names a free permit steers the next round to it, a yes for another
// permit is a no, fenced rounds raise the counter on the permit's key, and a
// late yes is undone by a release of every permit. And which of the name's
// marks a semaphore takes as its own.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/key_slot.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp_decoder.hpp"
#include "edgelock/token.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"
#include "tools/random.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event;
using edgelock::lock_event_kind;
using edgelock::lock_key_kind;
using edgelock::lock_mode;
using edgelock::lock_state;
using edgelock::str_view;
using edgelock_test::counter_random;
using edgelock_test::evalsha;
using edgelock_test::hex;
using edgelock_test::key_of;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;
using edgelock_test::text;
using edgelock_test::words;

namespace {

const instant t0{4000000};
constexpr unsigned permits = 6;

std::string permit_of(unsigned i) {
    return edgelock_test::permit_key_of("jobs", i);
}

// The permits hash, every permit's key, and (fenced) the counter.
std::vector<std::string> acquire_keys(bool fenced) {
    std::vector<std::string> keys = {key_of("jobs", lock_key_kind::permits)};
    for (unsigned i = 0; i < permits; ++i) {
        keys.push_back(permit_of(i));
    }
    if (fenced) {
        keys.push_back(key_of("jobs", lock_key_kind::fence_counter));
    }
    return keys;
}

// A cleanup: every permit and the release mark, as EVAL.
std::vector<std::string> cleanup_words(const std::string& token) {
    std::vector<std::string> keys = acquire_keys(false);
    keys.push_back(key_of("jobs", lock_key_kind::release_mark));
    return evalsha(edgelock::script_permit_release, keys, {token, std::to_string(permits)}, true);
}

std::string yes(unsigned permit, unsigned value = 0) {
    return "*3\r\n:1\r\n:" + std::to_string(value) + "\r\n:" + std::to_string(permit) + "\r\n";
}

std::string busy(int free) {
    return "*3\r\n:0\r\n:500\r\n:" + std::to_string(free) + "\r\n";
}

lock_event next_event(edgelock::lock& l) {
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    return ev;
}

// A semaphore "jobs" of `permits` on three nodes, acquiring from t0.
struct three_nodes {
    counter_random rnd;
    edgelock::lock l;
    unsigned start = 0;  // the permit the first round asks for

    explicit three_nodes(lock_mode mode = lock_mode::plain, std::uint32_t tries = 1) {
        edgelock::lock_options o = edgelock_test::lock_test_options(mode);
        o.permits = permits;
        o.max_tries = tries;
        o.retry_min = o.retry_max = duration::millis(10);
        REQUIRE(l.configure("jobs", 3, o, rnd.source()) == lock_errc::ok);
        // The first round's permit is the source's next draw after the token.
        counter_random twin{static_cast<unsigned char>(1 + edgelock::owner_token::size)};
        std::uint64_t pick = 0;
        REQUIRE(edgelock::random_between(twin.source(), 0, permits - 1, pick));
        start = static_cast<unsigned>(pick);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
    }
    std::string token() const { return hex(l.token()); }
    // What every node of a round asking for `permit` must be sent.
    std::vector<std::string> asking(unsigned permit, const char* mode) const {
        return evalsha(edgelock::script_permit_acquire, acquire_keys(mode[1] == 'r'),
                       {token(), "1000", std::to_string(permits), std::to_string(permit), mode});
    }
};

}  // namespace

TEST_CASE("permits redlock: every node is asked for the same permit only", "[lock][permits]") {
    three_nodes s;
    sent r[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        r[i] = take(s.l, i);
        CHECK(words(r[i].bytes) == s.asking(s.start, "o-"));
    }
    reply(s.l, 0, r[0].tag, yes(s.start), t0 + duration::millis(1));
    CHECK(s.l.state() == lock_state::acquiring);
    reply(s.l, 2, r[2].tag, yes(s.start), t0 + duration::millis(2));
    const lock_event ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::acquired);
    CHECK(ev.permit == static_cast<int>(s.start));
    CHECK(s.l.permit() == static_cast<int>(s.start));
    // Node 1 answers late with the same permit: it is part of the hold.
    reply(s.l, 1, r[1].tag, yes(s.start), t0 + duration::millis(3));
    CHECK(s.l.next_send(1) == edgelock::lock::outgoing::none);
}

TEST_CASE("permits redlock: a refusal naming a free permit steers the next round to it",
          "[lock][permits]") {
    three_nodes s(lock_mode::plain, 3);
    const unsigned hint = s.start == 4 ? 5 : 4;
    sent r[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        r[i] = take(s.l, i);
    }
    // The first refusal knows of no free permit, the second does.
    reply(s.l, 0, r[0].tag, busy(-1), t0 + duration::millis(1));
    reply(s.l, 1, r[1].tag, busy(static_cast<int>(hint)), t0 + duration::millis(1));
    REQUIRE(s.l.state() == lock_state::retry_wait);
    const std::string round1 = s.token();
    s.l.on_timeout(s.l.next_deadline());
    REQUIRE(s.l.state() == lock_state::acquiring);
    CHECK(s.token() != round1);  // every round its own
    // Node 2 did not answer round 1: a cleanup of round 1's token goes ahead
    // of its request.
    REQUIRE(s.l.next_send(2) == edgelock::lock::outgoing::cleanup);
    CHECK(words(take(s.l, 2).bytes) == cleanup_words(round1));
    sent again[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        again[i] = take(s.l, i);
        CHECK(words(again[i].bytes) == s.asking(hint, "o-"));
    }
    reply(s.l, 0, again[0].tag, yes(hint), t0 + duration::millis(30));
    reply(s.l, 1, again[1].tag, yes(hint), t0 + duration::millis(30));
    const lock_event ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::acquired);
    CHECK(ev.permit == static_cast<int>(hint));
}

TEST_CASE("permits redlock: a yes for another permit than asked is a no", "[lock][permits]") {
    three_nodes s;
    const unsigned other = (s.start + 1) % permits;
    sent r[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        r[i] = take(s.l, i);
    }
    reply(s.l, 0, r[0].tag, yes(other), t0 + duration::millis(1));
    reply(s.l, 1, r[1].tag, yes(s.start), t0 + duration::millis(1));
    // Two yeses would be a quorum: node 0's did not count.
    CHECK(s.l.state() == lock_state::acquiring);
    lock_event ev;
    CHECK_FALSE(s.l.poll_event(ev));
    reply(s.l, 2, r[2].tag, yes(s.start), t0 + duration::millis(2));
    ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::acquired);
    CHECK(ev.permit == static_cast<int>(s.start));
}

TEST_CASE("permits redlock: fenced, round 1 reads, round 2 raises on the permit's key",
          "[lock][permits]") {
    three_nodes s(lock_mode::fenced);
    sent r[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        r[i] = take(s.l, i);
        CHECK(words(r[i].bytes) == s.asking(s.start, "or"));
    }
    reply(s.l, 0, r[0].tag, yes(s.start, 100), t0 + duration::millis(1));
    reply(s.l, 1, r[1].tag, yes(s.start, 120), t0 + duration::millis(1));
    REQUIRE(s.l.state() == lock_state::fencing);
    sent raise[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        raise[i] = take(s.l, i);
        CHECK(words(raise[i].bytes) ==
              evalsha(edgelock::script_fence_raise,
                      {permit_of(s.start), key_of("jobs", lock_key_kind::fence_counter)},
                      {s.token(), "121"}));
    }
    reply(s.l, 0, raise[0].tag, ":121\r\n", t0 + duration::millis(2));
    reply(s.l, 2, raise[2].tag, ":121\r\n", t0 + duration::millis(2));
    const lock_event ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::acquired);
    CHECK(ev.permit == static_cast<int>(s.start));
    CHECK(ev.fence == 121);
    CHECK(s.l.fence() == 121);
    CHECK(s.l.permit() == static_cast<int>(s.start));
}

TEST_CASE("permits redlock: a late yes is undone by a release of every permit", "[lock][permits]") {
    three_nodes s;
    sent r[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        r[i] = take(s.l, i);
    }
    reply(s.l, 0, r[0].tag, busy(-1), t0 + duration::millis(1));
    reply(s.l, 1, r[1].tag, busy(-1), t0 + duration::millis(1));
    REQUIRE(s.l.state() == lock_state::idle);
    CHECK(next_event(s.l).kind == lock_event_kind::busy);
    // The nodes that said busy took nothing; node 2 may have.
    CHECK(s.l.next_send(0) == edgelock::lock::outgoing::none);
    CHECK(s.l.next_send(1) == edgelock::lock::outgoing::none);
    CHECK(words(take(s.l, 2).bytes) == cleanup_words(s.token()));
    CHECK(s.l.next_send(2) == edgelock::lock::outgoing::none);
    // Node 2 took a permit after all, whichever it was: the same release.
    reply(s.l, 2, r[2].tag, yes((s.start + 3) % permits), t0 + duration::millis(2));
    REQUIRE(s.l.next_send(2) == edgelock::lock::outgoing::cleanup);
    CHECK(words(take(s.l, 2).bytes) == cleanup_words(s.token()));
    lock_event ev;
    CHECK_FALSE(s.l.poll_event(ev));
}

TEST_CASE("permits: a semaphore has no renewal mark, and its release mark is the name's",
          "[lock][permits]") {
    const std::string renewal = key_of("jobs", lock_key_kind::renewal_mark);
    const std::string release = key_of("jobs", lock_key_kind::release_mark);
    for (const unsigned n : {0U, 3U}) {
        INFO("permits " << n);
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.permits = static_cast<std::uint8_t>(n);
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        CHECK(l.is_renewal_mark(str_view(renewal.data(), renewal.size())) == (n == 0));
        CHECK(l.is_release_mark(str_view(release.data(), release.size())));
        const std::string permit = permit_of(0);
        CHECK_FALSE(l.is_release_mark(str_view(permit.data(), permit.size())));
    }
}

TEST_CASE("permits: the delete a driver writes on a node it leaves names every permit",
          "[lock][permits]") {
    counter_random rnd;
    edgelock::lock l;
    edgelock::lock_options o = edgelock_test::lock_test_options();
    char buf[edgelock::lock_max_request];
    CHECK(l.encode_delete(buf, sizeof buf) == 0);  // unconfigured: nothing
    REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    const std::string token = hex(l.token());
    // A lock: compare-and-delete of its key, no marks.
    std::size_t n = l.encode_delete(buf, sizeof buf);
    REQUIRE(n != 0);
    CHECK(words(std::string(buf, n)) == evalsha(edgelock::script_release, {"jobs"}, {token}, true));

    edgelock::lock s;
    o.permits = permits;
    REQUIRE(s.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    REQUIRE(s.acquire(t0) == lock_errc::ok);
    // A semaphore: whichever permit holds the token, without the release mark.
    n = s.encode_delete(buf, sizeof buf);
    REQUIRE(n != 0);
    CHECK(words(std::string(buf, n)) == evalsha(edgelock::script_permit_release,
                                                acquire_keys(false),
                                                {hex(s.token()), std::to_string(permits)}, true));
    CHECK(s.encode_delete(buf, n - 1) == 0);  // one byte short: nothing usable
    CHECK(s.encode_delete(buf, n) == n);
    CHECK(s.state() == lock_state::acquiring);  // the machine did not change
}

TEST_CASE("permits redlock: a counter already at the token is another holder's: no raise",
          "[lock][permits]") {
    // Two holders of different permits can read the same maximum and take
    // the same token; a node answers -2 to the one that comes second.
    three_nodes s(lock_mode::fenced);
    sent r[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        r[i] = take(s.l, i);
    }
    reply(s.l, 0, r[0].tag, yes(s.start, 120), t0 + duration::millis(1));
    reply(s.l, 1, r[1].tag, yes(s.start, 120), t0 + duration::millis(1));
    REQUIRE(s.l.state() == lock_state::fencing);
    sent raise[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        raise[i] = take(s.l, i);
    }
    reply(s.l, 0, raise[0].tag, ":121\r\n", t0 + duration::millis(2));
    reply(s.l, 1, raise[1].tag, ":-2\r\n", t0 + duration::millis(2));
    CHECK(s.l.state() == lock_state::fencing);  // one yes, one refusal: node 2 decides
    reply(s.l, 2, raise[2].tag, ":-2\r\n", t0 + duration::millis(2));
    const lock_event ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::failed);
    CHECK(ev.reason == edgelock::lock_failure::fence_conflict);
    CHECK(s.l.fence() == 0);
    CHECK(s.l.permit() == -1);
    for (std::uint8_t i = 0; i < 3; ++i) {
        CHECK(words(take(s.l, i).bytes) == cleanup_words(s.token()));  // its permit given back
    }
}

TEST_CASE("permits: every key of a semaphore is in its name's Cluster slot", "[lock][permits]") {
    for (const std::string name : {"jobs", "nightly-upload", "{fleet}:upload", "a{b}c", "x:7"}) {
        INFO(name);
        const str_view n(name.data(), name.size());
        const std::uint16_t slot = edgelock::key_slot(n);
        const std::string hash = key_of(name, lock_key_kind::permits);
        CHECK(edgelock::key_slot(str_view(hash.data(), hash.size())) == slot);
        const std::string release = key_of(name, lock_key_kind::release_mark);
        CHECK(edgelock::key_slot(str_view(release.data(), release.size())) == slot);
        const std::string counter = key_of(name, lock_key_kind::fence_counter);
        CHECK(edgelock::key_slot(str_view(counter.data(), counter.size())) == slot);
        for (unsigned i = 0; i < edgelock::lock_max_permits; ++i) {
            char k[edgelock::lock_key_capacity];
            const std::size_t size =
                edgelock::permit_key(n, static_cast<std::uint8_t>(i), k, sizeof k);
            REQUIRE(size != 0);
            CHECK(edgelock::key_slot(str_view(k, size)) == slot);
        }
        char k[edgelock::lock_key_capacity];
        CHECK(edgelock::permit_key(n, edgelock::lock_max_permits, k, sizeof k) == 0);
    }
    char k[edgelock::lock_key_capacity];
    CHECK(edgelock::permit_key("a}b", 0, k, sizeof k) == 0);  // no permit could share its slot
    CHECK(edgelock::lock_key("a}b", lock_key_kind::permits, k, sizeof k) == 0);
}
