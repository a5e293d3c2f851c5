// POSIX port: the monotonic clock.
#include <time.h>

#include "edgelock/port.hpp"

namespace edgelock {
namespace port {

instant now() noexcept {
    timespec ts{};
    // CLOCK_MONOTONIC cannot fail with a valid pointer on any system that has
    // it; if it ever did, returning 0 would make every deadline look reached,
    // which fails operations rather than extending a lock.
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return instant{0};
    }
    return instant{static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
                   static_cast<std::uint64_t>(ts.tv_nsec) / 1000u};
}

}  // namespace port
}  // namespace edgelock
