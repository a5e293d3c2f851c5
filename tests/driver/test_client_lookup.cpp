// Nodes given by host name, through the real driver on virtual time: the
// lookup never holds the client up (a name server that never answers costs
// that node its connect_timeout and nothing more, and one pending lookup,
// however long it hangs), names are looked up on every connect, and every
// address of a name is tried in turn.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"
#include "tools/url.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock::lock_failure;
using edgelock::node_error;
using edgelock::node_state;
using edgelock::port::net_status;
using edgelock_test::event_log;

namespace {

using edgelock_test::url_list;

void configure(edgelock::client_base& c, const url_list& urls,
               const edgelock::client_options& o = {}) {
    REQUIRE(c.configure(urls.data(), urls.size(), o) == client_errc::ok);
}

std::size_t lookups_of(const sim::net& n, const std::string& host) {
    std::size_t count = 0;
    for (const auto& r : n.lookups) {
        count += r.host == host ? 1u : 0u;
    }
    return count;
}

std::size_t connects_to(const sim::net& n, int node) {
    std::size_t count = 0;
    for (const auto& r : n.connects) {
        count += r.node == node ? 1u : 0u;
    }
    return count;
}

}  // namespace

TEST_CASE("a name server that never answers delays no other node's renewal", "[client][sim]") {
    sim::net n(2601);
    n.add_nodes(3);
    for (int i = 0; i < 3; ++i) {
        n.faults(i).latency_min_us = n.faults(i).latency_max_us = 2000;
    }
    n.name("stuck.example").answers = false;
    const url_list urls({n.url(0), n.url(1), n.url_named(2, "stuck.example")});
    n.name("stuck.example").answers = false;  // url_named() gave it an address
    edgelock::client<3> c;
    edgelock::client_options co;
    co.connect_timeout = duration::millis(200);
    configure(c, urls, co);
    sim::event_loop loop(n);
    loop.add(c);
    event_log log;
    edgelock::client_lock l;
    edgelock::watchdog_options w;
    w.renew_every = duration::millis(300);
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options(), w) == client_errc::ok);
    log.attach(l);

    const instant start = n.now();
    REQUIRE(l.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::seconds(10)));

    REQUIRE(log.count(lock_event_kind::acquired) == 1);
    const auto* first = &log.events.front();
    CHECK(first->ev.kind == lock_event_kind::acquired);
    // The round began once node 2 had had its node_timeout to connect.
    CHECK(first->at - start <= duration::millis(50 + 10));
    CHECK(log.count(lock_event_kind::lost) == 0);
    CHECK(log.count(lock_event_kind::renew_failed) == 0);
    // Renewed on time all along: never a gap past renew_every plus a
    // node_timeout spent waiting for node 2 and a round on nodes 0 and 1.
    instant previous = first->at;
    std::size_t renewals = 0;
    for (const auto& e : log.events) {
        if (e.ev.kind == lock_event_kind::renewed) {
            CHECK(e.at - previous <= duration::millis(300 + 50 + 10));
            previous = e.at;
            ++renewals;
        }
    }
    CHECK(renewals >= 25);
    CHECK(l.held());
    CHECK(c.node(2).error == node_error::resolve_timeout);
    // One question to the name server, however often node 2 was tried.
    CHECK(lookups_of(n, "stuck.example") == 1);
    CHECK(n.lookups_unanswered("stuck.example") == 1);
    CHECK(connects_to(n, 2) == 0);
}

TEST_CASE("a node whose name never resolves gives up by its connect_timeout", "[client][sim]") {
    sim::net n(2602);
    n.add_nodes(1);
    const url_list urls({n.url_named(0, "stuck.example")});
    n.name("stuck.example").answers = false;
    edgelock::client<1> c;
    edgelock::client_options co;
    co.connect_timeout = duration::millis(100);
    configure(c, urls, co);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);

    const instant start = n.now();
    CHECK(c.connect(start + duration::seconds(5)) == 0);
    CHECK(n.now() - start == duration::millis(100));
    CHECK(c.node(0).state == node_state::backoff);
    CHECK(c.node(0).error == node_error::resolve_timeout);
    CHECK(std::string(edgelock::describe(c.node(0).error)) == "host name did not resolve in time");

    // One try: the node is tried again after its backoff, within the lock's
    // node_timeout, and the answer it waits for is the same lookup's.
    const instant tried = n.now();
    const edgelock::op_result r = l.try_acquire();
    INFO(edgelock_test::what(r));
    CHECK(r.event.kind == lock_event_kind::failed);
    CHECK(r.event.reason == lock_failure::no_quorum);
    CHECK(n.now() - tried <= duration::millis(100 + 50));
    CHECK(lookups_of(n, "stuck.example") == 1);
}

