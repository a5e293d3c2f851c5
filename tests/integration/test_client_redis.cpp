// The driver (client<N>, client_lock) against real redis-server processes:
// mutual exclusion, expiry, renew and the watchdog, AUTH, ACL users, SELECT,
// Unix sockets, the NOSCRIPT fallback, Redlock with dead and frozen nodes,
// reconnects (and a reentrant lock lost across a restart), RESP3, the
// event-loop API, configuration errors, bad input (a refused call changes
// nothing) and pipelining.
//
// Timing checks are sanity bounds several times what a run needs, so a slow
// machine does not fail them. Throughput is measured by tests/bench, not here.
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
using edgelock_test::command_reply;
using edgelock_test::configure;
using edgelock_test::connection_id;
using edgelock_test::cpu_s;
using edgelock_test::hex;
using edgelock_test::key_of;
using edgelock_test::ms_since;
using edgelock_test::must_acquire;
using edgelock_test::must_command;
using edgelock_test::must_release;
using edgelock_test::no_watchdog;
using edgelock_test::options;
using edgelock_test::recorder;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::redis_url;
using edgelock_test::sleep_ms;
using edgelock_test::str;
using edgelock_test::url_list;
using edgelock_test::what;

namespace {

long long exists_in_db(redis_client& admin, int db, const std::string& key) {
    admin.command({"SELECT", std::to_string(db)});
    const long long n = admin.command({"EXISTS", key}).integer;
    admin.command({"SELECT", "0"});
    return n;
}

}  // namespace

TEST_CASE("client: two clients exclude each other", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-mutex";
    url_list urls({redis_url(srv)});
    client<1> ca;
    client<1> cb;
    configure(ca, urls);
    configure(cb, urls);
    client_lock a;
    client_lock b;
    REQUIRE(a.attach(ca, name, options(5000, 200)) == client_errc::ok);
    REQUIRE(b.attach(cb, name, options(5000, 200)) == client_errc::ok);

    must_acquire(a);
    CHECK(a.held());
    CHECK(admin.command({"GET", key_of(name)}).text == hex(a.token()));

    op_result r = b.try_acquire();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::busy);
    CHECK(r.event.holder_ttl_ms > 0);
    CHECK(r.event.holder_ttl_ms <= 5000);
    CHECK_FALSE(b.held());
    CHECK(admin.command({"GET", key_of(name)}).text == hex(a.token()));

    must_release(a);
    CHECK_FALSE(a.held());
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);

    must_acquire(b);
    CHECK(b.held());
    CHECK(admin.command({"GET", key_of(name)}).text == hex(b.token()));
    must_release(b);
}

TEST_CASE("client: an unreleased lock expires with its ttl", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-expiry";
    url_list urls({redis_url(srv)});
    client<1> ca;
    client<1> cb;
    configure(ca, urls);
    configure(cb, urls);
    client_lock a;
    client_lock b;
    REQUIRE(a.attach(ca, name, options(300, 100), no_watchdog()) == client_errc::ok);
    REQUIRE(b.attach(cb, name, options(300, 100), no_watchdog()) == client_errc::ok);
    // Connected first: the validity counts from the round's start, which for
    // a first operation comes after the connection's set-up (slow under qemu).
    REQUIRE(ca.connect(port::now() + duration::seconds(5)) == 1);
    REQUIRE(cb.connect(port::now() + duration::seconds(5)) == 1);

    const instant start = port::now();
    must_acquire(a);
    const instant validity = a.validity_deadline();
    CHECK(validity > port::now());
    CHECK(validity <= start + duration::millis(300));
    CHECK(a.held());
    CHECK(b.try_acquire().event.kind == lock_event_kind::busy);

    // Not driven at all: held() still turns false at the validity deadline.
    while (port::now() < validity) {
        sleep_ms(5);
    }
    CHECK_FALSE(a.held());
    while (port::now() < start + duration::millis(400)) {
        sleep_ms(10);
    }
    CHECK_FALSE(a.held());
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);

    must_acquire(b);
    CHECK(admin.command({"GET", key_of(name)}).text == hex(b.token()));
    CHECK_FALSE(a.held());

    // a was never driven past its validity: held() says no, so an acquire
    // must be accepted too (it retries until b's key expires).
    CHECK(a.state() == lock_state::held);  // the machine has not been told yet
    instant t = port::now();
    op_result r = a.acquire(duration::seconds(3));
    {
        INFO(what(r));
        CHECK(r.error == client_errc::ok);
    }
    if (r.error == client_errc::busy) {
        ca.run_for(duration::millis(1));  // lets the machine see its deadline
        CHECK(a.state() == lock_state::idle);
        t = port::now();
        r = a.acquire(duration::seconds(3));
    }
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::acquired);
    CHECK(ms_since(t) < 3000);
    CHECK(admin.command({"GET", key_of(name)}).text == hex(a.token()));
    must_release(a);
}

TEST_CASE("client: a wrong token neither releases nor renews", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-token";
    const std::string key = key_of(name);
    url_list urls({redis_url(srv)});
    client<1> ca;
    client<1> cb;
    configure(ca, urls);
    configure(cb, urls);
    client_lock a;
    client_lock b;
    REQUIRE(a.attach(ca, name, options(10000, 200)) == client_errc::ok);
    REQUIRE(b.attach(cb, name, options(10000, 200)) == client_errc::ok);

    must_acquire(a);
    const std::string token = hex(a.token());
    CHECK(admin.command({"GET", key}).text == token);

    // b holds nothing: nothing to release or renew, and nothing sent.
    CHECK(b.release().error == client_errc::not_held);
    CHECK(b.renew().error == client_errc::not_held);
    CHECK(b.start_release() == client_errc::not_held);
    CHECK(admin.command({"GET", key}).text == token);

    // The scripts themselves refuse a token that is not the holder's.
    const std::string wrong(owner_token::hex_size, '0');
    REQUIRE(wrong != token);
    const std::string release_text(script_release.text.data, script_release.text.size);
    const std::string renew_text(script_renew.text.data, script_renew.text.size);
    CHECK(admin.command({"EVAL", release_text, "1", key, wrong}).integer == 0);
    CHECK(admin.command({"EVAL", renew_text, "1", key, wrong, "60000"}).integer == 0);
    CHECK(admin.command({"GET", key}).text == token);
    CHECK(admin.command({"PTTL", key}).integer <= 10000);

    // The holder still can.
    admin.command({"PEXPIRE", key, "5000"});
    const op_result r = a.renew();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::renewed);
    CHECK(admin.command({"PTTL", key}).integer > 5000);
    must_release(a);
    CHECK(admin.command({"EXISTS", key}).integer == 0);
}

