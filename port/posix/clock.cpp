// POSIX port: the monotonic clock, counting suspend where the platform can.
#include <time.h>

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

}  // namespace

instant now() noexcept {
    static const clockid_t id = pick_clock();
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
