// lock_options::min_replicas against a real master and its replica: the key
// reaches the replica before the lock counts as acquired or renewed; with
// the replica frozen (SIGSTOP: the master still counts it as connected, and
// WAIT runs out of time) an acquisition fails as not_replicated and leaves
// no key behind, and a renew fails the same way until the replica is back.
#include <catch2/catch.hpp>

#include <string>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/sentinel_fixture.hpp"
#include "tools/clock.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

lock_options replicated(std::uint8_t replicas) {
    lock_options o = edgelock_test::options(5000, 300);
    o.min_replicas = replicas;
    o.replica_timeout = duration::millis(100);
    return o;
}

}  // namespace

TEST_CASE("replicas: a lock counts once its replica has the key", "[integration][replicas]") {
    replicated_pair s;
    redis_client master(s.master.port());
    redis_client replica(s.replica.port());
    const url_list urls({redis_url(s.master)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, "replicated", replicated(1), no_watchdog()) == client_errc::ok);

    must_acquire(l);
    // Counted only after WAIT: the replica has it already.
    CHECK(replica.command({"GET", key_of("replicated")}).text == hex(l.token()));
    const op_result r = l.renew();
    INFO(what(r));
    CHECK(r.event.kind == lock_event_kind::renewed);
    must_release(l);

    // Two replicas asked of a master with one: refused, nothing left behind.
    client_lock two;
    REQUIRE(two.attach(c, "replicated-2", replicated(2), no_watchdog()) == client_errc::ok);
    const op_result r2 = two.try_acquire();
    INFO(what(r2));
    CHECK(r2.event.kind == lock_event_kind::failed);
    CHECK(r2.event.reason == lock_failure::not_replicated);
    REQUIRE(c.run_for(duration::millis(100)) == client_errc::ok);  // the clean-up
    CHECK(master.command({"EXISTS", key_of("replicated-2")}).integer == 0);
}

TEST_CASE("replicas: a frozen replica fails the acquire and the renew, not the lock's safety",
          "[integration][replicas]") {
    replicated_pair s;
    redis_client master(s.master.port());
    const url_list urls({redis_url(s.master)});
    client<1> c;
    configure(c, urls);
    client_lock held;
    REQUIRE(held.attach(c, "frozen-held", replicated(1), no_watchdog()) == client_errc::ok);
    recorder events;
    events.listen(held);
    must_acquire(held);

    s.replica.pause();
    client_lock other;
    REQUIRE(other.attach(c, "frozen-new", replicated(1), no_watchdog()) == client_errc::ok);
    const instant t0 = port::now();
    const op_result r = other.try_acquire();
    INFO(what(r));
    CHECK(r.event.kind == lock_event_kind::failed);
    CHECK(r.event.reason == lock_failure::not_replicated);
    CHECK(ms_since(t0) < 300 + 200);  // the node timeout, and some
    REQUIRE(c.run_for(duration::millis(100)) == client_errc::ok);
    CHECK(master.command({"EXISTS", key_of("frozen-new")}).integer == 0);

    // The renew is not counted while the replica cannot say it has the key.
    REQUIRE(held.start_renew() == client_errc::ok);
    const instant t1 = port::now();
    while (events.count(lock_event_kind::renew_failed) == 0 && ms_since(t1) < 2000) {
        REQUIRE(c.run_for(duration::millis(10)) == client_errc::ok);
    }
    INFO(events.list());
    REQUIRE(events.count(lock_event_kind::renew_failed) >= 1);
    CHECK(events.events[static_cast<std::size_t>(events.first(lock_event_kind::renew_failed))]
              .reason == lock_failure::not_replicated);
    CHECK(held.held());  // still within its validity: not lost yet

    s.replica.resume();
    const instant t2 = port::now();
    while (events.count(lock_event_kind::renewed) == 0 && ms_since(t2) < 3000) {
        REQUIRE(c.run_for(duration::millis(10)) == client_errc::ok);
    }
    CHECK(events.count(lock_event_kind::renewed) == 1);
    CHECK(events.count(lock_event_kind::lost) == 0);
    must_release(held);
}
