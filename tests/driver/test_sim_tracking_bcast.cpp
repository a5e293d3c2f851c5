// The simulated node's CLIENT TRACKING in broadcasting mode (BCAST), as
// Redis 7.0 does it: the options and their errors, one invalidation per
// prefix per command (a script included) or active-expiry pass, NOLOOP,
// REDIRECT to a RESP2 subscriber, flushes, and expiry told in virtual time
// through the net.
#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "driver/sim_sockets.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/port.hpp"
#include "sim/net.hpp"
#include "sim/redis_node.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::port::net_status;
using edgelock::port::wait_entry;
namespace port = edgelock::port;

namespace {

// One node with tracking allowed, and sessions made by hand (ids 1, 2...).
struct bench {
    sim::redis_node node;
    std::vector<std::unique_ptr<sim::session>> sessions;
    std::uint64_t now = 1000000;

    bench() { node.tracking = true; }

    sim::session& client(int protocol = 3) {
        sessions.push_back(std::make_unique<sim::session>());
        sim::session& s = *sessions.back();
        s.id = sessions.size();
        s.protocol = protocol;
        s.authenticated = true;
        node.clients.add(s);
        return s;
    }
    std::string run(sim::session& s, const std::vector<std::string>& argv) {
        return node.execute(s, argv, now);
    }
    // What waits in the outbox for `s`, taken out of it.
    std::vector<std::string> heard(const sim::session& s) {
        std::vector<std::string> out;
        auto& box = node.clients.outbox;
        for (auto it = box.begin(); it != box.end();) {
            if (it->first == s.id) {
                out.push_back(it->second);
                it = box.erase(it);
            } else {
                ++it;
            }
        }
        return out;
    }
};

std::string key_list(const std::vector<std::string>& keys) {
    std::string out = "*" + std::to_string(keys.size()) + "\r\n";
    for (const std::string& k : keys) {
        out += "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
    }
    return out;
}
// The RESP3 push [invalidate, keys].
std::string push(const std::vector<std::string>& keys) {
    return ">2\r\n$10\r\ninvalidate\r\n" + key_list(keys);
}
// The RESP2 message on __redis__:invalidate.
std::string message(const std::vector<std::string>& keys) {
    return "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n" + key_list(keys);
}

const std::string ok = "+OK\r\n";

std::string err(const std::string& text) {
    return "-" + text + "\r\n";
}

std::string overlap(const std::string& added, const std::string& existing) {
    return err("ERR Prefix '" + added + "' overlaps with an existing prefix '" + existing +
               "'. Prefixes for a single client must not overlap.");
}

std::string script(const edgelock::lock_script& s) {
    return sim::to_std(s.text);
}

}  // namespace

TEST_CASE("sim BCAST: a prefix covers every key that starts with it", "[sim][tracking][bcast]") {
    bench b;
    sim::session& waiter = b.client();
    sim::session& writer = b.client();
    REQUIRE(b.run(waiter, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "job"}) == ok);
    CHECK(waiter.bcast);
    CHECK(waiter.prefixes == std::set<std::string>{"job"});
    const std::uint64_t before = b.node.clients.invalidations;
    for (const std::string k : {"job", "job:x", "jobs", "jo", "other"}) {
        REQUIRE(b.run(writer, {"SET", k, "1"}) == ok);
        const std::vector<std::string> told = b.heard(waiter);
        if (k == "jo" || k == "other") {
            CHECK(told.empty());
        } else {
            CHECK(told == std::vector<std::string>{push({k})});
        }
    }
    CHECK(b.node.clients.invalidations == before + 3);
    // Not one-shot: the same key told again on its next change, a delete too.
    REQUIRE(b.run(writer, {"DEL", "job"}) == ":1\r\n");
    CHECK(b.heard(waiter) == std::vector<std::string>{push({"job"})});
    // Reads are not tracked in BCAST mode.
    REQUIRE(b.run(waiter, {"GET", "other"}) == "$1\r\n1\r\n");
    CHECK(b.node.clients.tracked.empty());
    CHECK(b.heard(writer).empty());
}

