// The Redlock arithmetic (see redlock.hpp for the rule itself).
#include "edgelock/redlock.hpp"

namespace edgelock {

duration redlock_drift(duration ttl, std::uint32_t drift_ppm, duration drift_fixed) noexcept {
    // Round up: drift is a safety margin. Saturate for absurd inputs rather than wrap.
    if (drift_ppm != 0 && ttl.us > (UINT64_MAX - 999999U) / drift_ppm) {
        return duration::micros(UINT64_MAX);
    }
    const std::uint64_t scaled = (ttl.us * drift_ppm + 999999U) / 1000000U;
    return duration::micros(scaled) + drift_fixed;
}

instant redlock_validity_deadline(instant t0, duration ttl, duration drift) noexcept {
    if (drift >= ttl) {
        return instant{0};
    }
    return t0 + (ttl - drift);
}

}  // namespace edgelock
