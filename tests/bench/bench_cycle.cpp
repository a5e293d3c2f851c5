// The lock cycle on one node over one loopback connection: acquire + release,
// edgelock against a hand-written hiredis cycle doing the same job, and the
// floor of the server and the link. Prints three sections:
//
//   2. cycles per second: edgelock's blocking client_lock (try_acquire, then
//      release) against hiredis's blocking redisCommand (SET key token NX PX
//      ttl, then EVALSHA of a compare-and-delete script), each with a fresh
//      128-bit token from getrandom() per cycle; and the floor,
//      `redis-benchmark -c 1 -P 1 -t set` divided by two (two round trips of
//      the cheapest write). Each side runs three times, alternating, and the
//      median counts.
//   3. user-space instructions per cycle, under valgrind --tool=callgrind:
//      the program runs itself under valgrind in a mode that does only the
//      cycles of one side, with collection switched on only inside the loop
//      (--toggle-collect), so set-up and connection are not counted.
//   4. heap allocations per cycle, counted by interposing malloc
//      (tests/tools/alloc_count.cpp) around 1,000 cycles of each side.
//
// Every cycle must acquire and release, or the program fails: a figure from a
// run with errors would mean nothing.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <hiredis/hiredis.h>

#include "bench/bench_common.hpp"
#include "edgelock/client.hpp"
#include "integration/redis_server.hpp"
#include "tools/alloc_count.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"
#include "tools/url.hpp"

namespace {

using namespace edgelock;
using edgelock_bench::fail;
using edgelock_bench::format;
using edgelock_bench::mono_ns;

const char* const program = "bench_cycle";
const char* const lock_name = "bench-cycle";
const int ttl_ms = 10000;
const char* const compare_and_delete =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
    "return 0";

// --- edgelock ---------------------------------------------------------------------------

class edgelock_side {
public:
    explicit edgelock_side(std::uint16_t port) : url_(edgelock_test::redis_url(port)) {
        const str_view urls[] = {str_view(url_.c_str())};
        if (client_.configure(urls, 1, client_options{}) != client_errc::ok) {
            fail(program, "edgelock: configure failed");
        }
        lock_options o;
        o.ttl = duration::millis(ttl_ms);
        if (lock_.attach(client_, lock_name, o) != client_errc::ok) {
            fail(program, "edgelock: attach failed");
        }
        if (client_.connect(port::now() + duration::seconds(5)) != 1) {
            fail(program, "edgelock: the node did not connect");
        }
    }

    void cycle() {
        const op_result a = lock_.try_acquire();
        if (a.error != client_errc::ok || a.event.kind != lock_event_kind::acquired) {
            fail(program, format("edgelock: acquire ended with %s / %s", describe(a.error),
                                 describe(a.event.kind)));
        }
        const op_result r = lock_.release();
        if (r.error != client_errc::ok || r.event.kind != lock_event_kind::released) {
            fail(program, format("edgelock: release ended with %s / %s", describe(r.error),
                                 describe(r.event.kind)));
        }
    }

private:
    std::string url_;
    client<1> client_;
    client_lock lock_;
};

// --- hiredis ----------------------------------------------------------------------------

class hiredis_side {
public:
    // The key edgelock uses for the name, so both sides do the same job.
    explicit hiredis_side(std::uint16_t port) : key_(edgelock_test::key_of(lock_name)) {
        c_ = redisConnect("127.0.0.1", port);
        if (c_ == nullptr || c_->err != 0) {
            fail(program, "hiredis: connect failed");
        }
        redisReply* r =
            static_cast<redisReply*>(redisCommand(c_, "SCRIPT LOAD %s", compare_and_delete));
        if (r == nullptr || r->type != REDIS_REPLY_STRING || r->len != 40) {
            fail(program, "hiredis: SCRIPT LOAD failed");
        }
        std::memcpy(sha_, r->str, 40);
        sha_[40] = '\0';
        freeReplyObject(r);
    }
    ~hiredis_side() { redisFree(c_); }
    hiredis_side(const hiredis_side&) = delete;
    hiredis_side& operator=(const hiredis_side&) = delete;