TEST_CASE("a slow name server: the next attempt waits for the same answer", "[client][sim]") {
    sim::net n(2603);
    n.add_nodes(1);
    const url_list urls({n.url_named(0, "slow.example")});
    n.name("slow.example").latency_us = 150000;  // 1.5 connect_timeouts
    edgelock::client<1> c;
    edgelock::client_options co;
    co.connect_timeout = duration::millis(100);
    co.reconnect_min = co.reconnect_max = duration::millis(20);
    configure(c, urls, co);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);

    const edgelock::op_result r = l.acquire(duration::seconds(2));
    INFO(edgelock_test::what(r));
    CHECK(r.event.kind == lock_event_kind::acquired);
    CHECK(lookups_of(n, "slow.example") == 1);
    CHECK(c.node(0).state == node_state::ready);
}

TEST_CASE("names are looked up on every connect, and each address is tried in turn",
          "[client][sim]") {
    sim::net n(2604);
    n.add_nodes(2);
    const url_list urls({n.url_named(0, "primary.example")});
    n.name("primary.example").latency_us = 3000;
    n.name("primary.example").addresses = {n.host(0)};
    edgelock::client<1> c;
    configure(c, urls);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(c.connect(n.now() + duration::seconds(1)) == 1);
    CHECK(connects_to(n, 0) == 1);

    // The name's addresses change (as a managed service's do on failover):
    // an unreachable one first now, then node 0. The reconnect asks again.
    n.name("primary.example").addresses = {"10.9.9.9", n.host(0)};
    n.cut(0);
    REQUIRE(c.run_for(duration::millis(10)) == client_errc::ok);
    CHECK(c.node(0).state == node_state::backoff);
    REQUIRE(c.run_for(edgelock::client_options{}.reconnect_max) == client_errc::ok);  // backoff
    REQUIRE(c.connect(n.now() + duration::seconds(1)) == 1);
    CHECK(lookups_of(n, "primary.example") == 2);
    // The unreachable address was tried first, then node 0.
    REQUIRE(n.connects.size() >= 3);
    CHECK(n.connects[n.connects.size() - 2].status == net_status::unreachable);
    CHECK(n.connects.back().node == 0);
}

TEST_CASE("a name that does not resolve fails the node at once, with its reason", "[client][sim]") {
    sim::net n(2605);
    n.add_nodes(2);
    // "gone.example" has no record: the name service says there is no such name.
    const url_list urls({n.url(0), "redis://gone.example:7002"});
    edgelock::client<2> c;
    configure(c, urls);
    const instant start = n.now();
    CHECK(c.connect(start + duration::seconds(1)) == 1);
    CHECK(n.now() - start < duration::millis(100));
    CHECK(c.node(1).state == node_state::backoff);
    CHECK(c.node(1).error == node_error::resolve_failed);

    SECTION("a name with no address for a stream socket") {
        n.name("empty.example");  // a record with no address
        const url_list empty({"redis://empty.example:7001"});
        edgelock::client<1> e;
        configure(e, empty);
        CHECK(e.connect(n.now() + duration::seconds(1)) == 0);
        CHECK(e.node(0).error == node_error::resolve_failed);
    }
}

