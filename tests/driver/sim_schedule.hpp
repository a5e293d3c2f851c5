// The random-schedule checker shared by the safety tests: contending
// clients, each its own client with one lock, driven by one event loop,
// whose events are checked as they come.
//
//   mutual exclusion - no two clients believe they hold the lock at the same
//                      virtual instant (from `acquired` to the release call,
//                      `lost`, or the validity deadline, whichever is first);
//   fencing          - every acquisition's token is above every earlier one;
//   fencing, weak    - every acquisition's token is above the token of every
//                      section that had ended before that acquisition began
//                      (what fencing still guarantees where a lock can be
//                      lost: counters never fall below the server's clock).
//
// A schedule whose faults can lose a lock (`lossy`) checks the weak form
// only, and counts overlaps as locks lost instead of failing.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"

namespace edgelock_test {

using edgelock::client_errc;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event_kind;
using edgelock::lock_mode;

// As many schedules as the bare-machine simulation ran. Each also sets up
// every client's connections (AUTH, INFO, SCRIPT LOAD ...) through the real
// driver: seconds in a native optimised build, but minutes under sanitizers
// or qemu, whose builds set a smaller default (tests/CMakeLists.txt): they
// check the same code compiled another way, the native run covers the
// schedules. Long runs set EDGELOCK_SIM_SCHEDULES.
#ifndef EDGELOCK_SIM_DEFAULT_SCHEDULES
#define EDGELOCK_SIM_DEFAULT_SCHEDULES 10000
#endif
constexpr std::uint64_t default_schedules = EDGELOCK_SIM_DEFAULT_SCHEDULES;

inline std::uint64_t schedule_count() {
    const char* env = std::getenv("EDGELOCK_SIM_SCHEDULES");
    if (env != nullptr && *env != '\0') {
        const unsigned long long v = std::strtoull(env, nullptr, 10);
        if (v > 0) {
            return v;
        }
    }
    return default_schedules;
}

inline std::uint64_t pick(std::mt19937_64& rng, std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
}

struct outcome {
    std::uint64_t acquisitions = 0;
    std::uint64_t overlaps = 0;  // lossy schedules: two holders at once
    std::string violation;       // empty: none
};

// Extra connections for a Cluster node's further masters.
using client_type = edgelock::client<edgelock::lock_max_nodes, 3>;

struct contender {
    std::unique_ptr<client_type> client = std::make_unique<client_type>();
    edgelock::client_lock lock;
    std::string owner;
    int attempts_left = 0;
    std::uint64_t valid_until = 0;  // virtual us; 0: not holding (or release called)
    std::uint64_t validity = 0;     // the last validity deadline the lock reported
    bool releasing = false;         // release called since the last acquisition
    std::uint64_t hold_until = 0;
    std::uint64_t attempt_began = 0;  // the last start_acquire
    std::size_t section = SIZE_MAX;   // its current section in schedule::sections
};

// One schedule's world. Declared in this order so that the locks and clients
// go before the net they talk through.
struct schedule {
    std::mt19937_64 rng;
    sim::net net;
    std::unique_ptr<edgelock_test::node_urls> urls;
    std::vector<std::unique_ptr<contender>> who;
    sim::event_loop loop{net};
    edgelock::lock_options opt;
    outcome out;
    std::uint64_t max_fence = 0;
    bool trace = std::getenv("EDGELOCK_SIM_TRACE") != nullptr;
    bool lossy = false;  // its faults can lose a lock: weak fencing only
    struct section_record {
        std::uint64_t ended;  // virtual us: release call, lost, or validity
        std::uint64_t fence;
    };
    std::vector<section_record> sections;

    // salt: one per kind of schedule, so each numbers its own.
    schedule(std::uint64_t seed, std::uint64_t salt)
        : rng(seed * 0x2545F4914F6CDD1DULL + salt), net(seed) {}

    std::uint64_t now() const { return net.now().us; }
    contender& at(int i) { return *who[static_cast<std::size_t>(i)]; }

    void check_alone(int me, const char* what) {
        for (int j = 0; j < static_cast<int>(who.size()); ++j) {
            if (j != me && at(j).valid_until > now() && lossy) {
                ++out.overlaps;
            } else if (j != me && at(j).valid_until > now() && out.violation.empty()) {
                out.violation = std::string(what) + ": client " + std::to_string(me) +
                                " while client " + std::to_string(j) + " valid until " +
                                std::to_string(at(j).valid_until) + ", now " +
                                std::to_string(now());
            }
        }
    }

