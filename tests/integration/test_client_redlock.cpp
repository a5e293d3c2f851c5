// Redlock and failing nodes against real redis-servers: five servers losing
// two then three, a frozen node, a restarted server (and a reentrant lock
// lost across it), a dead node with a cleanup waiting.
//
// Timing checks are sanity bounds several times what a run needs.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp_encoder.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

TEST_CASE("client: Redlock over 5 servers loses 2, then 3", "[integration][client][redlock]") {
    std::vector<std::unique_ptr<redis_server>> servers;
    std::vector<std::string> u;
    for (int i = 0; i < 5; ++i) {
        servers.emplace_back(new redis_server());
        u.push_back(redis_url(*servers.back()));
    }
    std::vector<std::unique_ptr<redis_client>> admins;
    const auto admin = [&](std::size_t i) -> redis_client& {
        if (!admins[i]) {
            admins[i].reset(new redis_client(servers[i]->port()));
        }
        return *admins[i];
    };
    admins.resize(5);
    const char* name = "client-redlock5";
    const std::string key = key_of(name);
    const unsigned ttl_ms = 3000;
    url_list urls(u);
    client<5> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, name, options(ttl_ms, 100, lock_mode::fenced)) == client_errc::ok);

    must_acquire(l);
    std::uint64_t fence = l.fence();
    CHECK(fence > 0);
    int holders = 0;
    for (std::size_t i = 0; i < 5; ++i) {
        holders += admin(i).command({"GET", key}).text == hex(l.token()) ? 1 : 0;
    }
    CHECK(holders >= 3);
    must_release(l);

    // Two of five down: a quorum of three remains.
    servers[3]->kill();
    servers[4]->kill();
    admins[3].reset();
    admins[4].reset();
    instant t = port::now();
    op_result r = l.try_acquire();
    {
        INFO(what(r) << "; node 3: " << what(c.node(3)));
        REQUIRE(r.error == client_errc::ok);
        REQUIRE(r.event.kind == lock_event_kind::acquired);
    }
    CHECK(ms_since(t) < 3000);
    CHECK(r.event.fence > fence);
    CHECK(l.fence() == r.event.fence);
    fence = r.event.fence;
    CHECK(r.event.validity_deadline > port::now());
    CHECK(r.event.validity_deadline <= t + duration::millis(ttl_ms));
    CHECK(l.held());
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(admin(i).command({"GET", key}).text == hex(l.token()));
    }
    const node_info n3 = c.node(3);
    INFO("node 3: " << what(n3));
    CHECK((n3.state == node_state::backoff || n3.state == node_state::down));
    // Its connection saw the server go (closed / reset), or a reconnect was refused.
    CHECK((n3.error == node_error::refused || n3.error == node_error::closed ||
           n3.error == node_error::reset));
    must_release(l);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(admin(i).command({"EXISTS", key}).integer == 0);
    }

    // Three of five down: no quorum, and the two that said yes are cleaned up.
    servers[2]->kill();
    admins[2].reset();
    t = port::now();
    r = l.try_acquire();
    {
        INFO(what(r) << "; node 2: " << what(c.node(2)));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(r.event.reason == lock_failure::no_quorum);
    }
    CHECK(ms_since(t) < 3000);
    CHECK_FALSE(l.held());
    c.run_for(duration::millis(200));
    for (std::size_t i = 0; i < 2; ++i) {
        INFO("server " << i);
        CHECK(admin(i).command({"EXISTS", key}).integer == 0);
    }

    // Back again (empty: no persistence): nothing of ours on any node, and the
    // client reconnects and acquires once its backoff lets it.
    for (std::size_t i = 2; i < 5; ++i) {
        servers[i]->restart();
    }
    c.run_for(duration::millis(300));
    for (std::size_t i = 0; i < 5; ++i) {
        INFO("server " << i);
        CHECK(admin(i).command({"EXISTS", key}).integer == 0);
    }
    const instant give_up = port::now() + duration::seconds(6);
    bool acquired = false;
    while (!acquired && port::now() < give_up) {
        r = l.try_acquire();
        REQUIRE(r.error == client_errc::ok);
        acquired = r.event.kind == lock_event_kind::acquired;
        if (!acquired) {
            c.run_for(duration::millis(100));
        }
    }
    REQUIRE(acquired);
    // Servers 2..4 came back without their counters (no AOF here), so the
    // token is only known to be a token, not to be above the old ones.
    CHECK(l.fence() > 0);
    must_release(l);
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(admin(i).command({"EXISTS", key}).integer == 0);
    }
}

