// The driver (client<N>, client_lock) against real redis-server processes:
// mutual exclusion, expiry, renew and the watchdog, AUTH, ACL users, SELECT,
// Unix sockets, the NOSCRIPT fallback, Redlock with dead and frozen nodes,
// reconnects (and a reentrant lock lost across a restart), RESP3, the
// event-loop API, configuration errors and pipelining.
//
// Timing checks are sanity bounds several times what a run needs, so a slow
// machine does not fail them. Throughput is measured by tests/bench, not here.
#include <time.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"

using namespace edgelock;
using edgelock_test::configure;
using edgelock_test::key_of;
using edgelock_test::ms_since;
using edgelock_test::must_acquire;
using edgelock_test::must_release;
using edgelock_test::no_watchdog;
using edgelock_test::options;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::str;
using edgelock_test::tcp_url;
using edgelock_test::url_list;
using edgelock_test::what;

namespace {

std::string token_hex(const client_lock& l) {
    char hex[owner_token::hex_size];
    l.token().to_hex(hex);
    return std::string(hex, sizeof hex);
}

void sleep_ms(unsigned ms) {
    ::usleep(ms * 1000u);
}

// Every event a lock's callback saw, and when.
struct recorder {
    struct entry {
        lock_event event;
        instant at;
    };
    std::vector<entry> events;

    static void on_event(void* ctx, client_lock&, const lock_event& ev) {
        static_cast<recorder*>(ctx)->events.push_back(entry{ev, port::now()});
    }
    void listen(client_lock& l) { l.set_callback(&recorder::on_event, this); }

    int count(lock_event_kind k) const {
        int n = 0;
        for (const entry& e : events) {
            n += e.event.kind == k ? 1 : 0;
        }
        return n;
    }
    // Index of the first event of kind k, or -1.
    int first(lock_event_kind k) const {
        for (std::size_t i = 0; i < events.size(); ++i) {
            if (events[i].event.kind == k) {
                return static_cast<int>(i);
            }
        }
        return -1;
    }
    // "kind(reason)@ms" for each event, ms counted from the first one.
    std::string list() const {
        std::string s;
        for (const entry& e : events) {
            s += describe(e.event.kind);
            if (e.event.reason != lock_failure::none) {
                s += std::string("(") + describe(e.event.reason) + ")";
            }
            s += "@" + std::to_string((e.at - events.front().at).us / 1000) + " ";
        }
        return s;
    }
};

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
    url_list urls({tcp_url(srv)});
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
    CHECK(admin.command({"GET", key_of(name)}).text == token_hex(a));

    op_result r = b.try_acquire();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::busy);
    CHECK(r.event.holder_ttl_ms > 0);
    CHECK(r.event.holder_ttl_ms <= 5000);
    CHECK_FALSE(b.held());
    CHECK(admin.command({"GET", key_of(name)}).text == token_hex(a));

    must_release(a);
    CHECK_FALSE(a.held());
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);

    must_acquire(b);
    CHECK(b.held());
    CHECK(admin.command({"GET", key_of(name)}).text == token_hex(b));
    must_release(b);
}

TEST_CASE("client: an unreleased lock expires with its ttl", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-expiry";
    url_list urls({tcp_url(srv)});
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
    CHECK(admin.command({"GET", key_of(name)}).text == token_hex(b));
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
    CHECK(admin.command({"GET", key_of(name)}).text == token_hex(a));
    must_release(a);
}

TEST_CASE("client: a wrong token neither releases nor renews", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-token";
    const std::string key = key_of(name);
    url_list urls({tcp_url(srv)});
    client<1> ca;
    client<1> cb;
    configure(ca, urls);
    configure(cb, urls);
    client_lock a;
    client_lock b;
    REQUIRE(a.attach(ca, name, options(10000, 200)) == client_errc::ok);
    REQUIRE(b.attach(cb, name, options(10000, 200)) == client_errc::ok);

    must_acquire(a);
    const std::string token = token_hex(a);
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
    url_list urls({tcp_url(srv)});
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
    CHECK(admin.command({"GET", key_of(name)}).text == token_hex(l));
    CHECK(rec.count(lock_event_kind::renewed) == 5);
    CHECK(rec.count(lock_event_kind::lost) == 0);
    must_release(l);
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
}

