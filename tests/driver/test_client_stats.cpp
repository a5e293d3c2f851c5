// The counters (client_stats.hpp) through the real driver on virtual time:
// each node counter against what the simulated node saw or the fault made,
// each lock counter against the lock's events.
#include <catch2/catch.hpp>

#include <cmath>
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
using edgelock::lock_stats;
using edgelock::node_error;
using edgelock::node_stats;
using edgelock_test::event_log;
using edgelock_test::node_urls;

namespace {

// One node (more on request), one lock on it, an event loop; the commands
// the nodes received, counted.
struct fixture {
    sim::net n;
    std::vector<std::uint64_t> commands;  // per node
    std::unique_ptr<node_urls> urls;
    edgelock::client<2> c;
    sim::event_loop loop{n};
    event_log log;
    edgelock::client_lock l;

    explicit fixture(std::uint64_t seed, int nodes = 1, edgelock::client_options co = {})
        : n(seed) {
        n.add_nodes(nodes);
        commands.assign(static_cast<std::size_t>(nodes), 0);
        n.on_command = [this](int node, std::uint64_t, const std::vector<std::string>&) {
            ++commands[static_cast<std::size_t>(node)];
        };
        urls = std::make_unique<node_urls>(n);
        edgelock_test::configure(c, *urls, co);
        loop.add(c);
        REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
        log.attach(l);
    }

    void run(duration d) { REQUIRE(loop.run_for(d)); }

    void acquire() {
        REQUIRE(l.start_acquire(1, duration{}) == client_errc::ok);
        run(duration::millis(200));
        REQUIRE(l.held());
    }
};

}  // namespace

TEST_CASE("node stats: requests are the commands the node received", "[client][sim][stats]") {
    fixture f(901);
    CHECK(f.c.node_stats(0).requests == 0);
    f.acquire();
    REQUIRE(f.l.start_release() == client_errc::ok);
    f.run(duration::millis(200));
    REQUIRE(f.log.count(lock_event_kind::released) == 1);
    const node_stats s = f.c.node_stats(0);
    CHECK(s.requests > 2);  // the set-up, the acquire, the release
    CHECK(s.requests == f.commands[0]);
    CHECK(s.errors() == 0);
    CHECK(s.connects == 1);
    CHECK(s.reconnects == 0);
    // Past the nodes: all zero.
    CHECK(f.c.node_stats(1).requests == 0);
    CHECK(f.c.node_stats(200).requests == 0);
}

TEST_CASE("node stats: a 50 ms link times round trips at 50 ms", "[client][sim][stats]") {
    fixture f(902);
    f.n.faults(0).latency_min_us = 50000;
    f.n.faults(0).latency_max_us = 50000;
    f.acquire();
    REQUIRE(f.l.start_release() == client_errc::ok);
    f.run(duration::millis(500));
    const node_stats s = f.c.node_stats(0);
    // At least the set-up's first flight and the release, each alone.
    REQUIRE(s.rtt_count >= 2);
    CHECK(s.rtt_min_us >= 50000);
    CHECK(s.rtt_max_us <= 51000);
    CHECK(s.rtt_last_us >= 50000);
    CHECK(s.rtt_last_us <= 51000);
    CHECK(s.rtt_sum_us >= 50000 * s.rtt_count);
    CHECK(s.rtt_sum_us <= 51000 * s.rtt_count);
    // Smoothed: the same, and little variation left (the first sample's
    // half, shrunk by a quarter at each sample that matched).
    CHECK(s.rtt_smoothed_us >= 50000);
    CHECK(s.rtt_smoothed_us <= 51000);
    CHECK(s.rtt_variation_us <= 25000 * 3 / 4 + 1000);
}

