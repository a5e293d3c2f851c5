// client_lock as the standard's Lockable and TimedLockable: std::unique_lock,
// std::scoped_lock and std::lock over real redis-servers.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <type_traits>

#include "edgelock/client.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"

namespace {

using namespace edgelock;
using namespace edgelock_test;
using namespace std::chrono_literals;

// A client of its own per lock, as two processes of a fleet have.
struct party {
    client<1> c;
    client_lock l;
    party(const url_list& urls, const char* name) {
        configure(c, urls);
        REQUIRE(l.attach(c, name, options(10000, 1000)) == client_errc::ok);
    }
};

// The try_lock_for/until templates take any clock and duration type.
template <class M>
auto timed_lockable(int)
    -> decltype(std::declval<M&>().try_lock_for(1s), std::declval<M&>().try_lock_for(2.5ms),
                std::declval<M&>().try_lock_until(std::chrono::steady_clock::now()),
                std::declval<M&>().try_lock_until(std::chrono::system_clock::now()),
                std::true_type{});
template <class M>
std::false_type timed_lockable(...);
static_assert(decltype(timed_lockable<client_lock>(0))::value, "client_lock is TimedLockable");

}  // namespace

TEST_CASE("std: unique_lock with a timeout holds for its scope, then releases", "[client][std]") {
    redis_server srv;
    redis_client peek(srv.port());
    const url_list urls({redis_url(srv)});
    party a(urls, "std-job");
    party b(urls, "std-job");
    {
        std::unique_lock<client_lock> g(a.l, std::chrono::seconds(5));
        REQUIRE(g.owns_lock());
        CHECK(a.l.held());
        CHECK(peek.command({"EXISTS", key_of("std-job")}).integer == 1);
        // Another holder is refused by every kind of try.
        CHECK_FALSE(b.l.try_lock());
        CHECK_FALSE(b.l.try_lock_for(150ms));
        CHECK_FALSE(b.l.try_lock_until(std::chrono::steady_clock::now() + 150ms));
        CHECK_FALSE(b.l.try_lock_until(std::chrono::system_clock::now() - 1s));  // past: one round
        std::unique_lock<client_lock> other(b.l, std::try_to_lock);
        CHECK_FALSE(other.owns_lock());
    }
    CHECK_FALSE(a.l.held());
    CHECK(peek.command({"EXISTS", key_of("std-job")}).integer == 0);
    {
        std::lock_guard<client_lock> g(b.l);
        CHECK(b.l.held());
    }
    CHECK(peek.command({"EXISTS", key_of("std-job")}).integer == 0);
}

TEST_CASE("std: scoped_lock takes two locks, without deadlock against the reverse order",
          "[client][std]") {
    redis_server srv;
    redis_client peek(srv.port());
    const url_list urls({redis_url(srv)});
    party a1(urls, "std-left");
    party a2(urls, "std-right");
    {
        std::scoped_lock g(a1.l, a2.l);
        CHECK(a1.l.held());
        CHECK(a2.l.held());
        CHECK(peek.command({"EXISTS", key_of("std-left")}).integer == 1);
        CHECK(peek.command({"EXISTS", key_of("std-right")}).integer == 1);
    }
    CHECK(peek.command({"EXISTS", key_of("std-left")}).integer == 0);
    CHECK(peek.command({"EXISTS", key_of("std-right")}).integer == 0);
}

TEST_CASE("std: lock() waits for the holder's release, and for a node that was down",
          "[client][std]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    party a(urls, "std-wait");
    party b(urls, "std-wait");

    SECTION("held by another until it unlocks") {
        a.l.lock();
        REQUIRE(a.l.held());
        std::atomic<bool> got{false};
        std::thread waiter([&] {
            b.l.lock();
            got = b.l.held();
        });
        sleep_ms(300);
        CHECK_FALSE(got.load());  // still waiting
        a.l.unlock();
        waiter.join();
        CHECK(got.load());
        b.l.unlock();
    }
    SECTION("the node down, then back") {
        srv.kill();
        std::atomic<bool> got{false};
        std::thread waiter([&] {
            b.l.lock();
            got = b.l.held();
        });
        sleep_ms(500);
        CHECK_FALSE(got.load());
        srv.restart();
        waiter.join();
        CHECK(got.load());
        b.l.unlock();
        CHECK_FALSE(b.l.held());
    }
}

TEST_CASE("std: a lock that can never be taken returns at once, not holding", "[client][std]") {
    client_lock detached;
    detached.lock();
    CHECK_FALSE(detached.held());
    CHECK_FALSE(detached.try_lock());
    CHECK_FALSE(detached.try_lock_for(1h));
    detached.unlock();  // nothing to release: no effect
    CHECK_FALSE(detached.held());
}
