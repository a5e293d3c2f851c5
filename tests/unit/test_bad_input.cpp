// Bad arguments to every public entry point of the core and the port: each
// call must say what is wrong AND leave everything as it was (state, token,
// fence, validity, what is queued to send, the caller's buffers).
//
// What tests/unit/test_lock_api.cpp, test_resp_*.cpp, test_node_url.cpp and
// test_port_*.cpp already assert is not repeated here; these cases add the
// "nothing changed" half, and the entry points those files do not reach
// (set_retry, resume, owner_token, random_between, redlock_quorum_ok, the
// port's calls on descriptors that are not open).
#include <catch2/catch.hpp>

#include <errno.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "edgelock/config.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/port.hpp"
#include "edgelock/redlock.hpp"
#include "edgelock/resp_decoder.hpp"
#include "edgelock/resp_encoder.hpp"
#include "edgelock/token.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock::lock_mode;
using edgelock::lock_state;
using edgelock::owner_token;
using edgelock::str_view;
using edgelock_test::counter_random;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;

namespace {

constexpr char sentinel = '\x5a';

// A source that always delivers the same byte.
struct constant_random {
    unsigned char byte = 0xff;
    static bool fill(void* ctx, void* buf, std::size_t n) {
        std::memset(buf, static_cast<const constant_random*>(ctx)->byte, n);
        return true;
    }
    edgelock::random_source source() { return {&constant_random::fill, this}; }
};

edgelock::lock_options options(lock_mode mode = lock_mode::plain) {
    return edgelock_test::lock_test_options(mode);
}

std::string hex(const owner_token& t) {
    char h[owner_token::hex_size];
    t.to_hex(h);
    return std::string(h, sizeof h);
}

// Everything a caller can observe of a lock without changing it.
struct observed {
    lock_state state = lock_state::unconfigured;
    std::string token;
    std::uint64_t fence = 0;
    instant validity;
    instant deadline;
    std::uint8_t nodes = 0;
    std::uint8_t quorum = 0;
    std::vector<edgelock::lock::pending> pending;

