// The lock machine and its Lua scripts against real redis-server processes.
// The simulator (tests/sim) re-implements the scripts in C++; only a real
// server proves the Lua and the SHA1 digests. A small blocking runner below
// stands in for the driver: it sends what the machine asks, feeds replies back
// in order with their tags, and treats a dead server as a disconnect.
#include <catch2/catch.hpp>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp_decoder.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"

using namespace edgelock;
using edgelock_test::fence_key_of;
using edgelock_test::hex;
using edgelock_test::key_of;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::reply;
using edgelock_test::sleep_us;

namespace {

// One connection per node, shared by every lock the runner drives.
struct runner {
    std::vector<std::unique_ptr<redis_client>> conns;  // null: node down
    std::vector<std::deque<std::pair<lock*, std::uint32_t>>> fifos;

    explicit runner(const std::vector<redis_server*>& servers) {
        for (redis_server* s : servers) {
            std::unique_ptr<redis_client> c;
            try {
                c.reset(new redis_client(s->port(), 2.0));
            } catch (const std::exception&) {
            }
            conns.push_back(std::move(c));
        }
        fifos.resize(servers.size());
    }

    void drop(std::uint8_t n) {
        conns[n].reset();
        std::deque<std::pair<lock*, std::uint32_t>> gone;
        gone.swap(fifos[n]);
        std::vector<lock*> told;
        for (auto& f : gone) {
            bool seen = false;
            for (lock* l : told) {
                seen = seen || l == f.first;
            }
            if (!seen) {
                f.first->on_disconnected(n, port::now());
                told.push_back(f.first);
            }
        }
    }

    // Sends everything l wants to send; a node that is down is a disconnect.
    void flush(lock& l) {
        char buf[lock_max_request];
        for (std::uint8_t n = 0; n < conns.size(); ++n) {
            for (;;) {
                const lock_transmit t = l.poll_transmit(n, buf, sizeof buf);
                REQUIRE(t.error == lock_errc::ok);
                if (t.size == 0) {
                    break;
                }
                if (!conns[n]) {
                    l.on_disconnected(n, port::now());
                    continue;
                }
                try {
                    conns[n]->send_raw(std::string(buf, t.size));
                    fifos[n].emplace_back(&l, t.tag);
                } catch (const std::exception&) {
                    drop(n);
                    l.on_disconnected(n, port::now());
                }
            }
        }
    }

    // Reads every outstanding reply, in order, and feeds it to its lock.
    void read_all() {
        std::vector<resp_node> nodes(64);
        for (std::uint8_t n = 0; n < conns.size(); ++n) {
            while (!fifos[n].empty() && conns[n]) {
                std::string bytes;
                try {
                    bytes = conns[n]->read_reply_bytes();
                } catch (const std::exception&) {
                    drop(n);
                    break;
                }
                const resp_result r =
                    resp_decode_whole(bytes.data(), bytes.size(), nodes.data(), nodes.size());
                REQUIRE(r.status == resp_status::complete);
                const auto f = fifos[n].front();
                fifos[n].pop_front();
                f.first->on_reply(n, f.second, nodes.data(), r.nodes, port::now());
            }
        }
    }

    // Runs l until it reports an event (or 5 s pass, which fails the test),
    // then sends and settles whatever the machine queued with the event.
    lock_event until_event(lock& l) {
        const instant give_up = port::now() + duration::seconds(5);
        lock_event ev;
        for (;;) {
            flush(l);
            read_all();
            if (l.poll_event(ev)) {
                flush(l);
                read_all();
                return ev;
            }
            const instant now = port::now();
            REQUIRE(now < give_up);
            if (now >= l.next_deadline()) {
                l.on_timeout(now);
            } else {
                sleep_us(200);
            }
        }
    }
};

lock_options options_for(lock_mode mode) {
    lock_options o;
    o.mode = mode;
    o.ttl = duration::seconds(10);
    o.node_timeout = duration::millis(500);  // qemu and sanitizer builds are slow
    return o;
}

// Configures l or fails the test.
void configure(lock& l, const char* name, std::uint8_t nodes, const lock_options& o) {
    REQUIRE(l.configure(name, nodes, o, client_base::system_random()) == lock_errc::ok);
}

}  // namespace

TEST_CASE("redis: every script's SHA1 constant is what SCRIPT LOAD returns",
          "[integration][lock]") {
    redis_server srv;
    redis_client c(srv.port());
    for (unsigned i = 0; i < lock_scripts_count; ++i) {
        const lock_script& s = *lock_scripts_all[i];
        const auto got = c.command({"SCRIPT", "LOAD", std::string(s.text.data, s.text.size)});
        INFO("script " << i);
        CHECK(got.text == std::string(s.sha1.data, s.sha1.size));
    }
}