TEST_CASE("client: renew keeps a lock past its ttl", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-renew";
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    recorder rec;
    rec.listen(l);
    REQUIRE(l.attach(c, name, options(500, 100), no_watchdog()) == client_errc::ok);

    const instant start = port::now();
    must_acquire(l);
    instant validity = l.validity_deadline();
    for (int i = 0; i < 5; ++i) {  // 5 x 250 ms: well past the 500 ms ttl
        c.run_for(duration::millis(250));
        const op_result r = l.renew();
        INFO("renew " << i << ": " << what(r));
        REQUIRE(r.error == client_errc::ok);
        REQUIRE(r.event.kind == lock_event_kind::renewed);
        CHECK(r.event.validity_deadline > validity);
        validity = r.event.validity_deadline;
    }
    CHECK(ms_since(start) > 1000);
    CHECK(l.held());
    CHECK(l.validity_deadline() == validity);
    const long long pttl = admin.command({"PTTL", key_of(name)}).integer;
    CHECK(pttl > 0);
    CHECK(pttl <= 500);
    CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
    CHECK(rec.count(lock_event_kind::renewed) == 5);
    CHECK(rec.count(lock_event_kind::lost) == 0);
    must_release(l);
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
}

TEST_CASE("client: the watchdog renews, and reports a lock lost", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    const unsigned ttl_ms = 600;

    SECTION("renewed while driven; lost once the key is gone") {
        const char* name = "client-watchdog";
        client_lock l;
        recorder rec;
        rec.listen(l);
        REQUIRE(l.attach(c, name, options(ttl_ms, 100)) == client_errc::ok);
        must_acquire(l);
        REQUIRE(c.run_for(duration::millis(1500)) == client_errc::ok);
        INFO("events: " << rec.list());
        CHECK(l.held());
        CHECK(rec.count(lock_event_kind::renewed) >= 2);
        CHECK(rec.count(lock_event_kind::lost) == 0);
        const long long pttl = admin.command({"PTTL", key_of(name)}).integer;
        CHECK(pttl > 0);
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));

        // The key vanishes (an operator, a flush, a failover): the next renew says so.
        admin.command({"DEL", key_of(name)});
        const instant gone = port::now();
        while (rec.count(lock_event_kind::lost) == 0 &&
               port::now() < gone + duration::millis(ttl_ms + 1000)) {
            c.run_for(duration::millis(20));
        }
        REQUIRE(rec.count(lock_event_kind::lost) == 1);
        const lock_event& lost =
            rec.events[static_cast<std::size_t>(rec.first(lock_event_kind::lost))];
        CHECK(lost.reason == lock_failure::not_ours);
        CHECK(l.last_event().kind == lock_event_kind::lost);
        CHECK_FALSE(l.held());
        CHECK(l.state() == lock_state::idle);
        CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);  // not resurrected
        CHECK(l.release().error == client_errc::not_held);
    }

    SECTION("a frozen server: renew_failed, then lost by the validity deadline") {
        const char* name = "client-watchdog-frozen";
        client_lock l;
        recorder rec;
        rec.listen(l);
        REQUIRE(l.attach(c, name, options(ttl_ms, 50)) == client_errc::ok);
        must_acquire(l);
        const instant validity = l.validity_deadline();
        srv.pause();
        c.run_for(duration::millis(ttl_ms + 500));
        srv.resume();
        INFO("events: " << rec.list());
        const int failed = rec.first(lock_event_kind::renew_failed);
        const int lost = rec.first(lock_event_kind::lost);
        CHECK(failed >= 0);
        REQUIRE(lost >= 0);
        CHECK(failed < lost);
        CHECK(rec.count(lock_event_kind::renewed) == 0);
        const recorder::entry& e = rec.events[static_cast<std::size_t>(lost)];
        CHECK(e.reason == lock_failure::validity_ended);
        CHECK(e.at >= validity);
        CHECK(e.at <= validity + duration::millis(100));
        CHECK_FALSE(l.held());

        // Thawed, the server answers the renews it sat on (late, ignored) and
        // the same connection serves the next acquisition.
        const op_result r = l.acquire(duration::seconds(2));
        INFO(what(r) << "; node: " << what(c.node(0)));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::acquired);
        must_release(l);
    }
}