    void schedule_attempt(int i) {
        contender& me = at(i);
        if (me.attempts_left <= 0) {
            return;
        }
        --me.attempts_left;
        loop.at(instant{now() + pick(rng, 0, opt.ttl.us)}, [this, i] { attempt(i); });
    }

    void attempt(int i) {
        edgelock::client_lock& l = at(i).lock;
        if (trace) {
            std::printf("%llu client %d acquire: %s\n", static_cast<unsigned long long>(now()), i,
                        edgelock::describe(l.state()));
        }
        if (l.state() != edgelock::lock_state::idle) {
            return;
        }
        at(i).attempt_began = now();
        REQUIRE(l.start_acquire(opt.max_tries, opt.wait) == client_errc::ok);
    }

    // The watchdog renews at ttl / 3 while the client holds; this ends the hold.
    void schedule_release(int i) {
        loop.at(instant{std::max(now(), at(i).hold_until)}, [this, i] {
            contender& me = at(i);
            if (trace) {
                std::printf("%llu client %d release: held %d\n",
                            static_cast<unsigned long long>(now()), i, me.lock.held() ? 1 : 0);
            }
            if (me.lock.held()) {
                me.valid_until = 0;
                me.releasing = true;
                end_section(me);
                REQUIRE(me.lock.start_release() == client_errc::ok);
            }
        });
    }

    static void on_event(void* ctx, edgelock::client_lock& l, const edgelock::lock_event& ev) {
        auto* self = static_cast<schedule*>(ctx);
        for (int i = 0; i < static_cast<int>(self->who.size()); ++i) {
            if (&self->at(i).lock == &l) {
                self->event(i, ev);
            }
        }
    }

