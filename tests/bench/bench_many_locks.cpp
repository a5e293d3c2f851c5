// Many locks on one connection: one client renews 1,000 locks in one round.
//
// One redis-server on loopback, one edgelock::client<1> (one connection), and
// 1,000 plain locks ("many-0" .. "many-999", ttl 30 s, watchdog off so that
// only the measured renewals happen). The program drives the client itself
// with the event-loop API (wanted(), port::wait, on_ready, on_timeout) and
// measures:
//
//   - acquiring all 1,000 in one go: start_acquire() on every lock, then
//     driving until 1,000 `acquired` events;
//   - a renew round, 10 times: start_renew() on every lock, then driving until
//     1,000 `renewed` events (p50 and max of the round time);
//   - releasing all 1,000 in one go, then no lock key is left: only the
//     1,000 renewal marks the renews wrote, each with its ttl;
//   - the cost of one idle wakeup with 1,000 locks attached: one
//     next_deadline() and one on_timeout() call while nothing is due.
//
// Round trips are counted two ways. Server side: the delta of INFO
// total_reads_processed across a round (the read events the server handled
// for us), less the reads of the INFO connections themselves, measured with
// back-to-back INFO calls. Client side: the times the loop found nothing to
// read and had to sleep until the socket became ready. The floor is one PING
// round trip (p50 of 2,000 on a raw blocking socket); a client without
// pipelining pays 1,000 of them per round.
//
// Every operation must succeed (no busy, failed, renew_failed or lost event)
// or the program exits 1. Timings are reported, never asserted.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/redis_server.hpp"
#include "tools/lock_key.hpp"
#include "tools/url.hpp"

namespace {

using edgelock::client_errc;
using edgelock::client_lock;
using edgelock::duration;
using edgelock::instant;
using edgelock::lock_event;
using edgelock::lock_event_kind;
using edgelock_bench::fail;
using edgelock_bench::format;
using edgelock_bench::mono_ns;

constexpr const char* program = "bench_many_locks";
constexpr std::size_t lock_count = 1000;
constexpr int renew_rounds = 10;
constexpr int ping_count = 2000;
constexpr int wakeup_calls = 2000;

// Events of all locks, by kind; anything but the expected kind is a failure.
// With fan_out set, the first lock's `renewed` event starts the renewal of
// all the others from inside the callback.
struct tally {
    std::size_t counts[8] = {};
    std::size_t total = 0;
    client_lock* fan_out = nullptr;
    client_errc fan_out_error = client_errc::ok;

    static void on_event(void* ctx, client_lock& l, const lock_event& ev) {
        tally& t = *static_cast<tally*>(ctx);
        const auto k = static_cast<std::size_t>(ev.kind);
        if (k < 8) {
            ++t.counts[k];
        }
        ++t.total;
        if (t.fan_out == &l && ev.kind == lock_event_kind::renewed) {
            client_lock* locks = t.fan_out;
            t.fan_out = nullptr;
            for (std::size_t i = 1; i < lock_count; ++i) {
                const client_errc e = locks[i].start_renew();
                if (e != client_errc::ok && t.fan_out_error == client_errc::ok) {
                    t.fan_out_error = e;
                }
            }
        }
    }
    std::size_t count(lock_event_kind kind) const { return counts[static_cast<std::size_t>(kind)]; }
};

// renew_fan_out: start_renew() on the first lock only; its callback starts
// the other 999 (where start_*() does not run a service pass per call).
enum class operation { acquire, renew, renew_fan_out, release };

const char* name_of(operation op) {
    switch (op) {
    case operation::acquire:
        return "acquire";
    case operation::renew:
    case operation::renew_fan_out:
        return "renew";
    case operation::release:
        return "release";
    }
    return "?";
}

lock_event_kind outcome_of(operation op) {
    switch (op) {
    case operation::acquire:
        return lock_event_kind::acquired;
    case operation::renew:
    case operation::renew_fan_out:
        return lock_event_kind::renewed;
    case operation::release:
        return lock_event_kind::released;
    }
    return lock_event_kind::failed;
}

struct round_result {
    std::int64_t total_ns = 0;  // first start_*() call to the last expected event
    std::int64_t start_ns = 0;  // of which the 1,000 start_*() calls
    long long server_reads = 0;
    unsigned waits = 0;    // port::wait calls in the loop
    unsigned blocked = 0;  // ... that found nothing ready and had to sleep
};

class bench {
public:
    explicit bench(std::uint16_t port) : port_(port) {}

