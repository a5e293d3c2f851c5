// A holder's renews wake no waiter, against a real redis-server: the renew
// script writes the lock's renewal mark beside the key, the server pushes
// both in one invalidation, and a waiter that hears both sends nothing. A
// release or the key's expiry still wakes them at once. Request counts come
// from INFO commandstats (the renew script's own calls counted in: EVALSHA,
// GET, SET of the mark, PEXPIRE).
#include <catch2/catch.hpp>

#include <array>
#include <string>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/notify_helpers.hpp"
#include "integration/redis_server.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

constexpr std::size_t waiter_count = 3;
constexpr unsigned renew_ms = 100;
constexpr unsigned ttl_ms = 600;

// One holder and its waiters, each a client of its own, driven in turns.
struct fleet {
    redis_server& srv;
    url_list urls;
    client<1> holder_client;
    client_lock holder;
    std::array<client<1>, waiter_count> waiter_clients;
    std::array<client_lock, waiter_count> waiters;

    fleet(redis_server& s, const char* name, const client_options& o)
        : srv(s), urls({redis_url(s)}) {
        REQUIRE(holder_client.configure(urls.data(), urls.size(), o) == client_errc::ok);
        REQUIRE(holder.attach(holder_client, name, options(ttl_ms, 200), renew_every(renew_ms)) ==
                client_errc::ok);
        for (std::size_t i = 0; i < waiter_count; ++i) {
            REQUIRE(waiter_clients[i].configure(urls.data(), urls.size(), o) == client_errc::ok);
            REQUIRE(waiters[i].attach(waiter_clients[i], name, waiting_options(), no_watchdog()) ==
                    client_errc::ok);
        }
    }

    // Runs every client for `ms`, in slices of 2 ms; `holder_too`: the
    // holder's client as well (else its renews stop, as a holder's that died).
    void drive(unsigned ms, bool holder_too = true) {
        const instant end = port::now() + duration::millis(ms);
        while (port::now() < end) {
            if (holder_too) {
                REQUIRE(holder_client.run_for(duration::millis(2)) == client_errc::ok);
            }
            for (client<1>& c : waiter_clients) {
                REQUIRE(c.run_for(duration::millis(2)) == client_errc::ok);
            }
        }
    }

    std::size_t held() const {
        std::size_t n = 0;
        for (const client_lock& w : waiters) {
            n += w.held() ? 1u : 0u;
        }
        return n;
    }

    // The holder holds, every waiter has found the key taken and waits.
    void waiting() {
        must_acquire(holder);
        for (client_lock& w : waiters) {
            REQUIRE(w.start_acquire(1000, duration::seconds(30)) == client_errc::ok);
        }
        drive(300);
        REQUIRE(holder.held());
        REQUIRE(held() == 0);
    }
};

void renews_wake_no_waiter(const client_options& o) {
    redis_server srv;
    redis_client admin(srv.port());
    fleet f(srv, "notify-renew", o);
    f.waiting();

    // About 15 renews while 3 waiters wait: the renews' own commands, and
    // nothing from the waiters (no PTTL, no SET of theirs, no script).
    REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
    f.drive(1500);
    const long long renews = command_calls(admin, "evalsha");
    INFO("renews: " << renews);
    CHECK(renews >= 10);
    // Each renew re-arms the key and its renewal mark, which the first
    // renew (before the count) made and later ones only extend.
    CHECK(command_calls(admin, "pexpire") == 2 * renews);
    CHECK(command_calls(admin, "set") == 0);
    CHECK(command_calls(admin, "pttl") == 0);
    CHECK(command_calls(admin, "client|tracking") == 0);
    CHECK(admin.command({"INFO", "stats"}).text.find("total_error_replies:0") != std::string::npos);
    CHECK(f.holder.held());
    CHECK(f.held() == 0);

    // A release still wakes them at once: one of them takes the key. Each
    // tries once (PTTL, then SET); the winner's take, which writes only the
    // key, wakes no other.
    REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
    const instant released = port::now();
    REQUIRE(f.holder.start_release() == client_errc::ok);
    while (f.held() == 0 && ms_since(released) < told_bound_ms) {
        f.drive(2);
    }
    CHECK(f.held() == 1);
    CHECK(ms_since(released) < told_bound_ms);
    f.drive(500);
    CHECK(f.held() == 1);
    // The release, as its text: the connection met NOSCRIPT at the first
    // renew, so each script's first use there goes as EVAL.
    CHECK(command_calls(admin, "evalsha") == 0);
    CHECK(command_calls(admin, "eval") == 1);
    CHECK(command_calls(admin, "pttl") == static_cast<long long>(waiter_count));
    // The waiters' SETs, and the release's of its release mark.
    CHECK(command_calls(admin, "set") == static_cast<long long>(waiter_count) + 1);
}

}  // namespace

TEST_CASE("notify renew: a holder's renews wake no waiter but its release does",
          "[integration][notify]") {
    SECTION("RESP3: pushes") {
        client_options o;
        o.resp3 = true;
        renews_wake_no_waiter(o);
    }
    SECTION("RESP2: a subscription") {
        client_options o;
        o.resp3 = false;
        renews_wake_no_waiter(o);
    }
}

TEST_CASE("notify renew: a holder that stops renewing is noticed at its key's expiry",
          "[integration][notify]") {
    redis_server srv;
    client_options o;
    fleet f(srv, "notify-renew-expiry", o);
    f.waiting();
    f.drive(300);  // renewed meanwhile: the waiters' polls moved on with it
    // The holder's process stops (its client is no longer driven): the key
    // lasts its ttl from the last renew, then expires, and the server says
    // so. The waiters' own polls are 3 s away.
    const instant stopped = port::now();
    while (f.held() == 0 && ms_since(stopped) < ttl_ms + told_bound_ms) {
        f.drive(2, false);
    }
    INFO("taken after " << ms_since(stopped) << " ms");
    CHECK(f.held() == 1);
    CHECK(ms_since(stopped) <= ttl_ms + 500);  // the ttl, and Redis's expiry cycle
}
