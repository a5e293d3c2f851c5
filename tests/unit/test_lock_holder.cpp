// The holder record (lock_options::holder), driven by hand: its limit at
// configure, the acquire requests that carry it (always a script, the
// renewal mark as the last key and the text as ARGV[3], in every mode), the
// requests that do not (renew, release, a cleanup, the fence raise, a
// migrating slot's), that the longest of them fits lock_max_request, and
// read_holder_record on what Redis stores.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp_decoder.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"
#include "tools/random.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::holder_record;
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
using edgelock_test::speaks_set;
using edgelock_test::take;
using edgelock_test::text;
using edgelock_test::words;

namespace {

const instant t0{2000000};
const char* const holder_text = "host=gw-17 pid=4242 label=nightly";

std::string sha1_of(const edgelock::lock_script& s) {
    return text(s.sha1);
}

std::string set_request(const edgelock::lock& l) {
    auto bulk = [](const std::string& s) {
        return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
    };
    return "*7\r\n$3\r\nSET\r\n" + bulk("jobs") + bulk(hex(l.token())) + bulk("NX") + bulk("PX") +
           bulk("1000") + bulk("GET");
}

bool has(const std::string& bytes, const std::string& part) {
    return bytes.find(part) != std::string::npos;
}

lock_event next_event(edgelock::lock& l) {
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    return ev;
}

const std::string mark = key_of("jobs", lock_key_kind::renewal_mark);
const std::string fence = key_of("jobs", lock_key_kind::fence_counter);
const std::string release_mark = key_of("jobs", lock_key_kind::release_mark);

// A lock named "jobs" on `nodes` nodes whose caps say set_nx_get, with the
// holder given (or none), acquiring from t0.
struct holder_lock {
    counter_random rnd;
    edgelock::lock l;

    explicit holder_lock(lock_mode mode, str_view holder, std::uint8_t nodes = 1,
                         str_view owner = str_view(), bool resurrects = false) {
        edgelock::lock_options o = edgelock_test::lock_test_options(mode);
        o.holder = holder;
        o.owner = owner;
        o.renew_resurrects = resurrects;
        REQUIRE(l.configure("jobs", nodes, o, rnd.source()) == lock_errc::ok);
        for (std::uint8_t i = 0; i < nodes; ++i) {
            REQUIRE(l.set_node_caps(i, speaks_set(true)) == lock_errc::ok);
        }
        REQUIRE(l.acquire(t0) == lock_errc::ok);
    }
};

}  // namespace

TEST_CASE("holder: configure takes lock_max_holder bytes and refuses one more", "[lock][holder]") {
    const std::string longest(edgelock::lock_max_holder, 'h');
    const std::string too_long(edgelock::lock_max_holder + 1, 'x');
    CHECK(std::string(edgelock::describe(lock_errc::holder_too_long)).find("holder") !=
          std::string::npos);

    SECTION("unconfigured: refused, and still unconfigured") {
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.holder = str_view(too_long.data(), too_long.size());
        CHECK(l.configure("jobs", 1, o, rnd.source()) == lock_errc::holder_too_long);
        CHECK(l.state() == lock_state::unconfigured);
        CHECK(l.acquire(t0) == lock_errc::not_configured);
        for (const lock_mode mode : {lock_mode::reentrant, lock_mode::fenced}) {
            o.mode = mode;
            CHECK(l.configure("jobs", 3, o, rnd.source()) == lock_errc::holder_too_long);
            CHECK(l.state() == lock_state::unconfigured);
        }
    }
    SECTION("lock_max_holder bytes: accepted, and carried whole") {
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.holder = str_view(longest.data(), longest.size());
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        const std::vector<std::string> w = words(take(l, 0).bytes);
        CHECK(w.back() == longest);
    }
    SECTION("configured: refused, and the name, holder and mode are kept") {
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.holder = "first";
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        edgelock::lock_options other = edgelock_test::lock_test_options(lock_mode::fenced);
        other.holder = str_view(too_long.data(), too_long.size());
        CHECK(l.configure("other", 3, other, rnd.source()) == lock_errc::holder_too_long);
        CHECK(l.state() == lock_state::idle);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        CHECK(words(take(l, 0).bytes) ==
              evalsha(edgelock::script_acquire, {"jobs", mark}, {hex(l.token()), "1000", "first"}));
        CHECK(l.poll_transmit(1, nullptr, 0).error == lock_errc::bad_node);  // still one node
    }
}

