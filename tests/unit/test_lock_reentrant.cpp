// Reentrant mode after `lost`: nothing sent may change a later hold of the
// same owner. A reentrant release or cleanup decrements the owner's count
// only by deleting its own hold's field ('#' and its round's token), so a
// decrement left over from a lost lock, landing after a newer hold of the
// owner took the key, finds no field of its own and changes nothing.
//
// These cases replay an exact interleaving instead of a random schedule: the
// machines are driven by hand against sim::redis_node, one request at a time,
// in the order a client serving newer locks first would send them (a cleanup
// waits while its node is down, and a newer lock's acquire goes ahead of it
// once the node is back).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp_decoder.hpp"
#include "sim/redis_node.hpp"
#include "tools/hex.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock::lock_mode;
using edgelock::lock_state;

namespace {

const char* const lock_name = "jobs";
const char* const lock_key = "jobs";

// As a client's connection set-up does (SCRIPT LOAD): EVALSHA works at once,
// so a request and its reply are one exchange.
void load_scripts(sim::redis_node& node) {
    for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
        node.script_cache.insert(sim::to_std(edgelock::lock_scripts_all[i]->sha1));
    }
}

// Killed without persistence and started again: empty.
void restart_empty(sim::redis_node& node) {
    node.restart(false);
    load_scripts(node);
}

// The simulated nodes of one test, indexed as the machines index them.
struct node_set {
    std::vector<sim::redis_node> nodes;
    explicit node_set(int n) : nodes(static_cast<std::size_t>(n)) {
        for (sim::redis_node& node : nodes) {
            load_scripts(node);
        }
    }
};

// Takes the next request `l` has for node n, without delivering it.
struct taken {
    std::string bytes;
    std::uint32_t tag = 0;
};
taken take(edgelock::lock& l, int n) {
    char buf[edgelock::lock_max_request];
    const edgelock::lock_transmit t =
        l.poll_transmit(static_cast<std::uint8_t>(n), buf, sizeof buf);
    REQUIRE(t.error == lock_errc::ok);
    return taken{std::string(buf, t.size), t.tag};
}

// Runs a request on a node and hands the reply to the machine.
void deliver(edgelock::lock& l, int n, sim::redis_node& node, const taken& req, instant now) {
    edgelock::resp_node parsed[16];
    edgelock::resp_decoder dec;
    const edgelock::resp_result in = dec.decode(req.bytes.data(), req.bytes.size(), parsed, 16);
    REQUIRE(in.status == edgelock::resp_status::complete);
    REQUIRE(parsed[0].type == edgelock::resp_type::array);
    std::vector<std::string> argv;
    for (std::size_t i = 1; i < in.nodes; ++i) {
        argv.push_back(sim::to_std(parsed[i].text));
    }
    const std::string reply = node.execute(argv, now.us);
    edgelock::resp_decoder rdec;
    const edgelock::resp_result out = rdec.decode(reply.data(), reply.size(), parsed, 16);
    REQUIRE(out.status == edgelock::resp_status::complete);
    REQUIRE(l.on_reply(static_cast<std::uint8_t>(n), req.tag, parsed, out.nodes, now) ==
            lock_errc::ok);
}

// Sends everything `l` has for node n, each request answered before the next
// goes out. Returns how many requests went.
int exchange(edgelock::lock& l, int n, sim::redis_node& node, instant now) {
    int sent = 0;
    for (;;) {
        const taken req = take(l, n);
        if (req.bytes.empty()) {
            return sent;
        }
        ++sent;
        deliver(l, n, node, req, now);
    }
}

// One round on every node, as a client sends it: all requests out before any
// reply is read.
void round_everywhere(edgelock::lock& l, node_set& s, instant now) {
    std::vector<taken> reqs;
    for (std::size_t n = 0; n < s.nodes.size(); ++n) {
        reqs.push_back(take(l, static_cast<int>(n)));
    }
    for (std::size_t n = 0; n < s.nodes.size(); ++n) {
        if (!reqs[n].bytes.empty()) {
            deliver(l, static_cast<int>(n), s.nodes[n], reqs[n], now);
        }
    }
}

// What a client does with a request for a node that is down: takes it and
// reports the connection gone. A cleanup stays queued for when it is back.
void fail_requests_on_down_node(edgelock::lock& l, int n, instant now) {
    if (l.next_send(static_cast<std::uint8_t>(n)) == edgelock::lock::outgoing::request) {
        take(l, n);
        REQUIRE(l.on_disconnected(static_cast<std::uint8_t>(n), now) == lock_errc::ok);
    }
}

