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

// The fault proxy program built next to the benchmarks.
const char* fault_proxy_program();

// printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace edgelock_bench
