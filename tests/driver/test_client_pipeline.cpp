// Requests and replies on one connection through the real driver: a full
// pipeline, and replies cut into pieces however the socket hands them out.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <sstream>
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
using edgelock::lock_mode;
using edgelock_test::event_log;
using edgelock_test::node_urls;

TEST_CASE("a full pipeline holds the other requests back and loses none", "[client][sim]") {
    sim::net n(201);
    n.add_nodes(1);
    // One latency for all: a batch sent at once arrives at once.
    n.faults(0).latency_min_us = n.faults(0).latency_max_us = 2000;
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock_test::configure(c, urls);
    REQUIRE(c.connect(n.now() + duration::seconds(1)) == 1);  // set-up out of the way
    // The scripts cached (as after an earlier run), so no NOSCRIPT doubles a request.
    n.node(0).cache_scripts();
    sim::event_loop loop(n);
    loop.add(c);
    event_log log;

    constexpr std::size_t count = EDGELOCK_CLIENT_PIPELINE + 40;
    std::vector<std::string> names;
    names.reserve(count);  // the locks keep views of their names
    std::vector<std::unique_ptr<edgelock::client_lock>> locks;
    for (std::size_t i = 0; i < count; ++i) {
        names.push_back("job-" + std::to_string(i));
        locks.push_back(std::make_unique<edgelock::client_lock>());
        const edgelock::str_view name(names.back().data(), names.back().size());
        REQUIRE(locks.back()->attach(c, name, edgelock_test::fast_lock_options()) ==
                client_errc::ok);
        log.attach(*locks.back());
    }
    const std::uint64_t scripts_before = n.node(0).lock_requests();
    for (auto& l : locks) {
        REQUIRE(l->start_acquire(1, duration::seconds(1)) == client_errc::ok);
    }
    REQUIRE(loop.run_for(duration::millis(200)));
    CHECK(log.count(lock_event_kind::acquired) == count);
    CHECK(log.events.size() == count);
    // The pipeline filled up, and never past its size.
    CHECK(n.max_in_flight(0) == EDGELOCK_CLIENT_PIPELINE);
    // Each acquire went out exactly once and took its key.
    CHECK(n.node(0).lock_requests() - scripts_before == count);
    for (std::size_t i = 0; i < count; ++i) {
        INFO("lock " << names[i]);
        CHECK(locks[i]->held());
        CHECK(edgelock_test::value_at(n, 0, names[i]) == edgelock_test::hex(locks[i]->token()));
    }

    for (auto& l : locks) {
        REQUIRE(l->start_release() == client_errc::ok);
    }
    REQUIRE(loop.run_for(duration::millis(200)));
    CHECK(log.count(lock_event_kind::released) == count);
    CHECK(n.max_in_flight(0) == EDGELOCK_CLIENT_PIPELINE);
    CHECK(n.node(0).lock_requests() - scripts_before == 2 * count);
    for (std::size_t i = 0; i < count; ++i) {
        CHECK(edgelock_test::value_at(n, 0, names[i]).empty());
    }
}