TEST_CASE("node stats: the smoothed round trip follows a link that slows down, as TCP's does",
          "[client][sim][stats]") {
    fixture f(904);
    f.n.faults(0).latency_min_us = 10000;
    f.n.faults(0).latency_max_us = 10000;
    // Before any reply, the connect's round trip stands in.
    REQUIRE(f.l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    f.run(duration::millis(1));
    CHECK(f.c.node_stats(0).rtt_count == 0);
    f.run(duration::millis(500));
    REQUIRE(f.log.count(lock_event_kind::acquired) == 1);
    node_stats s = f.c.node_stats(0);
    CHECK(s.rtt_smoothed_us >= 10000);
    CHECK(s.rtt_smoothed_us <= 11000);
    // The link gets ten times slower (the watchdog's renews time it): each
    // sample moves the mean an eighth of the way, and the variation says
    // how far it is off.
    f.n.faults(0).latency_min_us = 100000;
    f.n.faults(0).latency_max_us = 100000;
    const std::uint64_t before = s.rtt_count;
    const double s0 = static_cast<double>(s.rtt_smoothed_us);
    f.run(duration::millis(800));
    s = f.c.node_stats(0);
    const std::uint64_t k = s.rtt_count - before;
    REQUIRE(k >= 1);
    REQUIRE(k <= 8);
    CHECK(s.rtt_last_us >= 100000);
    const double expected =
        100000.0 - (100000.0 - s0) * std::pow(7.0 / 8.0, static_cast<double>(k));
    INFO(k << " samples at 100 ms: " << s.rtt_smoothed_us << " us, expected " << expected);
    CHECK(static_cast<double>(s.rtt_smoothed_us) >= expected - 2000.0);
    CHECK(static_cast<double>(s.rtt_smoothed_us) <= expected + 2000.0);
    CHECK(s.rtt_variation_us > 10000);
}

TEST_CASE("node stats: refused connects count as connect errors, each retry a reconnect",
          "[client][sim][stats]") {
    fixture f(903);
    f.n.crash(0);
    REQUIRE(f.l.start_acquire(UINT32_MAX, duration::seconds(3)) == client_errc::ok);
    f.run(duration::seconds(2));
    const node_stats s = f.c.node_stats(0);
    std::uint64_t attempts = 0;
    for (const auto& r : f.n.connects) {
        attempts += r.node == 0 ? 1 : 0;
    }
    REQUIRE(attempts >= 3);
    CHECK(s.connects == attempts);
    CHECK(s.reconnects == attempts - 1);
    CHECK(s.connect_errors == attempts);
    CHECK(s.errors() == s.connect_errors);
    CHECK(s.requests == 0);
    CHECK(s.rtt_count == 0);
    CHECK(s.rtt_min_us == 0);
}

TEST_CASE("node stats: a dropped connection counts as closed, and its remaking as a reconnect",
          "[client][sim][stats]") {
    fixture f(904);
    f.acquire();
    f.n.cut(0);
    f.run(duration::millis(800));  // the watchdog renews: the node is connected again
    CHECK(f.log.count(lock_event_kind::renewed) >= 1);
    const node_stats s = f.c.node_stats(0);
    CHECK(s.closed == 1);
    CHECK(s.connects == 2);
    CHECK(s.reconnects == 1);
    CHECK(s.errors() == 1);
}

TEST_CASE("node stats: a connect that hangs and a node that stops answering count as timeouts",
          "[client][sim][stats]") {
    SECTION("connect") {
        edgelock::client_options co;
        co.connect_timeout = duration::millis(100);
        fixture f(905, 1, co);
        f.n.faults(0).connect_hangs = true;
        REQUIRE(f.l.start_acquire(1, duration{}) == client_errc::ok);
        f.run(duration::millis(150));
        CHECK(f.c.node(0).error == node_error::connect_timeout);
        CHECK(f.c.node_stats(0).timeouts == 1);
        CHECK(f.c.node_stats(0).errors() == 1);
    }
    SECTION("stall") {
        edgelock::client_options co;
        co.stall_timeout = duration::millis(200);
        fixture f(906, 1, co);
        f.acquire();
        f.n.pause(0, duration::millis(600));
        REQUIRE(f.l.start_renew() == client_errc::ok);
        f.run(duration::millis(300));
        CHECK(f.c.node(0).error == node_error::stalled);
        CHECK(f.c.node_stats(0).timeouts == 1);
        CHECK(f.c.node_stats(0).errors() == 1);
    }
}

TEST_CASE("node stats: a malformed reply counts as a protocol error", "[client][sim][stats]") {
    fixture f(907);
    f.acquire();
    f.n.node(0).intercept = [](sim::session&, const std::vector<std::string>&, std::uint64_t,
                               std::string& reply) {
        reply = ":12ab\r\n";  // not a number
        return true;
    };
    REQUIRE(f.l.start_renew() == client_errc::ok);
    f.run(duration::millis(30));
    CHECK(f.c.node(0).error == node_error::protocol_error);
    CHECK(f.c.node_stats(0).protocol_errors == 1);
    CHECK(f.c.node_stats(0).errors() == 1);
}

TEST_CASE(
    "node stats: error replies to lock requests count as server errors, a refused set-up "
    "as a refusal",
    "[client][sim][stats]") {
    SECTION("server error") {
        fixture f(908);
        for (const char* cmd : {"SET", "EVAL", "EVALSHA"}) {
            f.n.node(0).refusals[cmd] = "OOM command not allowed when used memory > 'maxmemory'";
        }
        REQUIRE(f.l.start_acquire(1, duration{}) == client_errc::ok);
        f.run(duration::millis(200));
        CHECK(f.log.count(lock_event_kind::failed) == 1);
        CHECK(f.c.node(0).error == node_error::server_error);
        CHECK(f.c.node_stats(0).server_errors >= 1);
        CHECK(f.c.node_stats(0).errors() == f.c.node_stats(0).server_errors);
    }
    SECTION("refusal") {
        fixture f(909);
        f.n.node(0).refusals["HELLO"] = "LOADING Redis is loading the dataset in memory";
        REQUIRE(f.l.start_acquire(1, duration{}) == client_errc::ok);
        f.run(duration::millis(50));
        CHECK(f.c.node(0).error == node_error::setup_failed);
        CHECK(f.c.node_stats(0).refusals == 1);
        CHECK(f.c.node_stats(0).errors() == 1);
    }
}

TEST_CASE("node stats: configure() starts them at zero", "[client][sim][stats]") {
    fixture f(910);
    f.acquire();
    REQUIRE(f.l.start_release() == client_errc::ok);
    f.run(duration::millis(50));
    f.l.detach();
    REQUIRE(f.c.node_stats(0).requests > 0);
    edgelock_test::configure(f.c, *f.urls);
    CHECK(f.c.node_stats(0).requests == 0);
    CHECK(f.c.node_stats(0).connects == 0);
}

TEST_CASE("lock stats: acquisitions, renewals, releases", "[client][sim][stats]") {
    fixture f(911);
    CHECK(f.l.stats().acquisitions == 0);
    f.acquire();
    f.run(duration::millis(1000));  // ttl 1 s: the watchdog renews every 333 ms
    REQUIRE(f.l.start_release() == client_errc::ok);
    f.run(duration::millis(50));
    const lock_stats s = f.l.stats();
    CHECK(s.acquisitions == 1);
    CHECK(s.renewals == f.log.count(lock_event_kind::renewed));
    CHECK(s.renewals >= 2);
    CHECK(s.releases == 1);
    CHECK(s.contended == 0);
    CHECK(s.busy == 0);
    CHECK(s.losses == 0);
    CHECK(s.renewals_failed == 0);
}

TEST_CASE("lock stats: an acquisition that finds the key held is contended",
          "[client][sim][stats]") {
    fixture f(912);
    edgelock::client_lock holder;
    REQUIRE(holder.attach(f.c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(holder.start_acquire(1, duration{}) == client_errc::ok);
    f.run(duration::millis(100));
    REQUIRE(holder.held());
    // One try: busy.
    REQUIRE(f.l.start_acquire(1, duration{}) == client_errc::ok);
    f.run(duration::millis(100));
    REQUIRE(f.log.count(lock_event_kind::busy) == 1);
    CHECK(f.l.stats().busy == 1);
    CHECK(f.l.stats().contended == 1);
    CHECK(f.l.stats().acquisitions == 0);
    // Waiting: acquired once the holder lets go.
    REQUIRE(f.l.start_acquire(UINT32_MAX, duration::seconds(2)) == client_errc::ok);
    f.run(duration::millis(100));
    REQUIRE(holder.start_release() == client_errc::ok);
    f.run(duration::millis(300));
    REQUIRE(f.l.held());
    CHECK(f.l.stats().acquisitions == 1);
    CHECK(f.l.stats().contended == 2);
    CHECK(f.l.stats().busy == 1);
    CHECK(holder.stats().acquisitions == 1);
    CHECK(holder.stats().contended == 0);
    CHECK(holder.stats().releases == 1);
}

TEST_CASE("lock stats: a key deleted under the holder is a loss", "[client][sim][stats]") {
    fixture f(913);
    f.acquire();
    f.n.node(0).del(edgelock_test::key_of("jobs"), f.n.now().us);
    f.run(duration::millis(500));
    REQUIRE(f.log.count(lock_event_kind::lost) == 1);
    CHECK(f.l.stats().losses == 1);
    CHECK(f.l.stats().renewals_failed == 0);
    CHECK(f.l.stats().acquisitions == 1);
}

TEST_CASE("lock stats: a node gone renews fail, then the lock is lost", "[client][sim][stats]") {
    fixture f(914);
    f.acquire();
    f.n.crash(0);
    f.run(duration::millis(1500));
    REQUIRE(f.log.count(lock_event_kind::lost) == 1);
    CHECK(f.l.stats().renewals_failed == f.log.count(lock_event_kind::renew_failed));
    CHECK(f.l.stats().renewals_failed >= 1);
    CHECK(f.l.stats().losses == 1);
    // The node's side: the reset, then refused reconnects.
    CHECK(f.c.node_stats(0).closed == 1);
    CHECK(f.c.node_stats(0).connect_errors >= 1);
}