TEST_CASE("client: a frozen node does not hold up a quorum", "[integration][client][redlock]") {
    redis_server s0;
    redis_server s1;
    redis_server s2;
    url_list urls({redis_url(s0), redis_url(s1), redis_url(s2)});
    const char* name = "client-frozen";

    SECTION("frozen after connecting: the request times out after node_timeout") {
        client<3> c;
        configure(c, urls);
        REQUIRE(c.connect(port::now() + duration::seconds(3)) == 3);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 100)) == client_errc::ok);
        s1.pause();
        instant t = port::now();
        const op_result r = l.try_acquire();
        const double took = ms_since(t);
        INFO(what(r));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::acquired);
        CHECK(took < 1000);
        CHECK(l.held());
        t = port::now();
        must_release(l);  // waits out node_timeout for the frozen node
        CHECK(ms_since(t) < 1000);
        s1.resume();
        redis_client a0(s0.port());
        redis_client a2(s2.port());
        CHECK(a0.command({"EXISTS", key_of(name)}).integer == 0);
        CHECK(a2.command({"EXISTS", key_of(name)}).integer == 0);
    }

    SECTION("frozen before connecting: the quorum does not wait for its set-up") {
        // The kernel completes the TCP handshake of a stopped server, so the
        // node sits in set-up until connect_timeout. A round needs only the
        // quorum's replies, so the acquisition should not wait for that.
        client_options o;
        o.connect_timeout = duration::seconds(2);
        client<3> c;
        configure(c, urls, o);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 100)) == client_errc::ok);
        s1.pause();
        const instant t = port::now();
        const op_result r = l.try_acquire();
        const double took = ms_since(t);
        INFO(what(r) << "; node 1: " << what(c.node(1)) << "; took " << took << " ms");
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::acquired);
        CHECK(took < 1000);
        must_release(l);
        s1.resume();
    }

    SECTION("frozen while held: the watchdog keeps renewing on the other two") {
        // The frozen node's connection is dropped as stalled and made again,
        // which leaves it in set-up for connect_timeout at a time; renewals
        // must still go out on the two healthy nodes.
        client_options o;
        o.stall_timeout = duration::millis(300);
        client<3> c;
        configure(c, urls, o);
        REQUIRE(c.connect(port::now() + duration::seconds(3)) == 3);
        client_lock l;
        recorder rec;
        rec.listen(l);
        REQUIRE(l.attach(c, name, options(1000, 50)) == client_errc::ok);
        must_acquire(l);
        s1.pause();
        c.run_for(duration::millis(3000));
        const node_info n1 = c.node(1);
        s1.resume();
        INFO("events: " << rec.list() << "; node 1: " << what(n1));
        CHECK((n1.error == node_error::stalled || n1.error == node_error::connect_timeout));
        CHECK(rec.count(lock_event_kind::lost) == 0);
        CHECK(rec.count(lock_event_kind::renewed) >= 5);
        CHECK(l.held());
        if (l.held()) {
            must_release(l);
        }
    }
}

TEST_CASE("client: reconnects to a restarted server", "[integration][client]") {
    redis_server srv;
    const char* name = "client-restart";
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
    must_acquire(l);
    must_release(l);

    srv.kill();
    op_result r = l.try_acquire();
    node_info n = c.node(0);
    {
        INFO(what(r) << "; node: " << what(n));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK((n.error == node_error::refused || n.error == node_error::reset ||
               n.error == node_error::closed));
        CHECK(n.state != node_state::ready);
    }
    // Still down: refused on reconnect.
    c.run_for(duration::millis(300));
    r = l.try_acquire();
    CHECK(r.event.kind == lock_event_kind::failed);

    srv.restart();
    const instant t = port::now();
    bool acquired = false;
    int tries = 0;
    while (!acquired && port::now() < t + duration::seconds(5)) {
        r = l.try_acquire();
        ++tries;
        REQUIRE(r.error == client_errc::ok);
        acquired = r.event.kind == lock_event_kind::acquired;
        if (!acquired) {
            c.run_for(duration::millis(100));
        }
    }
    INFO("tries " << tries << ", last " << what(r) << "; node: " << what(c.node(0)));
    REQUIRE(acquired);
    CHECK(c.node(0).state == node_state::ready);
    CHECK(c.node(0).error == node_error::none);
    redis_client admin(srv.port());
    CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
    must_release(l);
}