namespace {

// One fixed scenario on three nodes, written down as text: every event with
// its virtual time, what the client says of each node, and each node's keys.
// Node 1 refuses SCRIPT LOAD (requests go by NOSCRIPT and EVAL), node 2 sends
// long INFO replies, every node wants a password. Latencies are fixed and
// distinct, so no two replies arrive at the same instant: how the bytes are
// cut must change nothing at all.
std::string run_scenario(bool resp3, sim::split how, std::size_t offset,
                         std::size_t* longest = nullptr) {
    sim::net n(301);
    n.add_nodes(3);
    n.recv_split = how;
    n.split_offset = offset;
    n.partial_sends = false;
    const std::uint64_t round_trip[] = {1034, 2606, 4178};
    for (int i = 0; i < 3; ++i) {
        n.faults(i).latency_min_us = n.faults(i).latency_max_us = round_trip[i];
        n.node(i).password = "pw";
    }
    n.node(1).refusals["CONFIG"] = "NOPERM no permissions to run the 'config|get' command";
    n.node(2).refusals["CONFIG"] = "NOPERM no permissions to run the 'config|get' command";
    n.node(2).info_padding = 240;  // INFO memory asked instead, and long
    node_urls urls(n, 3, ":pw");
    edgelock::client<3> c;
    edgelock::client_options co;
    co.resp3 = resp3;
    edgelock_test::configure(c, urls, co);
    sim::event_loop loop(n);
    loop.add(c);
    event_log log;
    edgelock::client_lock fenced;
    edgelock::client_lock plain;
    REQUIRE(fenced.attach(c, "jobs", edgelock_test::fast_lock_options(lock_mode::fenced)) ==
            client_errc::ok);
    REQUIRE(plain.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    log.attach(fenced);
    log.attach(plain);

    const instant t0 = n.now();
    auto at = [&](std::uint64_t ms, edgelock::client_lock& l, bool acquire) {
        loop.at(t0 + duration::millis(ms), [&l, acquire] {
            REQUIRE((acquire ? l.start_acquire(1, duration::seconds(1)) : l.start_release()) ==
                    client_errc::ok);
        });
    };
    at(0, fenced, true);
    at(40, plain, true);  // busy: the watchdog renews the fenced lock at 333 ms
    at(500, fenced, false);
    at(600, plain, true);
    at(700, plain, false);
    REQUIRE(loop.run_until(t0 + duration::seconds(1)));
    REQUIRE(n.failure().empty());

    std::ostringstream out;
    for (const auto& e : log.events) {
        out << (e.lock == &fenced ? "fenced " : "plain ") << (e.at - t0).us << ' '
            << edgelock::describe(e.ev.kind) << " reason=" << edgelock::describe(e.ev.reason)
            << " validity=" << (e.ev.validity_deadline - t0).us << " fence=" << e.ev.fence
            << " holder_ttl=" << e.ev.holder_ttl_ms << " nodes=" << int{e.ev.nodes}
            << " absent=" << int{e.ev.absent} << '\n';
    }
    for (std::uint8_t i = 0; i < 3; ++i) {
        out << "node " << int{i} << ": " << edgelock_test::what(c.node(i)) << " commands "
            << n.node(i).commands << '\n';
        for (const auto& [key, e] : n.node(i).data) {
            out << "  " << key << " = " << (e.hash ? "<hash>" : e.str) << " until " << e.expire_at
                << '\n';
        }
    }
    if (longest != nullptr) {
        *longest = n.longest_reply();
    }
    return out.str();
}

}  // namespace

TEST_CASE("replies cut byte by byte or at any offset give the same results", "[client][sim]") {
    for (bool resp3 : {false, true}) {
        INFO("resp3 " << resp3);
        std::size_t longest = 0;
        const std::string whole = run_scenario(resp3, sim::split::whole, 0, &longest);
        // The scenario did what it is meant to, so the comparisons mean something.
        std::istringstream lines(whole);
        std::string line;
        std::vector<std::string> events;
        while (std::getline(lines, line) && line.rfind("node ", 0) != 0) {
            events.push_back(
                line.substr(0, line.find(' ')) + ' ' +
                line.substr(line.find(' ', line.find(' ') + 1) + 1,
                            line.find(" reason") - line.find(' ', line.find(' ') + 1) - 1));
        }
        const std::vector<std::string> expected = {"fenced acquired", "plain busy",
                                                   "fenced renewed",  "fenced released",
                                                   "plain acquired",  "plain released"};
        CHECK(events == expected);
        CHECK(whole.find("acquired reason=none validity=") != std::string::npos);
        REQUIRE(longest > 200);  // the padded INFO

        CHECK(run_scenario(resp3, sim::split::bytewise, 0) == whole);
        CHECK(run_scenario(resp3, sim::split::random, 0) == whole);
        std::size_t differing = 0;
        for (std::size_t k = 1; k < longest; ++k) {
            const std::string cut = run_scenario(resp3, sim::split::at_offset, k);
            if (cut != whole) {
                ++differing;
                INFO("cut at " << k);
                CHECK(cut == whole);
            }
        }
        CHECK(differing == 0);
    }
}