TEST_CASE("wanted() writes no more entries than it is given, and fd_capacity() holds them all",
          "[client][sim]") {
    sim::net n(2607);
    n.add_nodes(3);
    edgelock::client_options co;
    SECTION("sockets") {
        const url_list urls({n.url(0), n.url(1), n.url(2)});
        edgelock::client<3> c;
        configure(c, urls, co);
        REQUIRE(c.connect(n.now() + duration::seconds(1)) == 3);
        edgelock::port::wait_entry e[edgelock::client<3>::max_fds + 1];
        for (auto& entry : e) {
            entry.fd = -7;
        }
        const std::size_t all = c.wanted(e, c.fd_capacity());
        CHECK(all == 3);
        CHECK(c.fd_capacity() <= edgelock::client<3>::max_fds);
        for (auto& entry : e) {
            entry.fd = -7;
        }
        CHECK(c.wanted(e, 2) == 2);
        CHECK(e[2].fd == -7);  // nothing written past what it was given
        CHECK(c.wanted(e, 0) == 0);
    }
    SECTION("lookups in progress count as the connection's entry") {
        n.name("a.example").answers = false;
        n.name("b.example").answers = false;
        const url_list urls({"redis://a.example:7001", "redis://b.example:7002", n.url(2)});
        edgelock::client<3> c;
        configure(c, urls, co);
        c.connect(n.now() + duration::millis(10));
        CHECK(c.node(0).state == node_state::resolving);
        edgelock::port::wait_entry e[edgelock::client<3>::max_fds];
        const std::size_t count = c.wanted(e, c.fd_capacity());
        CHECK(count >= 3);  // two lookups and node 2's socket
        CHECK(count <= c.fd_capacity());
        for (std::size_t i = 0; i < count; ++i) {
            CHECK(e[i].fd >= 0);
        }
    }
}

TEST_CASE("a connection looks up one name at a time, and a numeric host never waits for it",
          "[client][sim]") {
    sim::net n(2608);
    n.add_nodes(1);
    n.name("stuck.example").answers = false;
    n.name("other.example").addresses = {n.host(0)};
    edgelock::detail::host_lookup h;
    const duration age = duration::seconds(1);
    REQUIRE(h.begin("stuck.example", n.now(), age).status == net_status::in_progress);
    CHECK(h.fd() >= 0);
    h.end();  // given up on while it runs: kept
    CHECK(h.fd() == -1);
    // Another name waits its turn; an address goes ahead.
    CHECK(h.begin("other.example", n.now(), age).status == net_status::would_block);
    REQUIRE(h.begin("10.0.0.1", n.now(), age).status == net_status::ok);
    char address[edgelock::port::address_text_capacity];
    CHECK(std::string(address, h.address(0, address, sizeof address)) == "10.0.0.1");
    CHECK(h.fd() == -1);
    h.end();
    // The same name again: the same question, not a second one.
    CHECK(h.begin("stuck.example", n.now(), age).status == net_status::in_progress);
    CHECK(h.is_for("stuck.example"));
    CHECK(lookups_of(n, "stuck.example") == 1);
    CHECK(lookups_of(n, "other.example") == 0);
    h.abandon();
    CHECK(h.fd() == -1);
}

TEST_CASE("an answer that comes after its attempt gave up serves the next attempt",
          "[client][sim]") {
    // Each lookup takes longer than a connect's allowance: asked anew on
    // every attempt, the answer would always come too late.
    sim::net n(2609);
    n.add_nodes(1);
    const url_list urls({n.url_named(0, "slow.example")});
    n.name("slow.example").latency_us = 120000;
    edgelock::client<1> c;
    edgelock::client_options co;
    co.connect_timeout = duration::millis(100);
    co.reconnect_min = duration::millis(100);  // the answer comes during the backoff
    configure(c, urls, co);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    const edgelock::op_result r = l.acquire(duration::seconds(3));
    INFO(edgelock_test::what(r));
    CHECK(r.event.kind == lock_event_kind::acquired);
    CHECK(lookups_of(n, "slow.example") == 1);

    SECTION("an answer older than lookup_max_age is not used: the name is asked again") {
        REQUIRE(l.release().error == client_errc::ok);
        n.cut(0);
        REQUIRE(c.run_for(duration::seconds(4)) == client_errc::ok);  // idle, down
        const edgelock::op_result again = l.acquire(duration::seconds(3));
        CHECK(again.event.kind == lock_event_kind::acquired);
        CHECK(lookups_of(n, "slow.example") >= 2);
    }
}
