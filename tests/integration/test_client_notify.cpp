// Waiters told of the release by the server (RESP3 CLIENT TRACKING) against
// real redis-server processes: the key deleted by our release, by another
// client, by expiry and by a flush; under Redlock; with notify off, not told.
// RESP2 clients are told over a subscription: test_client_notify_resp2.cpp.
//
// The waiters' retry delay is 3 s, so a waiter that acquires well within it
// was told; the bound (1.5 s) is a sanity bound, several times what a run
// needs. Request counts come from INFO commandstats: a told waiter sends no
// polls.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/notify_helpers.hpp"
#include "integration/redis_server.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

client_options resp3() {
    client_options o;
    o.resp3 = true;
    return o;
}

}  // namespace

TEST_CASE("notify: a waiter is told of a marked release and a flush", "[integration][notify]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "notify-other";
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls, resp3());
    client_lock l;
    REQUIRE(l.attach(c, name, waiting_options(), no_watchdog()) == client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    INFO(what(c.node(0)));
    REQUIRE(c.node(0).tracking);

    struct gone_case {
        const char* what;
        std::vector<std::string> hold;  // how the other client holds the key
        std::vector<std::string> act;   // what it does 150 ms later
    };
    const gone_case cases[] = {
        {"released with the marks, as another edgelock client does",
         {"SET", key_of(name), "other", "PX", "10000"},
         marked_release(name, "other")},
        {"flushed", {"SET", key_of(name), "other", "PX", "10000"}, {"FLUSHALL"}},
    };
    for (const gone_case& k : cases) {
        INFO(k.what);
        told_when_gone(srv, c, l, k.hold, k.act, &k == &cases[0]);
    }
}

TEST_CASE("notify: an expiry or a release without the marks is found at the key's ttl",
          "[integration][notify]") {
    // Another client's compare-and-delete (redis-py's Lock, redsync), a bare
    // DEL or an expiry changes only the key, which waiters do not track (a
    // take would wake them all): the waiter's poll, just after the ttl its
    // busy answer said (1500 ms), finds the key gone. Its retry delay is
    // 1000 ms: a waiter that retried instead would find the key there, and
    // take it only at 2000 ms.
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "notify-unmarked";
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls, resp3());
    edgelock::lock_options o = options(5000, 200);
    o.retry_min = duration::millis(1000);
    o.retry_max = duration::millis(1000);
    client_lock l;
    REQUIRE(l.attach(c, name, o, no_watchdog()) == client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    const std::vector<std::string> acts[] = {
        {},  // expires
        {"DEL", key_of(name)},
        {"EVAL",
         "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end", "1",
         key_of(name), "other"},
    };
    for (const std::vector<std::string>& act : acts) {
        INFO((act.empty() ? std::string("expired") : act[0]));
        REQUIRE(admin.command({"SET", key_of(name), "other", "PX", "1500"}).text == "OK");
        REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
        const instant t0 = port::now();
        op_result r;
        {
            redis_client actor(srv.port());
            const later go(150, [&] {
                if (!act.empty()) {
                    actor.command(act);
                }
            });
            r = l.acquire(duration::seconds(6));
        }
        INFO(what(r));
        REQUIRE(r.event.kind == lock_event_kind::acquired);
        CHECK(ms_since(t0) > 1400);
        CHECK(ms_since(t0) < 1900);
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
        // The SET that found the key taken, the script that read its ttl,
        // then the poll (PTTL and SET): nothing woke it between.
        CHECK(command_calls(admin, "pttl") == 2);
        must_release(l);
    }
}

TEST_CASE("notify: waiters are told of edgelock's own release", "[integration][notify]") {
    redis_server srv;
    const char* name = "notify-own";
    const url_list urls({redis_url(srv)});
    client<1> holder_client;
    client<1> waiter_client;
    configure(holder_client, urls, resp3());
    configure(waiter_client, urls, resp3());
    client_lock holder;
    client_lock waiter;
    REQUIRE(holder.attach(holder_client, name, waiting_options(), no_watchdog()) ==
            client_errc::ok);
    REQUIRE(waiter.attach(waiter_client, name, waiting_options(), no_watchdog()) ==
            client_errc::ok);
    for (int round = 0; round < 3; ++round) {
        INFO("round " << round);
        client_lock& first = round % 2 == 0 ? holder : waiter;
        client_lock& second = round % 2 == 0 ? waiter : holder;
        must_acquire(first);
        const instant t0 = port::now();
        op_result r;
        {
            const later release(100, [&] { first.release(); });
            r = second.acquire(duration::seconds(6));
        }
        INFO(what(r));
        REQUIRE(r.event.kind == lock_event_kind::acquired);
        CHECK(ms_since(t0) < told_bound_ms);
        CHECK_FALSE(first.held());
        must_release(second);
    }
}

