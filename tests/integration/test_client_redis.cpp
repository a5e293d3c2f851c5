// The driver (client<N>, client_lock) against real redis-server processes:
// mutual exclusion, expiry, a wrong token, renew and the watchdog, and the
// NOSCRIPT fallback. Set-up (AUTH, ACL, SELECT, Unix sockets, RESP3,
// configuration errors): test_client_setup.cpp. Redlock, frozen and restarted
// nodes: test_client_redlock.cpp. The event-loop API, pipelining, callbacks:
// test_client_loop.cpp. Bad input: test_client_bad_input.cpp.
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
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

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
    // The renewal mark, empty, expiring with the key (the same script set
    // both ttls).
    const std::string mark = key_of(name, lock_key_kind::renewal_mark);
    CHECK(admin.command({"GET", mark}).text.empty());
    // Both ttls read in one script, at one instant of the server's clock
    // (two commands could be any time apart on a loaded machine).
    const reply both = admin.command({"EVAL",
                                      "return {redis.call('pttl', KEYS[1]), "
                                      "redis.call('pttl', KEYS[2])}",
                                      "2", key_of(name), mark});
    REQUIRE(both.elements.size() == 2);
    const long long key_pttl = both.elements[0].integer;
    const long long mark_pttl = both.elements[1].integer;
    CHECK(mark_pttl > 0);
    CHECK(mark_pttl <= key_pttl);
    CHECK(mark_pttl >= key_pttl - 5);
    CHECK(rec.count(lock_event_kind::renewed) == 5);
    CHECK(rec.count(lock_event_kind::lost) == 0);
    must_release(l);
    // The release deletes the key and the renewal mark; the release mark
    // it wrote is gone as well.
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    CHECK(admin.command({"DBSIZE"}).integer == 0);
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

TEST_CASE("client: a NOSCRIPT the lock retries is never the node's reason",
          "[integration][client]") {
    // A fresh server has no scripts: the fenced acquire's EVALSHA meets
    // NOSCRIPT and goes again as EVAL. Driven one readiness at a time, so
    // node(0) is looked at between the NOSCRIPT and the retry's reply (the
    // retry is sent only once the NOSCRIPT is read: they never come in one
    // read).
    redis_server srv;
    redis_client admin(srv.port());
    REQUIRE(admin.command({"SCRIPT", "FLUSH"}).text == "OK");
    REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
    const char* name = "client-noscript-reason";
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    recorder rec;
    rec.listen(l);
    REQUIRE(l.attach(c, name, options(5000, 2000, lock_mode::fenced), no_watchdog()) ==
            client_errc::ok);
    REQUIRE(l.start_acquire(1, duration::millis(0)) == client_errc::ok);
    std::vector<std::string> reasons;
    const instant give_up = port::now() + duration::seconds(5);
    while (rec.count(lock_event_kind::acquired) == 0 && port::now() < give_up) {
        port::wait_entry entries[4];
        const std::size_t count = c.wanted(entries, 4);
        const int ready = port::wait(entries, count, earliest(c.next_deadline(), give_up));
        REQUIRE(ready >= 0);
        if (ready == 0) {
            c.on_timeout();
        }
        for (std::size_t i = 0; i < count && ready > 0; ++i) {
            if (entries[i].ready != 0) {
                c.on_ready(entries[i].fd, entries[i].ready);
            }
        }
        const std::string message = str(c.node(0).message);
        if (!message.empty()) {
            reasons.push_back(message);
        }
    }
    INFO("events: " << rec.list());
    REQUIRE(rec.count(lock_event_kind::acquired) == 1);
    CHECK(error_calls(admin, "NOSCRIPT") >= 1);  // the case arose
    for (const std::string& r : reasons) {
        CHECK(r.find("NOSCRIPT") == std::string::npos);
    }
    CHECK(c.node(0).error == node_error::none);
    must_release(l);
}

TEST_CASE("client: on Redis 7 a plain acquire is one SET, busy or not", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-set-acquire";
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, name, options(5000, 200), no_watchdog()) == client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    INFO(what(c.node(0)));
    // Debian's redis-server 7, or Valkey 8 in the Valkey run.
    const std::string server = str(c.node(0).server);
    REQUIRE((server == "redis" || server == "valkey"));
    REQUIRE(str(c.node(0).version).rfind(server == "valkey" ? "8." : "7.", 0) == 0);
    const auto calls = [&](const std::string& command) {
        return edgelock_test::command_calls(admin, command);
    };
    REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");

    must_acquire(l);
    CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
    const long long pttl = admin.command({"PTTL", key_of(name)}).integer;
    CHECK(pttl > 0);
    CHECK(pttl <= 5000);
    CHECK(calls("set") == 1);
    CHECK(calls("evalsha") == 0);
    must_release(l);
    CHECK(calls("evalsha") == 1);  // the compare-and-delete
    CHECK(calls("set") == 2);      // and its release mark, written and deleted
    CHECK(calls("del") == 2);      // the key; the marks
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    CHECK(admin.command({"DBSIZE"}).integer == 0);  // no mark left behind

    // Taken by another: the SET finds it, the script says for how long.
    REQUIRE(admin.command({"SET", key_of(name), "other-owner", "PX", "4000"}).text == "OK");
    const op_result r = l.try_acquire();
    INFO(what(r));
    CHECK(r.event.kind == lock_event_kind::busy);
    CHECK(r.event.holder_ttl_ms > 0);
    CHECK(r.event.holder_ttl_ms <= 4000);
    // Ours twice, the release mark's, the admin's, and the script's own SET NX
    // (scripts' calls count).
    CHECK(calls("set") == 5);
    // The release met NOSCRIPT on this connection (a fresh server): its
    // text followed, and the acquire script's goes at once.
    CHECK(calls("evalsha") == 1);
    CHECK(calls("eval") == 2);
    CHECK(admin.command({"GET", key_of(name)}).text == "other-owner");
}
