// An operation's life as an event-loop user sees it through client_lock's
// outcome(): not done while it runs (or waits for its nodes), then the event
// that ended it, or why it could not run; and start_acquire() without
// arguments, with the retry policy the lock was attached with.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::lock_event_kind;
using edgelock::op_outcome;
using edgelock_test::node_urls;

namespace {

struct fixture {
    sim::net n{611};
    std::unique_ptr<node_urls> urls;
    edgelock::client<1> c;
    sim::event_loop loop{n};

    fixture() {
        n.add_nodes(1);
        n.faults(0).latency_min_us = n.faults(0).latency_max_us = 2000;
        urls = std::make_unique<node_urls>(n);
        edgelock_test::configure(c, *urls);
        loop.add(c);
    }
};

}  // namespace

TEST_CASE("outcome: an acquire is not done until its event and then says which",
          "[client][sim][outcome]") {
    fixture f;
    edgelock::client_lock l;
    REQUIRE(l.attach(f.c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    CHECK(l.outcome().started == op_outcome::op::none);

    REQUIRE(l.start_acquire() == client_errc::ok);
    CHECK(l.outcome().started == op_outcome::op::acquire);
    CHECK_FALSE(l.outcome().done);
    REQUIRE(f.loop.run_for(duration::micros(500)));
    CHECK_FALSE(l.outcome().done);  // the reply is a round trip away
    REQUIRE(f.loop.run_for(duration::millis(50)));
    REQUIRE(l.outcome().done);
    CHECK(l.outcome().result.error == client_errc::ok);
    CHECK(l.outcome().result.event.kind == lock_event_kind::acquired);
    CHECK(l.held());

    // A second acquire while held is refused and leaves the outcome as it was.
    CHECK(l.start_acquire() == client_errc::busy);
    CHECK(l.outcome().started == op_outcome::op::acquire);
    CHECK(l.outcome().done);

    REQUIRE(l.start_release() == client_errc::ok);
    CHECK(l.outcome().started == op_outcome::op::release);
    CHECK_FALSE(l.outcome().done);
    REQUIRE(f.loop.run_for(duration::millis(50)));
    REQUIRE(l.outcome().done);
    CHECK(l.outcome().result.event.kind == lock_event_kind::released);
}

TEST_CASE("outcome: a busy lock ends the attached retry policy's acquire with busy",
          "[client][sim][outcome]") {
    fixture f;
    edgelock::lock_options o = edgelock_test::fast_lock_options();
    edgelock::client_lock holder;
    REQUIRE(holder.attach(f.c, "jobs", o) == client_errc::ok);
    REQUIRE(holder.start_acquire() == client_errc::ok);
    REQUIRE(f.loop.run_for(duration::millis(50)));
    REQUIRE(holder.held());

    // Three tries, 40 ms apart at most: start_acquire() takes them from the
    // options, so the outcome comes after the last one, not the first.
    edgelock::lock_options waiting = o;
    waiting.max_tries = 3;
    waiting.wait = duration::seconds(2);
    waiting.retry_min = duration::millis(20);
    waiting.retry_max = duration::millis(40);
    edgelock::client_lock other;
    REQUIRE(other.attach(f.c, "jobs", waiting) == client_errc::ok);
    std::uint64_t acquires = 0;
    f.n.on_command = [&acquires](int, std::uint64_t, const std::vector<std::string>& argv) {
        const bool lock_request =
            !argv.empty() && (argv[0] == "SET" || argv[0] == "EVALSHA" || argv[0] == "EVAL");
        acquires += lock_request ? 1u : 0u;
    };
    REQUIRE(other.start_acquire() == client_errc::ok);
    REQUIRE(f.loop.run_for(duration::millis(10)));
    CHECK_FALSE(other.outcome().done);  // the first try said busy: two more to go
    REQUIRE(f.loop.run_for(duration::millis(200)));
    REQUIRE(other.outcome().done);
    CHECK(other.outcome().result.event.kind == lock_event_kind::busy);
    CHECK(acquires >= 3);  // every try went out (a try may take more than one request)
    CHECK(holder.held());
}

TEST_CASE("outcome: a release that cancels an acquire not yet begun ends at once",
          "[client][sim][outcome]") {
    fixture f;
    f.n.faults(0).connect_hangs = true;  // the node never connects: the acquire waits
    edgelock::client_lock l;
    REQUIRE(l.attach(f.c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(l.start_acquire() == client_errc::ok);
    REQUIRE(f.loop.run_for(duration::micros(100)));
    CHECK_FALSE(l.outcome().done);
    REQUIRE(l.start_release() == client_errc::ok);
    CHECK(l.outcome().started == op_outcome::op::release);
    REQUIRE(l.outcome().done);
    CHECK(l.outcome().result.event.kind == lock_event_kind::released);
    CHECK_FALSE(l.held());
}

TEST_CASE("outcome: a release of a lock not held could not run", "[client][sim][outcome]") {
    fixture f;
    edgelock::client_lock l;
    REQUIRE(l.attach(f.c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    CHECK(l.start_release() == client_errc::not_held);
    CHECK(l.outcome().started == op_outcome::op::none);
    // A blocking call sets it too.
    const edgelock::op_result r = l.try_acquire();
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(l.outcome().started == op_outcome::op::acquire);
    CHECK(l.outcome().done);
    CHECK(l.outcome().result.event.kind == lock_event_kind::acquired);
    CHECK(l.release().event.kind == lock_event_kind::released);
    CHECK(l.outcome().result.event.kind == lock_event_kind::released);
}
