// Random schedules: contending clients, faulty nodes, and the two safety
// properties that must survive them all, through the real driver
// (client<N>, client_lock, its watchdog) on the test port.
//
//   mutual exclusion - no two clients believe they hold the lock at the same
//                      virtual instant (from `acquired` to the release call,
//                      `lost`, or the validity deadline, whichever is first);
//   fencing          - every acquisition's token is above every earlier one.
//
// Each client is its own client<N> with its own connections, driven by one
// event loop (sim/event_loop.hpp). The simulation keeps the drift bound
// trivially (one clock for all), so a violation is a bug in the library, not
// bad luck. Restarts that lose the keyspace happen only after the node was
// down longer than the ttl (Redlock's delayed restart), in the fencing runs
// too: a counter lost with the keyspace starts again from the server clock.
//
// Besides the lock's shape (nodes, ttl, node_timeout, mode, quorum, losses,
// crashes, restarts, pauses, latency spikes), each schedule draws the
// client's: timeouts and backoff, RESP2 or RESP3, a password, a database,
// and nodes that refuse SCRIPT LOAD (so requests go by NOSCRIPT and EVAL).
//
// EDGELOCK_SIM_SCHEDULES raises (or lowers) the schedule counts for long runs.
// To look into a failure: EDGELOCK_SIM_ONLY=<schedule> EDGELOCK_SIM_TRACE=1
// runs that one schedule and prints every request and event.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
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

namespace {

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

std::uint64_t pick(std::mt19937_64& rng, std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
}

struct outcome {
    std::uint64_t acquisitions = 0;
    std::string violation;  // empty: none
};

using client_type = edgelock::client<edgelock::lock_max_nodes>;

struct contender {
    std::unique_ptr<client_type> client = std::make_unique<client_type>();
    edgelock::client_lock lock;
    std::string owner;
    int attempts_left = 0;
    std::uint64_t valid_until = 0;  // virtual us; 0: not holding (or release called)
    std::uint64_t validity = 0;     // the last validity deadline the lock reported
    bool releasing = false;         // release called since the last acquisition
    std::uint64_t hold_until = 0;
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

    schedule(std::uint64_t seed, bool fenced)
        : rng(seed * 0x2545F4914F6CDD1DULL + (fenced ? 17 : 3)), net(seed) {}

    std::uint64_t now() const { return net.now().us; }
    contender& at(int i) { return *who[static_cast<std::size_t>(i)]; }