    void cycle() {
        char token[33];
        edgelock_bench::peer_token(program, token);
        redisReply* r = static_cast<redisReply*>(
            redisCommand(c_, "SET %s %s NX PX %d", key_.c_str(), token, ttl_ms));
        if (r == nullptr || r->type != REDIS_REPLY_STATUS) {
            fail(program, "hiredis: SET NX PX did not acquire");
        }
        freeReplyObject(r);
        r = static_cast<redisReply*>(
            redisCommand(c_, "EVALSHA %s 1 %s %s", sha_, key_.c_str(), token));
        if (r == nullptr || r->type != REDIS_REPLY_INTEGER || r->integer != 1) {
            fail(program, "hiredis: compare-and-delete did not release");
        }
        freeReplyObject(r);
    }

private:
    std::string key_;
    redisContext* c_ = nullptr;
    char sha_[41] = {};
};

// The loops valgrind counts (--toggle-collect names them): kept out of line.
__attribute__((noinline)) void measured_edgelock(edgelock_side& s, int cycles) {
    for (int i = 0; i < cycles; ++i) {
        s.cycle();
    }
}

__attribute__((noinline)) void measured_hiredis(hiredis_side& s, int cycles) {
    for (int i = 0; i < cycles; ++i) {
        s.cycle();
    }
}

template <class Side>
double allocations_per_cycle(Side& side, int cycles) {
    for (int i = 0; i < 100; ++i) {
        side.cycle();
    }
    edgelock_test::alloc_window w;
    for (int i = 0; i < cycles; ++i) {
        side.cycle();
    }
    return static_cast<double>(w.count()) / cycles;
}

// Microseconds the server spent executing the commands of `cycles` cycles,
// from INFO commandstats (reset before), per cycle.
template <class Side>
double server_us_per_cycle(std::uint16_t port, Side& side, int cycles) {
    edgelock_test::redis_client admin(port);
    admin.command({"CONFIG", "RESETSTAT"});
    for (int i = 0; i < cycles; ++i) {
        side.cycle();
    }
    const std::string stats = admin.command({"INFO", "commandstats"}).text;
    double usec = 0;
    std::size_t at = 0;
    while ((at = stats.find("cmdstat_", at)) != std::string::npos) {
        const std::size_t end = stats.find('\n', at);
        const std::string line = stats.substr(at, end - at);
        at = end;
        if (line.compare(0, 13, "cmdstat_info:") == 0 ||
            line.compare(0, 15, "cmdstat_config|") == 0) {
            continue;  // this function's own commands
        }
        const std::size_t u = line.find(",usec=");
        if (u != std::string::npos) {
            usec += std::atof(line.c_str() + u + 6);
        }
    }
    return usec / cycles;
}

bool have_valgrind() {
    return std::system("valgrind --version >/dev/null 2>&1") == 0;
}

// Instructions per cycle of one side: this program under callgrind, in
// --callgrind mode, with collection only inside the measured loop.
double callgrind_per_cycle(std::uint16_t port, const char* side, int cycles) {
    const std::string fn =
        std::string(side) == "edgelock" ? "*measured_edgelock*" : "*measured_hiredis*";
    return edgelock_bench::callgrind_total(program, fn,
                                           format("--callgrind %s %u %d", side, port, cycles)) /
           cycles;
}

// The child under valgrind: warm up outside the counted loop, then count.
int callgrind_child(const char* side, std::uint16_t port, int cycles) {
    if (std::string(side) == "edgelock") {
        edgelock_side s(port);
        for (int i = 0; i < 100; ++i) {
            s.cycle();
        }
        measured_edgelock(s, cycles);
    } else {
        hiredis_side s(port);
        for (int i = 0; i < 100; ++i) {
            s.cycle();
        }
        measured_hiredis(s, cycles);
    }
    return 0;
}

const char* verdict(bool met) {
    return met ? "met" : "missed";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 5 && std::string(argv[1]) == "--callgrind") {
        return callgrind_child(argv[2], static_cast<std::uint16_t>(std::atoi(argv[3])),
                               std::atoi(argv[4]));
    }
    edgelock_test::redis_server server;
    const std::uint16_t port = server.port();

    std::fprintf(stderr, "%s: throughput\n", program);
    edgelock_side el(port);
    hiredis_side hr(port);
    std::vector<double> el_rates;
    std::vector<double> hr_rates;
    std::vector<double> el_cpu;
    std::vector<double> hr_cpu;
    for (int round = 0; round < 3; ++round) {
        double cpu = 0;
        el_rates.push_back(edgelock_bench::cycles_per_second(el, 1.5, &cpu));
        el_cpu.push_back(cpu);
        hr_rates.push_back(edgelock_bench::cycles_per_second(hr, 1.5, &cpu));
        hr_cpu.push_back(cpu);
    }
    std::sort(el_cpu.begin(), el_cpu.end());
    std::sort(hr_cpu.begin(), hr_cpu.end());
    std::sort(el_rates.begin(), el_rates.end());
    std::sort(hr_rates.begin(), hr_rates.end());
    const double el_rate = el_rates[1];
    const double hr_rate = hr_rates[1];
    const double set_rate = edgelock_bench::redis_benchmark_set(port, 100000);
    if (set_rate <= 0) {
        fail(program, "redis-benchmark did not report a SET rate");
    }
    const double floor_rate = set_rate / 2;
    const double el_server_us = server_us_per_cycle(port, el, 5000);
    const double hr_server_us = server_us_per_cycle(port, hr, 5000);

