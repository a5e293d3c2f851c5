// Semaphores (lock_options::permits) over three real redis-servers
// (Redlock), through the client: every node of a round is asked for the same
// permit, so no more holders than permits however the quorums fall; a
// permit taken on a quorum of nodes sends a contender to a free one; the
// fencing token is raised on the permit's nodes. Read back with a plain
// connection to each server.
//
// Timing checks are sanity bounds several times what a run needs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/integration

namespace {

const unsigned ttl_ms = 10000;
const unsigned node_timeout_ms = 500;  // qemu and sanitizer builds are slow

std::string permits_of(const std::string& name) {
    return key_of(name, lock_key_kind::permits);
}

lock_options permit_options(unsigned permits, lock_mode mode = lock_mode::plain) {
    lock_options o = options(ttl_ms, node_timeout_ms, mode);
    o.permits = static_cast<std::uint8_t>(permits);
    return o;
}

// Three servers, a plain connection to each, and their URLs.
struct three_nodes {
    std::vector<std::unique_ptr<redis_server>> servers;
    std::vector<std::unique_ptr<redis_client>> admins;
    std::vector<std::string> urls;

    three_nodes() {
        for (std::size_t i = 0; i < 3; ++i) {
            servers.emplace_back(new redis_server());
            admins.emplace_back(new redis_client(servers.back()->port()));
            urls.push_back(redis_url(*servers.back()));
        }
    }
    redis_client& admin(std::size_t i) { return *admins[i]; }

    // Nodes where the key holds this value.
    int holding(const std::string& key, const std::string& value) {
        int n = 0;
        for (std::size_t i = 0; i < 3; ++i) {
            n += admin(i).command({"GET", key}).text == value ? 1 : 0;
        }
        return n;
    }
    // Nodes where any of the first `permits` permits holds this token.
    int anywhere(const std::string& name, unsigned permits, const std::string& token) {
        int n = 0;
        for (unsigned p = 0; p < permits; ++p) {
            n += holding(permit_key_of(name, p), token);
        }
        return n;
    }
};

// A contender: a client of its own on the three nodes and its lock.
struct contender {
    client<3> c;
    client_lock l;
};

std::unique_ptr<contender> make_contender(const url_list& urls, const char* name,
                                          const lock_options& o) {
    std::unique_ptr<contender> p(new contender());
    configure(p->c, urls);
    REQUIRE(p->c.connect(port::now() + duration::seconds(5)) == 3);
    REQUIRE(p->l.attach(p->c, name, o, no_watchdog()) == client_errc::ok);
    return p;
}

// Acquires within `wait` or fails the test: a round that finds its permit
// taken is followed by one asking for the permit a node named free.
op_result must_take(client_lock& l, duration wait = duration::seconds(3)) {
    const op_result r = l.acquire(wait);
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    REQUIRE(r.event.permit >= 0);
    CHECK(l.permit() == r.event.permit);
    return r;
}

long long server_time_us(redis_client& admin) {
    const reply t = admin.command({"TIME"});
    REQUIRE(t.type == '*');
    REQUIRE(t.elements.size() == 2);
    return std::atoll(t.elements[0].text.c_str()) * 1000000 +
           std::atoll(t.elements[1].text.c_str());
}

// Drives the client until no node has the lock's token in a permit (its
// cleanups are out and answered), for up to 3 s.
bool cleaned_up(three_nodes& nodes, contender& x, const char* name, unsigned permits) {
    const std::string token = hex(x.l.token());
    for (int i = 0; i < 60; ++i) {
        if (nodes.anywhere(name, permits, token) == 0) {
            return true;
        }
        x.c.run_for(duration::millis(50));
    }
    return nodes.anywhere(name, permits, token) == 0;
}

}  // namespace

TEST_CASE("permits Redlock: two permits over three nodes, three contenders, two hold",
          "[integration][permits]") {
    three_nodes nodes;
    url_list urls(nodes.urls);
    const char* name = "permits-redlock";
    auto a = make_contender(urls, name, permit_options(2));
    auto b = make_contender(urls, name, permit_options(2));
    auto c = make_contender(urls, name, permit_options(2));

    must_take(a->l);
    must_take(b->l);
    REQUIRE(a->l.permit() != b->l.permit());
    CHECK(a->l.permit() < 2);
    CHECK(b->l.permit() < 2);

    // Each permit is held on a quorum of its own: none left for a third.
    const op_result r = c->l.acquire(duration::millis(1500));
    {
        INFO(what(r));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::busy);
        CHECK_FALSE(c->l.held());
        CHECK(c->l.permit() == -1);
    }
    // What its rounds took on a node here and there is undone.
    CHECK(cleaned_up(nodes, *c, name, 2));
    a->c.run_for(duration::millis(100));  // late replies in, their undoing out
    b->c.run_for(duration::millis(100));

    for (contender* h : {a.get(), b.get()}) {
        INFO("permit " << h->l.permit());
        CHECK(h->l.held());
        const std::string key = permit_key_of(name, static_cast<unsigned>(h->l.permit()));
        CHECK(nodes.holding(key, hex(h->l.token())) >= 2);
        // Its token in no other permit.
        CHECK(nodes.anywhere(name, 2, hex(h->l.token())) == nodes.holding(key, hex(h->l.token())));
    }
    int limits = 0;
    for (std::size_t i = 0; i < 3; ++i) {
        limits += nodes.admin(i).command({"HGET", permits_of(name), "limit"}).text == "2" ? 1 : 0;
    }
    CHECK(limits >= 2);

    // Once one is released, the third takes its permit.
    const int freed = a->l.permit();
    must_release(a->l);
    const op_result third = must_take(c->l);
    CHECK(third.event.permit == freed);
    CHECK(nodes.holding(permit_key_of(name, static_cast<unsigned>(freed)), hex(c->l.token())) >= 2);

    must_release(b->l);
    must_release(c->l);
    for (std::size_t i = 0; i < 3; ++i) {
        INFO("node " << i);
        CHECK(nodes.admin(i).command({"EXISTS", permit_key_of(name, 0)}).integer == 0);
        CHECK(nodes.admin(i).command({"EXISTS", permit_key_of(name, 1)}).integer == 0);
        CHECK(nodes.admin(i).command({"EXISTS", permits_of(name)}).integer == 0);
    }
}

