// Random schedules: contending clients, faulty nodes, and the two safety
// properties that must survive them all.
//
//   mutual exclusion - no two clients believe they hold the lock at the same
//                      virtual instant (from `acquired` to the release call,
//                      `lost`, or the validity deadline, whichever is first);
//   fencing          - every acquisition's token is above every earlier one.
//
// The simulation keeps the drift bound trivially (one clock for all), so a
// violation is a bug in the machine, not bad luck. Restarts that lose the
// keyspace happen only after the node was down longer than the ttl (Redlock's
// delayed restart), in the fencing runs too: a counter lost with the keyspace
// starts again from the server clock.
//
// EDGELOCK_SIM_SCHEDULES raises (or lowers) the schedule counts for long runs.
// To look into a failure: EDGELOCK_SIM_ONLY=<schedule> EDGELOCK_SIM_TRACE=1
// runs that one schedule and prints every request and event.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "edgelock/lock.hpp"
#include "sim/cluster.hpp"
#include "sim/recorder.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_event_kind;
using edgelock::lock_mode;

namespace {

constexpr std::uint64_t default_schedules = 10000;

std::uint64_t schedule_count() {
    const char* env = std::getenv("EDGELOCK_SIM_SCHEDULES");
    if (env != nullptr && *env != '\0') {
        const unsigned long long v = std::strtoull(env, nullptr, 10);
        if (v > 0) {
            return v;
        }
    }
    return default_schedules;
}

struct outcome {
    std::uint64_t acquisitions = 0;
    std::uint64_t steps = 0;
    std::string violation;  // empty: none
};

struct contender {
    int attempts_left = 0;
    std::uint64_t valid_until = 0;  // virtual us; 0: not holding
    std::uint64_t hold_until = 0;
};

std::uint64_t pick(std::mt19937_64& rng, std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
}

// One schedule. fenced: fenced mode and restarts that keep data.
outcome run_schedule(std::uint64_t seed, bool fenced) {
    std::mt19937_64 rng(seed * 0x2545F4914F6CDD1DULL + (fenced ? 17 : 3));
    static const int sizes[] = {1, 2, 3, 3, 5, 5, 7};
    const int n = sizes[pick(rng, 0, sizeof sizes / sizeof sizes[0] - 1)];
    sim::cluster c(n, seed);
    if ((rng() & 3) != 0) {
        sim::preload_scripts(c);
    }

    edgelock::lock_options opt;
    opt.ttl = duration::millis(pick(rng, 40, 300));
    opt.node_timeout = duration::millis(pick(rng, 2, 25));
    opt.retry_min = duration::millis(pick(rng, 1, 10));
    opt.retry_max = opt.retry_min + duration::millis(pick(rng, 0, 30));
    opt.max_tries = static_cast<std::uint32_t>(pick(rng, 1, 4));  // NOLINT
    opt.wait = duration::millis(pick(rng, 20, 400));
    const std::uint64_t mode_pick = pick(rng, 0, 2);
    opt.mode = fenced
                   ? lock_mode::fenced
                   : (mode_pick == 0 ? lock_mode::plain
                                     : (mode_pick == 1 ? lock_mode::reentrant : lock_mode::fenced));
    if (n >= 3 && (rng() & 3) == 0) {
        opt.quorum =
            static_cast<std::uint8_t>(static_cast<std::uint64_t>(n / 2 + 1) + pick(rng, 0, 1));
    }
    const double losses[] = {0.0, 0.0, 0.01, 0.05};
    for (int i = 0; i < n; ++i) {
        sim::node_faults& f = c.faults(i);
        f.latency_min_us = pick(rng, 20, 2000);
        f.latency_max_us = f.latency_min_us + pick(rng, 0, 8000);
        f.loss = losses[pick(rng, 0, 3)];
    }

    const int clients = static_cast<int>(pick(rng, 2, 4));
    std::vector<contender> who(static_cast<std::size_t>(clients));
    std::vector<std::string> owners;
    for (int i = 0; i < clients; ++i) {
        owners.push_back("client-" + std::to_string(i));
    }
    for (int i = 0; i < clients; ++i) {
        auto o = opt;
        if (o.mode == lock_mode::reentrant) {
            o.owner = edgelock::str_view(owners[static_cast<std::size_t>(i)].data(),
                                         owners[static_cast<std::size_t>(i)].size());
        }
        c.add_client();
        c.add_lock(i, "res", o);
        who[static_cast<std::size_t>(i)].attempts_left = static_cast<int>(pick(rng, 1, 3));
    }

    outcome out;
    std::uint64_t max_fence = 0;
    const std::uint64_t ttl_us = opt.ttl.us;
    const std::uint64_t horizon = c.now().us + pick(rng, 200, 1500) * 1000;

    auto check_alone = [&](int me, const char* what) {
        for (int j = 0; j < clients; ++j) {
            if (j != me && who[static_cast<std::size_t>(j)].valid_until > c.now().us) {
                if (out.violation.empty()) {
                    out.violation = std::string(what) + ": client " + std::to_string(me) +
                                    " while client " + std::to_string(j) + " valid until " +
                                    std::to_string(who[static_cast<std::size_t>(j)].valid_until) +
                                    ", now " + std::to_string(c.now().us);
                }
            }
        }
    };
    std::function<void(int)> schedule_attempt;
    schedule_attempt = [&](int i) {
        contender& me = who[static_cast<std::size_t>(i)];
        if (me.attempts_left <= 0) {
            return;
        }
        --me.attempts_left;
        c.at(instant{c.now().us + pick(rng, 0, ttl_us)}, [&, i] {
            edgelock::lock& l = c.lock_of(i);
            if (l.state() == edgelock::lock_state::idle) {
                REQUIRE(l.acquire(c.now()) == lock_errc::ok);
            }
        });
    };
    std::function<void(int)> schedule_keepalive;
    schedule_keepalive = [&](int i) {
        contender& me = who[static_cast<std::size_t>(i)];
        const std::uint64_t next = c.now().us + ttl_us / 3;
        if (next < me.hold_until) {
            c.at(instant{next}, [&, i] {
                edgelock::lock& l = c.lock_of(i);
                if (l.state() == edgelock::lock_state::held) {
                    REQUIRE(l.renew(c.now()) == lock_errc::ok);
                }
            });
        } else {
            c.at(instant{std::max(c.now().us, me.hold_until)}, [&, i] {
                edgelock::lock& l = c.lock_of(i);
                if (l.held()) {
                    who[static_cast<std::size_t>(i)].valid_until = 0;
                    REQUIRE(l.release(c.now()) == lock_errc::ok);
                }
            });
        }
    };

    const bool trace = std::getenv("EDGELOCK_SIM_TRACE") != nullptr;
    if (trace) {
        std::printf("seed %llu n=%d clients=%d mode=%d ttl=%llu timeout=%llu quorum=%d\n",
                    (unsigned long long)seed, n, clients, (int)opt.mode,
                    (unsigned long long)opt.ttl.us, (unsigned long long)opt.node_timeout.us,
                    (int)c.lock_of(0).quorum());
    }
    if (trace) {
        c.on_send = [&](int ci, int ni, const std::string& b) {
            std::string t = b;
            for (auto& ch : t)
                if (ch == '\r' || ch == '\n')
                    ch = ' ';
            if (t.size() > 160)
                t = t.substr(0, 60) + "..." + t.substr(t.size() - 100);
            std::printf("%llu send c%d n%d %s\n", (unsigned long long)c.now().us, ci, ni,
                        t.c_str());
        };
    }
    c.on_event = [&](int i, int, const edgelock::lock_event& ev) {
        contender& me = who[static_cast<std::size_t>(i)];
        if (trace) {
            std::printf("%llu client %d %s validity %llu fence %llu reason %s\n",
                        (unsigned long long)c.now().us, i, edgelock::describe(ev.kind),
                        (unsigned long long)ev.validity_deadline.us, (unsigned long long)ev.fence,
                        edgelock::describe(ev.reason));
        }
        switch (ev.kind) {
        case lock_event_kind::acquired:
            ++out.acquisitions;
            check_alone(i, "acquired");
            if (ev.validity_deadline <= c.now()) {
                out.violation = "acquired with validity already over";
            }
            me.valid_until = ev.validity_deadline.us;
            me.hold_until = c.now().us + pick(rng, 0, 2 * ttl_us);
            // Even across restarts that lost the keyspace: a lost counter
            // starts again from the server clock (see lock.hpp).
            if (opt.mode == lock_mode::fenced) {
                if (ev.fence <= max_fence && out.violation.empty()) {
                    out.violation =
                        "fence " + std::to_string(ev.fence) + " after " + std::to_string(max_fence);
                }
                max_fence = std::max(max_fence, ev.fence);
            }
            schedule_keepalive(i);
            break;
        case lock_event_kind::renewed:
            check_alone(i, "renewed");
            me.valid_until = ev.validity_deadline.us;
            schedule_keepalive(i);
            break;
        case lock_event_kind::lost:
            if (me.valid_until < c.now().us && out.violation.empty()) {
                out.violation = "lost reported after the validity deadline";
            }
            me.valid_until = 0;
            schedule_attempt(i);
            break;
        case lock_event_kind::renew_failed:
            break;  // still held (until lost)
        case lock_event_kind::released:
        case lock_event_kind::busy:
        case lock_event_kind::failed:
            me.valid_until = 0;
            schedule_attempt(i);
            break;
        }
    };

    for (int i = 0; i < clients; ++i) {
        schedule_attempt(i);
    }
    // Node faults over the horizon.
    const int faults = static_cast<int>(pick(rng, 0, 4));
    for (int k = 0; k < faults; ++k) {
        const int node = static_cast<int>(pick(rng, 0, static_cast<std::uint64_t>(n - 1)));
        const std::uint64_t t = c.now().us + pick(rng, 0, horizon - c.now().us);
        switch (pick(rng, 0, 2)) {
        case 0: {  // crash, then restart
            const bool keep = (rng() & 1) != 0;
            const std::uint64_t down =
                keep ? pick(rng, 0, 2 * ttl_us) : ttl_us + pick(rng, 1000, ttl_us);
            c.at(instant{t}, [&c, node, trace] {
                if (trace)
                    std::printf("%llu crash %d\n", (unsigned long long)c.now().us, node);
                if (c.up(node)) {
                    c.crash(node);
                }
            });
            c.at(instant{t + down}, [&c, node, keep, trace] {
                if (trace)
                    std::printf("%llu restart %d keep %d\n", (unsigned long long)c.now().us, node,
                                keep);
                if (!c.up(node)) {
                    c.restart(node, keep);
                }
            });
            break;
        }
        case 1:  // pause
            c.at(instant{t}, [&c, node, &rng, ttl_us, trace] {
                if (trace)
                    std::printf("%llu pause %d\n", (unsigned long long)c.now().us, node);
                c.pause(node, duration::micros(pick(rng, 1000, ttl_us)));
            });
            break;
        default:  // latency spike
            c.at(instant{t},
                 [&c, node, &rng] { c.faults(node).latency_max_us += pick(rng, 0, 50000); });
            break;
        }
    }

    const bool ended = c.run_until(instant::never(), 200000);
    out.steps = c.steps();
    if (!ended && out.violation.empty()) {
        out.violation = "livelock: step bound reached";
    }
    for (int i = 0; i < clients && out.violation.empty(); ++i) {
        if (c.lock_of(i).state() != edgelock::lock_state::idle) {
            out.violation = "client " + std::to_string(i) +
                            " did not end: " + edgelock::describe(c.lock_of(i).state());
        }
    }
    return out;
}

}  // namespace

