// How often a waiter tries while others hold: when a server tells it the
// key changed, at once, and otherwise after its retry delay (retry_min ..
// retry_max), never in a loop. Two layouts where every try of a waiter is
// refused on a quorum of the nodes but finds something free on one of them,
// which a waiter must not take as a reason to try again at once:
//
//   lock      - plain Redlock of three: the holder has nodes 0 and 1 (node 2
//               was down when it acquired, and came back empty). Each try of
//               a waiter takes node 2, or finds the other waiter there, and
//               the cleanup of a lost try deletes its key on node 2 and
//               writes the release mark, which tells the other waiter.
//   semaphore - two permits on three nodes, held crosswise: A holds one on
//               nodes 0 and 1, B the other on nodes 1 and 2 (each acquired
//               while the third node was down). Every node has a free permit
//               and names it when it refuses; no permit is free on a quorum.
//
// Each with the waiters told of changes (the nodes track keys) and polling.
// The bound: 50 requests per second from each waiting client, counted by
// the client (node_stats::requests) over three virtual seconds. With retry
// delays of 300-500 ms a try every retry delay costs a few requests per
// node: a polling waiter of the Redlock sends about 11 per second. A waiter
// that tries again at once after each refusal, or each push another waiter's
// cleanup causes, sends hundreds to thousands.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;

namespace {

using client_type = edgelock::client<3>;

constexpr double max_requests_per_second = 50.0;

edgelock::lock_options pace_options(std::uint8_t permits) {
    edgelock::lock_options o = edgelock_test::fast_lock_options();
    o.ttl = duration::seconds(1);
    o.retry_min = duration::millis(300);
    o.retry_max = duration::millis(500);
    o.permits = permits;
    return o;
}

std::uint64_t requests_of(const client_type& c) {
    std::uint64_t k = 0;
    for (std::uint8_t i = 0; i < 3; ++i) {
        k += c.node_stats(i).requests;
    }
    return k;
}

sim::net& three_nodes(sim::net& n) {
    n.add_nodes(3);
    return n;
}

// Three nodes (told: they tell of changes), the holders' clients and two waiters'.
struct world {
    sim::net n;
    edgelock_test::node_urls urls;
    std::array<client_type, 2> holder_clients;
    std::array<client_type, 2> waiter_clients;
    sim::event_loop loop{n};
    std::array<edgelock::client_lock, 2> holders;
    std::array<edgelock::client_lock, 2> waiters;

    world(std::uint64_t seed, bool told) : n(seed), urls(three_nodes(n)) {
        for (int i = 0; i < 3; ++i) {
            n.node(i).tracking = told;
            n.faults(i).latency_min_us = 1000;
            n.faults(i).latency_max_us = 2000;
        }
        for (client_type& c : holder_clients) {
            edgelock_test::configure(c, urls);
            loop.add(c);
        }
        for (client_type& c : waiter_clients) {
            edgelock_test::configure(c, urls);
            loop.add(c);
        }
    }

    // Holder h acquires while node `down` is down; the node comes back with its keys.
    void hold_without(int h, int down, const edgelock::lock_options& o) {
        n.crash(down);
        REQUIRE(holders[static_cast<std::size_t>(h)].attach(
                    holder_clients[static_cast<std::size_t>(h)], "jobs", o) == client_errc::ok);
        REQUIRE(holders[static_cast<std::size_t>(h)].start_acquire(3, duration::seconds(1)) ==
                client_errc::ok);
        REQUIRE(loop.run_for(duration::millis(100)));
        REQUIRE(holders[static_cast<std::size_t>(h)].held());
        n.restart(down, true);
        REQUIRE(loop.run_for(duration::millis(50)));
    }

    // Both waiters wait three seconds; each one's requests per second.
    void wait_and_count(const edgelock::lock_options& o, int holding) {
        for (std::size_t i = 0; i < waiters.size(); ++i) {
            REQUIRE(waiters[i].attach(waiter_clients[i], "jobs", o) == client_errc::ok);
            REQUIRE(waiters[i].start_acquire(1000000, duration::seconds(10)) == client_errc::ok);
        }
        // Connected and set up, each has found the lock taken.
        REQUIRE(loop.run_for(duration::millis(200), 2000000));
        std::array<std::uint64_t, 2> before{};
        for (std::size_t i = 0; i < waiters.size(); ++i) {
            before[i] = requests_of(waiter_clients[i]);
        }
        const instant from = n.now();
        const bool ran = loop.run_for(duration::seconds(3), 4000000);
        const double seconds = static_cast<double>((n.now() - from).us) / 1e6;
        for (std::size_t i = 0; i < waiters.size(); ++i) {
            const double rate =
                static_cast<double>(requests_of(waiter_clients[i]) - before[i]) / seconds;
            INFO("waiter " << i << ": " << requests_of(waiter_clients[i]) - before[i]
                           << " requests in " << seconds << " s");
            CHECK(rate <= max_requests_per_second);
            CHECK_FALSE(waiters[i].held());
        }
        REQUIRE(ran);
        for (int h = 0; h < holding; ++h) {
            REQUIRE(holders[static_cast<std::size_t>(h)].held());  // they waited on a held lock
        }
    }
};

void redlock_split(bool told) {
    world w(4801, told);
    const edgelock::lock_options o = pace_options(0);
    w.hold_without(0, 2, o);
    CHECK(edgelock_test::value_at(w.n, 2, "jobs").empty());
    w.wait_and_count(o, 1);
}

void permits_crosswise(bool told) {
    world w(4802, told);
    const edgelock::lock_options o = pace_options(2);
    w.hold_without(0, 2, o);
    w.hold_without(1, 0, o);
    const int a = w.holders[0].permit();
    const int b = w.holders[1].permit();
    REQUIRE(a != b);
    // Node 0 has A's permit only, node 2 B's only, node 1 both.
    auto held_at = [&w](int node, int permit) {
        return w.n.node(node).find(
                   edgelock_test::permit_key_of("jobs", static_cast<unsigned>(permit)),
                   w.n.now().us) != nullptr;
    };
    REQUIRE((held_at(0, a) && !held_at(0, b)));
    REQUIRE((held_at(1, a) && held_at(1, b)));
    REQUIRE((!held_at(2, a) && held_at(2, b)));
    w.wait_and_count(o, 2);
}

}  // namespace

TEST_CASE("waiter pace: a Redlock held on two nodes of three with the third free",
          "[sim][pace][redlock]") {
    SECTION("waiters told of changes") {
        redlock_split(true);
    }
    SECTION("waiters polling") {
        redlock_split(false);
    }
}

TEST_CASE("waiter pace: a semaphore whose permits are held crosswise across three nodes",
          "[sim][pace][permits]") {
    SECTION("waiters told of changes") {
        permits_crosswise(true);
    }
    SECTION("waiters polling") {
        permits_crosswise(false);
    }
}