std::vector<lock_event> drain(edgelock::lock& l) {
    std::vector<lock_event> out;
    lock_event ev;
    while (l.poll_event(ev)) {
        out.push_back(ev);
    }
    return out;
}

// The owner's holds on a node, "none" when the key is gone.
std::string holds_at(sim::redis_node& node, const std::string& owner, instant now) {
    sim::redis_node::entry* e = node.find(lock_key, now.us);
    if (e == nullptr) {
        return "none";
    }
    if (!e->hash) {
        return "<string>";
    }
    const auto it = e->fields.find(owner);
    return it == e->fields.end() ? "no field" : it->second;
}

// ttl 1 s, node_timeout 50 ms, retries 5..20 ms apart.
edgelock::lock_options fast_options(lock_mode mode = lock_mode::plain) {
    edgelock::lock_options o = edgelock_test::lock_test_options(mode);
    o.retry_min = duration::millis(5);
    o.retry_max = duration::millis(20);
    return o;
}

edgelock::lock_options reentrant_options(const char* owner) {
    edgelock::lock_options o = fast_options(lock_mode::reentrant);
    o.owner = owner;
    return o;
}

void configure(edgelock::lock& l, int nodes, const edgelock::lock_options& o,
               edgelock_test::counter_random& rnd) {
    REQUIRE(l.configure(edgelock::str_view(lock_name), static_cast<std::uint8_t>(nodes), o,
                        rnd.source()) == lock_errc::ok);
}

// Drives `l`, whose nodes in `down` are unreachable, through renew attempts
// (as the watchdog would) until it reports lost. Returns the lost event.
lock_event run_until_lost(edgelock::lock& l, const std::vector<int>& down, instant& now) {
    for (int step = 0; step < 1000 && l.state() != lock_state::idle; ++step) {
        if (l.state() == lock_state::held) {
            now = now + duration::millis(333);  // renew at ttl / 3
            if (now >= l.validity_deadline()) {
                now = l.validity_deadline();
                l.on_timeout(now);
            } else {
                REQUIRE(l.renew(now) == lock_errc::ok);
            }
        } else {
            now = l.next_deadline();
            REQUIRE(now != instant::never());
            l.on_timeout(now);
        }
        for (int n : down) {
            fail_requests_on_down_node(l, n, now);
        }
    }
    REQUIRE(l.state() == lock_state::idle);
    const std::vector<lock_event> evs = drain(l);
    REQUIRE_FALSE(evs.empty());
    CHECK(evs.back().kind == lock_event_kind::lost);
    return evs.back();
}

// A lost lock's cleanup waits for every node (it takes only its own hold).
void cleanups_pending(const edgelock::lock& a, const node_set& s) {
    for (std::size_t n = 0; n < s.nodes.size(); ++n) {
        INFO("node " << n);
        CHECK(a.next_send(static_cast<std::uint8_t>(n)) == edgelock::lock::outgoing::cleanup);
    }
}

// B (owner task-42) acquires on every node, then A, lost, sends whatever it
// still has: its cleanups go out, B's hold stays at 1 everywhere, and another
// owner is refused.
void b_holds_whatever_a_sends(edgelock::lock& a, edgelock::lock& b, edgelock::lock& other,
                              node_set& s, instant now) {
    REQUIRE(b.acquire(now) == lock_errc::ok);
    round_everywhere(b, s, now);
    REQUIRE(b.held(now));
    int leftover = 0;
    for (std::size_t n = 0; n < s.nodes.size(); ++n) {
        leftover += exchange(a, static_cast<int>(n), s.nodes[n], now);
    }
    CHECK(leftover == static_cast<int>(s.nodes.size()));  // the check below can fail
    for (std::size_t n = 0; n < s.nodes.size(); ++n) {
        INFO("node " << n);
        CHECK(holds_at(s.nodes[n], "task-42", now) == "1");
    }
    REQUIRE(other.acquire(now) == lock_errc::ok);
    round_everywhere(other, s, now);
    const std::vector<lock_event> evs = drain(other);
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].kind == lock_event_kind::busy);
}

}  // namespace

