// Semaphores (lock_options::permits) on one node, driven by hand: configure's
// checks, the acquire that asks for every permit from a random start, the
// replies it takes (a permit, busy, another limit, the shapes that are "no"),
// renew and release of the permit held, NOSCRIPT and TRYAGAIN.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

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
using edgelock::lock_failure;
using edgelock::lock_key_kind;
using edgelock::lock_mode;
using edgelock::lock_state;
using edgelock::str_view;
using edgelock_test::counter_random;
using edgelock_test::evalsha;
using edgelock_test::hex;
using edgelock_test::key_of;
using edgelock_test::permit_key_of;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;
using edgelock_test::text;
using edgelock_test::words;

namespace {

const instant t0{3000000};

// The permits hash, then every permit's key.
std::vector<std::string> all_keys(const std::string& name, unsigned n) {
    std::vector<std::string> keys = {key_of(name, lock_key_kind::permits)};
    for (unsigned i = 0; i < n; ++i) {
        keys.push_back(permit_key_of(name, i));
    }
    return keys;
}

// The release (and every cleanup): all permits, the release mark unless
// left out, then the token and the count.
std::vector<std::string> release_words(const std::string& name, unsigned n,
                                       const std::string& token, bool eval, bool marked = true) {
    std::vector<std::string> keys = all_keys(name, n);
    if (marked) {
        keys.push_back(key_of(name, lock_key_kind::release_mark));
    }
    return evalsha(edgelock::script_permit_release, keys, {token, std::to_string(n)}, eval);
}

edgelock::lock_options sem_options(unsigned permits, lock_mode mode = lock_mode::plain) {
    edgelock::lock_options o = edgelock_test::lock_test_options(mode);
    o.permits = static_cast<std::uint8_t>(permits);
    return o;
}

// The permit a semaphore asks for first: a draw from its random source once
// the token (16 bytes) has been drawn, which a source twin to a
// counter_random starting at `next` yields.
unsigned start_for(unsigned char next, unsigned permits) {
    counter_random twin{static_cast<unsigned char>(next + edgelock::owner_token::size)};
    std::uint64_t pick = 0;
    REQUIRE(edgelock::random_between(twin.source(), 0, permits - 1U, pick));
    return static_cast<unsigned>(pick);
}

lock_event next_event(edgelock::lock& l) {
    lock_event ev;
    REQUIRE(l.poll_event(ev));
    return ev;
}

// A semaphore named `name` of `permits` on one node, acquiring from t0.
struct one_node {
    std::string name;  // the lock keeps a view of it
    counter_random rnd;
    edgelock::lock l;

    explicit one_node(unsigned permits, const std::string& lock_name = "jobs",
                      edgelock::lock_options o = edgelock_test::lock_test_options())
        : name(lock_name) {
        o.permits = static_cast<std::uint8_t>(permits);
        REQUIRE(l.configure(str_view(name.data(), name.size()), 1, o, rnd.source()) ==
                lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
    }
    std::string token() const { return hex(l.token()); }
};

}  // namespace

TEST_CASE("permits: 0 is a lock, with the lock's requests and no permit", "[lock][permits]") {
    for (const lock_mode mode : {lock_mode::plain, lock_mode::fenced}) {
        INFO("mode " << static_cast<int>(mode));
        counter_random rnd;
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 1, sem_options(0, mode), rnd.source()) == lock_errc::ok);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        const bool fenced = mode == lock_mode::fenced;
        std::vector<std::string> keys = {"jobs"};
        if (fenced) {
            keys.push_back(key_of("jobs", lock_key_kind::fence_counter));
        }
        const sent s = take(l, 0);
        CHECK(words(s.bytes) ==
              evalsha(fenced ? edgelock::script_fenced_acquire : edgelock::script_acquire, keys,
                      {hex(l.token()), "1000"}));
        reply(l, 0, s.tag, "*2\r\n:1\r\n:5\r\n", t0 + duration::millis(1));
        const lock_event ev = next_event(l);
        CHECK(ev.kind == lock_event_kind::acquired);
        CHECK(ev.permit == -1);
        CHECK(l.permit() == -1);
        CHECK(l.held(t0 + duration::millis(2)));
    }
}