    void measure_info_overhead() {
        long long best = -1;
        for (int i = 0; i < 5; ++i) {
            const long long a = read_counter();
            const long long b = read_counter();
            if (best < 0 || b - a < best) {
                best = b - a;
            }
        }
        info_overhead_ = best;
    }
    long long info_overhead() const { return info_overhead_; }

    // One operation on every lock, started in one go and driven to its end.
    round_result run(edgelock::client_base& c, client_lock* locks, tally& t, operation op) {
        round_result r;
        const lock_event_kind want = outcome_of(op);
        const std::size_t before_total = t.total;
        const std::size_t before_want = t.count(want);
        const long long reads_before = read_counter();

        const std::int64_t t0 = mono_ns();
        if (op == operation::renew_fan_out) {
            t.fan_out = locks;
        }
        for (std::size_t i = 0; i < (op == operation::renew_fan_out ? 1 : lock_count); ++i) {
            client_errc e = client_errc::ok;
            switch (op) {
            case operation::acquire:
                e = locks[i].start_acquire(1, duration{});
                break;
            case operation::renew:
            case operation::renew_fan_out:
                e = locks[i].start_renew();
                break;
            case operation::release:
                e = locks[i].start_release();
                break;
            }
            if (e != client_errc::ok) {
                fail(program,
                     format("start_%s on lock %zu: %s", name_of(op), i, edgelock::describe(e)));
            }
        }
        const std::int64_t t1 = mono_ns();

        const instant give_up = edgelock::port::now() + duration::seconds(10);
        while (t.count(want) - before_want < lock_count) {
            if (t.total - before_total != t.count(want) - before_want) {
                break;  // an event of another kind: reported below
            }
            if (edgelock::port::now() >= give_up) {
                fail(program, format("%s round: %zu of %zu events after 10 s", name_of(op),
                                     t.count(want) - before_want, lock_count));
            }
            edgelock::port::wait_entry entries[1];
            const std::size_t n = c.wanted(entries, 1);
            if (n != 1) {
                fail(program, format("%s round: the client has no connection", name_of(op)));
            }
            // Whatever is readable now costs no round trip; only an empty
            // socket makes the loop sleep for the server.
            ++r.waits;
            int ready = edgelock::port::wait(entries, n, instant{0});
            if (ready == 0) {
                ++r.blocked;
                ready = edgelock::port::wait(entries, n, earliest(c.next_deadline(), give_up));
            }
            if (ready < 0) {
                fail(program, "port::wait failed");
            }
            if (ready > 0) {
                c.on_ready(entries, n);
            } else {
                c.on_timeout();
            }
        }
        const std::int64_t t2 = mono_ns();
        const long long reads_after = read_counter();
        if (t.fan_out != nullptr || t.fan_out_error != client_errc::ok) {
            fail(program, format("renew from a callback: %s",
                                 t.fan_out != nullptr ? "never started"
                                                      : edgelock::describe(t.fan_out_error)));
        }

        if (t.total - before_total != lock_count || t.count(want) - before_want != lock_count) {
            std::string kinds;
            for (std::size_t k = 0; k < 8; ++k) {
                if (t.counts[k] != 0) {
                    kinds += format(" %s=%zu", edgelock::describe(static_cast<lock_event_kind>(k)),
                                    t.counts[k]);
                }
            }
            // failed / renew_failed here: requests that waited in the client's
            // queue past the lock's node_timeout (50 ms), which starts at start_*().
            fail(program, format("%s round: unexpected events; totals so far:%s", name_of(op),
                                 kinds.c_str()));
        }
        r.total_ns = t2 - t0;
        r.start_ns = t1 - t0;
        r.server_reads = reads_after - reads_before - info_overhead_;
        return r;
    }

private:
    long long read_counter() const {
        const long long v = edgelock_bench::info_field(port_, "total_reads_processed");
        if (v < 0) {
            fail(program, "INFO total_reads_processed unavailable");
        }
        return v;
    }