TEST_CASE("client: the watchdog renews, and reports a lock lost", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    url_list urls({tcp_url(srv)});
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
        CHECK(admin.command({"GET", key_of(name)}).text == token_hex(l));

        // The key vanishes (an operator, a flush, a failover): the next renew says so.
        admin.command({"DEL", key_of(name)});
        const instant gone = port::now();
        while (rec.count(lock_event_kind::lost) == 0 &&
               port::now() < gone + duration::millis(ttl_ms + 1000)) {
            c.run_for(duration::millis(20));
        }
        REQUIRE(rec.count(lock_event_kind::lost) == 1);
        const lock_event& lost =
            rec.events[static_cast<std::size_t>(rec.first(lock_event_kind::lost))].event;
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
        CHECK(e.event.reason == lock_failure::validity_ended);
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
        url_list urls({tcp_url(srv, ":s3cret")});
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
        url_list urls({tcp_url(srv, ":wrong")});
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
        url_list urls({tcp_url(srv)});
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
        url_list urls({tcp_url(srv), tcp_url(srv, ":wrong")});
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
        url_list urls({tcp_url(srv, "gw:gwpass")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        redis_client admin(srv.port());
        CHECK(admin.command({"GET", key_of(name)}).text == token_hex(l));
        const std::string clients = admin.command({"CLIENT", "LIST"}).text;
        CHECK(clients.find("user=gw") != std::string::npos);
        must_release(l);
    }

    SECTION("user and password over RESP3 (HELLO 3 AUTH)") {
        url_list urls({tcp_url(srv, "gw:gwpass")});
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
        url_list urls({tcp_url(srv, "gw:nope")});
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
    url_list urls({tcp_url(srv, "", "/3")});
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
        CHECK(admin.command({"GET", key_of(name)}).text == token_hex(l));
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
    url_list urls({tcp_url(srv)});
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
        CHECK(admin.command({"GET", key_of(name)}).text == token_hex(l));
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
        u.push_back(tcp_url(*servers.back()));
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
        holders += admin(i).command({"GET", key}).text == token_hex(l) ? 1 : 0;
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
        CHECK(admin(i).command({"GET", key}).text == token_hex(l));
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
    url_list urls({tcp_url(s0), tcp_url(s1), tcp_url(s2)});
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
    url_list urls({tcp_url(srv)});
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
    CHECK(admin.command({"GET", key_of(name)}).text == token_hex(l));
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
    url_list urls({tcp_url(srv)});
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
        url_list urls({tcp_url(srv)});
        client<1> c;
        configure(c, urls, o);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(admin.command({"GET", key_of(name)}).text == token_hex(l));
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
        url_list urls({tcp_url(s0), tcp_url(s1), tcp_url(s2)});
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
    url_list urls({tcp_url(srv)});
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
    CHECK(admin.command({"GET", key_of(name)}).text == token_hex(l));
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
    const std::string good = tcp_url(srv);

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

TEST_CASE("client: 50 locks pipelined on one connection", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    url_list urls({tcp_url(srv)});
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
        CHECK(admin.command({"GET", "{" + names[i] + "}"}).text == token_hex(*locks[i]));
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

// Throughput, not a pass/fail check: acquire + release cycles per second.
// CPU seconds this process has used, user and system.
static double cpu_seconds() {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

TEST_CASE("client: a dead node with a cleanup waiting does not spin", "[integration][client]") {
    // Node 0 is down from the start; node 2 is held by someone else, so the
    // busy round queues cleanups, one of which waits for node 0.
    redis_server s0, s1, s2;
    const url_list urls({tcp_url(s0), tcp_url(s1), tcp_url(s2)});
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
    const double before = cpu_seconds();
    REQUIRE(c.run_for(duration::seconds(1)) == client_errc::ok);
    const double used = cpu_seconds() - before;
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
    const url_list urls({tcp_url(srv)});
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