TEST_CASE("permits: configure takes 1..lock_max_permits and refuses the rest", "[lock][permits]") {
    SECTION("every count up to lock_max_permits, plain and fenced") {
        std::vector<std::string> refused;
        for (const lock_mode mode : {lock_mode::plain, lock_mode::fenced}) {
            for (unsigned n = 1; n <= edgelock::lock_max_permits; ++n) {
                counter_random rnd;
                edgelock::lock l;
                if (l.configure("jobs", 1, sem_options(n, mode), rnd.source()) != lock_errc::ok) {
                    refused.push_back((mode == lock_mode::fenced ? "fenced, " : "plain, ") +
                                      std::to_string(n));
                }
            }
        }
        CHECK(refused == std::vector<std::string>{});
    }
    SECTION("one more, and the largest count") {
        for (const unsigned n : {edgelock::lock_max_permits + 1U, 255U}) {
            counter_random rnd;
            edgelock::lock l;
            CHECK(l.configure("jobs", 1, sem_options(n), rnd.source()) == lock_errc::bad_permits);
            CHECK(l.state() == lock_state::unconfigured);
        }
    }
    SECTION("the reentrant mode and renew_resurrects are refused; without permits, taken") {
        for (const unsigned n : {0U, 2U}) {
            const lock_errc want = n == 0 ? lock_errc::ok : lock_errc::bad_permits;
            counter_random rnd;
            edgelock::lock reentrant;
            CHECK(reentrant.configure("jobs", 1, sem_options(n, lock_mode::reentrant),
                                      rnd.source()) == want);
            edgelock::lock resurrects;
            edgelock::lock_options o = sem_options(n);
            o.renew_resurrects = true;
            CHECK(resurrects.configure("jobs", 1, o, rnd.source()) == want);
        }
    }
    SECTION("a '}' outside a hash tag: no permit key shares the name's slot") {
        counter_random rnd;
        edgelock::lock l;
        CHECK(l.configure("a}b", 1, sem_options(2), rnd.source()) == lock_errc::name_unslotted);
        CHECK(l.state() == lock_state::unconfigured);
        CHECK(l.configure("a}b", 1, sem_options(0), rnd.source()) == lock_errc::ok);   // a lock
        CHECK(l.configure("{a}b", 1, sem_options(2), rnd.source()) == lock_errc::ok);  // a tag
    }
    SECTION("the longest name with lock_max_permits: its requests would not fit") {
        const std::string name(edgelock::lock_max_name, 'n');
        for (const lock_mode mode : {lock_mode::plain, lock_mode::fenced}) {
            counter_random rnd;
            edgelock::lock l;
            CHECK(l.configure(str_view(name.data(), name.size()), 1,
                              sem_options(edgelock::lock_max_permits, mode),
                              rnd.source()) == lock_errc::bad_permits);
            CHECK(l.state() == lock_state::unconfigured);
        }
    }
}

TEST_CASE("permits: a refused configure changes nothing", "[lock][permits]") {
    SECTION("a lock stays the lock it was") {
        counter_random rnd;
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 1, sem_options(0), rnd.source()) == lock_errc::ok);
        CHECK(l.configure("other", 3, sem_options(edgelock::lock_max_permits + 1U), rnd.source()) ==
              lock_errc::bad_permits);
        CHECK(l.configure("a}b", 3, sem_options(2), rnd.source()) == lock_errc::name_unslotted);
        CHECK(l.state() == lock_state::idle);
        CHECK(l.options().permits == 0);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        CHECK(words(take(l, 0).bytes) ==
              evalsha(edgelock::script_acquire, {"jobs"}, {hex(l.token()), "1000"}));
        CHECK(l.poll_transmit(1, nullptr, 0).error == lock_errc::bad_node);  // still one node
    }
    SECTION("a semaphore keeps its name and count") {
        counter_random rnd;
        edgelock::lock l;
        REQUIRE(l.configure("jobs", 1, sem_options(3), rnd.source()) == lock_errc::ok);
        CHECK(l.configure("other", 1, sem_options(2, lock_mode::reentrant), rnd.source()) ==
              lock_errc::bad_permits);
        CHECK(l.state() == lock_state::idle);
        CHECK(l.options().permits == 3);
        REQUIRE(l.acquire(t0) == lock_errc::ok);
        CHECK(words(take(l, 0).bytes) ==
              evalsha(edgelock::script_permit_acquire, all_keys("jobs", 3),
                      {hex(l.token()), "1000", "3", std::to_string(start_for(1, 3)), "s-"}));
    }
}

