// Semaphores (lock_options::permits) through the real driver on virtual
// time, on one node and under Redlock over three, with nodes that tell
// waiters (key tracking): a holder that dies frees its permit within its
// ttl for a waiter, a release wakes a told waiter at once, and a client
// that asks for another limit fails at once without disturbing the holder.
// The random schedules are in test_sim_permits_random.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock_test::node_urls;

namespace {

using client_type = edgelock::client<3, 6>;

// Tracking nodes and a client of its own for each party, on one loop. The
// last `told` parties are told of releases; the others ask not to be, and
// poll: a holder's take then waits for no word that may not come.
struct world {
    sim::net n;
    std::unique_ptr<node_urls> urls;
    std::vector<std::unique_ptr<client_type>> clients;
    sim::event_loop loop;
    std::uint64_t acquires = 0;  // permit acquire scripts the nodes ran

    world(std::uint64_t seed, int nodes, int parties, int told) : n(seed), loop(n) {
        n.add_nodes(nodes);
        for (int i = 0; i < nodes; ++i) {
            n.node(i).tracking = true;
        }
        urls = std::make_unique<node_urls>(n);
        for (int i = 0; i < parties; ++i) {
            edgelock::client_options co;
            co.notify = i >= parties - told;
            clients.push_back(std::make_unique<client_type>());
            edgelock_test::configure(*clients.back(), *urls, co);
            loop.add(*clients.back());
        }
        n.on_command = [this](int, std::uint64_t, const std::vector<std::string>& argv) {
            const edgelock::lock_script& s = edgelock::script_permit_acquire;
            if (argv.size() >= 2 &&
                (argv[1] == sim::to_std(s.sha1) || argv[1] == sim::to_std(s.text))) {
                ++acquires;
            }
        };
    }
    client_type& client(int i) { return *clients[static_cast<std::size_t>(i)]; }
};

edgelock::lock_options semaphore(std::uint8_t permits, duration ttl) {
    edgelock::lock_options o = edgelock_test::fast_lock_options();
    o.permits = permits;
    o.ttl = ttl;
    return o;
}

// The virtual time of the lock's first event of this kind, or never.
instant first_event(const edgelock_test::event_log& log, const edgelock::client_lock& l,
                    lock_event_kind kind) {
    for (const auto& e : log.events) {
        if (e.lock == &l && e.ev.kind == kind) {
            return e.at;
        }
    }
    return instant::never();
}

// Every node tells the client of releases (CLIENT TRACKING taken).
bool told_everywhere(const client_type& c) {
    for (std::uint8_t i = 0; i < c.node_count(); ++i) {
        if (!c.node(i).tracking) {
            return false;
        }
    }
    return true;
}

// "taken N us after what", or "not taken".
std::string taken_after(instant taken, instant from, const char* what) {
    return taken.is_never() ? std::string("not taken")
                            : "taken " + std::to_string((taken - from).us) + " us after " + what;
}

// The value of permit p of "jobs" on node i ("" when absent).
std::string permit_value(sim::net& n, int i, int p) {
    return edgelock_test::value_at(n, i, "{jobs}:permit:" + std::to_string(p));
}

void dead_holder_frees_its_permit(int nodes, std::uint64_t seed) {
    world w(seed, nodes, 3, 1);
    const edgelock::lock_options o = semaphore(2, duration::millis(1000));
    edgelock::client_lock dying;
    edgelock::client_lock other;
    edgelock::client_lock waiter;
    REQUIRE(dying.attach(w.client(0), "jobs", o) == client_errc::ok);
    REQUIRE(other.attach(w.client(1), "jobs", o) == client_errc::ok);
    REQUIRE(waiter.attach(w.client(2), "jobs", o) == client_errc::ok);
    edgelock_test::event_log log;
    log.attach(dying);
    log.attach(other);
    log.attach(waiter);

    REQUIRE(dying.start_acquire(20, duration::seconds(1)) == client_errc::ok);
    REQUIRE(other.start_acquire(20, duration::seconds(1)) == client_errc::ok);
    REQUIRE(w.loop.run_for(duration::millis(200)));
    REQUIRE(dying.held());
    REQUIRE(other.held());
    REQUIRE(dying.permit() != other.permit());
    const int freed = dying.permit();
    REQUIRE(waiter.start_acquire(1000, duration::seconds(30)) == client_errc::ok);
    REQUIRE(w.loop.run_for(duration::millis(500)));
    REQUIRE_FALSE(waiter.held());
    REQUIRE(told_everywhere(w.client(2)));

    // The holder's process dies just after a renew: no release, no renew
    // after it; its connections close.
    const std::size_t renews = log.count(lock_event_kind::renewed, &dying);
    for (int step = 0; step < 1000 && log.count(lock_event_kind::renewed, &dying) == renews;
         ++step) {
        REQUIRE(w.loop.run_for(duration::millis(1)));
    }
    REQUIRE(log.last(&dying)->ev.kind == lock_event_kind::renewed);
    const instant last_renew = log.last(&dying)->at;
    const instant dead_validity = dying.validity_deadline();
    const instant died = w.n.now();
    dying.detach();
    w.client(0).disconnect();
    const std::uint64_t tries_before = w.acquires;

    // Twice the ttl and more: time enough to see a late take as late.
    REQUIRE(w.loop.run_for(o.ttl + o.ttl + duration::millis(500)));
    const instant taken = first_event(log, waiter, lock_event_kind::acquired);
    INFO(taken_after(taken, died, "the holder died")
         << ", " << (w.acquires - tries_before) << " acquire requests");
    REQUIRE(waiter.held());
    CHECK(waiter.permit() == freed);
    CHECK(taken >= dead_validity);  // never while the dead holder could still act
    CHECK(taken <= last_renew + o.ttl + o.node_timeout + o.retry_max);
    // Told: it polled at the permits' expiry, not every retry delay (which
    // would have made some 50 tries in a ttl).
    CHECK(w.acquires - tries_before <= 5 * static_cast<std::uint64_t>(nodes));
    CHECK(other.held());
    CHECK(other.permit() != freed);
    // The dead holder's client stayed dead: it asked nothing more.
    for (const auto& c : w.n.connects) {
        CHECK(c.at < died);
    }
    CHECK(w.client(0).ready_count() == 0);
}

void release_wakes_told_waiter(int nodes, std::uint8_t permits, std::uint64_t seed) {
    world w(seed, nodes, permits + 1, 1);
    // Held for the test's length; a waiter whose own polls are far away:
    // anything sooner was told.
    const edgelock::lock_options held = semaphore(permits, duration::seconds(10));
    edgelock::lock_options waiting = held;
    waiting.retry_min = waiting.retry_max = duration::millis(3000);
    std::vector<std::unique_ptr<edgelock::client_lock>> holders;
    for (int i = 0; i < permits; ++i) {
        holders.push_back(std::make_unique<edgelock::client_lock>());
        REQUIRE(holders.back()->attach(w.client(i), "jobs", held) == client_errc::ok);
        REQUIRE(holders.back()->start_acquire(20, duration::seconds(1)) == client_errc::ok);
    }
    edgelock::client_lock waiter;
    REQUIRE(waiter.attach(w.client(permits), "jobs", waiting) == client_errc::ok);
    edgelock_test::event_log log;
    log.attach(waiter);
    REQUIRE(w.loop.run_for(duration::millis(300)));
    for (const auto& h : holders) {
        REQUIRE(h->held());
    }
    REQUIRE(waiter.start_acquire(1000, duration::seconds(30)) == client_errc::ok);
    REQUIRE(w.loop.run_for(duration::millis(500)));
    REQUIRE_FALSE(waiter.held());
    REQUIRE(told_everywhere(w.client(permits)));

    const int freed = holders[0]->permit();
    const instant released = w.n.now();
    REQUIRE(holders[0]->start_release() == client_errc::ok);
    REQUIRE(w.loop.run_for(duration::millis(100)));
    const instant taken = first_event(log, waiter, lock_event_kind::acquired);
    INFO(taken_after(taken, released, "the release"));
    CHECK(waiter.held());
    CHECK(waiter.permit() == freed);
    CHECK(taken <= released + duration::millis(10));
    for (std::size_t i = 1; i < holders.size(); ++i) {
        CHECK(holders[i]->held());
    }
}

void other_limit_fails_once(int nodes) {
    world w(4700 + static_cast<std::uint64_t>(nodes), nodes, 2, 2);
    edgelock::client_lock holder;
    edgelock::client_lock other;
    REQUIRE(holder.attach(w.client(0), "jobs", semaphore(2, duration::millis(1000))) ==
            client_errc::ok);
    REQUIRE(other.attach(w.client(1), "jobs", semaphore(3, duration::millis(1000))) ==
            client_errc::ok);
    edgelock_test::event_log log;
    log.attach(holder);
    log.attach(other);
    REQUIRE(holder.start_acquire(20, duration::seconds(1)) == client_errc::ok);
    REQUIRE(w.loop.run_for(duration::millis(200)));
    REQUIRE(holder.held());
    const int permit = holder.permit();
    const std::string token = edgelock_test::hex(holder.token());

    const std::uint64_t tries_before = w.acquires;
    const std::size_t renews = log.count(lock_event_kind::renewed, &holder);
    const instant started = w.n.now();
    REQUIRE(other.start_acquire(10, duration::seconds(5)) == client_errc::ok);
    REQUIRE(w.loop.run_for(duration::millis(1000)));
    const edgelock_test::event_log::entry* e = log.last(&other);
    REQUIRE(e != nullptr);
    CHECK(log.count(lock_event_kind::failed, &other) == 1);  // its only event
    CHECK(log.count(lock_event_kind::acquired, &other) == 0);
    CHECK(e->ev.kind == lock_event_kind::failed);
    CHECK(e->ev.reason == edgelock::lock_failure::permits_differ);
    CHECK(e->ev.permits_found == 2);
    CHECK(e->at <= started + semaphore(3, duration::millis(1000)).node_timeout);  // one round
    CHECK(w.acquires - tries_before == static_cast<std::uint64_t>(nodes));        // one try each
    CHECK(other.state() == edgelock::lock_state::idle);

    // The holder went on as before: renewed, its permit and limit in place.
    CHECK(holder.held());
    CHECK(holder.permit() == permit);
    CHECK(log.count(lock_event_kind::renewed, &holder) >= renews + 2);
    CHECK(log.count(lock_event_kind::lost, &holder) == 0);
    for (int i = 0; i < nodes; ++i) {
        CHECK(permit_value(w.n, i, permit) == token);
        sim::keyspace::entry* h = w.n.node(i).find("{jobs}:permits", w.n.now().us);
        REQUIRE(h != nullptr);
        CHECK(h->fields["limit"] == "2");
    }
    REQUIRE(holder.start_release() == client_errc::ok);
    REQUIRE(w.loop.run_for(duration::millis(100)));
    CHECK(log.last(&holder)->ev.kind == lock_event_kind::released);
    for (int i = 0; i < nodes; ++i) {
        CHECK(permit_value(w.n, i, permit).empty());
    }
}

}  // namespace

