// Waiters tracking their lock's renewal mark in broadcasting mode, on
// virtual time: a holder's renews (which write the renewal mark) cost them
// nothing, on one node and under Redlock, RESP3 and RESP2; a release (which
// writes the release mark) wakes them, and the winner's take does not; a
// connection tracks up to EDGELOCK_CLIENT_TRACKED_NAMES names and a lock past
// them polls; a refused CLIENT TRACKING is asked once, then the lock polls.
#include <catch2/catch.hpp>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock_test::node_urls;

namespace {

using client_type = edgelock::client<3, 6>;

// A waiter whose own polls are far away: anything sooner was told.
edgelock::lock_options waiting() {
    edgelock::lock_options o = edgelock_test::fast_lock_options();
    o.ttl = duration::seconds(10);  // held to the test's end once taken
    o.retry_min = duration::millis(3000);
    o.retry_max = duration::millis(3000);
    return o;
}

std::uint64_t calls(sim::net& n, const std::string& command) {
    std::uint64_t k = 0;
    for (int i = 0; i < n.node_count(); ++i) {
        k += n.node(i).count_of(command);
    }
    return k;
}

void renews_cost_waiters_nothing(int nodes, bool resp3) {
    sim::net n(4100 + static_cast<std::uint64_t>(nodes) * 2 + (resp3 ? 1 : 0));
    n.add_nodes(nodes);
    for (int i = 0; i < nodes; ++i) {
        n.node(i).tracking = true;
    }
    const node_urls urls(n);
    edgelock::client_options co;
    co.resp3 = resp3;
    client_type holder_client;
    std::array<client_type, 2> waiter_clients;
    edgelock_test::configure(holder_client, urls, co);
    sim::event_loop loop(n);
    loop.add(holder_client);
    for (client_type& c : waiter_clients) {
        edgelock_test::configure(c, urls, co);
        loop.add(c);
    }
    edgelock::watchdog_options every;
    every.renew_every = duration::millis(100);
    edgelock::client_lock holder;
    REQUIRE(holder.attach(holder_client, "jobs", edgelock_test::fast_lock_options(), every) ==
            client_errc::ok);
    std::array<edgelock::client_lock, 2> waiters;
    edgelock::watchdog_options none;
    none.enabled = false;
    for (std::size_t i = 0; i < waiters.size(); ++i) {
        REQUIRE(waiters[i].attach(waiter_clients[i], "jobs", waiting(), none) == client_errc::ok);
    }
    REQUIRE(holder.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(200)));
    REQUIRE(holder.held());
    for (edgelock::client_lock& w : waiters) {
        REQUIRE(w.start_acquire(1000, duration::seconds(30)) == client_errc::ok);
    }
    REQUIRE(loop.run_for(duration::millis(300)));
    CHECK(calls(n, "CLIENT") >= waiters.size() * static_cast<std::size_t>(nodes));  // asked

    // Two seconds of renews: the holder's scripts, nothing of the waiters'.
    const std::uint64_t scripts = calls(n, "EVALSHA") + calls(n, "EVAL");
    const std::uint64_t reads = calls(n, "PTTL");
    const std::uint64_t sets = calls(n, "SET");
    const std::uint64_t asked = calls(n, "CLIENT");
    REQUIRE(loop.run_for(duration::seconds(2)));
    REQUIRE(holder.held());
    const std::uint64_t renews = calls(n, "EVALSHA") + calls(n, "EVAL") - scripts;
    CHECK(renews >= 15 * static_cast<std::uint64_t>(nodes));
    CHECK(calls(n, "PTTL") == reads);
    CHECK(calls(n, "SET") == sets);
    CHECK(calls(n, "CLIENT") == asked);
    for (const edgelock::client_lock& w : waiters) {
        CHECK_FALSE(w.held());
    }

    // A release wakes them at once: one takes the lock long before a poll.
    // Each tries once on each node (PTTL, then SET); under Redlock the
    // loser may try again for each node whose release reached it after that
    // node said busy (the releases reach the nodes one at a time), so at
    // most once per node in all. The winner's take writes only the key,
    // which wakes the loser no more.
    // The release goes just after a renew came back, so that none is out
    // before it on the connection (that renew's mark would be news to the
    // waiters as the release reaches them).
    const instant renewed = holder.validity_deadline();
    for (int i = 0; i < 200 && holder.validity_deadline() == renewed; ++i) {
        REQUIRE(loop.run_for(duration::millis(1)));
    }
    REQUIRE(holder.validity_deadline() != renewed);
    const instant released = n.now();
    REQUIRE(holder.start_release() == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));
    CHECK(waiters[0].held() != waiters[1].held());
    CHECK(n.now() - released < duration::millis(3000));
    const std::uint64_t tries = waiters.size() * static_cast<std::uint64_t>(nodes);
    const std::uint64_t more =
        static_cast<std::uint64_t>(nodes) * static_cast<std::uint64_t>(nodes - 1);
    const std::uint64_t after = calls(n, "PTTL");
    CHECK(after >= reads + tries);
    CHECK(after <= reads + tries + more);
    CHECK(calls(n, "SET") - sets == after - reads);
    REQUIRE(loop.run_for(duration::millis(2000)));  // its poll is the holder's ttl away
    CHECK(calls(n, "PTTL") == after);
    CHECK(calls(n, "SET") - sets == after - reads);
    CHECK(waiters[0].held() != waiters[1].held());
}