TEST_CASE("sim BCAST: one message per prefix with the command's keys, sorted and once",
          "[sim][tracking][bcast]") {
    bench b;
    sim::session& waiter = b.client();
    sim::session& writer = b.client();
    REQUIRE(b.run(waiter, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "job", "PREFIX", "a"}) ==
            ok);
    SECTION("two keys of one script in one message, the one changed twice once") {
        // SET NX PX of the lock; SET and INCR of the counter.
        REQUIRE(b.run(writer, {"EVAL", script(edgelock::script_fenced_acquire), "2", "job:lock",
                               "job:fence", "tok", "5000"})
                    .rfind("*2\r\n:1\r\n", 0) == 0);
        CHECK(b.heard(waiter) == std::vector<std::string>{push({"job:fence", "job:lock"})});
        CHECK(b.node.clients.invalidations == 1);
    }
    SECTION("a key changed twice by one script is told once") {
        // The hold's field, HINCRBY and PEXPIRE of the same key.
        REQUIRE(b.run(writer, {"EVAL", script(edgelock::script_reentrant_acquire), "1", "job:r",
                               "owner", "5000", "#hold"}) == "*2\r\n:1\r\n:1\r\n");
        CHECK(b.heard(waiter) == std::vector<std::string>{push({"job:r"})});
    }
    SECTION("keys under two prefixes: one message each, prefixes in order") {
        REQUIRE(b.run(writer, {"EVAL", script(edgelock::script_fenced_acquire), "2", "job:lock",
                               "a:fence", "tok", "5000"})
                    .rfind("*2\r\n:1\r\n", 0) == 0);
        CHECK(b.heard(waiter) == std::vector<std::string>{push({"a:fence"}), push({"job:lock"})});
        CHECK(b.node.clients.invalidations == 2);
    }
}

TEST_CASE("sim BCAST: NOLOOP leaves out the session's own changes", "[sim][tracking][bcast]") {
    bench b;
    sim::session& a = b.client();
    sim::session& other = b.client();
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP", "PREFIX", "job"}) == ok);
    REQUIRE(b.run(a, {"SET", "job:1", "x"}) == ok);
    CHECK(b.heard(a).empty());
    REQUIRE(b.run(other, {"SET", "job:2", "x"}) == ok);
    CHECK(b.heard(a) == std::vector<std::string>{push({"job:2"})});
    // Without NOLOOP its own writes are told too; a second ON takes this
    // command's flags (and adds its prefix).
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q"}) == ok);
    CHECK_FALSE(a.noloop);
    CHECK(a.prefixes == std::set<std::string>{"job", "q"});
    REQUIRE(b.run(a, {"SET", "job:1", "y"}) == ok);
    CHECK(b.heard(a) == std::vector<std::string>{push({"job:1"})});
    REQUIRE(b.run(a, {"SET", "q1", "y"}) == ok);
    CHECK(b.heard(a) == std::vector<std::string>{push({"q1"})});
}

TEST_CASE("sim BCAST: NOLOOP still hears of a key its own command found expired",
          "[sim][tracking][bcast]") {
    bench b;
    sim::session& a = b.client();
    sim::session& other = b.client();
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP", "PREFIX", "job"}) == ok);
    REQUIRE(b.run(other, {"SET", "job:1", "x", "NX", "PX", "10"}) == ok);
    REQUIRE(b.run(other, {"SET", "job:2", "x", "NX", "PX", "10"}) == ok);
    CHECK(b.heard(a) == std::vector<std::string>{push({"job:1"}), push({"job:2"})});
    b.now += 20000;  // both due; no active expiry runs here
    // An expiry has no writer, as in Redis: told.
    REQUIRE(b.run(a, {"PTTL", "job:1"}) == ":-2\r\n");
    CHECK(b.heard(a) == std::vector<std::string>{push({"job:1"})});
    // Expired, then written by the same command: the write is the last change.
    REQUIRE(b.run(a, {"SET", "job:2", "y", "NX", "PX", "10"}) == ok);
    CHECK(b.heard(a).empty());
}