TEST_CASE("permits: every request of an accepted configuration fits lock_max_request",
          "[lock][permits]") {
    const std::string holder(edgelock::lock_max_holder, 'h');
    std::vector<std::string> too_big;
    unsigned accepted = 0;
    unsigned refused = 0;
    for (const std::size_t length : {1U, 4U, 16U, 40U, 64U, 100U, 128U}) {
        const std::string name(length, 'n');
        for (unsigned n = 1; n <= edgelock::lock_max_permits; ++n) {
            for (const lock_mode mode : {lock_mode::plain, lock_mode::fenced}) {
                for (const std::size_t record : {std::size_t{0}, std::size_t{40}, holder.size()}) {
                    for (const unsigned replicas : {0U, 2U}) {
                        counter_random rnd;
                        edgelock::lock l;
                        edgelock::lock_options o = sem_options(n, mode);
                        o.holder = str_view(holder.data(), record);
                        o.min_replicas = static_cast<std::uint8_t>(replicas);
                        if (l.configure(str_view(name.data(), name.size()), 1, o, rnd.source()) !=
                            lock_errc::ok) {
                            ++refused;
                            continue;
                        }
                        ++accepted;
                        const std::string what =
                            "name " + std::to_string(length) + ", permits " + std::to_string(n) +
                            (mode == lock_mode::fenced ? ", fenced" : "") + ", record " +
                            std::to_string(record) + ", min_replicas " + std::to_string(replicas);
                        // The acquire, then the release, each as EVAL with the script's text.
                        REQUIRE(l.acquire(t0) == lock_errc::ok);
                        REQUIRE(l.send_as_eval(0) == lock_errc::ok);
                        char buf[edgelock::lock_max_request];
                        edgelock::lock_transmit t = l.poll_transmit(0, buf, sizeof buf);
                        if (t.error != lock_errc::ok) {
                            too_big.push_back("acquire of " + std::to_string(t.size) +
                                              " bytes: " + what);
                            continue;
                        }
                        REQUIRE(l.release(t0 + duration::millis(1)) == lock_errc::ok);
                        REQUIRE(l.send_as_eval(0) == lock_errc::ok);
                        t = l.poll_transmit(0, buf, sizeof buf);
                        if (t.error != lock_errc::ok) {
                            too_big.push_back("release of " + std::to_string(t.size) +
                                              " bytes: " + what);
                        }
                    }
                }
            }
        }
    }
    CHECK(accepted > 0);
    CHECK(refused > 0);
    CHECK(too_big == std::vector<std::string>{});
}

TEST_CASE("permits: one node asks for every permit once, from a random start", "[lock][permits]") {
    SECTION("plain: the hash, every permit, then token, ttl, n, start and s-") {
        one_node s(4);
        CHECK(words(take(s.l, 0).bytes) ==
              evalsha(edgelock::script_permit_acquire, all_keys("jobs", 4),
                      {s.token(), "1000", "4", std::to_string(start_for(1, 4)), "s-"}));
    }
    SECTION("fenced: the counter after the permits, and si") {
        one_node s(4, "jobs", edgelock_test::lock_test_options(lock_mode::fenced));
        std::vector<std::string> keys = all_keys("jobs", 4);
        keys.push_back(key_of("jobs", lock_key_kind::fence_counter));
        CHECK(words(take(s.l, 0).bytes) ==
              evalsha(edgelock::script_permit_acquire, keys,
                      {s.token(), "1000", "4", std::to_string(start_for(1, 4)), "si"}));
    }
    SECTION("a holder record: the last argument") {
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.holder = "host=gw-17 pid=4242";
        one_node s(3, "jobs", o);
        CHECK(words(take(s.l, 0).bytes) ==
              evalsha(edgelock::script_permit_acquire, all_keys("jobs", 3),
                      {s.token(), "1000", "3", std::to_string(start_for(1, 3)), "s-",
                       "host=gw-17 pid=4242"}));
    }
    SECTION("a name with a hash tag: its keys are name:permits and name:permit:i") {
        one_node s(2, "{fleet}:jobs");
        const std::vector<std::string> w = words(take(s.l, 0).bytes);
        REQUIRE(w.size() == 3 + 3 + 5);
        CHECK(std::vector<std::string>(w.begin() + 3, w.begin() + 6) ==
              std::vector<std::string>{"{fleet}:jobs:permits", "{fleet}:jobs:permit:0",
                                       "{fleet}:jobs:permit:1"});
    }
    SECTION("the start is the random source's, whichever it draws") {
        std::set<unsigned> starts;
        for (const int from : {1, 40, 77, 130, 201, 250}) {
            const auto next = static_cast<unsigned char>(from);
            counter_random rnd{next};
            edgelock::lock l;
            REQUIRE(l.configure("jobs", 1, sem_options(5), rnd.source()) == lock_errc::ok);
            REQUIRE(l.acquire(t0) == lock_errc::ok);
            const std::vector<std::string> w = words(take(l, 0).bytes);
            REQUIRE(w.size() == 3 + 6 + 5);
            INFO("source from " << static_cast<int>(next));
            CHECK(w[12] == std::to_string(start_for(next, 5)));
            starts.insert(start_for(next, 5));
        }
        CHECK(starts.size() > 1);  // the check above can tell the starts apart
    }
}