TEST_CASE("reentrant: a lost lock's cleanup cannot take a later hold of its owner",
          "[lock][sim][reentrant]") {
    // A (owner task-42) holds on one node; the node dies and
    // comes back empty; A is lost at its validity deadline; B, another lock
    // object of the same owner, acquires. A's leftover decrement lands after
    // B's increment: it once deleted B's hold, and now finds no field of A's.
    edgelock_test::counter_random rnd;
    node_set s(1);
    sim::redis_node& node = s.nodes[0];
    edgelock::lock a;
    edgelock::lock b;
    edgelock::lock other;
    configure(a, 1, reentrant_options("task-42"), rnd);
    configure(b, 1, reentrant_options("task-42"), rnd);
    configure(other, 1, reentrant_options("task-7"), rnd);
    instant now{1000000};

    REQUIRE(a.acquire(now) == lock_errc::ok);
    CHECK(exchange(a, 0, node, now) == 1);
    std::vector<lock_event> evs = drain(a);
    REQUIRE(evs.size() == 1);
    REQUIRE(evs[0].kind == lock_event_kind::acquired);
    CHECK(evs[0].holds == 1);
    CHECK(holds_at(node, "task-42", now) == "1");
    const instant validity = a.validity_deadline();

    // The node is killed (nothing on disk): A's renews find it down.
    restart_empty(node);
    REQUIRE(a.on_disconnected(0, now) == lock_errc::ok);
    const lock_event lost = run_until_lost(a, {0}, now);
    CHECK(lost.reason == lock_failure::validity_ended);
    CHECK(now == validity);
    // A's cleanup waits for the node: it names A's hold alone.
    CHECK(a.next_send(0) == edgelock::lock::outgoing::cleanup);
    CHECK(a.next_deadline() == instant::never());

    // The node is back, empty; B acquires first (the client serves newer locks first).
    now = now + duration::millis(50);
    REQUIRE(b.acquire(now) == lock_errc::ok);
    CHECK(exchange(b, 0, node, now) == 1);
    evs = drain(b);
    REQUIRE(evs.size() == 1);
    REQUIRE(evs[0].kind == lock_event_kind::acquired);
    CHECK(evs[0].holds == 1);

    // Then whatever A still has for the node: its decrement, which finds
    // no field of A's hold.
    CHECK(exchange(a, 0, node, now) == 1);
    CHECK(holds_at(node, "task-42", now) == "1");
    CHECK(b.held(now));

    REQUIRE(other.acquire(now) == lock_errc::ok);
    exchange(other, 0, node, now);
    evs = drain(other);
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].kind == lock_event_kind::busy);
    CHECK(holds_at(node, "task-42", now) == "1");

    // B still renews and releases its own hold: the key goes with it.
    REQUIRE(b.renew(now) == lock_errc::ok);
    exchange(b, 0, node, now);
    evs = drain(b);
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].kind == lock_event_kind::renewed);
    REQUIRE(b.release(now) == lock_errc::ok);
    exchange(b, 0, node, now);
    CHECK(holds_at(node, "task-42", now) == "none");
}

TEST_CASE("reentrant: a cleanup waiting for a node whose connection broke takes only its hold",
          "[lock][sim][reentrant]") {
    // Three nodes, quorum 2. A's first round fails with node 0 holding its
    // increment; node 0 goes down before the cleanup (a decrement) goes out,
    // so the cleanup waits. A's second round wins on nodes 1 and 2, which
    // then die too: A is lost with the cleanup for node 0 still queued.
    edgelock_test::counter_random rnd;
    node_set s(3);
    edgelock::lock a;
    edgelock::lock b;
    edgelock::lock other;
    edgelock::lock_options o = reentrant_options("task-42");
    o.max_tries = 2;
    configure(a, 3, o, rnd);
    configure(b, 3, reentrant_options("task-42"), rnd);
    configure(other, 3, reentrant_options("task-7"), rnd);
    instant now{1000000};

    // Round 1: node 0 says yes, nodes 1 and 2 are held by someone else.
    for (int n : {1, 2}) {
        sim::redis_node::entry e;
        e.hash = true;
        e.fields["task-9"] = "1";
        e.expire_at = now.us + 4000;  // gone before the retry (5..20 ms)
        s.nodes[static_cast<std::size_t>(n)].data[lock_key] = e;
    }
    REQUIRE(a.acquire(now) == lock_errc::ok);
    const taken r0 = take(a, 0);
    const taken r1 = take(a, 1);
    const taken r2 = take(a, 2);
    deliver(a, 0, s.nodes[0], r0, now);
    deliver(a, 1, s.nodes[1], r1, now);
    deliver(a, 2, s.nodes[2], r2, now);
    REQUIRE(a.state() == lock_state::retry_wait);
    CHECK(holds_at(s.nodes[0], "task-42", now) == "1");
    REQUIRE(a.next_send(0) == edgelock::lock::outgoing::cleanup);

    // Node 0 dies empty before its cleanup went out: the decrement waits
    // for a new connection, and names round 1's hold alone, which a node
    // restarted without it does not have. Round 2 wins on 1 and 2.
    restart_empty(s.nodes[0]);
    REQUIRE(a.on_disconnected(0, now) == lock_errc::ok);
    CHECK(a.next_send(0) == edgelock::lock::outgoing::cleanup);
    now = a.next_deadline();
    a.on_timeout(now);
    REQUIRE(a.state() == lock_state::acquiring);
    exchange(a, 1, s.nodes[1], now);
    exchange(a, 2, s.nodes[2], now);
    REQUIRE(a.held(now));
    drain(a);

    // Nodes 1 and 2 die empty as well: lost at the validity deadline.
    restart_empty(s.nodes[1]);
    restart_empty(s.nodes[2]);
    a.on_disconnected(1, now);
    a.on_disconnected(2, now);
    run_until_lost(a, {0, 1, 2}, now);
    cleanups_pending(a, s);

    // All back, empty: B acquires everywhere, then A sends what it has left.
    b_holds_whatever_a_sends(a, b, other, s, now);
}