TEST_CASE("sim BCAST: REDIRECT to a RESP2 subscriber, a flush told there too",
          "[sim][tracking][bcast]") {
    bench b;
    sim::session& sub = b.client(2);
    sim::session& a = b.client(2);
    sim::session& writer = b.client(2);
    REQUIRE(b.run(sub, {"SUBSCRIBE", "__redis__:invalidate"}).rfind("*3\r\n", 0) == 0);
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "REDIRECT", "1", "BCAST", "PREFIX", "job"}) ==
            ok);
    CHECK(a.redirect == 1);
    REQUIRE(b.run(writer, {"EVAL", script(edgelock::script_fenced_acquire), "2", "job:lock",
                           "job:fence", "tok", "5000"})
                .rfind("*2\r\n:1\r\n", 0) == 0);
    CHECK(b.heard(sub) == std::vector<std::string>{message({"job:fence", "job:lock"})});
    CHECK(b.heard(a).empty());
    REQUIRE(b.run(writer, {"FLUSHALL"}) == ok);
    CHECK(b.heard(sub) == std::vector<std::string>{
                              "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"});
    // A later ON without REDIRECT sends to the session itself: RESP2 cannot.
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "k"}) == ok);
    CHECK(a.redirect == 0);
    REQUIRE(b.run(writer, {"SET", "job:1", "x"}) == ok);
    CHECK(b.heard(sub).empty());
    CHECK(b.heard(a).empty());
}

TEST_CASE("sim BCAST: option errors, with Redis's texts, change nothing",
          "[sim][tracking][bcast]") {
    bench b;
    sim::session& a = b.client();
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "PREFIX", "x"}) ==
          err("ERR PREFIX option requires BCAST mode to be enabled"));
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"}) ==
          err("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX"}) == err("ERR syntax error"));
    CHECK_FALSE(a.tracking);
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "job"}) == ok);
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "job"}) ==
          overlap("job", "job"));
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "jobs"}) ==
          overlap("jobs", "job"));
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "jo"}) == overlap("jo", "job"));
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "zz", "PREFIX", "zzz"}) ==
          err("ERR Prefix 'zz' overlaps with another provided prefix 'zzz'. Prefixes for a "
              "single client must not overlap."));
    // A refused ON keeps the flags and the prefixes it had.
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP", "PREFIX", "jobs"}) ==
          overlap("jobs", "job"));
    CHECK_FALSE(a.noloop);
    CHECK(a.prefixes == std::set<std::string>{"job"});
    const std::string switching =
        err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
            "then re-enabling it with a different mode.");
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON"}) == switching);
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "OPTIN"}) == switching);
    CHECK(b.run(a, {"CLIENT", "CACHING", "yes"}) ==
          err("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."));
    CHECK(a.bcast);
    CHECK(a.prefixes == std::set<std::string>{"job"});
    // The other way: a default-mode session cannot turn BCAST on.
    sim::session& d = b.client();
    REQUIRE(b.run(d, {"CLIENT", "TRACKING", "ON"}) == ok);
    CHECK(b.run(d, {"CLIENT", "TRACKING", "ON", "BCAST"}) == switching);
    CHECK_FALSE(d.bcast);
}

TEST_CASE("sim BCAST: no PREFIX is every key and OFF clears it all", "[sim][tracking][bcast]") {
    bench b;
    sim::session& a = b.client();
    sim::session& writer = b.client();
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST"}) == ok);
    CHECK(a.prefixes == std::set<std::string>{""});
    REQUIRE(b.run(writer, {"SET", "anything", "1"}) == ok);
    CHECK(b.heard(a) == std::vector<std::string>{push({"anything"})});
    CHECK(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x"}) == overlap("x", ""));
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "OFF"}) == ok);
    CHECK_FALSE(a.tracking);
    CHECK_FALSE(a.bcast);
    CHECK(a.prefixes.empty());
    REQUIRE(b.run(writer, {"SET", "anything", "2"}) == ok);
    CHECK(b.heard(a).empty());
    // After OFF any mode, and a prefix that overlapped before, are accepted.
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x"}) == ok);
    CHECK(a.prefixes == std::set<std::string>{"x"});
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "OFF"}) == ok);
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "OPTIN"}) == ok);
    REQUIRE(b.run(a, {"CLIENT", "CACHING", "yes"}) == ok);
}