TEST_CASE("redis: plain lock acquire, busy, renew, release", "[integration][lock]") {
    redis_server srv;
    redis_client admin(srv.port());
    runner run({&srv});

    lock a;
    lock b;
    configure(a, "job", 1, options_for(lock_mode::plain));
    configure(b, "job", 1, options_for(lock_mode::plain));

    // Against a fresh server the first EVALSHA meets NOSCRIPT: the fallback runs.
    REQUIRE(a.acquire(port::now()) == lock_errc::ok);
    lock_event ev = run.until_event(a);
    REQUIRE(ev.kind == lock_event_kind::acquired);
    CHECK(ev.validity_deadline > port::now());
    const std::string token = hex(a.token());
    CHECK(admin.command({"GET", key_of("job")}).text == token);
    const long long pttl = admin.command({"PTTL", key_of("job")}).integer;
    CHECK(pttl > 9000);
    CHECK(pttl <= 10000);

    REQUIRE(b.acquire(port::now()) == lock_errc::ok);
    ev = run.until_event(b);
    CHECK(ev.kind == lock_event_kind::busy);
    CHECK(ev.holder_ttl_ms > 0);
    CHECK(admin.command({"GET", key_of("job")}).text == token);  // b changed nothing

    admin.command({"PEXPIRE", key_of("job"), "3000"});
    REQUIRE(a.renew(port::now()) == lock_errc::ok);
    ev = run.until_event(a);
    CHECK(ev.kind == lock_event_kind::renewed);
    CHECK(admin.command({"PTTL", key_of("job")}).integer > 9000);

    REQUIRE(a.release(port::now()) == lock_errc::ok);
    ev = run.until_event(a);
    CHECK(ev.kind == lock_event_kind::released);
    CHECK(admin.command({"EXISTS", key_of("job")}).integer == 0);

    REQUIRE(b.acquire(port::now()) == lock_errc::ok);
    CHECK(run.until_event(b).kind == lock_event_kind::acquired);
}

TEST_CASE("redis: a lock taken over cannot be renewed or released by the old owner",
          "[integration][lock]") {
    redis_server srv;
    redis_client admin(srv.port());
    runner run({&srv});
    lock a;
    configure(a, "job", 1, options_for(lock_mode::plain));
    REQUIRE(a.acquire(port::now()) == lock_errc::ok);
    REQUIRE(run.until_event(a).kind == lock_event_kind::acquired);

    // The key expired and someone else took it.
    admin.command({"SET", key_of("job"), "someone-else", "PX", "10000"});
    REQUIRE(a.renew(port::now()) == lock_errc::ok);
    const lock_event ev = run.until_event(a);
    CHECK(ev.kind == lock_event_kind::lost);
    CHECK(ev.reason == lock_failure::not_ours);
    CHECK(admin.command({"GET", key_of("job")}).text == "someone-else");
    CHECK(admin.command({"PTTL", key_of("job")}).integer <= 10000);

    // A renew never resurrects an expired lock (the default).
    lock c;
    configure(c, "gone", 1, options_for(lock_mode::plain));
    REQUIRE(c.acquire(port::now()) == lock_errc::ok);
    REQUIRE(run.until_event(c).kind == lock_event_kind::acquired);
    admin.command({"DEL", key_of("gone")});
    REQUIRE(c.renew(port::now()) == lock_errc::ok);
    CHECK(run.until_event(c).kind == lock_event_kind::lost);
    CHECK(admin.command({"EXISTS", key_of("gone")}).integer == 0);
}

TEST_CASE("redis: NOSCRIPT after SCRIPT FLUSH falls back to EVAL", "[integration][lock]") {
    redis_server srv;
    redis_client admin(srv.port());
    runner run({&srv});
    lock a;
    configure(a, "job", 1, options_for(lock_mode::plain));
    for (int i = 0; i < 3; ++i) {
        admin.command({"SCRIPT", "FLUSH"});
        REQUIRE(a.acquire(port::now()) == lock_errc::ok);
        REQUIRE(run.until_event(a).kind == lock_event_kind::acquired);
        admin.command({"SCRIPT", "FLUSH"});
        REQUIRE(a.release(port::now()) == lock_errc::ok);
        REQUIRE(run.until_event(a).kind == lock_event_kind::released);
        CHECK(admin.command({"EXISTS", key_of("job")}).integer == 0);
    }
}