    std::fprintf(stderr, "%s: allocations\n", program);
    const int alloc_cycles = 1000;
    const double el_allocs = allocations_per_cycle(el, alloc_cycles);
    const double hr_allocs = allocations_per_cycle(hr, alloc_cycles);

    std::fprintf(stderr, "%s: callgrind\n", program);
    const int cg_cycles = 1000;
    if (!have_valgrind()) {
        fail(program, "valgrind is not installed (make deps installs it for make bench)");
    }
    const double el_ir = callgrind_per_cycle(port, "edgelock", cg_cycles);
    const double hr_ir = callgrind_per_cycle(port, "hiredis", cg_cycles);

    std::printf("## 2. Lock cycle on one node: acquire + release per second\n\n");
    std::printf(
        "One redis-server on loopback, one connection, one cycle at a time: acquire, then "
        "release, each waiting for its reply. edgelock: `client_lock::try_acquire()` then "
        "`release()` (on Redis 7: `SET key token NX PX ttl GET`, then EVALSHA of its "
        "compare-and-delete script). hiredis: "
        "`redisCommand` with `SET key token NX PX %d`, then `EVALSHA` of a compare-and-delete "
        "script. Both draw a fresh 128-bit token from getrandom() per cycle. Each side ran three "
        "times for 1.5 s, alternating; the median counts. The floor is `redis-benchmark -c 1 -P 1 "
        "-t set` on the same server, divided by two: two round trips of the cheapest write. "
        "Server time per cycle is the server's own command execution time (INFO commandstats, "
        "usec) over 5,000 more cycles of each side; client CPU is the benchmark process's user + "
        "system time per cycle (CLOCK_PROCESS_CPUTIME_ID), the median of the three runs.\n\n",
        ttl_ms);
    std::printf(
        "| | cycles/s | runs | vs hiredis | vs floor | server time/cycle | client CPU/cycle |\n"
        "|---|---:|---|---:|---:|---:|---:|\n");
    std::printf("| edgelock | %.0f | %.0f, %.0f, %.0f | %.2fx | %.2fx | %.1f us | %.1f us |\n",
                el_rate, el_rates[0], el_rates[1], el_rates[2], el_rate / hr_rate,
                el_rate / floor_rate, el_server_us, el_cpu[1]);
    std::printf("| hiredis cycle | %.0f | %.0f, %.0f, %.0f | 1.00x | %.2fx | %.1f us | %.1f us |\n",
                hr_rate, hr_rates[0], hr_rates[1], hr_rates[2], hr_rate / floor_rate, hr_server_us,
                hr_cpu[1]);
    std::printf("| floor (redis-benchmark SET %.0f/s, / 2) | %.0f | | | 1.00x | | |\n\n", set_rate,
                floor_rate);
    std::printf("Target: at least 1.0x the hiredis cycle: **%s** (%.2fx).\n\n",
                verdict(el_rate >= hr_rate), el_rate / hr_rate);

    std::printf("## 3. Client CPU per cycle: instructions\n\n");
    std::printf(
        "User-space instructions (Ir) per acquire + release under `valgrind --tool=callgrind`, "
        "counted only inside the loop of %d cycles (after 100 uncounted warm-up cycles), "
        "including the C library (socket calls, getrandom, clock) and, for hiredis, its "
        "allocator; the kernel is not counted. The server runs outside valgrind.\n\n",
        cg_cycles);
    std::printf("| | instructions/cycle | vs hiredis |\n|---|---:|---:|\n");
    std::printf("| edgelock | %.0f | %.2fx |\n", el_ir, el_ir / hr_ir);
    std::printf("| hiredis cycle | %.0f | 1.00x |\n\n", hr_ir);
    std::printf("Target: at most 0.5x hiredis: **%s** (%.2fx).\n\n", verdict(el_ir <= 0.5 * hr_ir),
                el_ir / hr_ir);

    std::printf("## 4. Heap allocations per cycle\n\n");
    std::printf(
        "malloc, calloc, realloc and the aligned allocators interposed in the benchmark "
        "program (tests/tools/alloc_count.cpp), counted over %d cycles after 100 warm-up "
        "cycles; every allocation in the process counts, the C library's included.\n\n",
        alloc_cycles);
    std::printf("| | allocations/cycle |\n|---|---:|\n");
    std::printf("| edgelock | %.2f |\n", el_allocs);
    std::printf("| hiredis cycle | %.2f |\n\n", hr_allocs);
    std::printf("Target: 0: **%s** (%.2f per cycle; the hiredis cycle %.2f).\n\n",
                verdict(el_allocs == 0), el_allocs, hr_allocs);
    return 0;
}