TEST_CASE("sim BCAST: a flush tells BCAST and OPTIN sessions with the null list",
          "[sim][tracking][bcast]") {
    bench b;
    sim::session& a = b.client();
    sim::session& o = b.client();
    sim::session& writer = b.client();
    REQUIRE(b.run(a, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "job"}) == ok);
    REQUIRE(b.run(o, {"CLIENT", "TRACKING", "ON", "OPTIN"}) == ok);
    REQUIRE(b.run(writer, {"FLUSHALL"}) == ok);
    const std::vector<std::string> null_push{">2\r\n$10\r\ninvalidate\r\n_\r\n"};
    CHECK(b.heard(a) == null_push);
    CHECK(b.heard(o) == null_push);
    CHECK(b.heard(writer).empty());
}

namespace {

std::string command(const std::vector<std::string>& argv) {
    return key_list(argv);  // an array of bulk strings
}

// Sends `argv` and reads until `expect` bytes came back.
std::string call(int fd, const std::vector<std::string>& argv, std::size_t expect) {
    const std::string bytes = command(argv);
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const port::net_result r = port::send(fd, bytes.data() + sent, bytes.size() - sent);
        if (r.status == net_status::would_block) {
            wait_entry e{fd, port::want_write, 0};
            REQUIRE(port::wait(&e, 1, instant::never()) == 1);
            continue;
        }
        REQUIRE(r.status == net_status::ok);
        sent += r.size;
    }
    std::string in;
    while (in.size() < expect) {
        char buf[512];
        const port::net_result r = port::recv(fd, buf, sizeof buf);
        if (r.status == net_status::would_block) {
            wait_entry e{fd, port::want_read, 0};
            REQUIRE(port::wait(&e, 1, port::now() + duration::seconds(5)) == 1);
            continue;
        }
        REQUIRE(r.status == net_status::ok);
        in.append(buf, r.size);
    }
    return in;
}

}  // namespace

TEST_CASE("sim BCAST: an expiring key is pushed in virtual time", "[sim][tracking][bcast]") {
    sim::net n(7);
    n.add_nodes(1);
    n.node(0).tracking = true;
    n.faults(0).latency_min_us = n.faults(0).latency_max_us = 2000;  // 1 ms each way
    const int waiter = edgelock_test::open_node(n, 0);
    const int writer = edgelock_test::open_node(n, 0);
    n.recv_split = sim::split::whole;
    n.partial_sends = false;
    REQUIRE(call(waiter, {"HELLO", "3"}, 1).rfind("%7\r\n", 0) == 0);  // all of it, at once
    REQUIRE(call(waiter, {"CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP", "PREFIX", "job"},
                 ok.size()) == ok);
    // The writer's SET is told at once; the key's expiry 100 ms later.
    const std::string told = push({"job:lock"});
    REQUIRE(call(writer, {"SET", "job:lock", "tok", "NX", "PX", "100"}, ok.size()) == ok);
    const instant set_at{port::now().us - 1000};  // when the node ran it
    CHECK(edgelock_test::read_at_least(waiter, told.size()) == told);
    CHECK(n.node(0).clients.tracked.empty());  // nothing read: only the prefix covers it
    CHECK(edgelock_test::read_at_least(waiter, told.size()) == told);
    CHECK(port::now() == set_at + duration::millis(101));
    CHECK(n.node(0).data.count("job:lock") == 0);
    CHECK(n.node(0).clients.invalidations == 2);
    port::close(waiter);
    port::close(writer);
}