TEST_CASE("notify: under Redlock any node's word wakes the waiter", "[integration][notify]") {
    redis_server s0;
    redis_server s1;
    redis_server s2;
    redis_client a0(s0.port());
    redis_client a1(s1.port());
    redis_client a2(s2.port());
    const char* name = "notify-redlock";
    const url_list urls({redis_url(s0), redis_url(s1), redis_url(s2)});
    client<3> c;
    configure(c, urls, resp3());
    client_lock l;
    REQUIRE(l.attach(c, name, waiting_options(), no_watchdog()) == client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 3);
    for (redis_client* a : {&a0, &a1, &a2}) {
        REQUIRE(a->command({"SET", key_of(name), "other", "PX", "10000"}).text == "OK");
    }
    const instant t0 = port::now();
    op_result r;
    {
        redis_client d0(s0.port());
        redis_client d1(s1.port());
        // Another edgelock client's Redlock release, node by node.
        const later act(150, [&] {
            d0.command(marked_release(name, "other"));
            d1.command(marked_release(name, "other"));
        });
        r = l.acquire(duration::seconds(6));
    }
    INFO(what(r));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(ms_since(t0) < told_bound_ms);
    CHECK(a0.command({"GET", key_of(name)}).text == hex(l.token()));
    CHECK(a1.command({"GET", key_of(name)}).text == hex(l.token()));
    CHECK(a2.command({"GET", key_of(name)}).text == "other");  // never freed there
    must_release(l);
}

TEST_CASE("notify: notify off, or an ACL without CLIENT TRACKING, is not told",
          "[integration][notify]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    client_options o = resp3();
    o.notify = false;
    client<1> quiet;
    configure(quiet, urls, o);
    REQUIRE(quiet.connect(port::now() + duration::seconds(3)) == 1);
    CHECK_FALSE(quiet.node(0).tracking);
    // And a server whose ACL denies CLIENT TRACKING keeps the node.
    redis_server acl(
        {"--user", "default", "on", "nopass", "~*", "&*", "+@all", "-client|tracking"});
    const url_list acl_urls({redis_url(acl)});
    client<1> denied;
    configure(denied, acl_urls, resp3());
    REQUIRE(denied.connect(port::now() + duration::seconds(3)) == 1);
    INFO(what(denied.node(0)));
    CHECK(denied.node(0).state == node_state::ready);
    // Its waiter asks for its name, is refused, and polls: it acquires
    // after the holder's key expires, and the node stays.
    redis_client admin(acl.port());
    REQUIRE(admin.command({"SET", "jobs", "other", "PX", "300"}).text == "OK");
    REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
    client_lock waiter;
    REQUIRE(waiter.attach(denied, "jobs", options(5000, 200)) == client_errc::ok);
    const op_result r = waiter.acquire(duration::seconds(4));
    INFO(what(r));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(error_calls(admin, "NOPERM") == 1);  // asked once, not on every try
    CHECK(denied.node(0).state == node_state::ready);
    must_release(waiter);
}

TEST_CASE("notify: a lock of the same client is woken by its neighbour's release",
          "[integration][notify]") {
    // The server does not tell a connection of its own writes (NOLOOP); the
    // client tells its own locks.
    redis_server srv;
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls, resp3());
    client_lock first;
    client_lock second;
    REQUIRE(first.attach(c, "notify-neighbour", waiting_options(), no_watchdog()) ==
            client_errc::ok);
    REQUIRE(second.attach(c, "notify-neighbour", waiting_options(), no_watchdog()) ==
            client_errc::ok);
    must_acquire(first);
    REQUIRE(second.start_acquire(1000, duration::seconds(6)) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(100)) == client_errc::ok);
    REQUIRE_FALSE(second.held());  // busy, waiting
    const instant t0 = port::now();
    must_release(first);
    while (!second.held() && ms_since(t0) < told_bound_ms * 2) {
        REQUIRE(c.run_for(duration::millis(10)) == client_errc::ok);
    }
    CHECK(second.held());
    CHECK(ms_since(t0) < told_bound_ms);
    must_release(second);
}
