// Shared pieces of the benchmark programs (tests/bench/bench_*.cpp).
//
// Every program prints one Markdown section on stdout (a heading "## N. ...",
// a sentence or two on the method, then a table) and progress or errors on
// stderr; tests/bench/run.sh puts the sections together into BENCHMARKS.md.
// A program exits 1 when a measurement cannot be taken (a server does not
// start, a lock operation fails): a benchmark never reports a figure it did
// not measure. Timings are measured, never asserted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/clock.hpp"

namespace edgelock_bench {

// Instants: edgelock_test::mono_ns(), CLOCK_MONOTONIC in nanoseconds, the
// clock every process on the machine shares.
using edgelock_test::mono_ns;

// A fresh peer token: 16 bytes of getrandom(), as 32 hex digits and a NUL.
// Allocates nothing (the benchmarks count allocations). Fails on error.
void peer_token(const char* program, char (&hex)[33]);

// Prints "NAME: message" on stderr and exits with status 1.
[[noreturn]] void fail(const char* name, const std::string& message);

// Order statistics of a set of samples (nanoseconds), in milliseconds.
// Nearest-rank percentiles. Empty samples give zeros.
struct summary {
    std::size_t count = 0;
    double min_ms = 0;
    double p50_ms = 0;
    double p90_ms = 0;
    double p99_ms = 0;
    double max_ms = 0;
    double mean_ms = 0;
};
summary summarize(std::vector<std::int64_t> samples_ns);

// A field of a server's INFO (e.g. "total_reads_processed"), read on a new
// connection; -1 when the server or the field is not there.
long long info_field(std::uint16_t port, const std::string& field);

// Round trips of PING, one at a time on one blocking loopback connection
// (nanoseconds each): the least any request costs. Fails on any error.
std::vector<std::int64_t> ping_round_trips(const char* program, std::uint16_t port, int count);

// Cycles per second of side.cycle() over about `seconds`, after 200 warm-up
// cycles; with cpu_us, the process's CPU time (user + system) per cycle too.
template <class Side>
double cycles_per_second(Side& side, double seconds, double* cpu_us = nullptr) {
    for (int i = 0; i < 200; ++i) {
        side.cycle();
    }
    const double cpu_start = edgelock_test::cpu_s();
    const std::int64_t start = mono_ns();
    const std::int64_t end = start + static_cast<std::int64_t>(seconds * 1e9);
    long cycles = 0;
    std::int64_t t = start;
    while (t < end) {
        for (int i = 0; i < 100; ++i) {
            side.cycle();
        }
        cycles += 100;
        t = mono_ns();
    }
    if (cpu_us != nullptr) {
        *cpu_us = (edgelock_test::cpu_s() - cpu_start) * 1e6 / static_cast<double>(cycles);
    }
    return static_cast<double>(cycles) / (static_cast<double>(t - start) / 1e9);
}

// redis-benchmark's SET rate (requests per second) against 127.0.0.1:port,
// one connection, no pipelining, `requests` of them; `options` go before the
// others (e.g. "--tls --cacert 'ca.crt'"). -1 when it reported none.
double redis_benchmark_set(std::uint16_t port, int requests, const std::string& options = "");

// This program run again under `valgrind --tool=callgrind` with `args` (a
// shell-quoted tail of its command line), counting instructions only inside
// the functions matching `toggle` (--toggle-collect). The total Ir; fails
// `program` when valgrind or the run fails.
double callgrind_total(const char* program, const std::string& toggle, const std::string& args);

// The fault proxy program built next to the benchmarks.
const char* fault_proxy_program();

// printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace edgelock_bench