    bool operator==(const observed& o) const {
        return state == o.state && token == o.token && fence == o.fence && validity == o.validity &&
               deadline == o.deadline && nodes == o.nodes && quorum == o.quorum &&
               pending == o.pending;
    }
};

observed observe(const edgelock::lock& l) {
    observed o;
    o.state = l.state();
    o.token = hex(l.token());
    o.fence = l.fence();
    o.validity = l.validity_deadline();
    o.deadline = l.next_deadline();
    o.nodes = l.node_count();
    o.quorum = l.quorum();
    for (std::uint8_t i = 0; i < edgelock::lock_max_nodes; ++i) {
        o.pending.push_back(l.pending_send(i));
    }
    return o;
}

std::string show(const observed& o) {
    std::string s =
        std::string("state=") + edgelock::describe(o.state) + " token=" + o.token +
        " fence=" + std::to_string(o.fence) + " validity=" + std::to_string(o.validity.us) +
        " deadline=" + std::to_string(o.deadline.us) + " nodes=" + std::to_string(o.nodes) +
        " quorum=" + std::to_string(o.quorum) + " pending=";
    for (edgelock::lock::pending p : o.pending) {
        s += std::to_string(static_cast<int>(p));
    }
    return s;
}

#define CHECK_UNCHANGED(lock, before)                                     \
    do {                                                                  \
        const observed after_ = observe(lock);                            \
        INFO("before: " << show(before) << "\nafter:  " << show(after_)); \
        CHECK(after_ == (before));                                        \
    } while (false)

bool no_event(edgelock::lock& l) {
    lock_event ev;
    return !l.poll_event(ev);
}

// Drives a 3-node plain lock to held: nodes 0 and 1 say yes.
void hold(edgelock::lock& l, instant t0) {
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    const sent s0 = take(l, 0);
    const sent s1 = take(l, 1);
    take(l, 2);
    reply(l, 0, s0.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
    reply(l, 1, s1.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(2));
    REQUIRE(l.state() == lock_state::held);
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    REQUIRE(ev.kind == lock_event_kind::acquired);
}

}  // namespace

// --- lock::configure -------------------------------------------------------------------

TEST_CASE("bad input: a rejected configure keeps the name, options and mode", "[bad-input]") {
    counter_random rnd;
    counter_random twin_rnd;
    edgelock::lock l;
    edgelock::lock twin;  // configured once, the same way: what l must still behave like
    REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
    REQUIRE(twin.configure("jobs", 3, options(), twin_rnd.source()) == lock_errc::ok);

    const std::string long_owner(edgelock::lock_max_owner + 1, 'o');
    const std::string other = "other";
    auto with = [](auto f) {
        auto o = options();
        f(o);
        return o;
    };
    struct row {
        const char* what;
        str_view name;
        int nodes;
        edgelock::lock_options opt;
        edgelock::random_source random;
        lock_errc want;
    };
    edgelock::random_source no_fill;
    no_fill.ctx = &rnd;  // a context but no function: still no source
    const row rows[] = {
        {"255 nodes", "other", 255, options(), rnd.source(), lock_errc::bad_node_count},
        {"a null name with a size", str_view(nullptr, 5), 3, options(), rnd.source(),
         lock_errc::empty_name},
        {"quorum 2 of 1", "other", 1, with([](auto& o) { o.quorum = 2; }), rnd.source(),
         lock_errc::bad_quorum},
        {"quorum 255 of 9", "other", 9, with([](auto& o) { o.quorum = 255; }), rnd.source(),
         lock_errc::bad_quorum},
        {"quorum 3 of 7", "other", 7, with([](auto& o) { o.quorum = 3; }), rnd.source(),
         lock_errc::bad_quorum},
        {"owner too long in plain mode", "other", 3,
         with([&](auto& o) { o.owner = str_view(long_owner.data(), long_owner.size()); }),
         rnd.source(), lock_errc::owner_too_long},
        {"ttl of UINT64_MAX us", "other", 3, with([](auto& o) { o.ttl = duration{UINT64_MAX}; }),
         rnd.source(), lock_errc::bad_ttl},
        {"ttl of 1 s and 1 us", "other", 3,
         with([](auto& o) { o.ttl = duration::micros(1000001); }), rnd.source(),
         lock_errc::bad_ttl},
        {"drift_fixed equal to the ttl", "other", 3, with([](auto& o) { o.drift_fixed = o.ttl; }),
         rnd.source(), lock_errc::bad_ttl},
        {"drift_fixed of UINT64_MAX us", "other", 3,
         with([](auto& o) { o.drift_fixed = duration{UINT64_MAX}; }), rnd.source(),
         lock_errc::bad_ttl},
        {"drift_ppm of UINT32_MAX", "other", 3, with([](auto& o) { o.drift_ppm = UINT32_MAX; }),
         rnd.source(), lock_errc::bad_drift},
        {"node timeout of UINT64_MAX us", "other", 3,
         with([](auto& o) { o.node_timeout = duration{UINT64_MAX}; }), rnd.source(),
         lock_errc::bad_node_timeout},
        {"retry_min of UINT64_MAX us", "other", 3,
         with([](auto& o) { o.retry_min = duration{UINT64_MAX}; }), rnd.source(),
         lock_errc::bad_retry},
        {"resurrect in reentrant mode", "other", 3, with([](auto& o) {
             o.mode = lock_mode::reentrant;
             o.renew_resurrects = true;
         }),
         rnd.source(), lock_errc::bad_mode_option},
        {"a source with a context but no function", "other", 3, options(), no_fill,
         lock_errc::no_random_source},
    };
    for (const row& r : rows) {
        INFO(r.what);
        const observed before = observe(l);
        CHECK(l.configure(r.name, static_cast<std::uint8_t>(r.nodes), r.opt, r.random) == r.want);
        CHECK_UNCHANGED(l, before);
    }

    // Still "jobs" on 3 nodes, plain, ttl 1000 ms, node timeout 50 ms, one try:
    // the same requests, tags and deadlines as the twin, byte for byte.
    const instant t0{7000000};
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    REQUIRE(twin.acquire(t0) == lock_errc::ok);
    CHECK(l.next_deadline() == twin.next_deadline());
    for (std::uint8_t i = 0; i < 3; ++i) {
        const sent a = take(l, i);
        const sent b = take(twin, i);
        CHECK(a.bytes == b.bytes);
        CHECK(a.tag == b.tag);
        CHECK(a.bytes.find("{jobs}") != std::string::npos);
        CHECK(a.bytes.find(std::string(edgelock::script_acquire.sha1.data, 40)) !=
              std::string::npos);
    }
    CHECK(l.poll_transmit(3, nullptr, 0).error == lock_errc::bad_node);
    l.on_timeout(t0 + duration::millis(50));
    CHECK(l.state() == lock_state::idle);  // max_tries 1: no retry
}

TEST_CASE("bad input: configure at the limits is accepted", "[bad-input]") {
    counter_random rnd;
    const std::string longest(edgelock::lock_max_name, 'n');
    const std::string owner(edgelock::lock_max_owner, 'o');
    edgelock::lock l;
    auto o = options(lock_mode::reentrant);
    o.owner = str_view(owner.data(), owner.size());
    o.ttl = duration::millis(edgelock::lock_max_ttl_ms);
    o.node_timeout = o.ttl - duration::millis(1);
    o.drift_ppm = edgelock::lock_max_drift_ppm;
    o.retry_min = o.retry_max;
    o.quorum = 7;
    REQUIRE(l.configure(str_view(longest.data(), longest.size()), 7, o, rnd.source()) ==
            lock_errc::ok);
    CHECK(l.quorum() == 7);
    REQUIRE(l.acquire(instant{1}) == lock_errc::ok);
    char buf[edgelock::lock_max_request];
    const edgelock::lock_transmit t = l.poll_transmit(6, buf, sizeof buf);
    REQUIRE(t.error == lock_errc::ok);
    const std::string req(buf, t.size);
    CHECK(req.find("{" + longest + "}") != std::string::npos);
    CHECK(req.find(owner) != std::string::npos);
    CHECK(req.find(std::to_string(edgelock::lock_max_ttl_ms)) != std::string::npos);
}

TEST_CASE("bad input: configure is refused while anything of the lock is under way",
          "[bad-input]") {
    counter_random rnd;
    edgelock::lock l;
    REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
    const instant t0{1000000};

    SECTION("held, then releasing") {
        hold(l, t0);
        observed before = observe(l);
        CHECK(l.configure("other", 3, options(), rnd.source()) == lock_errc::busy);
        CHECK_UNCHANGED(l, before);
        REQUIRE(l.release(t0 + duration::millis(5)) == lock_errc::ok);
        before = observe(l);
        CHECK(l.configure("other", 3, options(), rnd.source()) == lock_errc::busy);
        CHECK_UNCHANGED(l, before);
        CHECK(take(l, 0).bytes.find("{jobs}") != std::string::npos);
    }
    SECTION("idle, with the cleanups of a failed round not yet sent") {
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        const sent s0 = take(l, 0);
        const sent s1 = take(l, 1);
        take(l, 2);
        reply(l, 0, s0.tag, "*2\r\n:0\r\n:500\r\n", t0 + duration::millis(1));
        reply(l, 1, s1.tag, "-ERR boom\r\n", t0 + duration::millis(1));
        REQUIRE(l.state() == lock_state::idle);
        const observed before = observe(l);
        REQUIRE(before.pending[0] == edgelock::lock::pending::cleanup);
        CHECK(l.configure("other", 3, options(), rnd.source()) == lock_errc::busy);
        CHECK_UNCHANGED(l, before);
        // The cleanups still name the old key; once they are out, the new name is taken.
        for (std::uint8_t i = 0; i < 3; ++i) {
            const sent c = take(l, i);
            CHECK(c.bytes.find("{jobs}") != std::string::npos);
            CHECK(c.bytes.find("{other}") == std::string::npos);
        }
        REQUIRE(l.configure("other", 3, options(), rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0 + duration::millis(10)) == lock_errc::ok);
        CHECK(take(l, 0).bytes.find("{other}") != std::string::npos);
    }
}

// --- operations in states that do not allow them ---------------------------------------

TEST_CASE("bad input: operations refused in every busy state change nothing", "[bad-input]") {
    counter_random rnd;
    const instant t0{2000000};
    const owner_token other{};

    SECTION("held") {
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
        hold(l, t0);
        const observed before = observe(l);
        const instant now = t0 + duration::millis(10);
        CHECK(l.acquire(now) == lock_errc::busy);
        CHECK(l.resume(other, now) == lock_errc::busy);
        CHECK(l.set_retry(0, duration{}) == lock_errc::bad_retry);
        CHECK_UNCHANGED(l, before);
        CHECK(no_event(l));
        CHECK(l.held());
    }
    SECTION("renewing") {
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
        hold(l, t0);
        REQUIRE(l.renew(t0 + duration::millis(100)) == lock_errc::ok);
        const observed before = observe(l);
        const instant now = t0 + duration::millis(101);
        CHECK(l.renew(now) == lock_errc::busy);
        CHECK(l.acquire(now) == lock_errc::busy);
        CHECK(l.resume(other, now) == lock_errc::busy);
        CHECK_UNCHANGED(l, before);
        CHECK(no_event(l));
        CHECK(take(l, 0).bytes.find(std::string(edgelock::script_renew.sha1.data, 40)) !=
              std::string::npos);
    }
    SECTION("releasing") {
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
        hold(l, t0);
        REQUIRE(l.release(t0 + duration::millis(100)) == lock_errc::ok);
        const observed before = observe(l);
        const instant now = t0 + duration::millis(101);
        CHECK(l.release(now) == lock_errc::busy);
        CHECK(l.renew(now) == lock_errc::busy);
        CHECK(l.acquire(now) == lock_errc::busy);
        CHECK(l.resume(other, now) == lock_errc::busy);
        CHECK_UNCHANGED(l, before);
        CHECK(no_event(l));
    }
    SECTION("waiting to retry") {
        edgelock::lock l;
        auto o = options();
        o.max_tries = 3;
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        reply(l, 0, take(l, 0).tag, "-ERR no\r\n", t0 + duration::millis(1));
        REQUIRE(l.state() == lock_state::retry_wait);
        const observed before = observe(l);
        const instant now = t0 + duration::millis(2);
        CHECK(l.acquire(now) == lock_errc::busy);
        CHECK(l.renew(now) == lock_errc::busy);
        CHECK(l.resume(other, now) == lock_errc::busy);
        CHECK(l.set_retry(1, duration{}) == lock_errc::busy);
        CHECK_UNCHANGED(l, before);
        CHECK(no_event(l));
        // Still three tries in all: the second round fails into another wait.
        l.on_timeout(before.deadline);
        REQUIRE(l.state() == lock_state::acquiring);
        CHECK(take(l, 0).bytes.find("redis.call('del'") != std::string::npos);  // cleanup first
        reply(l, 0, take(l, 0).tag, "-ERR no\r\n", before.deadline + duration::millis(1));
        CHECK(l.state() == lock_state::retry_wait);
    }
    SECTION("fencing (Redlock round 2)") {
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 3, options(lock_mode::fenced), rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        const sent s0 = take(l, 0);
        const sent s1 = take(l, 1);
        take(l, 2);
        reply(l, 0, s0.tag, "*2\r\n:1\r\n:4\r\n", t0 + duration::millis(1));
        reply(l, 1, s1.tag, "*2\r\n:1\r\n:6\r\n", t0 + duration::millis(1));
        REQUIRE(l.state() == lock_state::fencing);
        const observed before = observe(l);
        CHECK(before.fence == 7);
        const instant now = t0 + duration::millis(2);
        CHECK(l.acquire(now) == lock_errc::busy);
        CHECK(l.renew(now) == lock_errc::busy);
        CHECK(l.resume(other, now) == lock_errc::busy);
        CHECK(l.set_retry(2, duration{}) == lock_errc::busy);
        CHECK(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::busy);
        CHECK_UNCHANGED(l, before);
        CHECK(no_event(l));
    }
}

TEST_CASE("bad input: a failing random source leaves the token and the state", "[bad-input]") {
    counter_random rnd;
    edgelock::lock l;
    REQUIRE(l.configure("jobs", 1, options(), rnd.source()) == lock_errc::ok);
    const instant t0{3000000};
    // One acquisition first, so there is a token to keep.
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    reply(l, 0, take(l, 0).tag, "-ERR no\r\n", t0 + duration::millis(1));
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    take(l, 0);  // the cleanup
    const observed before = observe(l);
    REQUIRE(before.token != std::string(32, '0'));
    rnd.fail = true;
    CHECK(l.acquire(t0 + duration::millis(2)) == lock_errc::random_failed);
    CHECK_UNCHANGED(l, before);
    CHECK(no_event(l));
}

// --- lock::set_retry ---------------------------------------------------------------------

TEST_CASE("bad input: set_retry refuses without changing the retry policy", "[bad-input]") {
    counter_random rnd;
    edgelock::lock l;
    CHECK(l.set_retry(5, duration::seconds(1)) == lock_errc::not_configured);
    CHECK(l.state() == lock_state::unconfigured);

    REQUIRE(l.configure("jobs", 1, options(), rnd.source()) == lock_errc::ok);  // one try
    const observed before = observe(l);
    CHECK(l.set_retry(0, duration::seconds(10)) == lock_errc::bad_retry);
    CHECK_UNCHANGED(l, before);

    const instant t0{4000000};
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    CHECK(l.set_retry(5, duration::seconds(10)) == lock_errc::busy);
    reply(l, 0, take(l, 0).tag, "-ERR no\r\n", t0 + duration::millis(1));
    // Still one try: failed at once, no retry_wait.
    CHECK(l.state() == lock_state::idle);
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    CHECK(ev.kind == lock_event_kind::failed);
}

// --- lock::resume ------------------------------------------------------------------------

TEST_CASE("bad input: resume refuses what it cannot take over and keeps the token", "[bad-input]") {
    counter_random rnd;
    owner_token theirs;
    REQUIRE(theirs.from_hex("00112233445566778899aabbccddeeff", 32));
    const instant t0{5000000};

    edgelock::lock fresh;
    CHECK(fresh.resume(theirs, t0) == lock_errc::not_configured);
    CHECK(fresh.state() == lock_state::unconfigured);
    CHECK(hex(fresh.token()) == std::string(32, '0'));

    edgelock::lock reentrant;
    REQUIRE(reentrant.configure("jobs", 3, options(lock_mode::reentrant), rnd.source()) ==
            lock_errc::ok);
    observed before = observe(reentrant);
    CHECK(reentrant.resume(theirs, t0) == lock_errc::bad_mode_option);
    CHECK_UNCHANGED(reentrant, before);

    edgelock::lock l;
    REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    before = observe(l);
    CHECK(l.resume(theirs, t0) == lock_errc::busy);
    CHECK_UNCHANGED(l, before);

    // The round fails: cleanups are queued, then out, then answered.
    const sent s[3] = {take(l, 0), take(l, 1), take(l, 2)};
    reply(l, 0, s[0].tag, "-ERR no\r\n", t0 + duration::millis(1));
    reply(l, 1, s[1].tag, "-ERR no\r\n", t0 + duration::millis(1));
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    before = observe(l);
    CHECK(l.resume(theirs, t0) == lock_errc::busy);  // queued
    CHECK_UNCHANGED(l, before);
    sent cleanup[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        cleanup[i] = take(l, i);
    }
    before = observe(l);
    CHECK(l.resume(theirs, t0) == lock_errc::busy);  // out, unanswered
    CHECK_UNCHANGED(l, before);
    for (std::uint8_t i = 0; i < 3; ++i) {
        reply(l, i, cleanup[i].tag, ":1\r\n", t0 + duration::millis(2));
    }
    // Now it may: held with the token given, for ttl - drift from now.
    const instant now = t0 + duration::millis(3);
    REQUIRE(l.resume(theirs, now) == lock_errc::ok);
    CHECK(l.held());
    CHECK(l.token() == theirs);
    CHECK(l.validity_deadline() == now + duration::millis(1000 - 12));
}

// --- bad node indexes and buffers ----------------------------------------------------------

TEST_CASE("bad input: bad node indexes change nothing and count no vote", "[bad-input]") {
    counter_random rnd;
    edgelock::lock l;
    char buf[edgelock::lock_max_request];
    std::memset(buf, sentinel, sizeof buf);

    // Unconfigured: every input and output refuses, and the buffer is not touched.
    CHECK(l.poll_transmit(0, buf, sizeof buf).error == lock_errc::not_configured);
    CHECK(l.on_reply(0, 0, nullptr, 0, instant{1}) == lock_errc::not_configured);
    CHECK(l.on_disconnected(0, instant{1}) == lock_errc::not_configured);
    CHECK(l.pending_send(0) == edgelock::lock::pending::none);
    CHECK(std::string(buf, sizeof buf) == std::string(sizeof buf, sentinel));
    CHECK(l.state() == lock_state::unconfigured);
    CHECK(no_event(l));

    REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
    const instant t0{6000000};
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    const observed before = observe(l);
    edgelock::resp_node yes[3];
    const std::string yes_text = "*2\r\n:1\r\n:0\r\n";
    REQUIRE(edgelock::resp_decode_whole(yes_text.data(), yes_text.size(), yes, 3).status ==
            edgelock::resp_status::complete);
    for (const std::uint8_t bad :
         {std::uint8_t{3}, std::uint8_t{edgelock::lock_max_nodes}, std::uint8_t{255}}) {
        INFO("node " << static_cast<int>(bad));
        const edgelock::lock_transmit t = l.poll_transmit(bad, buf, sizeof buf);
        CHECK(t.error == lock_errc::bad_node);
        CHECK(t.size == 0);
        CHECK(l.on_disconnected(bad, t0) == lock_errc::bad_node);
        CHECK(l.pending_send(bad) == edgelock::lock::pending::none);
        // A "yes" on a node that does not exist counts for nobody, whatever its tag.
        const sent peek = [&] {
            edgelock::lock twin;
            counter_random r2;
            REQUIRE(twin.configure("jobs", 3, options(), r2.source()) == lock_errc::ok);
            REQUIRE(twin.acquire(t0) == lock_errc::ok);
            return take(twin, 0);
        }();
        CHECK(l.on_reply(bad, peek.tag, yes, 3, t0) == lock_errc::bad_node);
    }
    CHECK(std::string(buf, sizeof buf) == std::string(sizeof buf, sentinel));
    CHECK_UNCHANGED(l, before);
    CHECK(no_event(l));

    // One real yes is not a quorum of 2: the bad-node "yes" votes were not counted.
    const sent s0 = take(l, 0);
    reply(l, 0, s0.tag, yes_text, t0 + duration::millis(1));
    CHECK(l.state() == lock_state::acquiring);
}

TEST_CASE("bad input: a buffer too small or null is left alone and loses nothing", "[bad-input]") {
    counter_random rnd;
    edgelock::lock l;
    REQUIRE(l.configure("jobs", 1, options(), rnd.source()) == lock_errc::ok);
    REQUIRE(l.acquire(instant{1}) == lock_errc::ok);
    const observed before = observe(l);

    // Sizing with no buffer at all.
    const edgelock::lock_transmit sizing = l.poll_transmit(0, nullptr, 0);
    CHECK(sizing.error == lock_errc::buffer_too_small);
    REQUIRE(sizing.size > 0);
    REQUIRE(sizing.size <= edgelock::lock_max_request);
    // A null buffer that claims room is refused, not written through.
    const edgelock::lock_transmit null_buf = l.poll_transmit(0, nullptr, 4096);
    CHECK(null_buf.error == lock_errc::buffer_too_small);
    CHECK(null_buf.size == sizing.size);

    std::vector<char> buf(sizing.size + 8, sentinel);
    for (const std::size_t capacity : {std::size_t{1}, sizing.size / 2, sizing.size - 1}) {
        INFO("capacity " << capacity);
        const edgelock::lock_transmit t = l.poll_transmit(0, buf.data(), capacity);
        CHECK(t.error == lock_errc::buffer_too_small);
        CHECK(t.size == sizing.size);
        CHECK(t.tag == 0);
        CHECK(std::string(buf.data(), buf.size()) == std::string(buf.size(), sentinel));
    }
    CHECK_UNCHANGED(l, before);

    // Exactly the size asked for: the whole request, nothing past it.
    const edgelock::lock_transmit t = l.poll_transmit(0, buf.data(), sizing.size);
    REQUIRE(t.error == lock_errc::ok);
    CHECK(t.size == sizing.size);
    CHECK(std::string(buf.data() + t.size, 8) == std::string(8, sentinel));
    CHECK(std::string(buf.data(), 4) == "*6\r\n");
}

TEST_CASE("bad input: replies of the wrong shape are a no, and hand out nothing", "[bad-input]") {
    struct row {
        const char* what;
        lock_mode mode;
        std::string reply;  // "" : nodes == nullptr with a count
    };
    const row rows[] = {
        {"null", lock_mode::plain, "_\r\n"},
        {"RESP2 null bulk", lock_mode::plain, "$-1\r\n"},
        {"an integer", lock_mode::plain, ":1\r\n"},
        {"a bulk error", lock_mode::plain, "!5\r\nERROR\r\n"},
        {"three integers", lock_mode::plain, "*3\r\n:1\r\n:0\r\n:0\r\n"},
        {"one integer in an array", lock_mode::plain, "*1\r\n:1\r\n"},
        {"two strings", lock_mode::plain, "*2\r\n+1\r\n+0\r\n"},
        {"an array first", lock_mode::plain, "*2\r\n*1\r\n:1\r\n:0\r\n"},
        {"status 2", lock_mode::plain, "*2\r\n:2\r\n:0\r\n"},
        {"negative value", lock_mode::plain, "*2\r\n:1\r\n:-1\r\n"},
        {"a map", lock_mode::plain, "%1\r\n:1\r\n:0\r\n"},
        {"a push", lock_mode::plain, ">2\r\n:1\r\n:0\r\n"},
        {"a null pointer with a count", lock_mode::plain, ""},
        {"fenced: counter 0", lock_mode::fenced, "*2\r\n:1\r\n:0\r\n"},
        {"fenced: counter 2^53", lock_mode::fenced, "*2\r\n:1\r\n:9007199254740992\r\n"},
        {"fenced: counter INT64_MAX", lock_mode::fenced, "*2\r\n:1\r\n:9223372036854775807\r\n"},
        {"reentrant: hold count -1", lock_mode::reentrant, "*2\r\n:1\r\n:-1\r\n"},
    };
    for (const row& r : rows) {
        INFO(r.what);
        counter_random rnd;
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 1, options(r.mode), rnd.source()) == lock_errc::ok);
        const instant t0{8000000};
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        const std::string token = hex(l.token());
        const sent s = take(l, 0);
        if (r.reply.empty()) {
            CHECK(l.on_reply(0, s.tag, nullptr, 5, t0) == lock_errc::ok);
        } else {
            reply(l, 0, s.tag, r.reply, t0 + duration::millis(1));
        }
        CHECK(l.state() == lock_state::idle);
        CHECK_FALSE(l.held());
        CHECK(l.fence() == 0);
        CHECK(hex(l.token()) == token);
        lock_event ev;
        REQUIRE(l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(ev.reason == lock_failure::no_quorum);
        CHECK(ev.fence == 0);
        CHECK(no_event(l));
    }
}

