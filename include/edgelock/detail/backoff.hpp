// The reconnect backoff every part of the driver shares: doubling from
// reconnect_min to reconnect_max with each consecutive failure, jittered.
#pragma once

#include <cstdint>

#include "edgelock/time.hpp"
#include "edgelock/token.hpp"

namespace edgelock {

struct client_options;

namespace detail {

// When to try again after `failures` consecutive failures (counted up here):
// a delay doubling from reconnect_min to reconnect_max, drawn in
// [delay/2, delay].
instant backoff_until(const client_options& o, const random_source& random, std::uint8_t& failures,
                      instant now) noexcept;

}  // namespace detail
}  // namespace edgelock