TEST_CASE("redis: reentrant locks nest per owner", "[integration][lock]") {
    redis_server srv;
    redis_client admin(srv.port());
    runner run({&srv});
    lock_options o = options_for(lock_mode::reentrant);
    o.owner = "agent-1:task-7";
    lock a;
    lock b;
    lock other;
    configure(a, "res", 1, o);
    configure(b, "res", 1, o);
    lock_options o2 = options_for(lock_mode::reentrant);
    o2.owner = "agent-2:task-1";
    configure(other, "res", 1, o2);

    REQUIRE(a.acquire(port::now()) == lock_errc::ok);
    lock_event ev = run.until_event(a);
    REQUIRE(ev.kind == lock_event_kind::acquired);
    CHECK(ev.holds == 1);
    REQUIRE(b.acquire(port::now()) == lock_errc::ok);
    ev = run.until_event(b);
    REQUIRE(ev.kind == lock_event_kind::acquired);
    CHECK(ev.holds == 2);
    CHECK(admin.command({"HGET", key_of("res"), "agent-1:task-7"}).text == "2");

    REQUIRE(other.acquire(port::now()) == lock_errc::ok);
    CHECK(run.until_event(other).kind == lock_event_kind::busy);

    REQUIRE(a.release(port::now()) == lock_errc::ok);
    REQUIRE(run.until_event(a).kind == lock_event_kind::released);
    CHECK(admin.command({"HGET", key_of("res"), "agent-1:task-7"}).text == "1");
    REQUIRE(b.release(port::now()) == lock_errc::ok);
    REQUIRE(run.until_event(b).kind == lock_event_kind::released);
    CHECK(admin.command({"EXISTS", key_of("res")}).integer == 0);

    REQUIRE(other.acquire(port::now()) == lock_errc::ok);
    CHECK(run.until_event(other).kind == lock_event_kind::acquired);
}

// The scripts as a request that lands late finds the key: only its own
// round's token (a reentrant one: its own hold's field) may be acted on.
TEST_CASE("redis: a late request of an earlier round touches no later hold",
          "[integration][lock][tokens]") {
    redis_server srv;
    redis_client admin(srv.port());
    auto eval = [&](const lock_script& s, std::vector<std::string> keys,
                    std::vector<std::string> args) {
        std::vector<std::string> argv = {"EVAL", std::string(s.text.data, s.text.size),
                                         std::to_string(keys.size())};
        argv.insert(argv.end(), keys.begin(), keys.end());
        argv.insert(argv.end(), args.begin(), args.end());
        return admin.command(argv);
    };
    const std::string round1(32, 'a');
    const std::string round2(32, 'b');

    SECTION("plain: round 1's cleanup and acquire after round 2 took the key") {
        REQUIRE(eval(script_acquire, {"job"}, {round2, "60000"}).elements.at(0).integer == 1);
        CHECK(eval(script_release, {"job"}, {round1}).integer == 0);
        CHECK(eval(script_renew, {"job"}, {round1, "60000"}).integer == 0);
        const reply late = eval(script_acquire, {"job"}, {round1, "60000"});
        CHECK(late.elements.at(0).integer == 0);  // busy: round 2's key
        CHECK(admin.command({"GET", "job"}).text == round2);
    }
    SECTION("reentrant: a decrement of an expired hold after a newer hold of the owner") {
        const std::string owner = "agent-1:task-7";
        const std::string hold1 = "#" + round1;
        const std::string hold2 = "#" + round2;
        REQUIRE(eval(script_reentrant_acquire, {"job"}, {owner, "60000", hold1})
                    .elements.at(1)
                    .integer == 1);
        // The same round's increment again (a retry that landed twice) counts once.
        CHECK(eval(script_reentrant_acquire, {"job"}, {owner, "60000", hold1})
                  .elements.at(1)
                  .integer == 1);
        // Round 1's hold expires; round 2 of the same owner takes the key.
        REQUIRE(admin.command({"DEL", "job"}).integer == 1);
        REQUIRE(eval(script_reentrant_acquire, {"job"}, {owner, "60000", hold2})
                    .elements.at(1)
                    .integer == 1);
        // Round 1's release, renew and cleanup land now: nothing of theirs.
        CHECK(eval(script_reentrant_release, {"job"}, {owner, "60000", hold1}).integer == -1);
        CHECK(eval(script_reentrant_renew, {"job"}, {owner, "60000", hold1}).integer == 0);
        CHECK(admin.command({"HGET", "job", owner}).text == "1");
        CHECK(admin.command({"HEXISTS", "job", hold2}).integer == 1);
        // Round 2's own release takes the key.
        CHECK(eval(script_reentrant_renew, {"job"}, {owner, "60000", hold2}).integer == 1);
        CHECK(eval(script_reentrant_release, {"job"}, {owner, "60000", hold2}).integer == 0);
        CHECK(admin.command({"EXISTS", "job"}).integer == 0);
        // A late increment of round 1 makes a hold its own cleanup takes back.
        REQUIRE(eval(script_reentrant_acquire, {"job"}, {owner, "60000", hold1})
                    .elements.at(1)
                    .integer == 1);
        CHECK(eval(script_reentrant_release, {"job"}, {owner, "60000", hold1}).integer == 0);
        CHECK(admin.command({"EXISTS", "job"}).integer == 0);
    }
}