TEST_CASE("sim permits: a dead holder's permit goes to a told waiter within its ttl",
          "[sim][permits]") {
    // Several seeds: under Redlock, the permit a round asks for is drawn.
    for (std::uint64_t seed = 4500; seed < 4504; ++seed) {
        DYNAMIC_SECTION("one node, seed " << seed) {
            dead_holder_frees_its_permit(1, seed);
        }
        DYNAMIC_SECTION("Redlock over three nodes, seed " << seed) {
            dead_holder_frees_its_permit(3, seed);
        }
    }
}

TEST_CASE("sim permits: a release wakes a told waiter at once", "[sim][permits]") {
    // Several seeds: under Redlock, the permit a round asks for is drawn.
    for (std::uint64_t seed = 4600; seed < 4606; ++seed) {
        DYNAMIC_SECTION("one node, 1 permit, seed " << seed) {
            release_wakes_told_waiter(1, 1, seed);
        }
        DYNAMIC_SECTION("one node, 2 permits both taken, seed " << seed) {
            release_wakes_told_waiter(1, 2, seed);
        }
        DYNAMIC_SECTION("Redlock over three nodes, 1 permit, seed " << seed) {
            release_wakes_told_waiter(3, 1, seed);
        }
        DYNAMIC_SECTION("Redlock over three nodes, 2 permits both taken, seed " << seed) {
            release_wakes_told_waiter(3, 2, seed);
        }
    }
}