// --- owner_token and random_between ----------------------------------------------------------

TEST_CASE("bad input: owner_token::from_hex refuses anything but 32 hex digits", "[bad-input]") {
    const std::string good = "0123456789abcdefABCDEF0123456789";
    owner_token t;
    REQUIRE(t.from_hex(good.data(), good.size()));
    const owner_token kept = t;
    CHECK(hex(kept) == "0123456789abcdefabcdef0123456789");

    CHECK_FALSE(t.from_hex(nullptr, 32));
    CHECK_FALSE(t.from_hex(nullptr, 0));
    CHECK_FALSE(t.from_hex(good.data(), 0));
    CHECK_FALSE(t.from_hex(good.data(), 31));
    CHECK(t == kept);
    const std::string longer = good + "0";
    CHECK_FALSE(t.from_hex(longer.data(), longer.size()));
    const std::string twice = good + good;
    CHECK_FALSE(t.from_hex(twice.data(), twice.size()));
    const std::string prefixed = "0x" + good.substr(0, 30);
    CHECK_FALSE(t.from_hex(prefixed.data(), prefixed.size()));
    CHECK(t == kept);
    // One bad character anywhere, the rest valid (and different from kept).
    for (const char bad : {'g', 'G', 'x', ' ', '-', '\0', '\xff', '/', ':', '@', '`'}) {
        for (std::size_t i = 0; i < 32; ++i) {
            std::string s(32, 'e');
            s[i] = bad;
            INFO("byte " << static_cast<int>(static_cast<unsigned char>(bad)) << " at " << i);
            CHECK_FALSE(t.from_hex(s.data(), s.size()));
        }
    }
    CHECK(t == kept);
}