TEST_CASE("holder: a plain acquire is the script with the record, never the SET",
          "[lock][holder]") {
    SECTION("a node that speaks SET NX GET") {
        holder_lock h(lock_mode::plain, holder_text);
        const sent s = take(h.l, 0);
        CHECK(words(s.bytes) == evalsha(edgelock::script_acquire, {"jobs", mark},
                                        {hex(h.l.token()), "1000", holder_text}));
        CHECK_FALSE(has(s.bytes, "SET\r\n"));
        CHECK(s.following == 0);
        reply(h.l, 0, s.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
        CHECK(next_event(h.l).kind == lock_event_kind::acquired);
    }
    SECTION("control: without a holder the same node gets the SET") {
        holder_lock h(lock_mode::plain, str_view());
        CHECK(take(h.l, 0).bytes == set_request(h.l));
    }
    SECTION("a node that does not speak it: the same script and record") {
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.holder = holder_text;
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        CHECK(words(take(l, 0).bytes) == evalsha(edgelock::script_acquire, {"jobs", mark},
                                                 {hex(l.token()), "1000", holder_text}));
    }
    SECTION("control: without a holder, the script without the mark") {
        counter_random rnd;
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 1, edgelock_test::lock_test_options(), rnd.source()) ==
                lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        CHECK(words(take(l, 0).bytes) ==
              evalsha(edgelock::script_acquire, {"jobs"}, {hex(l.token()), "1000"}));
    }
}