    void check_alone(int me, const char* what) {
        for (int j = 0; j < static_cast<int>(who.size()); ++j) {
            if (j != me && at(j).valid_until > now() && out.violation.empty()) {
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
                if (ev.fence <= max_fence && out.violation.empty()) {
                    out.violation =
                        "fence " + std::to_string(ev.fence) + " after " + std::to_string(max_fence);
                }
                max_fence = std::max(max_fence, ev.fence);
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
            }
            break;
        case lock_event_kind::lost:
            // A release started just before the deadline may wait for its
            // nodes to connect past it: the lock is then lost, not released.
            if (me.validity < now() && out.violation.empty()) {
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
    }

    void add_faults(int n, std::uint64_t horizon) {
        const std::uint64_t ttl_us = opt.ttl.us;
        const int faults = static_cast<int>(pick(rng, 0, 4));
        for (int k = 0; k < faults; ++k) {
            const int node = static_cast<int>(pick(rng, 0, static_cast<std::uint64_t>(n - 1)));
            const std::uint64_t t = now() + pick(rng, 0, horizon - now());
            switch (pick(rng, 0, 2)) {
            case 0: {  // crash, then restart
                const bool keep = (rng() & 1) != 0;
                const std::uint64_t down =
                    keep ? pick(rng, 0, 2 * ttl_us) : ttl_us + pick(rng, 1000, ttl_us);
                net.at(instant{t}, [this, node] {
                    if (trace) {
                        std::printf("%llu crash %d\n", static_cast<unsigned long long>(now()),
                                    node);
                    }
                    if (net.up(node)) {
                        net.crash(node);
                    }
                });
                net.at(instant{t + down}, [this, node, keep] {
                    if (trace) {
                        std::printf("%llu restart %d keep %d\n",
                                    static_cast<unsigned long long>(now()), node, keep);
                    }
                    if (!net.up(node)) {
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

void trace_command(const schedule& s, int node, std::uint64_t conn,
                   const std::vector<std::string>& argv) {
    std::string t;
    for (const std::string& a : argv) {
        t += (t.empty() ? "" : " ") + (a.size() > 48 ? a.substr(0, 40) + "..." : a);
    }
    std::printf("%llu node %d conn %llu: %s\n", static_cast<unsigned long long>(s.now()), node,
                static_cast<unsigned long long>(conn), t.c_str());
}

// One schedule. fenced: fenced mode only.
outcome run_schedule(std::uint64_t seed, bool fenced) {
    schedule s(seed, fenced);
    std::mt19937_64& rng = s.rng;
    static const int sizes[] = {1, 2, 3, 3, 5, 5, 7};
    const int n = sizes[pick(rng, 0, sizeof sizes / sizeof sizes[0] - 1)];
    s.net.add_nodes(n);
    const bool scripts_load = (rng() & 3) != 0;

    edgelock::lock_options& opt = s.opt;
    opt.ttl = duration::millis(pick(rng, 40, 300));
    opt.node_timeout = duration::millis(pick(rng, 2, 25));
    opt.retry_min = duration::millis(pick(rng, 1, 10));
    opt.retry_max = opt.retry_min + duration::millis(pick(rng, 0, 30));
    opt.max_tries = static_cast<std::uint32_t>(pick(rng, 1, 4));
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
        sim::node_faults& f = s.net.faults(i);
        f.latency_min_us = pick(rng, 20, 2000);
        f.latency_max_us = f.latency_min_us + pick(rng, 0, 8000);
        f.loss = losses[pick(rng, 0, 3)];
    }
    const int clients = static_cast<int>(pick(rng, 2, 4));

    // The client's side of the schedule. Timeouts stay above the slowest
    // round trip a latency spike can make, so every node can be reached again.
    edgelock::client_options co;
    co.connect_timeout = duration::millis(pick(rng, 250, 1000));
    co.reconnect_min = duration::millis(pick(rng, 1, 100));
    co.reconnect_max = co.reconnect_min + duration::millis(pick(rng, 0, 500));
    co.stall_timeout = duration::millis(pick(rng, 250, 5000));
    co.resp3 = pick(rng, 0, 2) == 0;
    co.client_name = (rng() & 1) != 0 ? "edgelock" : "";
    const bool password = (rng() & 3) == 0;
    const std::string db = (rng() & 3) == 0 ? "/" + std::to_string(pick(rng, 1, 15)) : "";
    for (int i = 0; i < n; ++i) {
        if (password) {
            s.net.node(i).password = "s3cret";
        }
        if (!scripts_load) {
            s.net.node(i).refusals["SCRIPT LOAD"] =
                "NOPERM this user has no permissions to run the 'script|load' command";
        }
    }
    s.urls = std::make_unique<edgelock_test::node_urls>(s.net, n, password ? ":s3cret" : "", db);

    for (int i = 0; i < clients; ++i) {
        auto c = std::make_unique<contender>();
        c->owner = "client-" + std::to_string(i);
        edgelock_test::configure(*c->client, *s.urls, co);
        s.who.push_back(std::move(c));
    }
    for (int i = 0; i < clients; ++i) {
        contender& c = s.at(i);
        auto o = opt;
        if (o.mode == lock_mode::reentrant) {
            o.owner = edgelock::str_view(c.owner.data(), c.owner.size());
        }
        REQUIRE(c.lock.attach(*c.client, "res", o) == client_errc::ok);
        c.lock.set_callback(&schedule::on_event, &s);
        s.loop.add(*c.client);
        c.attempts_left = static_cast<int>(pick(rng, 1, 3));
    }

    if (s.trace) {
        std::printf("seed %llu n=%d clients=%d mode=%d ttl=%llu timeout=%llu quorum=%d resp3=%d\n",
                    static_cast<unsigned long long>(seed), n, clients, static_cast<int>(opt.mode),
                    static_cast<unsigned long long>(opt.ttl.us),
                    static_cast<unsigned long long>(opt.node_timeout.us),
                    static_cast<int>(s.at(0).lock.machine().quorum()), co.resp3 ? 1 : 0);
        s.net.on_command = [&s](int node, std::uint64_t conn,
                                const std::vector<std::string>& argv) {
            trace_command(s, node, conn, argv);
        };
    }

    const std::uint64_t horizon = s.now() + pick(rng, 200, 1500) * 1000;
    for (int i = 0; i < clients; ++i) {
        s.schedule_attempt(i);
    }
    s.add_faults(n, horizon);

    const bool ended = s.loop.run_until_idle(400000);
    outcome out = s.out;
    if (out.violation.empty() && !s.net.failure().empty()) {
        out.violation = "port: " + s.net.failure();
    }
    if (!ended && out.violation.empty()) {
        out.violation = "livelock: step bound reached";
    }
    for (int i = 0; i < clients && out.violation.empty(); ++i) {
        if (s.at(i).lock.state() != edgelock::lock_state::idle) {
            out.violation = "client " + std::to_string(i) +
                            " did not end: " + edgelock::describe(s.at(i).lock.state());
        }
    }
    return out;
}

}  // namespace

TEST_CASE("mutual exclusion over random schedules", "[redlock][sim]") {
    const std::uint64_t schedules = schedule_count();
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t acquisitions = 0;
    if (const char* only = std::getenv("EDGELOCK_SIM_ONLY")) {
        // The one schedule asked for (any number), checked like any other.
        const std::uint64_t s = std::strtoull(only, nullptr, 10);
        const outcome o = run_schedule(s, false);
        if (!o.violation.empty()) {
            FAIL("schedule " << s << ": " << o.violation);
        }
        return;
    }
    for (std::uint64_t s = 0; s < schedules; ++s) {
        INFO("schedule " << s);  // for a REQUIRE that fails inside it
        const outcome o = run_schedule(s, false);
        acquisitions += o.acquisitions;
        if (!o.violation.empty()) {
            FAIL("schedule " << s << ": " << o.violation);
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
        INFO("schedule " << s);  // for a REQUIRE that fails inside it
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