TEST_CASE("redis: fenced tokens increase on one node, even when the counter is lost",
          "[integration][lock]") {
    redis_server srv;
    redis_client admin(srv.port());
    runner run({&srv});
    lock a;
    configure(a, "f", 1, options_for(lock_mode::fenced));
    std::uint64_t last = 0;
    for (int i = 0; i < 5; ++i) {
        REQUIRE(a.acquire(port::now()) == lock_errc::ok);
        const lock_event ev = run.until_event(a);
        REQUIRE(ev.kind == lock_event_kind::acquired);
        CHECK(ev.fence > last);
        last = ev.fence;
        CHECK(admin.command({"GET", fence_key_of("f")}).text == std::to_string(last));
        REQUIRE(a.release(port::now()) == lock_errc::ok);
        REQUIRE(run.until_event(a).kind == lock_event_kind::released);
        // Every other round the counter goes back, as when the node restarts
        // from an old snapshot or empty: tokens come from the server clock
        // (microseconds) at the least, so they keep increasing.
        if (i % 2 == 0) {
            admin.command({"SET", fence_key_of("f"), "3"});
        } else {
            admin.command({"DEL", fence_key_of("f")});
        }
    }
    CHECK(last > 1700000000000000);  // microseconds since 1970, after 2023
}

TEST_CASE("redis: fenced Redlock over 3 servers: max + 1, raised on a quorum, node loss",
          "[integration][lock][redlock]") {
    redis_server s0;
    redis_server s1;
    redis_server s2;
    redis_client a0(s0.port());
    redis_client a1(s1.port());
    redis_client a2(s2.port());
    // Counters that disagree, as after different majorities: a per-node INCR
    // would hand out x + 6 here; the quorum recipe must give x + 101. They are
    // ahead of the servers' clocks (x is in the year 2128), or the tokens
    // would come from the clocks instead.
    const std::uint64_t x = 5000000000000000;
    a0.command({"SET", fence_key_of("r"), std::to_string(x + 100)});
    a1.command({"SET", fence_key_of("r"), std::to_string(x + 5)});
    a2.command({"SET", fence_key_of("r"), std::to_string(x + 5)});

    std::uint64_t fence = 0;
    {
        runner run({&s0, &s1, &s2});
        lock l;
        configure(l, "r", 3, options_for(lock_mode::fenced));
        REQUIRE(l.acquire(port::now()) == lock_errc::ok);
        const lock_event ev = run.until_event(l);
        REQUIRE(ev.kind == lock_event_kind::acquired);
        CHECK(ev.fence == x + 101);
        fence = ev.fence;
        int raised = 0;
        for (redis_client* c : {&a0, &a1, &a2}) {
            raised += std::stoull(c->command({"GET", fence_key_of("r")}).text) >= x + 101 ? 1 : 0;
        }
        CHECK(raised >= 2);
        REQUIRE(l.release(port::now()) == lock_errc::ok);
        REQUIRE(run.until_event(l).kind == lock_event_kind::released);
        for (redis_client* c : {&a0, &a1, &a2}) {
            CHECK(c->command({"EXISTS", key_of("r")}).integer == 0);
        }
    }

    // One node down: a quorum remains, and tokens keep increasing.
    s2.kill();
    {
        runner run({&s0, &s1, &s2});
        lock l;
        configure(l, "r", 3, options_for(lock_mode::fenced));
        for (int i = 0; i < 3; ++i) {
            REQUIRE(l.acquire(port::now()) == lock_errc::ok);
            const lock_event ev = run.until_event(l);
            REQUIRE(ev.kind == lock_event_kind::acquired);
            CHECK(ev.fence > fence);
            fence = ev.fence;
            REQUIRE(l.release(port::now()) == lock_errc::ok);
            REQUIRE(run.until_event(l).kind == lock_event_kind::released);
        }
    }

    // Two of three down: no quorum, a clear failure, nothing left behind.
    s1.kill();
    {
        runner run({&s0, &s1, &s2});
        lock l;
        configure(l, "r", 3, options_for(lock_mode::fenced));
        REQUIRE(l.acquire(port::now()) == lock_errc::ok);
        const lock_event ev = run.until_event(l);
        CHECK(ev.kind == lock_event_kind::failed);
        CHECK(ev.reason == lock_failure::no_quorum);
        CHECK(a0.command({"EXISTS", key_of("r")}).integer == 0);
    }
}