TEST_CASE("bad input: a failing random source changes no token and no output", "[bad-input]") {
    counter_random failing;
    failing.fail = true;
    owner_token t;
    REQUIRE(t.from_hex("ffeeddccbbaa99887766554433221100", 32));
    const owner_token kept = t;
    CHECK_FALSE(t.generate(failing.source()));
    CHECK_FALSE(t.generate(edgelock::random_source{}));
    CHECK(t == kept);

    std::uint64_t out = 12345;
    CHECK_FALSE(edgelock::random_between(failing.source(), 0, 100, out));
    CHECK_FALSE(edgelock::random_between(edgelock::random_source{}, 0, 100, out));
    // An empty range needs no bytes, but still no source means no answer.
    CHECK_FALSE(edgelock::random_between(edgelock::random_source{}, 7, 7, out));
    CHECK(out == 12345);
    // A source stuck on one value outside the range is given up on, not looped on.
    constant_random stuck;  // 0xff...: always above 4 once masked to 7
    CHECK_FALSE(edgelock::random_between(stuck.source(), 0, 4, out));
    CHECK(out == 12345);
    stuck.byte = 0;
    REQUIRE(edgelock::random_between(stuck.source(), 10, 14, out));
    CHECK(out == 10);
}

// --- Redlock rules ----------------------------------------------------------------------------