    void event(int i, const edgelock::lock_event& ev) {
        contender& me = at(i);
        if (trace) {
            std::printf("%llu client %d %s validity %llu fence %llu reason %s\n",
                        static_cast<unsigned long long>(now()), i, edgelock::describe(ev.kind),
                        static_cast<unsigned long long>(ev.validity_deadline.us),
                        static_cast<unsigned long long>(ev.fence), edgelock::describe(ev.reason));
        }
        switch (ev.kind) {
        case lock_event_kind::acquired:
            ++out.acquisitions;
            check_alone(i, "acquired");
            if (ev.validity_deadline <= net.now() && out.violation.empty()) {
                out.violation = "acquired with validity already over";
            }
            me.valid_until = ev.validity_deadline.us;
            me.validity = ev.validity_deadline.us;
            me.releasing = false;
            me.hold_until = now() + pick(rng, 0, 2 * opt.ttl.us);
            // Even across restarts that lost the keyspace: a lost counter
            // starts again from the server clock (see lock.hpp).
            if (opt.mode == lock_mode::fenced) {
                check_fence(me, ev.fence);
            }
            schedule_release(i);
            break;
        case lock_event_kind::renewed:
            me.validity = ev.validity_deadline.us;
            // A renew round that ends after the release call (the release
            // waits for a node still connecting) extends the keys, but the
            // client no longer takes itself for the holder.
            if (!me.releasing) {
                check_alone(i, "renewed");
                me.valid_until = ev.validity_deadline.us;
                if (me.section < sections.size()) {
                    sections[me.section].ended = me.valid_until;
                }
            }
            break;
        case lock_event_kind::lost:
            // A release started just before the deadline may wait for its
            // nodes to connect past it: the lock is then lost, not released.
            if (me.validity < now() && out.violation.empty()) {
                out.violation = "lost reported after the validity deadline";
            }
            me.valid_until = 0;
            end_section(me);
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
    }

    void check_fence(contender& me, std::uint64_t fence) {
        if (!lossy && fence <= max_fence && out.violation.empty()) {
            out.violation =
                "fence " + std::to_string(fence) + " after " + std::to_string(max_fence);
        }
        max_fence = std::max(max_fence, fence);
        for (const section_record& s : sections) {
            if (s.ended < me.attempt_began && s.fence >= fence && out.violation.empty()) {
                out.violation = "fence " + std::to_string(fence) + " not above " +
                                std::to_string(s.fence) + " of a section that ended at " +
                                std::to_string(s.ended) + ", before this acquisition began at " +
                                std::to_string(me.attempt_began);
            }
        }
        me.section = sections.size();
        sections.push_back(section_record{me.validity, fence});
    }

    void end_section(contender& me) {
        if (me.section < sections.size()) {
            sections[me.section].ended = std::min(sections[me.section].ended, now());
            me.section = SIZE_MAX;
        }
    }

    int fault_ids = 0;
    std::map<int, int> crashed_by;  // node -> the crash that took it down

    // Crashes (restarts losing the keyspace only past the ttl), pauses and
    // latency spikes on nodes [first, first + n).
    // keep_data: a crash never loses the keyspace.
    void add_faults(int n, std::uint64_t horizon, int first = 0, bool keep_data = false) {
        const std::uint64_t ttl_us = opt.ttl.us;
        const int faults = static_cast<int>(pick(rng, 0, 4));
        for (int k = 0; k < faults; ++k) {
            const int node =
                first + static_cast<int>(pick(rng, 0, static_cast<std::uint64_t>(n - 1)));
            const std::uint64_t t = now() + pick(rng, 0, horizon - now());
            switch (pick(rng, 0, 2)) {
            case 0: {  // crash, then restart
                const bool keep = keep_data || (rng() & 1) != 0;
                const std::uint64_t down =
                    keep ? pick(rng, 0, 2 * ttl_us) : ttl_us + pick(rng, 1000, ttl_us);
                // A restart ends its own crash only: one that found the
                // node down already changes nothing, nor does its restart
                // (which could otherwise lose the keyspace moments into
                // another crash's downtime, before the ttl has passed).
                const int id = ++fault_ids;
                net.at(instant{t}, [this, node, id] {
                    if (trace) {
                        std::printf("%llu crash %d\n", static_cast<unsigned long long>(now()),
                                    node);
                    }
                    if (net.up(node)) {
                        net.crash(node);
                        crashed_by[node] = id;
                    }
                });
                net.at(instant{t + down}, [this, node, keep, id] {
                    if (trace) {
                        std::printf("%llu restart %d keep %d\n",
                                    static_cast<unsigned long long>(now()), node, keep);
                    }
                    if (!net.up(node) && crashed_by[node] == id) {
                        net.restart(node, keep);
                    }
                });
                break;
            }
            case 1:  // pause
                net.at(instant{t}, [this, node, ttl_us] {
                    if (trace) {
                        std::printf("%llu pause %d\n", static_cast<unsigned long long>(now()),
                                    node);
                    }
                    net.pause(node, duration::micros(pick(rng, 1000, ttl_us)));
                });
                break;
            default:  // latency spike
                net.at(instant{t},
                       [this, node] { net.faults(node).latency_max_us += pick(rng, 0, 50000); });
                break;
            }
        }
    }
};

// One line per command a node runs (net::on_command), long arguments cut;
// "closed" marks one that runs on a connection its client had closed.
inline void trace_command(const sim::net& n, int node, std::uint64_t conn,
                          const std::vector<std::string>& argv) {
    std::string t;
    for (const std::string& a : argv) {
        t += (t.empty() ? "" : " ") + (a.size() > 48 ? a.substr(0, 40) + "..." : a);
    }
    std::printf("%llu node %d conn %llu%s: %s\n", static_cast<unsigned long long>(n.now().us), node,
                static_cast<unsigned long long>(conn), n.closed_by_client(conn) ? " (closed)" : "",
                t.c_str());
}

inline void trace_command(const schedule& s, int node, std::uint64_t conn,
                          const std::vector<std::string>& argv) {
    trace_command(s.net, node, conn, argv);
}

// Ends a schedule: the loop ran dry in its step bound, the port saw nothing
// wrong, and every lock is idle again.
inline void finish(schedule& s, bool ended) {
    outcome& out = s.out;
    if (out.violation.empty() && !s.net.failure().empty()) {
        out.violation = "port: " + s.net.failure();
    }
    if (!ended && out.violation.empty()) {
        out.violation = "livelock: step bound reached";
    }
    for (int i = 0; i < static_cast<int>(s.who.size()) && out.violation.empty(); ++i) {
        if (s.at(i).lock.state() != edgelock::lock_state::idle) {
            out.violation = "client " + std::to_string(i) +
                            " did not end: " + edgelock::describe(s.at(i).lock.state());
        }
    }
}

}  // namespace edgelock_test