TEST_CASE("sim permits: another limit fails at once and leaves the holder alone",
          "[sim][permits]") {
    SECTION("one node") {
        other_limit_fails_once(1);
    }
    SECTION("Redlock over three nodes") {
        other_limit_fails_once(3);
    }
}

TEST_CASE("sim permits: concurrent fenced Redlock holders never share a token", "[sim][permits]") {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        INFO("seed " << seed);
        sim::net n(seed);
        n.add_nodes(3);
        const node_urls urls(n);
        edgelock::client_options co;
        co.notify = false;
        client_type a_client;
        client_type b_client;
        edgelock_test::configure(a_client, urls, co);
        edgelock_test::configure(b_client, urls, co);
        sim::event_loop loop(n);
        loop.add(a_client);
        loop.add(b_client);
        // The name's counter a second ahead of the servers' clocks, as a
        // raise to a token drawn from a faster node's clock leaves it.
        for (int i = 0; i < 3; ++i) {
            n.node(i).set("{jobs}:fence",
                          std::to_string(sim::server_time_us(n.now().us) + 1000000));
        }
        edgelock::lock_options o = semaphore(2, duration::millis(1000));
        o.mode = edgelock::lock_mode::fenced;
        edgelock::client_lock a;
        edgelock::client_lock b;
        REQUIRE(a.attach(a_client, "jobs", o) == client_errc::ok);
        REQUIRE(b.attach(b_client, "jobs", o) == client_errc::ok);
        REQUIRE(a.start_acquire(20, duration::seconds(1)) == client_errc::ok);
        REQUIRE(b.start_acquire(20, duration::seconds(1)) == client_errc::ok);
        REQUIRE(loop.run_for(duration::millis(300)));
        REQUIRE(a.held());
        REQUIRE(b.held());
        CHECK(a.permit() != b.permit());
        // Both read the same maximum and took the same token; each node lets
        // one of them raise the counter to it, and the other tries again.
        CHECK(a.fence() != b.fence());
    }
}