TEST_CASE("permits: a yes holds the permit it names, which renew and release name",
          "[lock][permits]") {
    one_node s(4);
    const sent acq = take(s.l, 0);
    CHECK(s.l.permit() == -1);  // not while acquiring
    reply(s.l, 0, acq.tag, "*3\r\n:1\r\n:0\r\n:2\r\n", t0 + duration::millis(1));
    const lock_event ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::acquired);
    CHECK(ev.permit == 2);
    CHECK(s.l.permit() == 2);
    CHECK(s.l.state() == lock_state::held);

    REQUIRE(s.l.renew(t0 + duration::millis(10)) == lock_errc::ok);
    const sent ren = take(s.l, 0);
    CHECK(words(ren.bytes) ==
          evalsha(edgelock::script_permit_renew,
                  {permit_key_of("jobs", 2), key_of("jobs", lock_key_kind::permits)},
                  {s.token(), "1000"}));
    reply(s.l, 0, ren.tag, ":1\r\n", t0 + duration::millis(11));
    CHECK(next_event(s.l).kind == lock_event_kind::renewed);
    CHECK(s.l.permit() == 2);

    REQUIRE(s.l.release(t0 + duration::millis(20)) == lock_errc::ok);
    const sent rel = take(s.l, 0);
    CHECK(words(rel.bytes) == release_words("jobs", 4, s.token(), false));
    reply(s.l, 0, rel.tag, ":1\r\n", t0 + duration::millis(21));
    const lock_event done = next_event(s.l);
    CHECK(done.kind == lock_event_kind::released);
    CHECK(done.nodes == 1);
    CHECK(s.l.permit() == -1);
}

TEST_CASE("permits: acquire replies that are no", "[lock][permits]") {
    SECTION("two integers, a lock's yes: failed, nothing held") {
        one_node s(4);
        reply(s.l, 0, take(s.l, 0).tag, "*2\r\n:1\r\n:0\r\n", t0 + duration::millis(1));
        const lock_event ev = next_event(s.l);
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(ev.reason == lock_failure::no_quorum);
        CHECK(s.l.state() == lock_state::idle);
        CHECK(s.l.permit() == -1);
    }
    SECTION("a permit out of range: failed, and the cleanup releases every permit") {
        for (const char* taken : {":4", ":-1", ":200"}) {
            INFO("permit " << taken);
            one_node s(4);
            reply(s.l, 0, take(s.l, 0).tag, "*3\r\n:1\r\n:0\r\n" + std::string(taken) + "\r\n",
                  t0 + duration::millis(1));
            const lock_event ev = next_event(s.l);
            CHECK(ev.kind == lock_event_kind::failed);
            CHECK(ev.reason == lock_failure::no_quorum);
            CHECK(s.l.state() == lock_state::idle);
            REQUIRE(s.l.next_send(0) == edgelock::lock::outgoing::cleanup);
            CHECK(words(take(s.l, 0).bytes) == release_words("jobs", 4, s.token(), true));
        }
    }
    SECTION("control: the same reply with a permit in range is a yes") {
        one_node s(4);
        reply(s.l, 0, take(s.l, 0).tag, "*3\r\n:1\r\n:0\r\n:3\r\n", t0 + duration::millis(1));
        CHECK(next_event(s.l).kind == lock_event_kind::acquired);
        CHECK(s.l.permit() == 3);
        CHECK(s.l.next_send(0) == edgelock::lock::outgoing::none);
    }
    SECTION("TRYAGAIN: no, and not sent again") {
        one_node s(4);
        reply(s.l, 0, take(s.l, 0).tag, "-TRYAGAIN Multiple keys request during rehashing\r\n",
              t0 + duration::millis(1));
        const lock_event ev = next_event(s.l);
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(ev.reason == lock_failure::no_quorum);
        CHECK(s.l.next_send(0) != edgelock::lock::outgoing::request);
    }
}

