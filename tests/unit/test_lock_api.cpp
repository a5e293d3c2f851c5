// The lock machine driven by hand: argument checks, misuse, tags, buffers.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp_decoder.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event_kind;
using edgelock::lock_mode;
using edgelock::lock_state;
using edgelock_test::counter_random;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;

namespace {

edgelock::lock_options options() {
    return edgelock_test::lock_test_options();
}

}  // namespace

TEST_CASE("sizeof a lock object", "[lock]") {
    std::printf("sizeof(edgelock::lock) = %u bytes (%u nodes max)\n",
                static_cast<unsigned>(sizeof(edgelock::lock)),
                static_cast<unsigned>(edgelock::lock_max_nodes));
    CHECK(sizeof(edgelock::lock) <= 512);
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
        {"zero node timeout", "jobs", 3,
         with([](auto& o) { o.node_timeout = duration::micros(0); }), false,
         lock_errc::bad_node_timeout},
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
    CHECK(s[0].bytes.find("$6\r\n{jobs}\r\n") != std::string::npos);
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
        for (std::uint8_t i = 0; i < 3; ++i) {
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
    for (int i = 0; i <= static_cast<int>(edgelock::lock_failure::validity_ended); ++i) {
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

TEST_CASE("lock_key: the keys of a lock, as the scripts use them", "[lock]") {
    char out[edgelock::lock_key_capacity];
    using edgelock::lock_key;
    using edgelock::lock_key_kind;
    using edgelock::str_view;
    std::size_t n = lock_key("jobs", lock_key_kind::lock, out, sizeof out);
    CHECK(std::string(out, n) == "{jobs}");
    n = lock_key("jobs", lock_key_kind::fence_counter, out, sizeof out);
    CHECK(std::string(out, n) == "{jobs}:fence");
    // Bad input writes nothing and returns 0.
    std::memset(out, 'x', sizeof out);
    CHECK(lock_key(str_view(), lock_key_kind::lock, out, sizeof out) == 0);
    CHECK(lock_key("jobs", lock_key_kind::fence_counter, out, 11) == 0);  // needs 12
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
