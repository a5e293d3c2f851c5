// A redis-sentinel:// node follows +switch-master: after SENTINEL FAILOVER
// the sentinels announce the promoted replica at once, while the old master
// keeps taking writes until they demote it. The client, told by its watch,
// moves its lock connection to the new master right away: a lock held across
// the failover goes on being renewed there (the key had reached the replica),
// and a new acquisition lands on the new master even while the old one still
// says it is a master. Also: the watch is one more fd, the first sentinel down
// makes it use the next, and it never hangs a client whose sentinels are gone.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/sentinel_fixture.hpp"
#include "tools/clock.hpp"

using namespace edgelock;
using namespace edgelock_test;

namespace {

std::size_t fds_wanted(const client_base& c) {
    port::wait_entry entries[16];
    return c.wanted(entries, 16);
}

// A command on a connection of its own: a server that changes role closes
// its clients' connections.
reply ask(redis_server& server, const std::vector<std::string>& args) {
    redis_client once(server.port());
    return once.command(args);
}

// Drives the client until done() or `seconds` have passed (REQUIREs done).
template <class F>
void drive_until(client_base& c, F done, double seconds) {
    const double until = mono_s() + seconds;
    while (!done()) {
        REQUIRE(mono_s() < until);
        REQUIRE(c.run_for(duration::millis(20)) == client_errc::ok);
    }
}

}  // namespace

TEST_CASE("sentinel switch: the client moves to the new master when the sentinels say",
          "[integration][sentinel]") {
    sentinel_deployment d;
    const url_list urls({d.url()});
    client<1> c;
    configure(c, urls);
    client_lock held;
    recorder rec;
    rec.listen(held);
    watchdog_options w;
    w.renew_every = duration::millis(300);
    REQUIRE(held.attach(c, "switch-held", edgelock_test::options(3000, 200), w) == client_errc::ok);
    must_acquire(held);
    // The lock connection and the watch.
    drive_until(
        c, [&] { return fds_wanted(c) == 2; }, 5);
    // The key has reached the replica before the failover begins.
    drive_until(
        c,
        [&] {
            return ask(d.replica, {"EXISTS", key_of("switch-held")}).integer == 1;
        },
        5);

    const double until = mono_s() + 20;
    while (ask_sentinel(*d.sentinels[0], {"SENTINEL", "FAILOVER", "mymaster"}).text != "OK") {
        REQUIRE(mono_s() < until);
        REQUIRE(c.run_for(duration::millis(200)) == client_errc::ok);
    }
    drive_until(
        c, [&] { return named_port(*d.sentinels[0], "mymaster") == d.replica.port(); }, 15);
    drive_until(
        c, [&] { return role(d.replica) == "master"; }, 10);
    REQUIRE(c.run_for(duration::millis(200)) == client_errc::ok);

    // A new lock, one try: on the promoted replica, whatever the old master
    // says of itself by now.
    const std::string old_role = role(d.master);
    client_lock after;
    REQUIRE(after.attach(c, "switch-after", edgelock_test::options(3000, 200), no_watchdog()) ==
            client_errc::ok);
    const op_result r = after.try_acquire();
    INFO("old master's role: " << old_role << "; " << what(r) << "; " << what(c.node(0)));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(ask(d.replica, {"GET", key_of("switch-after")}).text == hex(after.token()));
    CHECK(ask(d.master, {"EXISTS", key_of("switch-after")}).integer == 0);
    must_release(after);

    // The held lock went on being renewed on the new master.
    const std::size_t renewed_before =
        static_cast<std::size_t>(rec.count(lock_event_kind::renewed));
    REQUIRE(c.run_for(duration::millis(900)) == client_errc::ok);
    INFO(rec.list());
    CHECK(held.held());
    CHECK(rec.count(lock_event_kind::lost) == 0);
    CHECK(static_cast<std::size_t>(rec.count(lock_event_kind::renewed)) > renewed_before);
    CHECK(ask(d.replica, {"GET", key_of("switch-held")}).text == hex(held.token()));
    must_release(held);
}

TEST_CASE("sentinel switch: the watch uses the next sentinel, and gives up on none without a hang",
          "[integration][sentinel]") {
    sentinel_deployment d;
    d.sentinels[0]->kill();
    const url_list urls({d.url()});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, "switch-next", edgelock_test::options(3000, 200), no_watchdog()) ==
            client_errc::ok);
    must_acquire(l);
    // Listening on a live sentinel: its CLIENT LIST shows a subscriber.
    drive_until(
        c,
        [&] {
            for (std::size_t i = 1; i < d.sentinels.size(); ++i) {
                redis_client s(d.sentinels[i]->port());
                if (s.command({"CLIENT", "LIST"}).text.find("cmd=subscribe") != std::string::npos) {
                    return true;
                }
            }
            return false;
        },
        10);
    // Every sentinel gone: the lock on the master it already reached is
    // unaffected, and the client's calls return in time.
    d.sentinels[1]->kill();
    d.sentinels[2]->kill();
    const instant t0 = port::now();
    REQUIRE(c.run_for(duration::millis(500)) == client_errc::ok);
    CHECK(ms_since(t0) < 1500);
    CHECK(l.held());
    must_release(l);
}