TEST_CASE("holder: every round of a told waiter is the script with the record", "[lock][holder]") {
    for (const bool with_holder : {true, false}) {
        INFO((with_holder ? "a holder" : "control: no holder"));
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.holder = with_holder ? str_view(holder_text) : str_view();
        o.max_tries = 3;
        o.retry_min = o.retry_max = duration::millis(10);
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        edgelock::lock_node_caps caps = speaks_set(true);
        caps.told = true;
        REQUIRE(l.set_node_caps(0, caps) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        // Each round names its own token (lock.hpp, "Tokens").
        const auto script = [&] {
            return evalsha(edgelock::script_acquire, {"jobs", mark},
                           {hex(l.token()), "1000", holder_text});
        };
        sent s = take(l, 0);
        if (with_holder) {
            CHECK(words(s.bytes) == script());
        } else {
            // The SET, then the script when it finds the key taken.
            CHECK(s.bytes == set_request(l));
            reply(l, 0, s.tag, "$12\r\nsomeone-else\r\n", t0 + duration::millis(1));
            s = take(l, 0);
        }
        reply(l, 0, s.tag, "*2\r\n:0\r\n:700\r\n", t0 + duration::millis(1));  // busy
        CHECK(l.state() == lock_state::retry_wait);
        // The next try: without a holder the PTTL and then the SET.
        l.on_timeout(l.next_deadline());
        char buf[edgelock::lock_max_request];
        const edgelock::lock_transmit t = l.poll_transmit(0, buf, sizeof buf);
        REQUIRE(t.error == lock_errc::ok);
        const std::string bytes(buf, t.size);
        if (with_holder) {
            CHECK(t.preceding == 0);
            CHECK(words(bytes) == script());
        } else {
            CHECK(t.preceding == 1);
            CHECK(has(bytes, set_request(l)));
        }
    }
}

TEST_CASE("holder: a fenced acquire carries the counter, the mark, then the record",
          "[lock][holder]") {
    SECTION("one node: the fenced acquire script") {
        holder_lock h(lock_mode::fenced, holder_text);
        const sent s = take(h.l, 0);
        CHECK(words(s.bytes) == evalsha(edgelock::script_fenced_acquire, {"jobs", fence, mark},
                                        {hex(h.l.token()), "1000", holder_text}));
        reply(h.l, 0, s.tag, "*2\r\n:1\r\n:7\r\n", t0 + duration::millis(1));
        const lock_event ev = next_event(h.l);
        CHECK(ev.kind == lock_event_kind::acquired);
        CHECK(ev.fence == 7);
    }
    SECTION("control: one node without a holder, two keys and two arguments") {
        holder_lock h(lock_mode::fenced, str_view());
        CHECK(words(take(h.l, 0).bytes) == evalsha(edgelock::script_fenced_acquire, {"jobs", fence},
                                                   {hex(h.l.token()), "1000"}));
    }
    SECTION("three nodes: the read carries it, the fence raise does not") {
        holder_lock h(lock_mode::fenced, holder_text, 3);
        sent s[3];
        for (std::uint8_t i = 0; i < 3; ++i) {
            s[i] = take(h.l, i);
            CHECK(words(s[i].bytes) == evalsha(edgelock::script_fenced_read, {"jobs", fence, mark},
                                               {hex(h.l.token()), "1000", holder_text}));
        }
        for (std::uint8_t i = 0; i < 3; ++i) {
            reply(h.l, i, s[i].tag, "*2\r\n:1\r\n:100\r\n", t0 + duration::millis(1));
        }
        CHECK(h.l.state() == lock_state::fencing);
        sent raise[3];
        for (std::uint8_t i = 0; i < 3; ++i) {
            raise[i] = take(h.l, i);
            const std::vector<std::string> w = words(raise[i].bytes);
            REQUIRE(w.size() == 7);
            CHECK(w[1] == sha1_of(edgelock::script_fence_raise));
            CHECK(w[2] == "2");
            CHECK(w[6] == "101");
            CHECK_FALSE(has(raise[i].bytes, holder_text));
            CHECK_FALSE(has(raise[i].bytes, mark));
        }
        for (std::uint8_t i = 0; i < 3; ++i) {
            reply(h.l, i, raise[i].tag, ":101\r\n", t0 + duration::millis(2));
        }
        const lock_event ev = next_event(h.l);
        CHECK(ev.kind == lock_event_kind::acquired);
        CHECK(ev.fence == 101);
    }
}

TEST_CASE("holder: a reentrant acquire carries the owner and the record", "[lock][holder]") {
    // ARGV[3] is the hold's own field ('#' and the round's token), ARGV[4]
    // the record.
    SECTION("an owner given: ARGV[1]") {
        holder_lock h(lock_mode::reentrant, holder_text, 1, "agent-7/task-3");
        const sent s = take(h.l, 0);
        CHECK(words(s.bytes) ==
              evalsha(edgelock::script_reentrant_acquire, {"jobs", mark},
                      {"agent-7/task-3", "1000", "#" + hex(h.l.token()), holder_text}));
        reply(h.l, 0, s.tag, "*2\r\n:1\r\n:1\r\n", t0 + duration::millis(1));
        const lock_event ev = next_event(h.l);
        CHECK(ev.kind == lock_event_kind::acquired);
        CHECK(ev.holds == 1);
    }
    SECTION("no owner: the acquisition's own, not the round's token") {
        holder_lock h(lock_mode::reentrant, holder_text);
        const std::vector<std::string> w = words(take(h.l, 0).bytes);
        REQUIRE(w.size() == 9);
        CHECK(w[1] == sha1_of(edgelock::script_reentrant_acquire));
        CHECK(w[5].size() == 32);
        CHECK(w[5] != hex(h.l.token()));
        CHECK(w[7] == "#" + hex(h.l.token()));
        CHECK(w[8] == holder_text);
    }
    SECTION("control: without a holder, the name alone") {
        holder_lock h(lock_mode::reentrant, str_view(), 1, "agent-7/task-3");
        CHECK(words(take(h.l, 0).bytes) ==
              evalsha(edgelock::script_reentrant_acquire, {"jobs"},
                      {"agent-7/task-3", "1000", "#" + hex(h.l.token())}));
    }
}

TEST_CASE("holder: renew and release requests carry no record", "[lock][holder]") {
    struct row {
        const char* what;
        lock_mode mode;
        bool resurrects;
        const edgelock::lock_script* renew;
        const edgelock::lock_script* release;
        const char* yes;
    };
    const row rows[] = {
        {"plain", lock_mode::plain, false, &edgelock::script_renew, &edgelock::script_release,
         "*2\r\n:1\r\n:0\r\n"},
        {"plain, renew_resurrects", lock_mode::plain, true, &edgelock::script_acquire,
         &edgelock::script_release, "*2\r\n:1\r\n:0\r\n"},
        {"fenced", lock_mode::fenced, false, &edgelock::script_renew, &edgelock::script_release,
         "*2\r\n:1\r\n:3\r\n"},
        {"reentrant", lock_mode::reentrant, false, &edgelock::script_reentrant_renew,
         &edgelock::script_reentrant_release, "*2\r\n:1\r\n:1\r\n"},
    };
    for (const row& r : rows) {
        INFO(r.what);
        holder_lock h(r.mode, holder_text, 1, str_view(), r.resurrects);
        const sent acq = take(h.l, 0);
        REQUIRE(has(acq.bytes, holder_text));  // the acquire does: the check below can fail
        reply(h.l, 0, acq.tag, r.yes, t0 + duration::millis(1));
        REQUIRE(next_event(h.l).kind == lock_event_kind::acquired);
        // Reentrant: the owner (without one, the acquisition's, as the
        // acquire named it) and the hold's own field.
        const bool reentrant = r.mode == lock_mode::reentrant;
        const std::vector<std::string> args =
            reentrant
                ? std::vector<std::string>{words(acq.bytes)[5], "1000", "#" + hex(h.l.token())}
                : std::vector<std::string>{hex(h.l.token()), "1000"};

        REQUIRE(h.l.renew(t0 + duration::millis(10)) == lock_errc::ok);
        const sent ren = take(h.l, 0);
        CHECK_FALSE(has(ren.bytes, holder_text));
        CHECK(words(ren.bytes) == evalsha(*r.renew, {"jobs", mark}, args));
        reply(h.l, 0, ren.tag, r.resurrects ? "*2\r\n:1\r\n:0\r\n" : ":1\r\n",
              t0 + duration::millis(11));
        REQUIRE(next_event(h.l).kind == lock_event_kind::renewed);

        REQUIRE(h.l.release(t0 + duration::millis(20)) == lock_errc::ok);
        const sent rel = take(h.l, 0);
        CHECK_FALSE(has(rel.bytes, holder_text));
        const std::vector<std::string> w = words(rel.bytes);
        REQUIRE(w.size() >= 7);
        CHECK(w[1] == sha1_of(*r.release));
        CHECK(std::vector<std::string>(w.begin() + 2, w.begin() + 6) ==
              std::vector<std::string>{"3", "jobs", mark, release_mark});
        reply(h.l, 0, rel.tag, r.mode == lock_mode::reentrant ? ":0\r\n" : ":1\r\n",
              t0 + duration::millis(21));
        CHECK(next_event(h.l).kind == lock_event_kind::released);
    }
}

TEST_CASE("holder: the cleanup of a failed round carries no record", "[lock][holder]") {
    holder_lock h(lock_mode::plain, holder_text, 3);
    sent s[3];
    for (std::uint8_t i = 0; i < 3; ++i) {
        s[i] = take(h.l, i);
        REQUIRE(has(s[i].bytes, holder_text));
    }
    // Node 0 took it; 1 and 2 found it taken: no quorum, node 0 is undone.
    reply(h.l, 0, s[0].tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
    reply(h.l, 1, s[1].tag, "*2\r\n:0\r\n:500\r\n", t0 + duration::millis(1));
    reply(h.l, 2, s[2].tag, "*2\r\n:0\r\n:500\r\n", t0 + duration::millis(1));
    REQUIRE(h.l.next_send(0) == edgelock::lock::outgoing::cleanup);
    const sent cleanup = take(h.l, 0);
    CHECK_FALSE(has(cleanup.bytes, holder_text));
    const std::vector<std::string> w = words(cleanup.bytes);
    REQUIRE(w.size() == 7);
    CHECK(w[0] == "EVAL");  // a cleanup never risks a NOSCRIPT
    CHECK(w[2] == "3");
    CHECK(w[4] == mark);  // the release script deletes the mark, record and all
}

TEST_CASE("holder: a migrating slot's acquire carries neither mark nor record", "[lock][holder]") {
    edgelock::lock_node_caps caps;
    caps.migrating = true;
    SECTION("plain") {
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.holder = holder_text;
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        REQUIRE(l.set_node_caps(0, caps) == lock_errc::ok);  // per round: after acquire
        CHECK(words(take(l, 0).bytes) ==
              evalsha(edgelock::script_acquire, {"jobs"}, {hex(l.token()), "1000"}));
    }
    SECTION("fenced") {
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options(lock_mode::fenced);
        o.holder = holder_text;
        REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        REQUIRE(l.set_node_caps(0, caps) == lock_errc::ok);  // per round: after acquire
        CHECK(words(take(l, 0).bytes) ==
              evalsha(edgelock::script_fenced_acquire, {"jobs", fence}, {hex(l.token()), "1000"}));
    }
}

TEST_CASE("holder: an acquire a migrating slot answers TRYAGAIN goes again without the record",
          "[lock][holder]") {
    counter_random rnd;
    edgelock::lock l;
    edgelock::lock_options o = edgelock_test::lock_test_options();
    o.holder = holder_text;
    REQUIRE(l.configure("jobs", 1, o, rnd.source()) == lock_errc::ok);
    REQUIRE(l.acquire(t0) == lock_errc::ok);
    const sent first = take(l, 0);
    CHECK(words(first.bytes) ==
          evalsha(edgelock::script_acquire, {"jobs", mark}, {hex(l.token()), "1000", holder_text}));
    reply(l, 0, first.tag, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
          t0 + duration::millis(1));
    // Nothing ran: the same round, with the key alone.
    REQUIRE(l.state() == lock_state::acquiring);
    const sent again = take(l, 0);
    CHECK(words(again.bytes) ==
          evalsha(edgelock::script_acquire, {"jobs"}, {hex(l.token()), "1000"}));
    reply(l, 0, again.tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(2));
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    CHECK(ev.kind == lock_event_kind::acquired);
}

TEST_CASE("holder: the longest renew fits lock_max_renew_request, and beside it the record",
          "[lock][holder]") {
    // A driver keeps lock_max_renew_request free for a renew behind a delete
    // (a Sentinel failover's clean-up): the longest renew, as EVAL with its
    // WAIT, the longest name and owner, must fit, with a holder record or not.
    const std::string name(edgelock::lock_max_name, 'n');
    const std::string owner(edgelock::lock_max_owner, 'o');
    const std::string holder(edgelock::lock_max_holder, 'h');
    for (const lock_mode mode : {lock_mode::plain, lock_mode::reentrant, lock_mode::fenced}) {
        for (const bool resurrects : {false, true}) {
            if (resurrects && mode != lock_mode::plain) {
                continue;
            }
            counter_random rnd;
            edgelock::lock l;
            edgelock::lock_options o = edgelock_test::lock_test_options(mode);
            o.owner =
                mode == lock_mode::reentrant ? str_view(owner.data(), owner.size()) : str_view();
            o.holder = str_view(holder.data(), holder.size());
            o.renew_resurrects = resurrects;
            o.min_replicas = 1;
            o.replica_timeout = duration::millis(10);
            REQUIRE(l.configure(str_view(name.data(), name.size()), 1, o, rnd.source()) ==
                    lock_errc::ok);
            REQUIRE(l.acquire(t0) == lock_errc::ok);
            const sent a = take(l, 0);
            reply(l, 0, a.tag,
                  mode == lock_mode::fenced ? "*2\r\n:1\r\n:7\r\n" : "*2\r\n:1\r\n:1\r\n",
                  t0 + duration::millis(1));
            reply(l, 0, a.following_tag, ":1\r\n", t0 + duration::millis(1));
            REQUIRE(l.state() == lock_state::held);
            REQUIRE(l.renew(t0 + duration::millis(2)) == lock_errc::ok);
            REQUIRE(l.send_as_eval(0) == lock_errc::ok);
            const sent r = take(l, 0);
            INFO("mode " << static_cast<int>(mode) << ", resurrects " << resurrects);
            CHECK(r.bytes.find("EVAL") != std::string::npos);
            CHECK(r.bytes.size() <= edgelock::lock_max_renew_request);
        }
    }
}

TEST_CASE("holder: the longest acquire with a record fits lock_max_request", "[lock][holder]") {
    const std::string name(edgelock::lock_max_name, 'n');
    const std::string holder(edgelock::lock_max_holder, 'h');
    const std::string owner(edgelock::lock_max_owner, 'o');
    struct row {
        const char* what;
        lock_mode mode;
        std::uint8_t nodes;
    };
    const row rows[] = {
        {"plain", lock_mode::plain, 1},
        {"reentrant, the longest owner", lock_mode::reentrant, 1},
        {"fenced, one node", lock_mode::fenced, 1},
        {"fenced, Redlock", lock_mode::fenced, 3},
    };
    for (const row& r : rows) {
        INFO(r.what);
        counter_random rnd;
        edgelock::lock l;
        edgelock::lock_options o = edgelock_test::lock_test_options(r.mode);
        o.holder = str_view(holder.data(), holder.size());
        o.owner = str_view(owner.data(), owner.size());
        // WAIT behind it, and the script as EVAL with its whole text.
        o.min_replicas = 2;
        o.replica_timeout = duration::millis(25);
        REQUIRE(l.configure(str_view(name.data(), name.size()), r.nodes, o, rnd.source()) ==
                lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        const edgelock::lock_transmit sizing = l.poll_transmit(0, nullptr, 0);
        CHECK(sizing.error == lock_errc::buffer_too_small);
        CHECK(sizing.size <= edgelock::lock_max_request);
        const sent s = take(l, 0);  // into a lock_max_request buffer
        CHECK(s.following == 1);
        CHECK(has(s.bytes, "EVAL\r\n"));
        CHECK(has(s.bytes, holder));
    }
}

TEST_CASE("holder: read_holder_record reads what the scripts write", "[lock][holder]") {
    holder_record rec;
    SECTION("a token, the seconds, a text with spaces") {
        const std::string v =
            "0102030405060708090a0b0c0d0e0f10\n1767225600\n" + std::string(holder_text);
        REQUIRE(edgelock::read_holder_record(str_view(v.data(), v.size()), rec));
        CHECK(text(rec.owner) == "0102030405060708090a0b0c0d0e0f10");
        CHECK(rec.since_s == 1767225600);
        CHECK(text(rec.text) == holder_text);
        CHECK(rec.owner.data == v.data());  // views into the value
        CHECK(rec.text.data == v.data() + v.size() - rec.text.size);
    }
    SECTION("a text with newlines of its own") {
        const std::string v = "agent-7/task-3\n42\nline one\nline two\n\n";
        REQUIRE(edgelock::read_holder_record(str_view(v.data(), v.size()), rec));
        CHECK(text(rec.owner) == "agent-7/task-3");
        CHECK(rec.since_s == 42);
        CHECK(text(rec.text) == "line one\nline two\n\n");
    }
    SECTION("twelve digits of seconds, and zero") {
        const std::string v = "o\n999999999999\nt";
        REQUIRE(edgelock::read_holder_record(str_view(v.data(), v.size()), rec));
        CHECK(rec.since_s == 999999999999ULL);
        const std::string zero = "o\n0\nt";
        REQUIRE(edgelock::read_holder_record(str_view(zero.data(), zero.size()), rec));
        CHECK(rec.since_s == 0);
        CHECK(text(rec.owner) == "o");
        CHECK(text(rec.text) == "t");
    }
    SECTION("not a record") {
        const char* const bad[] = {
            "",                    // a mark written by a renew without a record
            "owner",               // no newline
            "owner 1767225600 t",  // no newline at all
            "\n1767225600\ntext",  // no owner
            "owner\n17672x5600\ntext",
            "owner\n-1\ntext",
            "owner\n 1\ntext",
            "owner\n1767225600",           // no second newline
            "owner\n\ntext",               // no seconds
            "owner\n",                     // nothing after the owner
            "owner\n1234567890123\ntext",  // thirteen digits
        };
        for (const char* v : bad) {
            INFO('"' << v << '"');
            CHECK_FALSE(edgelock::read_holder_record(str_view(v), rec));
        }
        CHECK_FALSE(edgelock::read_holder_record(str_view(nullptr, 0), rec));
    }
}