TEST_CASE("client: AUTH with requirepass", "[integration][client]") {
    redis_server srv({"--requirepass", "s3cret"});
    const char* name = "client-auth";

    SECTION("the URL's password") {
        url_list urls({redis_url(srv, ":s3cret")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(c.node(0).state == node_state::ready);
        CHECK(c.node(0).error == node_error::none);
        must_release(l);
    }

    SECTION("a wrong password") {
        url_list urls({redis_url(srv, ":wrong")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        const op_result r = l.try_acquire();
        const node_info n = c.node(0);
        INFO(what(r) << "; node: " << what(n));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(r.event.reason == lock_failure::no_quorum);
        CHECK(n.error == node_error::auth_failed);
        CHECK_FALSE(n.message.empty());
        const std::string m = str(n.message);
        CHECK((m.find("WRONGPASS") != std::string::npos || m.find("invalid") != std::string::npos));
        CHECK_FALSE(l.held());
    }

    SECTION("no password at all") {
        url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        const op_result r = l.try_acquire();
        const node_info n = c.node(0);
        INFO(what(r) << "; node: " << what(n));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(n.error == node_error::auth_failed);
        CHECK_FALSE(n.message.empty());
    }

    SECTION("client_options.password overrides the URL") {
        url_list urls({redis_url(srv), redis_url(srv, ":wrong")});
        client_options o;
        o.password = "s3cret";
        for (std::size_t i = 0; i < urls.size(); ++i) {
            INFO("url " << urls.text[i]);
            client<1> c;
            REQUIRE(c.configure(urls.data() + i, 1, o) == client_errc::ok);
            client_lock l;
            REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
            must_acquire(l);
            must_release(l);
        }
    }
}

TEST_CASE("client: an ACL user", "[integration][client]") {
    redis_server srv({"--user", "gw", "on", ">gwpass", "~*", "&*", "+@all"});
    const char* name = "client-acl";
    {
        redis_client admin(srv.port());
        const edgelock_test::reply who = admin.command({"ACL", "WHOAMI"});
        REQUIRE(who.text == "default");
        REQUIRE(admin.command({"AUTH", "gw", "gwpass"}).text == "OK");
    }

    SECTION("user and password in the URL") {
        url_list urls({redis_url(srv, "gw:gwpass")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        redis_client admin(srv.port());
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
        const std::string clients = admin.command({"CLIENT", "LIST"}).text;
        CHECK(clients.find("user=gw") != std::string::npos);
        must_release(l);
    }

    SECTION("user and password over RESP3 (HELLO 3 AUTH)") {
        url_list urls({redis_url(srv, "gw:gwpass")});
        client_options o;
        o.resp3 = true;
        client<1> c;
        configure(c, urls, o);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        must_release(l);
    }

    SECTION("a wrong password") {
        url_list urls({redis_url(srv, "gw:nope")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        const op_result r = l.try_acquire();
        const node_info n = c.node(0);
        INFO(what(r) << "; node: " << what(n));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(n.error == node_error::auth_failed);
        CHECK_FALSE(n.message.empty());
    }
}

TEST_CASE("client: the URL's database is SELECTed", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-select";
    url_list urls({redis_url(srv, "", "/3")});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
    must_acquire(l);
    CHECK(exists_in_db(admin, 3, key_of(name)) == 1);
    CHECK(exists_in_db(admin, 0, key_of(name)) == 0);
    must_release(l);
    CHECK(exists_in_db(admin, 3, key_of(name)) == 0);
}

TEST_CASE("client: a Unix socket, with and without ?db=", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.unix_path());
    const char* name = "client-unix";

    SECTION("db 0") {
        url_list urls({"unix://" + srv.unix_path()});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
        must_release(l);
        CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    }

    SECTION("db 2") {
        url_list urls({"unix://" + srv.unix_path() + "?db=2"});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(exists_in_db(admin, 2, key_of(name)) == 1);
        CHECK(exists_in_db(admin, 0, key_of(name)) == 0);
        must_release(l);
        CHECK(exists_in_db(admin, 2, key_of(name)) == 0);
    }
}

TEST_CASE("client: SCRIPT FLUSH between operations falls back to EVAL", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-noscript";
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
    must_acquire(l);
    must_release(l);
    for (int i = 0; i < 2; ++i) {
        INFO("round " << i);
        REQUIRE(admin.command({"SCRIPT", "FLUSH"}).text == "OK");
        must_acquire(l);
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
        REQUIRE(admin.command({"SCRIPT", "FLUSH"}).text == "OK");
        const op_result r = l.renew();
        INFO(what(r));
        CHECK(r.event.kind == lock_event_kind::renewed);
        REQUIRE(admin.command({"SCRIPT", "FLUSH"}).text == "OK");
        must_release(l);
        CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    }
    CHECK(c.node(0).state == node_state::ready);
}

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

TEST_CASE("client: RESP3 via HELLO 3", "[integration][client]") {
    client_options o;
    o.resp3 = true;

    SECTION("one node") {
        redis_server srv;
        redis_client admin(srv.port());
        const char* name = "client-resp3";
        url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls, o);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
        const std::string clients = admin.command({"CLIENT", "LIST"}).text;
        INFO(clients);
        CHECK(clients.find("name=edgelock") != std::string::npos);
        CHECK(clients.find("resp=3") != std::string::npos);
        const op_result r = l.renew();
        CHECK(r.event.kind == lock_event_kind::renewed);
        must_release(l);
        CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    }

    SECTION("fenced Redlock over 3 nodes") {
        redis_server s0;
        redis_server s1;
        redis_server s2;
        const char* name = "client-resp3-fenced";
        url_list urls({redis_url(s0), redis_url(s1), redis_url(s2)});
        client<3> c;
        configure(c, urls, o);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200, lock_mode::fenced)) == client_errc::ok);
        std::uint64_t last = 0;
        for (int i = 0; i < 3; ++i) {
            const op_result r = l.try_acquire();
            INFO("round " << i << ": " << what(r));
            REQUIRE(r.error == client_errc::ok);
            REQUIRE(r.event.kind == lock_event_kind::acquired);
            CHECK(r.event.fence > last);
            CHECK(l.fence() == r.event.fence);
            last = r.event.fence;
            must_release(l);
        }
        redis_client a0(s0.port());
        CHECK(a0.command({"EXISTS", key_of(name)}).integer == 0);
    }
}

TEST_CASE("client: the event-loop API alone drives a lock", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-event-loop";
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    recorder rec;
    rec.listen(l);
    REQUIRE(l.attach(c, name, options(5000, 200), no_watchdog()) == client_errc::ok);

    // The application's loop: wait on what the client wants until its deadline.
    int wakeups = 0;
    const auto drive_until = [&](lock_event_kind kind) {
        const instant give_up = port::now() + duration::seconds(5);
        while (rec.count(kind) == 0 && port::now() < give_up) {
            port::wait_entry entries[4];
            const std::size_t count = c.wanted(entries, 4);
            REQUIRE(count <= 1);
            const instant deadline = earliest(c.next_deadline(), give_up);
            const int ready = port::wait(entries, count, deadline);
            REQUIRE(ready >= 0);
            ++wakeups;
            if (ready == 0) {
                c.on_timeout();
                continue;
            }
            for (std::size_t i = 0; i < count; ++i) {
                if (entries[i].ready != 0) {
                    c.on_ready(entries[i].fd, entries[i].ready);
                }
            }
        }
        INFO("events: " << rec.list());
        REQUIRE(rec.count(kind) == 1);
    };

    CHECK(c.next_deadline().is_never());
    REQUIRE(l.start_acquire(1, duration::millis(0)) == client_errc::ok);
    CHECK(l.start_acquire(1, duration::millis(0)) == client_errc::busy);
    drive_until(lock_event_kind::acquired);
    CHECK(l.held());
    CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
    // Held with no watchdog: only the validity deadline is due.
    CHECK(c.next_deadline() == l.validity_deadline());

    REQUIRE(l.start_renew() == client_errc::ok);
    drive_until(lock_event_kind::renewed);

    REQUIRE(l.start_release() == client_errc::ok);
    drive_until(lock_event_kind::released);
    CHECK_FALSE(l.held());
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    CHECK(rec.events.size() == 3);
    CHECK(wakeups < 100);
    // The connection stays for the next operation; nothing is due.
    CHECK(c.next_deadline().is_never());
    port::wait_entry e[1];
    CHECK(c.wanted(e, 1) == 1);
}

TEST_CASE("client: configuration and misuse errors", "[integration][client]") {
    redis_server srv;
    const std::string good = redis_url(srv);

    client<2> c;
    {
        const str_view bad[] = {str_view(good.data(), good.size()), "http://127.0.0.1"};
        CHECK(c.configure(bad, 2, {}) == client_errc::bad_url);
        CHECK(c.bad_url_index() == 1);
        CHECK(c.bad_url_error() == url_errc::bad_scheme);
    }
    {
        const str_view bad[] = {"redis://127.0.0.1:99999"};
        CHECK(c.configure(bad, 1, {}) == client_errc::bad_url);
        CHECK(c.bad_url_index() == 0);
        CHECK(c.bad_url_error() == url_errc::bad_port);
    }
    {
        const str_view tls[] = {str_view(good.data(), good.size()), "rediss://127.0.0.1:6380"};
        CHECK(c.configure(tls, 2, {}) == client_errc::tls_not_built_in);
        CHECK(c.bad_url_index() == 1);
    }
    {
        const str_view user[] = {"redis://gw@127.0.0.1:6379"};
        CHECK(c.configure(user, 1, {}) == client_errc::user_without_password);
        client_options o;
        o.password = "pw";
        CHECK(c.configure(user, 1, o) == client_errc::ok);
    }
    {
        const str_view three[] = {"redis://a", "redis://b", "redis://c"};
        CHECK(c.configure(three, 3, {}) == client_errc::bad_node_count);
        CHECK(c.configure(three, 0, {}) == client_errc::bad_node_count);
        client_options o;
        o.connect_timeout = duration{};
        CHECK(c.configure(three, 1, o) == client_errc::bad_option);
        o = client_options{};
        o.client_name = "no spaces";
        CHECK(c.configure(three, 1, o) == client_errc::bad_option);
    }

    // Attach needs a configured client and a lock configuration it accepts.
    client<1> fresh;
    client_lock l;
    CHECK(l.attach(fresh, "client-config") == client_errc::not_configured);
    CHECK_FALSE(l.attached());

    const str_view one[] = {str_view(good.data(), good.size())};
    REQUIRE(c.configure(one, 1, {}) == client_errc::ok);
    lock_options bad_ttl = options(5000, 200);
    bad_ttl.ttl = duration::millis(lock_max_ttl_ms + 1000);
    CHECK(l.attach(c, "client-config", bad_ttl) == client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::bad_ttl);
    bad_ttl.ttl = duration{};
    CHECK(l.attach(c, "client-config", bad_ttl) == client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::bad_ttl);
    CHECK(l.attach(c, "client-config", options(100, 100)) == client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::bad_node_timeout);
    CHECK(l.attach(c, "", options(5000, 200)) == client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::empty_name);
    CHECK_FALSE(l.attached());

    // Unattached: every operation says so.
    CHECK(l.try_acquire().error == client_errc::not_attached);
    CHECK(l.acquire(duration::millis(10)).error == client_errc::not_attached);
    CHECK(l.renew().error == client_errc::not_attached);
    CHECK(l.release().error == client_errc::not_attached);
    CHECK(l.start_acquire(1, duration::millis(10)) == client_errc::not_attached);
    CHECK(l.start_renew() == client_errc::not_attached);
    CHECK(l.start_release() == client_errc::not_attached);
    CHECK_FALSE(l.held());

    REQUIRE(l.attach(c, "client-config", options(5000, 200)) == client_errc::ok);
    CHECK(l.attached());
    CHECK(l.attach(c, "client-config", options(5000, 200)) == client_errc::already_attached);
    CHECK(c.configure(one, 1, {}) == client_errc::in_use);
    CHECK(l.release().error == client_errc::not_held);
    CHECK(l.renew().error == client_errc::not_held);
    CHECK(l.start_release() == client_errc::not_held);
    CHECK(l.start_acquire(0, duration::millis(10)) == client_errc::bad_option);

    // None of that broke anything.
    must_acquire(l);
    must_release(l);
    l.detach();
    CHECK_FALSE(l.attached());
    CHECK(l.try_acquire().error == client_errc::not_attached);
    CHECK(c.configure(one, 1, {}) == client_errc::ok);
}

// --- bad input: every refused call says why AND changes nothing ---------------------------
//
// Not the node list, not a connection (none made, none dropped), not a held
// lock's token, fence or validity, not a pending operation's retry policy.
// "client: configuration and misuse errors" above checks the error codes; the
// cases here add what stays unchanged, and the calls it does not reach:
// command(), resume(), the event-loop entry points, calls from callbacks.

namespace {

// A held lock as its owner sees it, and as Redis holds it.
struct held_view {
    bool held = false;
    lock_state state = lock_state::unconfigured;
    std::string token;
    std::uint64_t fence = 0;
    instant validity;
    std::string value;  // GET {name}

    bool operator==(const held_view& o) const {
        return held == o.held && state == o.state && token == o.token && fence == o.fence &&
               validity == o.validity && value == o.value;
    }
};

held_view view_of(const client_lock& l, redis_client& admin, const char* name) {
    held_view v;
    v.held = l.held();
    v.state = l.state();
    v.token = hex(l.token());
    v.fence = l.fence();
    v.validity = l.validity_deadline();
    const edgelock_test::reply r = admin.command({"GET", key_of(name)});
    v.value = r.type == '$' ? r.text : std::string("<none>");
    return v;
}

std::string show(const held_view& v) {
    return std::string("held=") + (v.held ? "yes" : "no") + " state=" + describe(v.state) +
           " token=" + v.token + " fence=" + std::to_string(v.fence) +
           " validity=" + std::to_string(v.validity.us) + " redis=" + v.value;
}

}  // namespace

// --- bad input: client_base::configure ----------------------------------------------------

TEST_CASE("client bad input: a rejected configure keeps the nodes and their connections",
          "[integration][bad-input]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    client<2> c;
    configure(c, urls);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    const long long id = connection_id(c, 0);

    const std::string good = redis_url(srv);
    const std::string long_secret(node_url_max_secret + 1, 's');
    const std::string name65(65, 'n');
    auto with = [](auto f) {
        client_options o;
        f(o);
        return o;
    };
    struct row {
        const char* what;
        std::vector<std::string> urls;  // empty: a null array
        std::size_t count;
        client_options options;
        client_errc want;
    };
    const std::vector<row> rows = {
        {"a null URL array with a count", {}, 1, client_options{}, client_errc::bad_node_count},
        {"stall_timeout 0",
         {good},
         1,
         with([](client_options& o) { o.stall_timeout = duration{}; }),
         client_errc::bad_option},
        {"reconnect_min 0",
         {good},
         1,
         with([](client_options& o) { o.reconnect_min = duration{}; }),
         client_errc::bad_option},
        {"reconnect_min above reconnect_max",
         {good},
         1,
         with([](client_options& o) {
             o.reconnect_min = duration::seconds(3);
             o.reconnect_max = duration::seconds(2);
         }),
         client_errc::bad_option},
        {"a client name of 65 bytes",
         {good},
         1,
         with([&](client_options& o) { o.client_name = str_view(name65.data(), name65.size()); }),
         client_errc::bad_option},
        {"a client name with a NUL",
         {good},
         1,
         with([](client_options& o) { o.client_name = str_view("a\0b", 3); }),
         client_errc::bad_option},
        {"a client name with a newline",
         {good},
         1,
         with([](client_options& o) { o.client_name = "a\r\nCONFIG SET"; }),
         client_errc::bad_option},
        {"a user name of 257 bytes",
         {good},
         1,
         with([&](client_options& o) {
             o.username = str_view(long_secret.data(), long_secret.size());
             o.password = "pw";
         }),
         client_errc::secret_too_long},
        {"a password of 257 bytes",
         {good},
         1,
         with([&](client_options& o) {
             o.password = str_view(long_secret.data(), long_secret.size());
         }),
         client_errc::secret_too_long},
        {"a user name in the options, no password anywhere",
         {good},
         1,
         with([](client_options& o) { o.username = "gw"; }),
         client_errc::user_without_password},
        {"a bad URL after a good one",
         {good, good + "/x"},
         2,
         client_options{},
         client_errc::bad_url},
        {"TLS after a good one",
         {good, "rediss://127.0.0.1:1"},
         2,
         client_options{},
         client_errc::tls_not_built_in},
    };
    for (const row& r : rows) {
        INFO(r.what);
        std::vector<str_view> views;
        for (const std::string& u : r.urls) {
            views.emplace_back(u.data(), u.size());
        }
        CHECK(c.configure(r.urls.empty() ? nullptr : views.data(), r.count, r.options) == r.want);
        CHECK(c.node_count() == 1);
        CHECK(c.ready_count() == 1);
        const node_info n = c.node(0);
        INFO(what(n));
        CHECK(n.state == node_state::ready);
        CHECK(n.error == node_error::none);
        CHECK(c.node(1).state == node_state::down);
    }
    CHECK(c.bad_url_index() == 1);
    CHECK(c.bad_url_error() == url_errc::tls_not_built_in);

    // The same connection, still named as configured, still answering.
    CHECK(connection_id(c, 0) == id);
    CHECK(must_command(c, 0, {"CLIENT", "GETNAME"}).text == "edgelock");

    // At the limits it is accepted: a 64-byte name, secrets of 256 bytes are
    // not refused (the server then judges the password).
    const std::string name64(64, 'n');
    client_options o;
    o.client_name = str_view(name64.data(), name64.size());
    configure(c, urls, o);
    CHECK(must_command(c, 0, {"CLIENT", "GETNAME"}).text == name64);
}

// --- client_base::command -----------------------------------------------------------------

TEST_CASE("client bad input: command() checks its arguments before touching the network",
          "[integration][bad-input]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    client<1> c;
    const str_view ping[] = {"PING"};
    command_reply rec;
    CHECK(c.command(0, ping, 1, port::now() + duration::seconds(1), &command_reply::take, &rec) ==
          client_errc::not_configured);
    configure(c, urls);

    // The largest ECHO the send buffer holds, and one byte more.
    std::size_t fits = 1;
    for (;;) {
        const std::string probe(fits + 1, 'e');
        const str_view args[] = {"ECHO", str_view(probe.data(), probe.size())};
        if (resp_command_size(args, 2) > EDGELOCK_CLIENT_TX_BUFFER) {
            break;
        }
        ++fits;
    }
    const std::string too_big(fits + 1, 'e');
    const str_view echo_big[] = {"ECHO", str_view(too_big.data(), too_big.size())};
    REQUIRE(resp_command_size(echo_big, 2) == EDGELOCK_CLIENT_TX_BUFFER + 1);

    struct row {
        const char* what;
        std::uint8_t index;
        const str_view* args;
        std::size_t argc;
        reply_callback fn;
    };
    const row rows[] = {
        {"node index 1 of 1", 1, ping, 1, &command_reply::take},
        {"node index 255", 255, ping, 1, &command_reply::take},
        {"no callback", 0, ping, 1, nullptr},
        {"no arguments", 0, ping, 0, &command_reply::take},
        {"a null argument array with a count", 0, nullptr, 2, &command_reply::take},
        {"a command larger than the send buffer", 0, echo_big, 2, &command_reply::take},
    };
    const auto refuse_all = [&](node_state expected) {
        for (const row& r : rows) {
            INFO(r.what);
            const instant t = port::now();
            CHECK(c.command(r.index, r.args, r.argc, t + duration::seconds(3), r.fn, &rec) ==
                  client_errc::bad_option);
            CHECK(ms_since(t) < 200);  // refused at once, not at the deadline
            CHECK(rec.calls == 0);
            const node_info n = c.node(0);
            INFO(what(n));
            CHECK(n.state == expected);
        }
    };
    // Not connected yet: a refused command connects nothing.
    refuse_all(node_state::down);
    CHECK(c.next_deadline().is_never());

    // Connected: refused commands queue nothing, so the next reply is the next command's.
    CHECK(must_command(c, 0, {"PING"}).text == "PONG");
    refuse_all(node_state::ready);
    const std::string fitting(fits, 'e');
    const command_reply echoed = must_command(c, 0, {"ECHO", fitting});
    CHECK(echoed.text == fitting);
    CHECK(must_command(c, 0, {"ECHO", "next"}).text == "next");
}

TEST_CASE("client bad input: command() on a dead or frozen node ends in bounded time",
          "[integration][bad-input]") {
    redis_server srv;
    redis_server dead;
    dead.kill();
    const url_list urls({redis_url(srv), redis_url(dead)});
    client<2> c;
    configure(c, urls);
    const str_view ping[] = {"PING"};
    command_reply rec;

    instant t = port::now();
    CHECK(c.command(1, ping, 1, t + duration::seconds(3), &command_reply::take, &rec) ==
          client_errc::node_unavailable);
    CHECK(ms_since(t) < 1500);  // refused: known at once, not at the deadline
    CHECK(rec.calls == 0);
    CHECK(c.node(1).error == node_error::refused);

    // A frozen node: given up at the deadline; its late reply goes to nobody.
    CHECK(must_command(c, 0, {"PING"}).text == "PONG");
    srv.pause();
    t = port::now();
    CHECK(c.command(0, ping, 1, t + duration::millis(300), &command_reply::take, &rec) ==
          client_errc::timed_out);
    CHECK(ms_since(t) >= 250);
    CHECK(ms_since(t) < 1500);
    srv.resume();
    CHECK(must_command(c, 0, {"ECHO", "after"}).text == "after");
    CHECK(rec.calls == 0);
}

// --- client_lock: misuse of a held lock ---------------------------------------------------

TEST_CASE("client bad input: misuse of a held lock leaves it held, with the same token",
          "[integration][bad-input]") {
    redis_server srv;
    redis_server other_srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    const url_list other_urls({redis_url(other_srv)});
    client<1> c;
    client<1> other;
    configure(c, urls);
    configure(other, other_urls);
    const char* name = "bad-held";
    client_lock l;
    REQUIRE(l.attach(c, name, options(10000, 500, lock_mode::fenced), no_watchdog()) ==
            client_errc::ok);
    must_acquire(l);
    const held_view before = view_of(l, admin, name);
    REQUIRE(before.held);
    REQUIRE(before.value == before.token);
    REQUIRE(before.fence > 0);

    owner_token theirs;
    REQUIRE(theirs.from_hex("00112233445566778899aabbccddeeff", 32));
    const auto unchanged = [&](const char* what) {
        INFO(what);
        const held_view now = view_of(l, admin, name);
        INFO("before: " << show(before) << "\nafter:  " << show(now));
        CHECK(now == before);
        CHECK(l.attached());
    };

    CHECK(l.try_acquire().error == client_errc::busy);
    unchanged("try_acquire");
    CHECK(l.acquire(duration::millis(500)).error == client_errc::busy);
    unchanged("acquire");
    CHECK(l.start_acquire(3, duration::seconds(1)) == client_errc::busy);
    unchanged("start_acquire");
    CHECK(l.start_acquire(0, duration::seconds(1)) == client_errc::bad_option);
    unchanged("start_acquire with 0 tries");
    CHECK(l.resume(theirs) == client_errc::busy);
    unchanged("resume");
    CHECK(l.attach(other, name, options(10000, 500)) == client_errc::already_attached);
    unchanged("attach to another client");
    CHECK(c.configure(urls.views.data(), 1, client_options{}) == client_errc::in_use);
    unchanged("configure while attached");
    CHECK(other.ready_count() == 0);  // the other client was never touched

    must_release(l);
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
}

// A rejected start_acquire/acquire/try_acquire must not rewrite the retry policy
// of an acquisition that was started but is still waiting for its node.
TEST_CASE("client bad input: a refused acquire leaves a pending acquisition's retries",
          "[integration][bad-input]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    const char* name = "bad-pending";

    // Someone else holds the lock: an acquisition ends busy after its tries.
    client<1> holder_client;
    configure(holder_client, urls);
    client_lock holder;
    REQUIRE(holder.attach(holder_client, name, options(10000, 500), no_watchdog()) ==
            client_errc::ok);
    must_acquire(holder);

    client<1> c;  // not connected: the acquisition waits for the set-up
    configure(c, urls);
    client_lock l;
    recorder rec;
    rec.listen(l);
    REQUIRE(l.attach(c, name, options(10000, 500), no_watchdog()) == client_errc::ok);
    REQUIRE(l.start_acquire(1, duration{}) == client_errc::ok);  // one try
    REQUIRE(c.node(0).state == node_state::down);  // nothing happens before the next call
    c.on_timeout();                                // which starts connecting
    const node_state s = c.node(0).state;
    INFO("node 0: " << describe(s));
    REQUIRE(l.state() == lock_state::idle);  // started, not yet handed to the machine
    REQUIRE((s == node_state::connecting || s == node_state::handshake));

    const instant t = port::now();
    CHECK(l.try_acquire().error == client_errc::busy);
    CHECK(l.acquire(duration::seconds(30)).error == client_errc::busy);
    CHECK(l.start_acquire(50, duration::seconds(30)) == client_errc::busy);
    CHECK(ms_since(t) < 300);
    CHECK(rec.events.empty());

    // One try, as asked first: busy, and nothing left running or waiting.
    const instant give_up = port::now() + duration::seconds(3);
    while (rec.events.empty() && port::now() < give_up) {
        REQUIRE(c.run_for(duration::millis(20)) == client_errc::ok);
    }
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].kind == lock_event_kind::busy);
    REQUIRE(c.run_for(duration::millis(300)) == client_errc::ok);
    CHECK(l.state() == lock_state::idle);
    CHECK(rec.events.size() == 1);
    CHECK(c.next_deadline().is_never());
    must_release(holder);
}

// --- client_lock::resume --------------------------------------------------------------------

TEST_CASE("client bad input: resume refuses what it cannot take over", "[integration][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    owner_token theirs;
    REQUIRE(theirs.from_hex("00112233445566778899aabbccddeeff", 32));

    client_lock unattached;
    CHECK(unattached.resume(theirs) == client_errc::not_attached);
    CHECK_FALSE(unattached.held());
    CHECK(hex(unattached.token()) == std::string(32, '0'));

    client_lock reentrant;
    REQUIRE(reentrant.attach(c, "bad-resume-r", options(5000, 200, lock_mode::reentrant),
                             no_watchdog()) == client_errc::ok);
    CHECK(reentrant.resume(theirs) == client_errc::lock_rejected);
    CHECK(reentrant.lock_error() == lock_errc::bad_mode_option);
    CHECK(reentrant.state() == lock_state::idle);
    CHECK_FALSE(reentrant.held());
    CHECK(hex(reentrant.token()) == std::string(32, '0'));
    // Refused, not broken: it still acquires.
    must_acquire(reentrant);
    must_release(reentrant);

    // An acquisition waiting for its node: resume would race it.
    client<1> fresh;
    configure(fresh, urls);
    client_lock pending;
    REQUIRE(pending.attach(fresh, "bad-resume-p", options(5000, 500), no_watchdog()) ==
            client_errc::ok);
    REQUIRE(pending.start_acquire(1, duration{}) == client_errc::ok);
    CHECK(pending.resume(theirs) == client_errc::busy);
    const instant give_up = port::now() + duration::seconds(3);
    while (!pending.held() && port::now() < give_up) {
        REQUIRE(fresh.run_for(duration::millis(20)) == client_errc::ok);
    }
    REQUIRE(pending.held());
    CHECK(hex(pending.token()) != hex(theirs));
    CHECK(admin.command({"GET", key_of("bad-resume-p")}).text == hex(pending.token()));
    must_release(pending);
}

// --- calls from inside a callback -------------------------------------------------------------

namespace {

struct nested_calls {
    client_base* c = nullptr;
    client_lock* other = nullptr;
    bool done = false;
    client_errc run_for = client_errc::ok;
    client_errc run_until = client_errc::ok;
    std::uint8_t connect = 99;
    client_errc command = client_errc::ok;
    int command_replies = 0;
    op_result try_acquire;
    op_result acquire;
    op_result renew;
    op_result release;
    op_result other_try_acquire;
    std::uint8_t ready_before = 0;
    std::uint8_t ready_after = 0;

    static void on_event(void* ctx, client_lock& l, const lock_event& ev) {
        auto& s = *static_cast<nested_calls*>(ctx);
        if (ev.kind != lock_event_kind::acquired || s.done) {
            return;
        }
        s.done = true;
        s.ready_before = s.c->ready_count();
        s.run_for = s.c->run_for(duration::millis(50));
        s.run_until = s.c->run_until(port::now() + duration::millis(50));
        s.connect = s.c->connect(port::now() + duration::millis(50));
        const str_view ping[] = {"PING"};
        command_reply r;
        s.command =
            s.c->command(0, ping, 1, port::now() + duration::millis(50), &command_reply::take, &r);
        s.command_replies = r.calls;
        s.try_acquire = l.try_acquire();
        s.acquire = l.acquire(duration::millis(50));
        s.renew = l.renew();
        s.release = l.release();
        s.other_try_acquire = s.other->try_acquire();
        s.ready_after = s.c->ready_count();
    }
};

}  // namespace

TEST_CASE("client bad input: blocking calls from a callback are refused and change nothing",
          "[integration][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    client_lock other;
    REQUIRE(l.attach(c, "bad-nested", options(5000, 200), no_watchdog()) == client_errc::ok);
    REQUIRE(other.attach(c, "bad-nested-other", options(5000, 200), no_watchdog()) ==
            client_errc::ok);
    nested_calls s;
    s.c = &c;
    s.other = &other;
    l.set_callback(&nested_calls::on_event, &s);

    must_acquire(l);  // the callback runs inside this blocking call
    REQUIRE(s.done);
    CHECK(s.run_for == client_errc::reentered);
    CHECK(s.run_until == client_errc::reentered);
    CHECK(s.connect == 0);
    CHECK(s.command == client_errc::reentered);
    CHECK(s.command_replies == 0);
    CHECK(s.try_acquire.error == client_errc::reentered);
    CHECK(s.acquire.error == client_errc::reentered);
    CHECK(s.renew.error == client_errc::reentered);
    CHECK(s.release.error == client_errc::reentered);
    CHECK(s.other_try_acquire.error == client_errc::reentered);
    CHECK(s.ready_after == s.ready_before);

    // Nothing of that happened: the lock is held by this acquisition, the
    // other lock was never taken.
    CHECK(l.held());
    CHECK(admin.command({"GET", key_of("bad-nested")}).text == hex(l.token()));
    CHECK(other.state() == lock_state::idle);
    CHECK(admin.command({"EXISTS", key_of("bad-nested-other")}).integer == 0);
    must_release(l);
}

// --- the event-loop API and an unconfigured client ---------------------------------------------

TEST_CASE("client bad input: event-loop calls with descriptors the client does not own",
          "[integration][bad-input]") {
    // Unconfigured: everything refuses or reports nothing, and nothing breaks.
    client<2> idle;
    CHECK(idle.run_for(duration::millis(10)) == client_errc::not_configured);
    CHECK(idle.run_until(port::now() + duration::millis(10)) == client_errc::not_configured);
    CHECK(idle.connect(port::now() + duration::millis(10)) == 0);
    CHECK(idle.wanted(nullptr, 0) == 0);
    CHECK(idle.next_deadline().is_never());
    CHECK(idle.node(0).state == node_state::down);
    CHECK(idle.node_count() == 0);
    idle.on_ready(3, port::want_read);
    idle.on_timeout();
    idle.disconnect();
    CHECK(idle.ready_count() == 0);

    redis_server srv;
    const url_list urls({redis_url(srv)});
    client<2> c;
    configure(c, urls);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    const long long id = connection_id(c, 0);

    // Capacity 0, and a null array with it: counted, nothing written.
    CHECK(c.wanted(nullptr, 0) == 1);
    port::wait_entry e[2];
    e[0].fd = -7;
    e[0].want = 0x55;
    CHECK(c.wanted(e, 0) == 1);
    CHECK(e[0].fd == -7);
    CHECK(e[0].want == 0x55);
    REQUIRE(c.wanted(e, 2) == 1);
    const int fd = e[0].fd;
    REQUIRE(fd >= 0);

    // Node indexes past the configured count: a default, empty report.
    for (const std::uint8_t i : {std::uint8_t{1}, std::uint8_t{2}, std::uint8_t{255}}) {
        const node_info n = c.node(i);
        CHECK(n.state == node_state::down);
        CHECK(n.error == node_error::none);
        CHECK(n.code == 0);
        CHECK(n.message.empty());
    }

    // Readiness for descriptors that are not the client's, or none at all.
    c.on_ready(-1, 0xff);
    c.on_ready(fd + 1000, port::want_read | port::want_write | port::ready_error);
    c.on_ready(fd, 0);
    port::wait_entry stale[3];
    stale[0].fd = fd + 1001;
    stale[0].ready = port::ready_error;
    stale[1].fd = -1;
    stale[1].ready = port::want_read;
    stale[2].fd = fd + 1002;
    stale[2].ready = 0;
    c.on_ready(stale, 3);
    c.on_ready(nullptr, 0);
    const node_info n = c.node(0);
    INFO(what(n));
    CHECK(n.state == node_state::ready);
    CHECK(n.error == node_error::none);
    CHECK(c.ready_count() == 1);
    CHECK(connection_id(c, 0) == id);
}

// --- attach ------------------------------------------------------------------------------------

TEST_CASE("client bad input: a refused attach links nothing", "[integration][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;

    // The watchdog must renew before the validity ends: ttl - (1% + 2 ms).
    const lock_options o = options(1000, 100);
    watchdog_options late;
    late.renew_every = duration::millis(1000 - 12);
    CHECK(l.attach(c, "bad-attach", o, late) == client_errc::bad_option);
    CHECK_FALSE(l.attached());
    late.renew_every = duration::seconds(3600);
    CHECK(l.attach(c, "bad-attach", o, late) == client_errc::bad_option);
    CHECK_FALSE(l.attached());
    // A disabled watchdog's interval is not looked at.
    late.enabled = false;
    const std::string long_name(lock_max_name + 1, 'n');
    CHECK(l.attach(c, str_view(long_name.data(), long_name.size()), o, late) ==
          client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::name_too_long);
    CHECK_FALSE(l.attached());
    // Nothing was linked to the client: it may be configured again, and an
    // operation on the lock says it is not attached.
    CHECK(c.configure(urls.views.data(), 1, client_options{}) == client_errc::ok);
    CHECK(l.start_renew() == client_errc::not_attached);
    CHECK(l.resume(owner_token{}) == client_errc::not_attached);

    // Just inside the limit it is accepted, and renews on its own.
    watchdog_options in_time;
    in_time.renew_every = duration::millis(1000 - 13);
    REQUIRE(l.attach(c, "bad-attach", o, in_time) == client_errc::ok);
    l.detach();
    watchdog_options quick;
    quick.renew_every = duration::millis(100);
    REQUIRE(l.attach(c, "bad-attach", o, quick) == client_errc::ok);
    must_acquire(l);
    REQUIRE(c.run_for(duration::millis(1500)) == client_errc::ok);
    CHECK(l.held());
    CHECK(admin.command({"GET", key_of("bad-attach")}).text == hex(l.token()));
    must_release(l);
}

TEST_CASE("client: 50 locks pipelined on one connection", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    constexpr int count = 50;
    std::vector<std::string> names;
    names.reserve(count);
    std::vector<std::unique_ptr<client_lock>> locks;
    std::vector<recorder> recs(count);
    for (int i = 0; i < count; ++i) {
        names.push_back("client-pipe-" + std::to_string(i));
        locks.emplace_back(new client_lock());
        recs[static_cast<std::size_t>(i)].listen(*locks.back());
        REQUIRE(locks.back()->attach(c, str_view(names.back().data(), names.back().size()),
                                     options(10000, 500)) == client_errc::ok);
    }
    const auto all_saw = [&](lock_event_kind kind, int times) {
        for (const recorder& r : recs) {
            if (r.count(kind) < times) {
                return false;
            }
        }
        return true;
    };
    const auto drive_until_all = [&](lock_event_kind kind, int times) {
        const instant give_up = port::now() + duration::seconds(5);
        while (!all_saw(kind, times) && port::now() < give_up) {
            REQUIRE(c.run_for(duration::millis(10)) == client_errc::ok);
        }
        REQUIRE(all_saw(kind, times));
    };

    for (auto& l : locks) {
        must_acquire(*l);
    }
    CHECK(admin.command({"DBSIZE"}).integer == count);

    // All released at once: 50 requests in one pipeline.
    for (auto& l : locks) {
        REQUIRE(l->start_release() == client_errc::ok);
    }
    drive_until_all(lock_event_kind::released, 1);
    CHECK(admin.command({"DBSIZE"}).integer == 0);

    // All acquired at once, then released one by one.
    for (auto& l : locks) {
        REQUIRE(l->start_acquire(1, duration::seconds(1)) == client_errc::ok);
    }
    drive_until_all(lock_event_kind::acquired, 2);
    for (std::size_t i = 0; i < locks.size(); ++i) {
        INFO("lock " << i);
        CHECK(locks[i]->held());
        CHECK(admin.command({"GET", key_of(names[i])}).text == hex(locks[i]->token()));
    }
    for (auto& l : locks) {
        must_release(*l);
    }
    CHECK(admin.command({"DBSIZE"}).integer == 0);
    for (const recorder& r : recs) {
        CHECK(r.count(lock_event_kind::lost) == 0);
        CHECK(r.count(lock_event_kind::failed) == 0);
    }
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
    REQUIRE(c.run_for(duration::seconds(1)) == client_errc::ok);
    const double used = cpu_s() - before;
    INFO("cpu seconds in run_for(1s): " << used);
    CHECK(used < 0.3);
    CHECK(c.next_deadline() > port::now());
}

namespace {
struct reacquire_on_lost {
    int lost = 0;
    client_errc start = client_errc::not_configured;
};

void reacquire(void* ctx, client_lock& l, const lock_event& ev) {
    auto& st = *static_cast<reacquire_on_lost*>(ctx);
    if (ev.kind == lock_event_kind::lost) {
        ++st.lost;
        st.start = l.start_acquire(1, duration{});
    }
}
}  // namespace

TEST_CASE("client: a callback re-acquiring does not rewrite a blocking call's outcome",
          "[integration][client]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, "reacquire", options(2000, 200), no_watchdog()) == client_errc::ok);
    reacquire_on_lost st;
    l.set_callback(reacquire, &st);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    redis_client admin(srv.port());
    REQUIRE(admin.command({"DEL", key_of("reacquire")}).integer == 1);
    const op_result r = l.renew();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::lost);
    CHECK(st.lost == 1);
    CHECK(st.start == client_errc::ok);
    // The callback's acquisition runs on its own and is reported to it.
    REQUIRE(c.run_for(duration::millis(300)) == client_errc::ok);
    CHECK(l.held());
    CHECK(l.release().event.kind == lock_event_kind::released);
}
