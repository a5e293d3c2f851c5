// POSIX port: the monotonic clock, counting suspend where the platform can.
#include <time.h>

#include <atomic>

#include "edgelock/port.hpp"

namespace edgelock {
namespace port {

namespace {

// A gateway that suspends must not wake up believing its locks still held:
// CLOCK_BOOTTIME keeps counting while suspended, CLOCK_MONOTONIC does not.
// One clock for the life of the process (a kernel without CLOCK_BOOTTIME,
// before Linux 2.6.39, refuses it on the first call and never accepts it later).
clockid_t pick_clock() noexcept {
#ifdef CLOCK_BOOTTIME
    timespec ts{};
    if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0) {
        return CLOCK_BOOTTIME;
    }
#endif
    return CLOCK_MONOTONIC;
}

// The clock picked, plus one; 0 until the first call. Not a function-local
// static: its guard would need the C++ runtime (__cxa_guard_acquire), which a
// C program linking the library does not have. Two threads racing on the
// first call pick the same clock.
std::atomic<int> picked{0};

}  // namespace

instant now() noexcept {
    int p = picked.load(std::memory_order_relaxed);
    if (p == 0) {
        p = static_cast<int>(pick_clock()) + 1;
        picked.store(p, std::memory_order_relaxed);
    }
    const auto id = static_cast<clockid_t>(p - 1);
    timespec ts{};
    // The clock cannot fail with a valid pointer once it worked; if it ever
    // did, returning 0 would make every deadline look reached, which fails
    // operations rather than extending a lock.
    if (clock_gettime(id, &ts) != 0) {
        return instant{0};
    }
    return instant{static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
                   static_cast<std::uint64_t>(ts.tv_nsec) / 1000u};
}

}  // namespace port
}  // namespace edgelock