TEST_CASE("bad input: quorums below a majority or above the node count", "[bad-input]") {
    struct row {
        std::uint8_t nodes;
        std::uint8_t low_ok;  // smallest quorum accepted
    };
    const row rows[] = {{1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {8, 5}, {9, 5}};
    for (const row& r : rows) {
        INFO(static_cast<int>(r.nodes) << " nodes");
        CHECK_FALSE(edgelock::redlock_quorum_ok(r.nodes, 0));
        CHECK_FALSE(edgelock::redlock_quorum_ok(r.nodes, static_cast<std::uint8_t>(r.low_ok - 1)));
        CHECK(edgelock::redlock_quorum_ok(r.nodes, r.low_ok));
        CHECK(edgelock::redlock_quorum_ok(r.nodes, r.nodes));
        CHECK_FALSE(edgelock::redlock_quorum_ok(r.nodes, static_cast<std::uint8_t>(r.nodes + 1)));
        CHECK_FALSE(edgelock::redlock_quorum_ok(r.nodes, 255));
    }
    CHECK_FALSE(edgelock::redlock_quorum_ok(0, 0));
    CHECK_FALSE(edgelock::redlock_quorum_ok(0, 1));
    // A drift that eats exactly the ttl leaves no validity at all.
    CHECK(edgelock::redlock_validity_deadline(instant{500}, duration::millis(5),
                                              duration::millis(5)) == instant{0});
    CHECK(edgelock::redlock_validity_deadline(instant{500}, duration::millis(5),
                                              duration::millis(5) - duration{1}) == instant{501});
}

// --- RESP encoder -----------------------------------------------------------------------------

TEST_CASE("bad input: the encoder with null pointers and sizes", "[bad-input]") {
    const str_view args[] = {"SET", "k", "v"};
    // A null buffer claiming room is sized, never written through.
    const edgelock::resp_encoded r = edgelock::resp_encode_command(nullptr, 4096, args, 3);
    CHECK(r.error == edgelock::resp_encode_errc::buffer_too_small);
    CHECK(r.size == 27);
    // A null argument array with a count is no command at all.
    char out[64];
    std::memset(out, sentinel, sizeof out);
    const edgelock::resp_encoded n = edgelock::resp_encode_command(out, sizeof out, nullptr, 3);
    CHECK(n.error == edgelock::resp_encode_errc::empty_command);
    CHECK(edgelock::resp_command_size(nullptr, 3) == 0);
    CHECK(std::string(out, sizeof out) == std::string(sizeof out, sentinel));
    // An empty view with a null pointer is an empty argument, read as zero bytes.
    const str_view empty_arg[] = {str_view(nullptr, 0)};
    const edgelock::resp_encoded e = edgelock::resp_encode_command(out, sizeof out, empty_arg, 1);
    REQUIRE(e.error == edgelock::resp_encode_errc::ok);
    CHECK(std::string(out, e.size) == "*1\r\n$0\r\n\r\n");
    CHECK(out[e.size] == sentinel);
}

// --- RESP decoder: the hostile server's inputs, at the decoder --------------------------------

namespace {

struct decode_outcome {
    edgelock::resp_result result;
    bool nodes_past_capacity_untouched = true;
};

// Decodes `input` fed in pieces of `piece` bytes (0: whole) into `capacity`
// nodes, with sentinels after them.
decode_outcome decode_in_pieces(const std::string& input, std::size_t piece,
                                std::size_t capacity = 8,
                                const edgelock::resp_limits& limits = {}) {
    std::vector<edgelock::resp_node> nodes(capacity + 4);
    for (std::size_t i = capacity; i < nodes.size(); ++i) {
        nodes[i].type = edgelock::resp_type::push;
        nodes[i].integer = 4242;
    }
    edgelock::resp_decoder d(limits);
    decode_outcome out;
    std::size_t given = piece == 0 ? input.size() : 0;
    for (;;) {
        if (piece != 0) {
            given = given + piece < input.size() ? given + piece : input.size();
        }
        out.result = d.decode(input.data(), given, nodes.data(), capacity);
        if (out.result.status != edgelock::resp_status::incomplete || given == input.size()) {
            break;
        }
    }
    for (std::size_t i = capacity; i < nodes.size(); ++i) {
        out.nodes_past_capacity_untouched = out.nodes_past_capacity_untouched &&
                                            nodes[i].type == edgelock::resp_type::push &&
                                            nodes[i].integer == 4242;
    }
    return out;
}

}  // namespace

TEST_CASE("bad input: 100,000-deep nesting fails at the depth limit, whole or trickled",
          "[bad-input]") {
    std::string deep;
    deep.reserve(400000);
    for (int i = 0; i < 100000; ++i) {
        deep += "*1\r\n";
    }
    for (const std::size_t piece : {std::size_t{0}, std::size_t{1}, std::size_t{4096}}) {
        INFO("piece " << piece);
        const decode_outcome o = decode_in_pieces(deep, piece, 64);
        CHECK(o.result.status == edgelock::resp_status::error);
        CHECK(o.result.error == edgelock::resp_errc::too_deep);
        CHECK(o.result.offset == 4 * std::size_t{EDGELOCK_RESP_MAX_DEPTH});
        CHECK(o.nodes_past_capacity_untouched);
    }
    // A depth limit asked above the decoder's stack is clamped, not trusted.
    edgelock::resp_limits wide;
    wide.max_depth = 100000;
    const decode_outcome o = decode_in_pieces(deep, 0, 64, wide);
    CHECK(o.result.error == edgelock::resp_errc::too_deep);
    CHECK(o.result.offset == 4 * std::size_t{EDGELOCK_RESP_MAX_DEPTH});
}

TEST_CASE("bad input: a 1 MB error line stops at the line limit", "[bad-input]") {
    const std::string big = "-ERR " + std::string(1000000, 'x') + "\r\n";
    for (const std::size_t piece : {std::size_t{0}, std::size_t{65536}, std::size_t{1000}}) {
        INFO("piece " << piece);
        const decode_outcome o = decode_in_pieces(big, piece);
        CHECK(o.result.status == edgelock::resp_status::error);
        CHECK(o.result.error == edgelock::resp_errc::line_too_long);
        CHECK(o.result.offset == 1 + std::size_t{EDGELOCK_RESP_MAX_LINE});
    }
    // As a bulk error it is over the bulk limit on its header alone.
    const std::string bulk = "!1000005\r\n";
    edgelock::resp_limits small;
    small.max_bulk = 1000000;
    const decode_outcome b = decode_in_pieces(bulk, 0, 8, small);
    CHECK(b.result.error == edgelock::resp_errc::bulk_too_long);
    CHECK(b.result.offset == 1);
}

TEST_CASE("bad input: lengths of 2^63 and negative lengths at the default limits", "[bad-input]") {
    struct row {
        std::string input;
        edgelock::resp_errc error;
        std::size_t offset;
    };
    const row rows[] = {
        {"$9223372036854775808\r\n", edgelock::resp_errc::bulk_too_long, 1},
        {"!9223372036854775808\r\n", edgelock::resp_errc::bulk_too_long, 1},
        {"=9223372036854775808\r\n", edgelock::resp_errc::bulk_too_long, 1},
        {"*9223372036854775808\r\n", edgelock::resp_errc::too_many_elements, 1},
        {"%4611686018427387904\r\n", edgelock::resp_errc::too_many_elements, 1},
        {"|9223372036854775808\r\n", edgelock::resp_errc::too_many_elements, 1},
        {"*1\r\n$9223372036854775808\r\n", edgelock::resp_errc::bulk_too_long, 5},
        {"$-9223372036854775808\r\n", edgelock::resp_errc::bad_length, 2},
        {"*-9223372036854775808\r\n", edgelock::resp_errc::bad_length, 2},
        {"~-1\r\n", edgelock::resp_errc::bad_length, 1},
        {"$-2\r\n", edgelock::resp_errc::bad_length, 2},
        {"*-5\r\n", edgelock::resp_errc::bad_length, 2},
        {":9223372036854775808\r\n", edgelock::resp_errc::integer_overflow, 19},
        {":-9223372036854775809\r\n", edgelock::resp_errc::integer_overflow, 20},
    };
    for (const row& r : rows) {
        INFO(r.input.substr(0, r.input.size() - 2));
        const decode_outcome o = decode_in_pieces(r.input, 0);
        CHECK(o.result.status == edgelock::resp_status::error);
        CHECK(o.result.error == r.error);
        CHECK(o.result.offset == r.offset);
        CHECK(o.nodes_past_capacity_untouched);
    }
}

TEST_CASE("bad input: limits of zero refuse everything that needs room", "[bad-input]") {
    // Every header is a line too: with max_line 0 only empty lines pass.
    edgelock::resp_limits zero;
    zero.max_depth = 0;
    zero.max_elements = 0;
    zero.max_bulk = 0;
    zero.max_line = 0;
    // Only the aggregate limits at zero.
    edgelock::resp_limits flat;
    flat.max_depth = 0;
    flat.max_elements = 0;
    // Only the bulk limit at zero.
    edgelock::resp_limits no_bulk;
    no_bulk.max_bulk = 0;
    struct row {
        std::string input;
        const edgelock::resp_limits& limits;
        edgelock::resp_status status;
        edgelock::resp_errc error;
        std::size_t offset;
    };
    const row rows[] = {
        {"+a\r\n", zero, edgelock::resp_status::error, edgelock::resp_errc::line_too_long, 1},
        {":1\r\n", zero, edgelock::resp_status::error, edgelock::resp_errc::line_too_long, 1},
        {"*0\r\n", zero, edgelock::resp_status::error, edgelock::resp_errc::line_too_long, 1},
        {"+\r\n", zero, edgelock::resp_status::complete, edgelock::resp_errc::ok, 0},
        {"_\r\n", zero, edgelock::resp_status::complete, edgelock::resp_errc::ok, 0},
        {"*0\r\n", flat, edgelock::resp_status::error, edgelock::resp_errc::too_deep, 0},
        {"%0\r\n", flat, edgelock::resp_status::error, edgelock::resp_errc::too_deep, 0},
        {"*1\r\n:1\r\n", flat, edgelock::resp_status::error, edgelock::resp_errc::too_many_elements,
         1},
        {"*-1\r\n", flat, edgelock::resp_status::complete, edgelock::resp_errc::ok, 0},
        {"$1\r\na\r\n", no_bulk, edgelock::resp_status::error, edgelock::resp_errc::bulk_too_long,
         1},
        {"$0\r\n\r\n", no_bulk, edgelock::resp_status::complete, edgelock::resp_errc::ok, 0},
    };
    for (const row& r : rows) {
        INFO(r.input);
        const decode_outcome o = decode_in_pieces(r.input, 0, 4, r.limits);
        CHECK(o.result.status == r.status);
        CHECK(o.result.error == r.error);
        if (r.status == edgelock::resp_status::error) {
            CHECK(o.result.offset == r.offset);
        }
    }
}

TEST_CASE("bad input: random bytes never overrun the input or the node array", "[bad-input]") {
    std::mt19937 rng(424242u);
    const char alphabet[] = "+-:$*_#,(!=%~|>\r\n0123456789-?tfx";
    for (int round = 0; round < 3000; ++round) {
        const std::size_t size = 1 + rng() % 200;
        std::vector<char> input(size);
        const bool structured = round % 2 == 0;  // half from RESP's own bytes
        for (char& c : input) {
            c = structured ? alphabet[rng() % (sizeof alphabet - 1)]
                           : static_cast<char>(rng() & 0xffu);
        }
        const std::size_t capacity = rng() % 6;
        std::vector<edgelock::resp_node> nodes(capacity + 2);
        for (std::size_t i = capacity; i < nodes.size(); ++i) {
            nodes[i].integer = 777;
        }
        edgelock::resp_decoder d;
        const edgelock::resp_result r = d.decode(input.data(), size, nodes.data(), capacity);
        INFO("round " << round);
        switch (r.status) {
        case edgelock::resp_status::complete:
            CHECK(r.size <= size);
            CHECK(r.nodes <= capacity);
            break;
        case edgelock::resp_status::incomplete:
            CHECK(r.needed > size);
            break;
        case edgelock::resp_status::error:
            CHECK(r.error != edgelock::resp_errc::ok);
            CHECK(r.offset < size);
            break;
        }
        for (std::size_t i = capacity; i < nodes.size(); ++i) {
            CHECK(nodes[i].integer == 777);
        }
    }
    // No bytes at all, from no pointer: just incomplete.
    edgelock::resp_decoder d;
    edgelock::resp_node node;
    node.integer = 777;
    const edgelock::resp_result r = d.decode(nullptr, 0, &node, 1);
    CHECK(r.status == edgelock::resp_status::incomplete);
    CHECK(r.needed == 1);
    CHECK(node.integer == 777);
    CHECK_FALSE(d.in_progress());
}

// --- the POSIX port ---------------------------------------------------------------------------

TEST_CASE("bad input: port calls on a descriptor that is not open", "[bad-input]") {
    char buf[8] = {};
    for (const int fd : {-1, 1 << 20}) {
        INFO("fd " << fd);
        const edgelock::port::net_result s = edgelock::port::send(fd, "x", 1);
        CHECK(s.status == edgelock::port::net_status::error);
        CHECK(s.code == EBADF);
        CHECK(s.size == 0);
        const edgelock::port::net_result r = edgelock::port::recv(fd, buf, sizeof buf);
        CHECK(r.status == edgelock::port::net_status::error);
        CHECK(r.code == EBADF);
        CHECK(r.size == 0);
        const edgelock::port::net_result f = edgelock::port::connect_finish(fd);
        CHECK(f.status == edgelock::port::net_status::error);
        CHECK(f.code == EBADF);
        edgelock::port::close(fd);  // harmless
    }
    // Too many entries: refused before any entry is touched.
    edgelock::port::wait_entry many[65];
    for (edgelock::port::wait_entry& e : many) {
        e.fd = 0;
        e.want = edgelock::port::want_read;
        e.ready = 0x5a;
    }
    CHECK(edgelock::port::wait(many, 65, instant{0}) == -1);
    for (const edgelock::port::wait_entry& e : many) {
        CHECK(e.ready == 0x5a);
    }
    CHECK(edgelock::port::random_bytes(nullptr, 0));
}
