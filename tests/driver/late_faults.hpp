// Late bytes in random schedules (sim/net.hpp): each data node may hold a
// closed connection's requests back (late_delivery, for up to twice the ttl
// after the close), and the clients' way in slows now and then, on one node
// or on all (request_delay_us, lifted after a while), for about as long as
// the driver waits for a set-up (connect_timeout) or a reply
// (stall_timeout), so it gives connections up with requests on their way,
// which then land while later rounds, of the same acquisition or of
// another client, hold the lock.
//
// late_tally sums what the schedules did, so a test shows that the fault
// fired and that late requests ran, besides what its checker found;
// run_late_configuration runs a configuration's schedules and checks both.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "driver/sim_schedule.hpp"

namespace edgelock_test {

// The timeouts after which the driver gives a connection up.
struct give_up_after {
    duration connect;
    duration stall;
};

// Client options that give connections up within a few hundred ms, drawn.
inline edgelock::client_options late_client_options(std::mt19937_64& rng) {
    edgelock::client_options co;
    co.connect_timeout = duration::millis(pick(rng, 100, 400));
    co.stall_timeout = duration::millis(pick(rng, 150, 800));
    co.reconnect_min = duration::millis(pick(rng, 1, 30));
    co.reconnect_max = co.reconnect_min + duration::millis(pick(rng, 0, 100));
    co.resp3 = (rng() & 1) != 0;
    return co;
}

// Lock options whose rounds retry within an acquisition (a later round of
// it can win after an earlier one's requests were given up), drawn.
inline void late_lock_options(std::mt19937_64& rng, edgelock::lock_options& opt) {
    opt.ttl = duration::millis(pick(rng, 300, 1500));
    opt.node_timeout = duration::millis(pick(rng, 10, 80));
    opt.retry_min = duration::millis(pick(rng, 5, 40));
    opt.retry_max = opt.retry_min + duration::millis(pick(rng, 0, 100));
    opt.max_tries = static_cast<std::uint32_t>(pick(rng, 2, 6));
    opt.wait = duration::millis(pick(rng, 200, 2000));
}

// Late delivery on `nodes`, and 1-3 slow spells of their way in before `horizon`.
inline void add_late_faults(schedule& s, const std::vector<int>& nodes, std::uint64_t horizon,
                            give_up_after give_up) {
    std::mt19937_64& rng = s.rng;
    const std::uint64_t ttl_us = s.opt.ttl.us;
    for (int i : nodes) {
        sim::node_faults& f = s.net.faults(i);
        f.late_delivery = (rng() & 1) != 0 ? 1.0 : 0.5;
        f.late_min_us = 0;
        f.late_max_us = pick(rng, ttl_us / 4, 2 * ttl_us);
    }
    const std::uint64_t longest = std::max(give_up.connect.us, give_up.stall.us);
    // Per node, the spell now on: a lift ends its own spell only.
    auto spell = std::make_shared<std::vector<int>>(static_cast<std::size_t>(s.net.node_count()));
    int spells = 0;
    for (int k = static_cast<int>(pick(rng, 1, 3)); k > 0; --k) {
        const std::uint64_t t = s.now() + pick(rng, 0, horizon - s.now());
        const std::uint64_t delay = pick(rng, give_up.connect.us / 2, 2 * longest);
        const std::uint64_t lasts = pick(rng, 1000, longest);
        std::vector<int> slowed = nodes;
        if ((rng() & 1) != 0) {
            slowed = {nodes[static_cast<std::size_t>(pick(rng, 0, nodes.size() - 1))]};
        }
        for (int i : slowed) {
            const int id = ++spells;
            auto& on = (*spell)[static_cast<std::size_t>(i)];
            s.net.at(instant{t}, [&s, &on, spell, i, delay, id] {
                if (s.trace) {
                    std::printf("%llu node %d slow way in: %llu us\n",
                                static_cast<unsigned long long>(s.now()), i,
                                static_cast<unsigned long long>(delay));
                }
                s.net.faults(i).request_delay_us = delay;
                on = id;
            });
            s.net.at(instant{t + lasts}, [&s, &on, spell, i, id] {
                if (on == id) {
                    s.net.faults(i).request_delay_us = 0;
                }
            });
        }
    }
}

struct late_tally {
    std::uint64_t schedules = 0;
    std::uint64_t acquisitions = 0;
    std::uint64_t held_back = 0;     // closes whose requests the net held back
    std::uint64_t after_close = 0;   // requests run on a connection its client had closed
    std::uint64_t given_up = 0;      // connections the clients gave up (connect or stall timeout)
    std::uint64_t violations = 0;    // schedules whose checker failed
    std::string first;               // the first of them, and what it found
    std::vector<std::string> found;  // the first few, each with what it found

    // A schedule's clients have `nodes` lock nodes each.
    void add(std::uint64_t seed, schedule& s, int nodes) {
        ++schedules;
        acquisitions += s.out.acquisitions;
        held_back += s.net.held_back;
        after_close += s.net.requests_after_close;
        for (const auto& c : s.who) {
            for (int i = 0; i < nodes; ++i) {
                given_up += c->client->node_stats(static_cast<std::uint8_t>(i)).timeouts;
            }
        }
        if (!s.out.violation.empty()) {
            const std::string what = "schedule " + std::to_string(seed) + ": " + s.out.violation;
            if (violations == 0) {
                first = what;
            }
            if (found.size() < 8) {
                found.push_back(what);
            }
            ++violations;
        }
    }

    std::string summary() const {
        return std::to_string(schedules) + " schedules, " + std::to_string(acquisitions) +
               " acquisitions, " + std::to_string(given_up) + " connections given up, " +
               std::to_string(held_back) + " held back, " + std::to_string(after_close) +
               " requests run after their connection closed, " + std::to_string(violations) +
               " violations";
    }
};

// Runs a configuration's schedules (a tenth of schedule_count(), or the
// one EDGELOCK_SIM_ONLY names), run(seed, tally) each, and checks them all:
// no violation, and (but for one replayed) the fault fired.
template <typename Run>
inline void run_late_configuration(const std::string& what, Run run) {
    late_tally t;
    std::uint64_t first = 0;
    std::uint64_t count = std::max<std::uint64_t>(schedule_count() / 10, 20);
    const char* only = std::getenv("EDGELOCK_SIM_ONLY");
    if (only != nullptr) {
        first = std::strtoull(only, nullptr, 10);
        count = 1;
    }
    for (std::uint64_t seed = first; seed < first + count; ++seed) {
        INFO(what << ", schedule " << seed);  // for a REQUIRE that fails inside it
        run(seed, t);
    }
    std::printf("late bytes, %s: %s\n", what.c_str(), t.summary().c_str());
    for (const std::string& f : t.found) {
        std::printf("  %s\n", f.c_str());
    }
    INFO(what << ": " << t.summary());
    CHECK(t.first == std::string());
    if (only == nullptr) {
        // The fault fired: connections were given up with requests on their
        // way, which ran after the close; and the checker had holds to check.
        CHECK(t.given_up > t.schedules);
        CHECK(t.held_back > t.schedules / 2);
        CHECK(t.after_close > t.schedules);
        CHECK(t.acquisitions > t.schedules);
    }
}

}  // namespace edgelock_test