// One tracking node (its CLIENT TRACKING refused with `refusal`, if any), a
// holder's client and a waiter's, on one loop.
struct one_node {
    sim::net n;
    std::unique_ptr<node_urls> urls;
    client_type holder_client;
    client_type waiter_client;
    sim::event_loop loop;

    explicit one_node(std::uint64_t seed, const char* refusal = nullptr) : n(seed), loop(n) {
        n.add_nodes(1);
        n.node(0).tracking = true;
        if (refusal != nullptr) {
            n.node(0).refusals["CLIENT TRACKING"] = refusal;
        }
        urls = std::make_unique<node_urls>(n);
        edgelock_test::configure(holder_client, *urls);
        edgelock_test::configure(waiter_client, *urls);
        loop.add(holder_client);
        loop.add(waiter_client);
    }
};

}  // namespace

TEST_CASE("sim told renewals: renews wake no waiter and a release does", "[sim][notify]") {
    SECTION("one node, RESP3") {
        renews_cost_waiters_nothing(1, true);
    }
    SECTION("one node, RESP2 (a subscription)") {
        renews_cost_waiters_nothing(1, false);
    }
    SECTION("Redlock over three nodes, RESP3") {
        renews_cost_waiters_nothing(3, true);
    }
}

TEST_CASE("sim told renewals: a connection tracks up to its limit of names and the rest poll",
          "[sim][notify]") {
    one_node r(4201);
    sim::net& n = r.n;
    sim::event_loop& loop = r.loop;
    client_type& holder_client = r.holder_client;
    client_type& waiter_client = r.waiter_client;
    constexpr std::size_t names = EDGELOCK_CLIENT_TRACKED_NAMES + 1;
    std::vector<std::string> name_of;
    name_of.reserve(names);  // the locks keep views into them
    std::vector<std::unique_ptr<edgelock::client_lock>> held;
    std::vector<std::unique_ptr<edgelock::client_lock>> waiting_locks;
    edgelock::watchdog_options none;
    none.enabled = false;
    for (std::size_t i = 0; i < names; ++i) {
        name_of.push_back("job-" + std::string(1, static_cast<char>('a' + i)));
        held.push_back(std::make_unique<edgelock::client_lock>());
        waiting_locks.push_back(std::make_unique<edgelock::client_lock>());
        const edgelock::str_view name(name_of.back().data(), name_of.back().size());
        REQUIRE(held.back()->attach(holder_client, name, edgelock_test::fast_lock_options(),
                                    none) == client_errc::ok);
        REQUIRE(waiting_locks.back()->attach(waiter_client, name, waiting(), none) ==
                client_errc::ok);
        REQUIRE(held.back()->start_acquire(20, duration::seconds(1)) == client_errc::ok);
    }
    REQUIRE(loop.run_for(duration::millis(300)));
    for (auto& l : held) {
        REQUIRE(l->held());
    }
    for (auto& l : waiting_locks) {
        REQUIRE(l->start_acquire(1000, duration::seconds(30)) == client_errc::ok);
    }
    REQUIRE(loop.run_for(duration::millis(300)));
    CHECK(n.node(0).count_of("CLIENT") == EDGELOCK_CLIENT_TRACKED_NAMES);
    // Every key released: the tracked names' waiters are told and take
    // theirs at once; the one past the limit takes its at its poll.
    const instant t = n.now();
    for (auto& l : held) {
        REQUIRE(l->start_release() == client_errc::ok);
    }
    const auto holding = [&] {
        std::size_t k = 0;
        for (const auto& l : waiting_locks) {
            k += l->held() ? 1u : 0u;
        }
        return k;
    };
    REQUIRE(loop.run_for(duration::millis(200)));
    CHECK(holding() == EDGELOCK_CLIENT_TRACKED_NAMES);
    REQUIRE(loop.run_for(duration::millis(3500)));
    CHECK(holding() == names);
    CHECK(n.now() - t >= duration::millis(3000));
}

TEST_CASE("sim told renewals: a refused CLIENT TRACKING is asked once and the waiter polls",
          "[sim][notify]") {
    one_node r(4301, "NOPERM this user has no permissions to run the 'client|tracking' command");
    sim::net& n = r.n;
    sim::event_loop& loop = r.loop;
    client_type& holder_client = r.holder_client;
    client_type& waiter_client = r.waiter_client;
    edgelock::watchdog_options every;
    every.renew_every = duration::millis(100);
    edgelock::client_lock holder;
    edgelock::client_lock waiter;
    REQUIRE(holder.attach(holder_client, "jobs", edgelock_test::fast_lock_options(), every) ==
            client_errc::ok);
    edgelock::lock_options o = waiting();
    o.retry_min = o.retry_max = duration::millis(300);
    edgelock::watchdog_options none;
    none.enabled = false;
    REQUIRE(waiter.attach(waiter_client, "jobs", o, none) == client_errc::ok);
    edgelock_test::event_log log;
    log.attach(waiter);
    REQUIRE(holder.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(200)));
    REQUIRE(waiter.start_acquire(1000, duration::seconds(30)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::seconds(2)));
    CHECK(n.node(0).count_of("CLIENT") == 1);  // asked once
    CHECK_FALSE(waiter.held());
    REQUIRE(holder.start_release() == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(1500)));
    const auto* last = log.last(&waiter);
    INFO(edgelock_test::what(waiter_client.node(0))
         << " last event " << (last ? static_cast<int>(last->ev.kind) : -1));
    CHECK(waiter.held());  // by polling
    CHECK(waiter_client.node(0).state == edgelock::node_state::ready);
}