TEST_CASE("reentrant: a late successful acquire after lost is undone by its own hold",
          "[lock][sim][reentrant]") {
    // Three nodes, quorum 2: A wins on nodes 0 and 1 while node 2 sits on its
    // request (frozen). Nodes 0 and 1 die; A is lost. Node 2 thaws, runs the
    // acquire and answers: a late success, undone by a decrement of its own
    // hold's field; node 2 restarting empty before the decrement goes out
    // must not let it take B's hold.
    edgelock_test::counter_random rnd;
    node_set s(3);
    edgelock::lock a;
    edgelock::lock b;
    edgelock::lock other;
    configure(a, 3, reentrant_options("task-42"), rnd);
    configure(b, 3, reentrant_options("task-42"), rnd);
    configure(other, 3, reentrant_options("task-7"), rnd);
    instant now{1000000};

    REQUIRE(a.acquire(now) == lock_errc::ok);
    const taken frozen = take(a, 2);
    REQUIRE_FALSE(frozen.bytes.empty());
    exchange(a, 0, s.nodes[0], now);
    exchange(a, 1, s.nodes[1], now);
    REQUIRE(a.held(now));
    drain(a);

    restart_empty(s.nodes[0]);
    restart_empty(s.nodes[1]);
    a.on_disconnected(0, now);
    a.on_disconnected(1, now);
    run_until_lost(a, {0, 1}, now);

    // Node 2 thaws: A's acquire runs there and its success arrives late.
    deliver(a, 2, s.nodes[2], frozen, now);
    CHECK(holds_at(s.nodes[2], "task-42", now) == "1");
    CHECK(drain(a).empty());
    CHECK(a.state() == lock_state::idle);
    cleanups_pending(a, s);

    // Node 2 restarts empty; B acquires everywhere; A sends what it has left.
    restart_empty(s.nodes[2]);
    a.on_disconnected(2, now);
    b_holds_whatever_a_sends(a, b, other, s, now);
}

TEST_CASE("plain and fenced: a lost lock still cleans up by its own token",
          "[lock][sim][reentrant]") {
    // Their release is a compare-and-delete of the acquisition's random
    // token: sent after a newer holder's acquire, it leaves that hold alone.
    for (lock_mode mode : {lock_mode::plain, lock_mode::fenced}) {
        INFO("mode " << (mode == lock_mode::plain ? "plain" : "fenced"));
        edgelock_test::counter_random rnd;
        node_set s(1);
        sim::redis_node& node = s.nodes[0];
        const edgelock::lock_options o = fast_options(mode);
        edgelock::lock a;
        edgelock::lock b;
        configure(a, 1, o, rnd);
        configure(b, 1, o, rnd);
        instant now{1000000};
        REQUIRE(a.acquire(now) == lock_errc::ok);
        exchange(a, 0, node, now);
        REQUIRE(a.held(now));
        drain(a);
        restart_empty(node);
        a.on_disconnected(0, now);
        run_until_lost(a, {0}, now);
        CHECK(a.next_send(0) == edgelock::lock::outgoing::cleanup);

        REQUIRE(b.acquire(now) == lock_errc::ok);
        exchange(b, 0, node, now);
        REQUIRE(b.held(now));
        CHECK(exchange(a, 0, node, now) == 1);  // the compare-and-delete
        sim::redis_node::entry* e = node.find(lock_key, now.us);
        REQUIRE(e != nullptr);
        CHECK(e->str == edgelock_test::hex(b.token()));
    }
}
