// The driver's event-loop API alone driving a lock, 50 locks pipelined on one
// connection, and a callback that re-acquires during a blocking call, against
// real redis-servers.
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