TEST_CASE("mutual exclusion over random schedules", "[redlock][sim]") {
    const std::uint64_t schedules = schedule_count();
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t acquisitions = 0;
    const char* only = std::getenv("EDGELOCK_SIM_ONLY");
    for (std::uint64_t s = only ? std::strtoull(only, nullptr, 10) : 0; s < schedules; ++s) {
        const outcome o = run_schedule(s, false);
        acquisitions += o.acquisitions;
        if (!o.violation.empty()) {
            FAIL("schedule " << s << ": " << o.violation);
        }
        if (only) {
            return;  // the one schedule asked for, checked like any other
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("mutual exclusion: %llu schedules, %llu acquisitions, %.2f s\n",
                static_cast<unsigned long long>(schedules),
                static_cast<unsigned long long>(acquisitions), secs);
    CHECK(acquisitions > schedules / 2);
}

TEST_CASE("fencing tokens strictly increase across random acquisitions", "[redlock][sim]") {
    const std::uint64_t wanted = schedule_count();
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t acquisitions = 0;
    const char* only = std::getenv("EDGELOCK_SIM_ONLY");
    std::uint64_t s = only ? std::strtoull(only, nullptr, 10) : 0;
    while (acquisitions < wanted) {
        const outcome o = run_schedule(s, true);
        acquisitions += o.acquisitions;
        if (!o.violation.empty()) {
            FAIL("schedule " << s << ": " << o.violation);
        }
        if (only) {
            return;  // the one schedule asked for, checked like any other
        }
        ++s;
        REQUIRE(s < 20 * wanted);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("fencing: %llu acquisitions over %llu schedules, %.2f s\n",
                static_cast<unsigned long long>(acquisitions), static_cast<unsigned long long>(s),
                secs);
}