TEST_CASE("client: a lost reentrant lock leaves a later hold of its owner alone",
          "[integration][client][reentrant]") {
    // A (owner task-42) holds; the server is killed and comes
    // back empty; A is lost at its validity deadline; B, another lock of the
    // same owner on the same client, acquires. The client serves newer locks
    // first, so anything A still had queued (a release is a decrement of the
    // owner's field) would go out right behind B's acquire and take B's hold.
    redis_server srv;
    const char* name = "client-reentrant-lost";
    const std::string key = key_of(name);
    url_list urls({redis_url(srv)});
    client_options co;
    co.reconnect_min = duration::millis(20);
    co.reconnect_max = duration::millis(50);
    client<1> c;
    configure(c, urls, co);
    lock_options o = options(1000, 100, lock_mode::reentrant);
    o.owner = "task-42";
    client_lock a;
    recorder rec;
    rec.listen(a);
    REQUIRE(a.attach(c, name, o) == client_errc::ok);
    must_acquire(a);
    {
        redis_client admin(srv.port());
        REQUIRE(admin.command({"HGET", key, "task-42"}).text == "1");
    }

    srv.kill();
    const instant killed = port::now();
    while (rec.count(lock_event_kind::lost) == 0 && port::now() < killed + duration::seconds(3)) {
        REQUIRE(c.run_for(duration::millis(20)) == client_errc::ok);
    }
    {
        INFO("A's events: " << rec.list());
        REQUIRE(rec.count(lock_event_kind::lost) == 1);
        CHECK(a.last_event().reason == lock_failure::validity_ended);
        CHECK_FALSE(a.held());
    }

    // Back, empty. Not driven meanwhile, and past the reconnect backoff: B's
    // acquire waits for the new connection and goes out first on it.
    srv.restart();
    sleep_ms(100);
    client_lock b;
    REQUIRE(b.attach(c, name, o) == client_errc::ok);
    const op_result rb = b.try_acquire();
    {
        INFO(what(rb) << "; node: " << what(c.node(0)));
        REQUIRE(rb.error == client_errc::ok);
        REQUIRE(rb.event.kind == lock_event_kind::acquired);
        CHECK(rb.event.holds == 1);
    }
    // Whatever A still has goes out now.
    REQUIRE(c.run_for(duration::millis(300)) == client_errc::ok);

    redis_client admin(srv.port());
    CHECK(admin.command({"EXISTS", key}).integer == 1);
    CHECK(admin.command({"HGET", key, "task-42"}).text == "1");
    CHECK(b.held());
    lock_options other_o = o;
    other_o.owner = "task-7";
    client_lock other;
    REQUIRE(other.attach(c, name, other_o) == client_errc::ok);
    const op_result ro = other.try_acquire();
    INFO(what(ro));
    REQUIRE(ro.error == client_errc::ok);
    CHECK(ro.event.kind == lock_event_kind::busy);
    CHECK(admin.command({"HEXISTS", key, "task-7"}).integer == 0);

    must_release(b);
    CHECK(admin.command({"EXISTS", key}).integer == 0);
}

TEST_CASE("client: a dead node with a cleanup waiting does not spin", "[integration][client]") {
    // Node 0 is down from the start; node 2 is held by someone else, so the
    // busy round queues cleanups, one of which waits for node 0.
    redis_server s0, s1, s2;
    const url_list urls({redis_url(s0), redis_url(s1), redis_url(s2)});
    redis_client other(s2.port());
    REQUIRE(other.command({"SET", key_of("spin"), "someone", "PX", "60000"}).text == "OK");
    redis_client other1(s1.port());
    REQUIRE(other1.command({"SET", key_of("spin"), "someone", "PX", "60000"}).text == "OK");
    s0.kill();
    client<3> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, "spin", options(5000, 100), no_watchdog()) == client_errc::ok);
    const op_result r = l.try_acquire();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::busy);
    // Node 1 goes too, after its cleanup was answered: it is in backoff with
    // nothing waiting for it, while node 0 still has a cleanup waiting.
    REQUIRE(c.run_for(duration::millis(100)) == client_errc::ok);
    s1.kill();
    // Idle but for the cleanup: a second of driving must mostly sleep.
    const double before = cpu_s();
    const instant until = port::now() + duration::seconds(1);
    REQUIRE(c.run_until(until) == client_errc::ok);
    const double used = cpu_s() - before;
    INFO("cpu seconds in run_for(1s): " << used);
    CHECK(used < 0.3);
    // Every timer due by then was handled: none is left behind to spin on.
    // (Compared with the run's end, not with a later now(): a backoff may
    // fall due in between, on a slow machine or under qemu.)
    CHECK(c.next_deadline() > until);
}