TEST_CASE("permits: every permit taken is busy, with the soonest ttl", "[lock][permits]") {
    one_node s(4);
    reply(s.l, 0, take(s.l, 0).tag, "*3\r\n:0\r\n:1234\r\n:-1\r\n", t0 + duration::millis(1));
    const lock_event ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::busy);
    CHECK(ev.holder_ttl_ms == 1234);
    CHECK(s.l.state() == lock_state::idle);
    CHECK(s.l.next_send(0) == edgelock::lock::outgoing::none);  // it took nothing
}

TEST_CASE("permits: another limit on the node fails at once, without retries", "[lock][permits]") {
    struct row {
        const char* reply;
        int found;
    };
    const row rows[] = {
        {"*3\r\n:-1\r\n:3\r\n:-1\r\n", 3},
        {"*3\r\n:-1\r\n:-1\r\n:-1\r\n", 0},  // a limit that is not a number
    };
    for (const row& r : rows) {
        INFO(r.reply);
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.max_tries = 5;
        o.retry_min = o.retry_max = duration::millis(10);
        one_node s(4, "jobs", o);
        reply(s.l, 0, take(s.l, 0).tag, r.reply, t0 + duration::millis(1));
        const lock_event ev = next_event(s.l);
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(ev.reason == lock_failure::permits_differ);
        CHECK(ev.permits_found == r.found);
        CHECK(s.l.state() == lock_state::idle);
        CHECK(s.l.next_deadline().is_never());
    }
    SECTION("control: a busy reply with the same retries waits for the next try") {
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.max_tries = 5;
        o.retry_min = o.retry_max = duration::millis(10);
        one_node s(4, "jobs", o);
        reply(s.l, 0, take(s.l, 0).tag, "*3\r\n:0\r\n:700\r\n:-1\r\n", t0 + duration::millis(1));
        CHECK(s.l.state() == lock_state::retry_wait);
        lock_event ev;
        CHECK_FALSE(s.l.poll_event(ev));
    }
}

TEST_CASE("permits: NOSCRIPT sends the same acquire as EVAL", "[lock][permits]") {
    one_node s(4);
    const sent first = take(s.l, 0);
    const std::vector<std::string> args = {s.token(), "1000", "4", std::to_string(start_for(1, 4)),
                                           "s-"};
    REQUIRE(words(first.bytes) ==
            evalsha(edgelock::script_permit_acquire, all_keys("jobs", 4), args));
    reply(s.l, 0, first.tag, "-NOSCRIPT No matching script\r\n", t0 + duration::millis(1));
    REQUIRE(s.l.state() == lock_state::acquiring);
    const sent again = take(s.l, 0);
    CHECK(again.tag == first.tag);
    CHECK(words(again.bytes) ==
          evalsha(edgelock::script_permit_acquire, all_keys("jobs", 4), args, true));
    reply(s.l, 0, again.tag, "*3\r\n:1\r\n:0\r\n:1\r\n", t0 + duration::millis(2));
    const lock_event ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::acquired);
    CHECK(ev.permit == 1);
}

TEST_CASE("permits: a release a migrating slot answers TRYAGAIN goes again without the mark",
          "[lock][permits]") {
    one_node s(3);
    reply(s.l, 0, take(s.l, 0).tag, "*3\r\n:1\r\n:0\r\n:0\r\n", t0 + duration::millis(1));
    REQUIRE(next_event(s.l).kind == lock_event_kind::acquired);
    REQUIRE(s.l.release(t0 + duration::millis(5)) == lock_errc::ok);
    const sent first = take(s.l, 0);
    CHECK(words(first.bytes) == release_words("jobs", 3, s.token(), false));
    reply(s.l, 0, first.tag, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
          t0 + duration::millis(6));
    REQUIRE(s.l.state() == lock_state::releasing);
    const sent again = take(s.l, 0);
    CHECK(words(again.bytes) == release_words("jobs", 3, s.token(), false, false));
    reply(s.l, 0, again.tag, ":1\r\n", t0 + duration::millis(7));
    const lock_event ev = next_event(s.l);
    CHECK(ev.kind == lock_event_kind::released);
    CHECK(ev.nodes == 1);
}