TEST_CASE("permits Redlock: a permit taken on a quorum of nodes sends contenders to the other",
          "[integration][permits]") {
    three_nodes nodes;
    url_list urls(nodes.urls);
    const char* name = "permits-redlock-hand";
    const std::string taken = permit_key_of(name, 0);
    std::size_t hand_nodes = 3;
    SECTION("taken on all three nodes") {
        hand_nodes = 3;
    }
    SECTION("taken on two of the three") {
        hand_nodes = 2;
    }
    // Any quorum of two includes a node where permit 0 is another's.
    for (std::size_t i = 0; i < hand_nodes; ++i) {
        REQUIRE(nodes.admin(i).command({"SET", taken, "another-holder", "PX", "60000"}).text ==
                "OK");
    }
    auto x = make_contender(urls, name, permit_options(2));
    // The first round asks for a permit at random: several tries ask for 0.
    for (int i = 0; i < 4; ++i) {
        INFO("try " << i);
        const op_result r = must_take(x->l);
        CHECK(r.event.permit == 1);
        CHECK(nodes.holding(permit_key_of(name, 1), hex(x->l.token())) >= 2);
        CHECK(nodes.holding(taken, "another-holder") == static_cast<int>(hand_nodes));
        must_release(x->l);
        CHECK(cleaned_up(nodes, *x, name, 2));
        CHECK(nodes.holding(taken, "another-holder") == static_cast<int>(hand_nodes));
    }
}

TEST_CASE("permits Redlock: fencing tokens increase and are raised where the permit is held",
          "[integration][permits]") {
    three_nodes nodes;
    url_list urls(nodes.urls);
    const char* name = "permits-redlock-fenced";
    const lock_options o = permit_options(2, lock_mode::fenced);
    auto a = make_contender(urls, name, o);
    auto b = make_contender(urls, name, o);
    std::uint64_t last = 0;
    for (int i = 0; i < 3; ++i) {
        INFO("turn " << i);
        for (contender* h : {a.get(), b.get()}) {
            const long long now_us = server_time_us(nodes.admin(0));  // one machine's clock
            const op_result r = must_take(h->l);
            CHECK(r.event.fence == h->l.fence());
            CHECK(r.event.fence > last);
            CHECK(static_cast<long long>(r.event.fence) >= now_us);
            last = r.event.fence;
            h->c.run_for(duration::millis(100));  // late replies in
            // Round 2 raised the counter on a quorum of the permit's nodes (a
            // node whose round 1 reply came after the quorum's keeps the key
            // as part of the hold, and its counter).
            const std::string key = permit_key_of(name, static_cast<unsigned>(h->l.permit()));
            int raised = 0;
            for (std::size_t n = 0; n < 3; ++n) {
                redis_client& admin = nodes.admin(n);
                const std::string counter = admin.command({"GET", fence_key_of(name)}).text;
                CHECK(std::strtoull(counter.c_str(), nullptr, 10) <= r.event.fence);
                raised += admin.command({"GET", key}).text == hex(h->l.token()) &&
                                  counter == std::to_string(r.event.fence)
                              ? 1
                              : 0;
            }
            CHECK(raised >= 2);
        }
        must_release(a->l);
        must_release(b->l);
    }
    // A counter ahead of the clock on one node, and a contender that waits
    // for every node's reply: the next token is one above that counter.
    const long long ahead = server_time_us(nodes.admin(0)) + 1000000000000LL;
    REQUIRE(nodes.admin(1).command({"SET", fence_key_of(name), std::to_string(ahead)}).text ==
            "OK");
    lock_options all = o;
    all.quorum = 3;
    auto e = make_contender(urls, name, all);
    const op_result r = must_take(e->l);
    CHECK(static_cast<long long>(r.event.fence) == ahead + 1);
    const std::string key = permit_key_of(name, static_cast<unsigned>(e->l.permit()));
    CHECK(nodes.holding(key, hex(e->l.token())) == 3);
    CHECK(nodes.holding(fence_key_of(name), std::to_string(ahead + 1)) == 3);
    must_release(e->l);
}