    std::uint16_t port_;
    long long info_overhead_ = 0;
};

double ms(std::int64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

// The figures of a set of rounds: p50 (or max) of each, taken separately.
struct round_figures {
    std::int64_t total_ns = 0;
    std::int64_t start_ns = 0;
    long long server_reads = 0;
    unsigned blocked = 0;
};

template <typename T>
T pick(std::vector<T> v, bool max) {
    std::sort(v.begin(), v.end());
    return max ? v.back() : v[(v.size() - 1) / 2];
}

round_figures figures_of(const std::vector<round_result>& rounds, bool max) {
    std::vector<std::int64_t> totals;
    std::vector<std::int64_t> starts;
    std::vector<long long> reads;
    std::vector<unsigned> blocked;
    for (const round_result& r : rounds) {
        totals.push_back(r.total_ns);
        starts.push_back(r.start_ns);
        reads.push_back(r.server_reads);
        blocked.push_back(r.blocked);
    }
    round_figures f;
    f.total_ns = pick(totals, max);
    f.start_ns = pick(starts, max);
    f.server_reads = pick(reads, max);
    f.blocked = pick(blocked, max);
    return f;
}

round_figures figures_of(const round_result& r) {
    return figures_of(std::vector<round_result>{r}, false);
}

// One table row for a whole round.
std::string round_row(const std::string& label, const round_figures& f, double rtt_ms) {
    const double t = ms(f.total_ns);
    const std::string per_read =
        f.server_reads > 0
            ? format("%.1f", static_cast<double>(lock_count) / static_cast<double>(f.server_reads))
            : std::string("-");
    return format("| %s | %.2f ms | %.2f ms | %.2f us | %lld | %u | %s | %.2fx |\n", label.c_str(),
                  t, ms(f.start_ns), t * 1000.0 / static_cast<double>(lock_count), f.server_reads,
                  f.blocked, per_read.c_str(), static_cast<double>(lock_count) * rtt_ms / t);
}

// Time of one call of fn, averaged over `calls` calls.
template <typename Fn>
double ns_per_call(int calls, Fn fn) {
    const std::int64_t t0 = mono_ns();
    for (int i = 0; i < calls; ++i) {
        fn();
    }
    return static_cast<double>(mono_ns() - t0) / calls;
}

int run() {
    edgelock_test::redis_server server;
    const std::uint16_t port = server.port();
    std::fprintf(stderr, "%s: redis-server on port %u\n", program, port);

    const edgelock_bench::summary rtt =
        edgelock_bench::summarize(edgelock_bench::ping_round_trips(program, port, ping_count));
    const double rtt_ms = rtt.p50_ms;
    std::fprintf(stderr, "%s: PING round trip p50 %.1f us\n", program, rtt_ms * 1000.0);

    bench b(port);
    b.measure_info_overhead();
    std::fprintf(stderr, "%s: INFO overhead %lld reads\n", program, b.info_overhead());

    const std::string url = edgelock_test::redis_url(port);
    const edgelock::str_view urls[] = {edgelock::str_view(url.data(), url.size())};
    edgelock::client<1> c;
    if (c.configure(urls, 1, {}) != client_errc::ok) {
        fail(program, "configure failed");
    }
    if (c.connect(edgelock::port::now() + duration::seconds(2)) != 1) {
        fail(program, "could not connect to redis-server");
    }

    std::vector<std::string> names;
    names.reserve(lock_count);
    for (std::size_t i = 0; i < lock_count; ++i) {
        names.push_back(format("many-%zu", i));
    }
    edgelock::lock_options options;
    options.ttl = duration::seconds(30);
    edgelock::watchdog_options watchdog;
    watchdog.enabled = false;
    tally t;
    std::unique_ptr<client_lock[]> locks(new client_lock[lock_count]);
    for (std::size_t i = 0; i < lock_count; ++i) {
        const client_errc e = locks[i].attach(
            c, edgelock::str_view(names[i].data(), names[i].size()), options, watchdog);
        if (e != client_errc::ok) {
            fail(program, format("attach %s: %s", names[i].c_str(), edgelock::describe(e)));
        }
        locks[i].set_callback(&tally::on_event, &t);
    }

    const round_result acquired = b.run(c, locks.get(), t, operation::acquire);
    std::fprintf(stderr, "%s: acquired all in %.2f ms\n", program, ms(acquired.total_ns));

    std::vector<round_result> renewals;
    std::vector<round_result> fan_outs;
    for (int i = 0; i < renew_rounds; ++i) {
        renewals.push_back(b.run(c, locks.get(), t, operation::renew));
        fan_outs.push_back(b.run(c, locks.get(), t, operation::renew_fan_out));
        std::fprintf(stderr,
                     "%s: renew round %d: %.2f ms (starts %.2f ms), %lld server reads, %u client "
                     "waits; from a callback: %.2f ms, %lld server reads, %u client waits\n",
                     program, i + 1, ms(renewals.back().total_ns), ms(renewals.back().start_ns),
                     renewals.back().server_reads, renewals.back().blocked,
                     ms(fan_outs.back().total_ns), fan_outs.back().server_reads,
                     fan_outs.back().blocked);
    }
    for (std::size_t i = 0; i < lock_count; ++i) {
        if (!locks[i].held()) {
            fail(program, format("lock %s not held after the renew rounds", names[i].c_str()));
        }
    }

    // One idle wakeup: nothing is due (no watchdog, validity ~30 s away).
    if (c.next_deadline() < edgelock::port::now() + duration::seconds(20)) {
        fail(program, "something is due while the client should be idle");
    }
    std::uint64_t sink = 0;
    const double next_deadline_ns =
        ns_per_call(wakeup_calls, [&] { sink += c.next_deadline().us; });
    const double on_timeout_ns = ns_per_call(wakeup_calls, [&] { c.on_timeout(); });
    if (sink == 0 || t.total != lock_count * (1 + 2 * renew_rounds)) {
        fail(program, "idle wakeups produced events");
    }

    const round_result released = b.run(c, locks.get(), t, operation::release);
    std::fprintf(stderr, "%s: released all in %.2f ms\n", program, ms(released.total_ns));
    {
        // Nothing is left: each release deleted its key and its renewal
        // mark, and wrote and deleted its release mark.
        edgelock_test::redis_client admin(port);
        const long long keys = admin.command({"DBSIZE"}).integer;
        if (keys != 0) {
            fail(program, format("after releasing every lock, %lld keys are left", keys));
        }
        for (std::size_t i = 0; i < lock_count; ++i) {
            if (admin.command({"EXISTS", edgelock_test::key_of(names[i])}).integer != 0) {
                fail(program, "a lock key is left after its release: " + names[i]);
            }
        }
    }

    const unsigned pipeline_bound = static_cast<unsigned>(
        (lock_count + EDGELOCK_CLIENT_PIPELINE - 1) / EDGELOCK_CLIENT_PIPELINE);
    const round_figures renew_p50 = figures_of(renewals, false);
    const round_figures renew_max = figures_of(renewals, true);
    const round_figures fan_out_p50 = figures_of(fan_outs, false);
    const double per_start_us = ms(renew_p50.start_ns) * 1000.0 / static_cast<double>(lock_count);

    std::string out;
    out += "## 6. Renewing 1,000 locks on one node\n\n";
    out += format(
        "One `client<1>` (one connection) holds 1,000 plain locks (ttl 30 s, watchdog off) on "
        "one local redis-server. A renew round calls `start_renew()` on every lock, then drives "
        "the event-loop API (`wanted()`, `port::wait`, `on_ready`, `on_timeout`) until 1,000 "
        "`renewed` events have arrived; %d rounds, every renewal must succeed, and after "
        "releasing all no key is left (no lock key, no mark). ",
        renew_rounds);
    out += format(
        "*Server reads*: the delta of INFO `total_reads_processed` over the round, less the INFO "
        "connections' own %lld; *client waits*: the times the loop found nothing to read and "
        "slept for the server. ",
        b.info_overhead());
    out += format(
        "Floor: one PING round trip (raw socket, p50 of %d); a client without pipelining pays "
        "1,000 of them per round. ",
        ping_count);
    out += format(
        "Batching is bounded by the pipeline depth (`EDGELOCK_CLIENT_PIPELINE` = %d requests in "
        "flight, so at least %u round trips per round); each send() carries as many requests "
        "as the %d-byte send buffer (`EDGELOCK_CLIENT_TX_BUFFER`) holds. ",
        EDGELOCK_CLIENT_PIPELINE, pipeline_bound, EDGELOCK_CLIENT_TX_BUFFER);
    out += format(
        "The *from a callback* row starts lock 0's renewal alone and the other %zu from its "
        "`renewed` callback. Either way `start_renew()` only marks the lock, and the client's "
        "next call starts them all in one pass. The idle rows time one call with all 1,000 locks "
        "attached and nothing "
        "due: the scan every wakeup pays.\n\n",
        lock_count - 1);
    out +=
        "| 1,000 locks | Round time | of which start_*() calls | Per lock | Server reads | Client "
        "waits | Requests per server read | Speed-up over 1,000 sequential round trips |\n";
    out += "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    out += round_row(format("Renew round, p50 of %d", renew_rounds), renew_p50, rtt_ms);
    out += round_row(format("Renew round, max of %d", renew_rounds), renew_max, rtt_ms);
    out += round_row(format("Renew round from a callback, p50 of %d", renew_rounds), fan_out_p50,
                     rtt_ms);
    out += round_row("Acquire all, one go", figures_of(acquired), rtt_ms);
    out += round_row("Release all, one go", figures_of(released), rtt_ms);
    out += format("| Floor: one round trip (PING p50) | %.3f ms | | | 1 | 1 | 1 | |\n", rtt_ms);
    out += format(
        "| No pipelining: 1,000 sequential round trips | %.2f ms | | %.2f us | 1,000 | 1,000 | 1 "
        "| 1.00x |\n",
        rtt_ms * static_cast<double>(lock_count), rtt_ms * 1000.0);
    out += format("| Idle wakeup: one `next_deadline()` | %.2f us | | %.1f ns | | | | |\n",
                  next_deadline_ns / 1000.0, next_deadline_ns / static_cast<double>(lock_count));
    out += format("| Idle wakeup: one `on_timeout()` | %.2f us | | %.1f ns | | | | |\n",
                  on_timeout_ns / 1000.0, on_timeout_ns / static_cast<double>(lock_count));
    out += format(
        "\nTarget: pipelined, a few round trips per round, not 1,000: **%s** (%u client waits "
        "and %lld server reads per renew round, p50; the pipeline depth allows no fewer than %u "
        "waits).\n\n",
        renew_p50.blocked <= 2 * pipeline_bound ? "met" : "missed", renew_p50.blocked,
        renew_p50.server_reads, pipeline_bound);
    out += format(
        "The 1,000 `start_renew()` calls take %.0f%% of the round (%.2f us each).\n",
        100.0 * static_cast<double>(renew_p50.start_ns) / static_cast<double>(renew_p50.total_ns),
        per_start_us);
    std::fputs(out.c_str(), stdout);
    return 0;
}

}  // namespace

int main() {
    try {
        return run();
    } catch (const std::exception& e) {
        fail(program, e.what());
    }
}
