// Clocks and sleeps for the tests, the benchmarks and the test tools.
//
//   const double deadline = edgelock_test::mono_s() + 5.0;
//   REQUIRE(edgelock_test::wait_for([&] { return file_exists(p); }, 5.0));
//
// The monotonic clock is CLOCK_MONOTONIC, which is machine-wide: instants
// taken in different processes compare (the chaos checker's logs rely on it).
// The library's own clock is port::now(); these are for the harness around it.
#pragma once

#include <time.h>

#include <cstdint>

namespace edgelock_test {

inline std::int64_t mono_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline double mono_s() {
    return static_cast<double>(mono_ns()) / 1e9;
}

// The wall clock, in seconds since the epoch, as `date +%s.%N` prints it in a
// child process.
inline double wall_s() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// CPU time this process has used so far, user and system, in seconds.
inline double cpu_s() {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Sleeps; a signal that interrupts the sleep ends it early, as with usleep(),
// so a loop that sleeps between checks of a stop flag sees the flag at once.
inline void sleep_ns(std::int64_t ns) {
    if (ns <= 0) {
        return;
    }
    timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    ::nanosleep(&ts, nullptr);
}

inline void sleep_us(std::int64_t us) {
    sleep_ns(us * 1000);
}

inline void sleep_ms(std::int64_t ms) {
    sleep_us(ms * 1000);
}

// Polls cond() every 10 ms for up to timeout_s; true as soon as it holds, and
// the answer of one last look once the time is up.
template <class F>
bool wait_for(F cond, double timeout_s) {
    const double deadline = mono_s() + timeout_s;
    while (mono_s() < deadline) {
        if (cond()) {
            return true;
        }
        sleep_ms(10);
    }
    return cond();
}

}  // namespace edgelock_test
