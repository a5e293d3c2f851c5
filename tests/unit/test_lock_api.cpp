// The lock machine driven by hand: argument checks, misuse, tags, buffers.
//
// Bad input: each refused call must say what is wrong AND leave everything as
// it was (state, token, fence, validity, what is queued to send, the caller's
// buffers); configure at its limits, operations in every busy state, set_retry,
// resume, bad node indexes, small and null buffers, replies of the wrong shape.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/redlock.hpp"
#include "edgelock/resp_decoder.hpp"
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
using edgelock::owner_token;
using edgelock::str_view;
using edgelock_test::counter_random;
using edgelock_test::hex;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;

namespace {

edgelock::lock_options options(lock_mode mode = lock_mode::plain) {
    return edgelock_test::lock_test_options(mode);
}

constexpr char sentinel = '\x5a';

// Everything a caller can observe of a lock without changing it.
struct observed {
    lock_state state = lock_state::unconfigured;
    std::string token;
    std::uint64_t fence = 0;
    instant validity;
    instant deadline;
    std::uint8_t nodes = 0;
    std::uint8_t quorum = 0;
    std::vector<edgelock::lock::outgoing> pending;

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
        o.pending.push_back(l.next_send(i));
    }
    return o;
}

std::string show(const observed& o) {
    std::string s =
        std::string("state=") + edgelock::describe(o.state) + " token=" + o.token +
        " fence=" + std::to_string(o.fence) + " validity=" + std::to_string(o.validity.us) +
        " deadline=" + std::to_string(o.deadline.us) + " nodes=" + std::to_string(o.nodes) +
        " quorum=" + std::to_string(o.quorum) + " pending=";
    for (edgelock::lock::outgoing p : o.pending) {
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

TEST_CASE("sizeof a lock object", "[lock]") {
    std::printf("sizeof(edgelock::lock) = %u bytes (%u nodes max)\n",
                static_cast<unsigned>(sizeof(edgelock::lock)),
                static_cast<unsigned>(edgelock::lock_max_nodes));
    // 512 until every acquire round got its own token: each node's cleanup
    // names its round (4 bytes a node), and a waiter's backoff its end.
    CHECK(sizeof(edgelock::lock) <= 576);
}

TEST_CASE("configure rejects bad arguments and changes nothing", "[lock]") {
    counter_random rnd;
    edgelock::lock l;
    REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
    const std::string long_name(edgelock::lock_max_name + 1, 'x');
    const std::string long_owner(edgelock::lock_max_owner + 1, 'o');
    auto with = [](auto f) {
        auto o = options();
        f(o);
        return o;
    };
    struct row {
        const char* what;
        edgelock::str_view name;
        int nodes;
        edgelock::lock_options opt;
        bool null_random;
        lock_errc want;
    };
    const row rows[] = {
        {"0 nodes", "jobs", 0, options(), false, lock_errc::bad_node_count},
        {"too many nodes", "jobs", edgelock::lock_max_nodes + 1, options(), false,
         lock_errc::bad_node_count},
        {"quorum below majority", "jobs", 5, with([](auto& o) { o.quorum = 2; }), false,
         lock_errc::bad_quorum},
        {"quorum above nodes", "jobs", 3, with([](auto& o) { o.quorum = 4; }), false,
         lock_errc::bad_quorum},
        {"empty name", "", 3, options(), false, lock_errc::empty_name},
        {"long name", edgelock::str_view(long_name.data(), long_name.size()), 3, options(), false,
         lock_errc::name_too_long},
        {"fenced name without a slot for its counter", "a}b", 3,
         with([](auto& o) { o.mode = lock_mode::fenced; }), false, lock_errc::name_unslotted},
        {"long owner", "jobs", 3, with([&](auto& o) {
             o.mode = lock_mode::reentrant;
             o.owner = edgelock::str_view(long_owner.data(), long_owner.size());
         }),
         false, lock_errc::owner_too_long},
        {"zero ttl", "jobs", 3, with([](auto& o) { o.ttl = duration::millis(0); }), false,
         lock_errc::bad_ttl},
        {"sub-ms ttl", "jobs", 3, with([](auto& o) { o.ttl = duration::micros(1500); }), false,
         lock_errc::bad_ttl},
        {"huge ttl", "jobs", 3,
         with([](auto& o) { o.ttl = duration::millis(edgelock::lock_max_ttl_ms + 1); }), false,
         lock_errc::bad_ttl},
        {"ttl eaten by drift", "jobs", 3, with([](auto& o) {
             o.ttl = duration::millis(2);
             o.node_timeout = duration::millis(1);
         }),
         false, lock_errc::bad_ttl},
        {"node timeout >= ttl", "jobs", 3, with([](auto& o) { o.node_timeout = o.ttl; }), false,
         lock_errc::bad_node_timeout},
        {"drift too large", "jobs", 3,
         with([](auto& o) { o.drift_ppm = edgelock::lock_max_drift_ppm + 1; }), false,
         lock_errc::bad_drift},
        {"zero tries", "jobs", 3, with([](auto& o) { o.max_tries = 0; }), false,
         lock_errc::bad_retry},
        {"retry_min > retry_max", "jobs", 3, with([](auto& o) {
             o.retry_min = duration::millis(10);
             o.retry_max = duration::millis(5);
         }),
         false, lock_errc::bad_retry},
        {"resurrect in fenced mode", "jobs", 3, with([](auto& o) {
             o.mode = lock_mode::fenced;
             o.renew_resurrects = true;
         }),
         false, lock_errc::bad_mode_option},
        {"no random source", "jobs", 3, options(), true, lock_errc::no_random_source},
    };
    for (const row& r : rows) {
        INFO(r.what);
        const edgelock::random_source src =
            r.null_random ? edgelock::random_source{} : rnd.source();
        CHECK(l.configure(r.name, static_cast<std::uint8_t>(r.nodes), r.opt, src) == r.want);
        CHECK(l.node_count() == 3);
        CHECK(l.quorum() == 2);
        CHECK(l.state() == lock_state::idle);
        CHECK(std::string(edgelock::describe(r.want)).size() > 3);
    }
    // The maximum is accepted.
    edgelock::lock big;
    CHECK(big.configure("jobs", edgelock::lock_max_nodes, options(), rnd.source()) ==
          lock_errc::ok);
    CHECK(big.quorum() == edgelock::lock_max_nodes / 2 + 1);
}

TEST_CASE("operations in the wrong state are refused without effect", "[lock]") {
    counter_random rnd;
    edgelock::lock l;
    const instant now{1000};
    CHECK(l.acquire(now) == lock_errc::not_configured);
    CHECK(l.renew(now) == lock_errc::not_configured);
    CHECK(l.release(now) == lock_errc::not_configured);
    CHECK(l.state() == lock_state::unconfigured);
    CHECK(l.next_deadline().is_never());
    REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
    CHECK(l.renew(now) == lock_errc::not_held);
    CHECK(l.release(now) == lock_errc::not_held);
    CHECK(l.next_deadline().is_never());
    CHECK(take(l, 0).bytes.empty());

    rnd.fail = true;
    CHECK(l.acquire(now) == lock_errc::random_failed);
    CHECK(l.state() == lock_state::idle);
    CHECK(take(l, 0).bytes.empty());
    rnd.fail = false;

    REQUIRE(l.acquire(now) == lock_errc::ok);
    CHECK(l.acquire(now) == lock_errc::busy);
    CHECK(l.renew(now) == lock_errc::busy);
    CHECK(l.configure("other", 3, options(), rnd.source()) == lock_errc::busy);
    CHECK(l.state() == lock_state::acquiring);

    char buf[8];
    CHECK(l.poll_transmit(3, buf, sizeof buf).error == lock_errc::bad_node);
    CHECK(l.on_disconnected(3, now) == lock_errc::bad_node);
    CHECK(l.on_reply(3, 0, nullptr, 0, now) == lock_errc::bad_node);
}

TEST_CASE("requests: all nodes at once, a small buffer loses nothing", "[lock]") {
    counter_random rnd;
    edgelock::lock l;
    REQUIRE(l.configure("jobs", 3, options(), rnd.source()) == lock_errc::ok);
    const instant t0{5000000};
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    CHECK(l.next_deadline() == t0 + duration::millis(50));

    char small[16];
    const edgelock::lock_transmit t = l.poll_transmit(0, small, sizeof small);
    CHECK(t.error == lock_errc::buffer_too_small);
    CHECK(t.size > sizeof small);
    CHECK(t.size <= edgelock::lock_max_request);

    sent s[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        s[i] = take(l, i);
        CHECK(!s[i].bytes.empty());
        CHECK(take(l, i).bytes.empty());  // one request per node per round
    }
    CHECK(s[0].bytes.size() == t.size);
    CHECK(s[0].bytes.find("EVALSHA") != std::string::npos);
    CHECK(s[0].bytes.find(std::string(edgelock::script_acquire.sha1.data, 40)) !=
          std::string::npos);
    CHECK(s[0].bytes.find("$4\r\njobs\r\n") != std::string::npos);
    CHECK(s[0].bytes.find("$4\r\n1000\r\n") != std::string::npos);
    CHECK(s[0].bytes == s[1].bytes);
    CHECK(s[0].tag == s[1].tag);

    SECTION("a spurious timeout changes nothing") {
        l.on_timeout(t0 + duration::millis(10));
        CHECK(l.state() == lock_state::acquiring);
        CHECK(l.next_deadline() == t0 + duration::millis(50));
        edgelock::lock_event ev;
        CHECK_FALSE(l.poll_event(ev));
    }
    SECTION("NOSCRIPT is retried once as EVAL") {
        reply(l, 0, s[0].tag, "-NOSCRIPT No matching script\r\n", t0 + duration::millis(1));
        const sent again = take(l, 0);
        CHECK(again.bytes.find("EVAL\r\n") != std::string::npos);
        CHECK(again.bytes.find("redis.call('set'") != std::string::npos);
        CHECK(again.tag == s[0].tag);
        reply(l, 0, again.tag, "-NOSCRIPT again?\r\n", t0 + duration::millis(2));
        CHECK(take(l, 0).bytes.empty());  // no second retry: the node said no
    }
    SECTION("a quorum of yes acquires, with validity from t0") {
        reply(l, 0, s[0].tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(3));
        CHECK(l.state() == lock_state::acquiring);
        reply(l, 2, s[2].tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(4));
        REQUIRE(l.state() == lock_state::held);
        edgelock::lock_event ev;
        REQUIRE(l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::acquired);
        // 1000 ms - 1% - 2 ms, counted from t0 (not from the last reply).
        CHECK(ev.validity_deadline == t0 + duration::millis(988));
        CHECK(l.next_deadline() == ev.validity_deadline);
        // Node 1 answers late: nothing changes, nothing is sent.
        reply(l, 1, s[1].tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(5));
        CHECK_FALSE(l.poll_event(ev));
        CHECK(take(l, 1).bytes.empty());
    }
    SECTION("a late yes after a failed round is released on that node") {
        reply(l, 0, s[0].tag, "*2\r\n:0\r\n:500\r\n", t0 + duration::millis(1));
        reply(l, 1, s[1].tag, "-ERR boom\r\n", t0 + duration::millis(2));
        REQUIRE(l.state() == lock_state::idle);
        edgelock::lock_event ev;
        REQUIRE(l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::busy);
        CHECK(ev.holder_ttl_ms == 500);
        // Node 0 said busy: it holds nothing of ours. The others may.
        CHECK(l.next_send(0) == edgelock::lock::outgoing::none);
        for (std::uint8_t i = 1; i < 3; ++i) {
            CHECK(take(l, i).bytes.find("redis.call('del'") != std::string::npos);
        }
        reply(l, 2, s[2].tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(3));
        const sent undo = take(l, 2);
        CHECK(undo.bytes.find("redis.call('del'") != std::string::npos);
        CHECK_FALSE(l.poll_event(ev));
    }
    SECTION("garbage replies count as no") {
        reply(l, 0, s[0].tag, "+OK\r\n", t0 + duration::millis(1));
        reply(l, 1, s[1].tag, "*2\r\n:7\r\n$1\r\nx\r\n", t0 + duration::millis(1));
        REQUIRE(l.state() == lock_state::idle);
        edgelock::lock_event ev;
        REQUIRE(l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(ev.reason == edgelock::lock_failure::no_quorum);
    }
    SECTION("unknown tags are ignored") {
        reply(l, 0, 0, "*2\r\n:1\r\n:0\r\n", t0);
        reply(l, 0, 0xffffffffU, "*2\r\n:1\r\n:0\r\n", t0);
        CHECK(l.state() == lock_state::acquiring);
    }
    SECTION("every node silent: failure at the round deadline") {
        l.on_timeout(t0 + duration::millis(50));
        CHECK(l.state() == lock_state::idle);
        edgelock::lock_event ev;
        REQUIRE(l.poll_event(ev));
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(l.next_deadline().is_never());
    }
}

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
        CHECK(a.bytes.find("$4\r\njobs\r\n") != std::string::npos);
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
    CHECK(req.find("$" + std::to_string(longest.size()) + "\r\n" + longest + "\r\n") !=
          std::string::npos);
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
        CHECK(take(l, 0).bytes.find("$4\r\njobs\r\n") != std::string::npos);
    }
    SECTION("idle, with the cleanups of a failed round not yet sent") {
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        const sent s0 = take(l, 0);
        const sent s1 = take(l, 1);
        take(l, 2);
        reply(l, 0, s0.tag, "-ERR boom\r\n", t0 + duration::millis(1));
        reply(l, 1, s1.tag, "-ERR boom\r\n", t0 + duration::millis(1));
        REQUIRE(l.state() == lock_state::idle);
        const observed before = observe(l);
        REQUIRE(before.pending[0] == edgelock::lock::outgoing::cleanup);
        CHECK(l.configure("other", 3, options(), rnd.source()) == lock_errc::busy);
        CHECK_UNCHANGED(l, before);
        // The cleanups still name the old key; once they are out, the new name is taken.
        for (std::uint8_t i = 0; i < 3; ++i) {
            const sent c = take(l, i);
            CHECK(c.bytes.find("$4\r\njobs\r\n") != std::string::npos);
            CHECK(c.bytes.find("$5\r\nother\r\n") == std::string::npos);
        }
        REQUIRE(l.configure("other", 3, options(), rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0 + duration::millis(10)) == lock_errc::ok);
        CHECK(take(l, 0).bytes.find("$5\r\nother\r\n") != std::string::npos);
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
        CHECK(l.held(now));
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
    CHECK(l.held(now));
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
    CHECK(l.next_send(0) == edgelock::lock::outgoing::none);
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
        CHECK(l.next_send(bad) == edgelock::lock::outgoing::none);
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
        CHECK_FALSE(l.held(t0 + duration::millis(1)));
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

TEST_CASE("describe() names every value", "[lock]") {
    for (int i = 0; i <= static_cast<int>(lock_errc::buffer_too_small); ++i) {
        CHECK(std::strlen(edgelock::describe(static_cast<lock_errc>(i))) > 1);
    }
    for (int i = 0; i <= static_cast<int>(lock_state::releasing); ++i) {
        CHECK(std::strlen(edgelock::describe(static_cast<lock_state>(i))) > 1);
    }
    for (int i = 0; i <= static_cast<int>(lock_event_kind::renew_failed); ++i) {
        CHECK(std::strlen(edgelock::describe(static_cast<lock_event_kind>(i))) > 1);
    }
    for (int i = 0; i <= static_cast<int>(edgelock::lock_failure::held_too_long); ++i) {
        CHECK(std::strlen(edgelock::describe(static_cast<edgelock::lock_failure>(i))) > 1);
    }
}

TEST_CASE("redlock arithmetic saturates", "[redlock]") {
    CHECK(edgelock::redlock_min_quorum(1) == 1);
    CHECK(edgelock::redlock_min_quorum(2) == 2);
    CHECK(edgelock::redlock_min_quorum(5) == 3);
    CHECK(edgelock::redlock_min_quorum(9) == 5);
    CHECK(edgelock::redlock_drift(duration::seconds(10), 10000, duration::millis(2)) ==
          duration::millis(102));
    CHECK(edgelock::redlock_drift(duration{UINT64_MAX}, 1000000, duration{}) ==
          duration{UINT64_MAX});
    CHECK(edgelock::redlock_validity_deadline(instant{0}, duration::millis(5),
                                              duration::millis(6)) == instant{0});
    CHECK(edgelock::redlock_validity_deadline(instant::never(), duration::millis(5),
                                              duration::millis(1))
              .is_never());
}

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

TEST_CASE("lock_key: the keys of a lock, as the scripts use them", "[lock]") {
    char out[edgelock::lock_key_capacity];
    using edgelock::lock_key;
    using edgelock::lock_key_kind;
    using edgelock::str_view;
    const auto key = [&](const char* name, lock_key_kind kind) {
        const std::size_t n = lock_key(name, kind, out, sizeof out);
        return std::string(out, n);
    };
    // The lock is the name itself, as other Redis lock clients keep it.
    CHECK(key("jobs", lock_key_kind::lock) == "jobs");
    CHECK(key("{fleet}:upload", lock_key_kind::lock) == "{fleet}:upload");
    // The counter hashes like the name: the whole name as the tag, or the
    // name's own tag (Redis's rule: the first '{', the first '}' after it,
    // at least one byte between).
    CHECK(key("jobs", lock_key_kind::fence_counter) == "{jobs}:fence");
    CHECK(key("{fleet}:upload", lock_key_kind::fence_counter) == "{fleet}:upload:fence");
    CHECK(key("a{b}c", lock_key_kind::fence_counter) == "a{b}c:fence");
    CHECK(key("a{b", lock_key_kind::fence_counter) == "{a{b}:fence");  // tag: "a{b", the name
    // A '}' outside a tag leaves no counter key in the name's slot ("{}" is
    // no tag, and Redis looks no further).
    CHECK(key("a}b", lock_key_kind::lock) == "a}b");
    CHECK(key("a}b", lock_key_kind::fence_counter).empty());
    CHECK(key("{}x", lock_key_kind::fence_counter).empty());
    CHECK(key("{}{x}", lock_key_kind::fence_counter).empty());
    // Bad input writes nothing and returns 0.
    std::memset(out, 'x', sizeof out);
    CHECK(lock_key(str_view(), lock_key_kind::lock, out, sizeof out) == 0);
    CHECK(lock_key("jobs", lock_key_kind::fence_counter, out, 11) == 0);  // needs 12
    CHECK(lock_key("jobs", lock_key_kind::lock, out, 3) == 0);            // needs 4
    CHECK(lock_key("jobs", lock_key_kind::lock, nullptr, 64) == 0);
    CHECK(out[0] == 'x');
    const std::string longest(edgelock::lock_max_name, 'n');
    CHECK(lock_key(str_view(longest.data(), longest.size()), lock_key_kind::fence_counter, out,
                   sizeof out) == longest.size() + 8);
    std::memset(out, 'x', sizeof out);
    const std::string too_long(edgelock::lock_max_name + 1, 'n');
    CHECK(lock_key(str_view(too_long.data(), too_long.size()), lock_key_kind::lock, out,
                   sizeof out) == 0);
    CHECK(out[0] == 'x');
}
