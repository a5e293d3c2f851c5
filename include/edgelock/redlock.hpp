// The Redlock rules, in one place: quorum, clock drift and validity.
//
// A round sends one request to each of N independent nodes at once. It is won
// when `quorum` nodes said yes, and lost as soon as so many said no (or timed
// out) that the quorum can no longer be reached. A won round is only worth
// something while its validity lasts:
//
//   validity deadline = t0 + ttl - drift,   drift = ttl * drift_ppm / 10^6 + drift_fixed
//
// where t0 is the time the round started (before the first byte was sent), so
// the time the round took is already subtracted. A deadline at or before `now`
// is a failure: the machine never hands out a lock that has already expired.
#pragma once

#include <cstdint>

#include "edgelock/time.hpp"

namespace edgelock {

// The smallest quorum that keeps two winners apart: n / 2 + 1.
constexpr std::uint8_t redlock_min_quorum(std::uint8_t nodes) noexcept {
    return static_cast<std::uint8_t>(nodes / 2 + 1);
}

// A quorum may be raised (up to every node) but never lowered below a majority.
constexpr bool redlock_quorum_ok(std::uint8_t nodes, std::uint8_t quorum) noexcept {
    return quorum >= redlock_min_quorum(nodes) && quorum <= nodes;
}

duration redlock_drift(duration ttl, std::uint32_t drift_ppm, duration drift_fixed) noexcept;

// t0 + ttl - drift, saturating; instant{0} when drift eats the whole ttl.
instant redlock_validity_deadline(instant t0, duration ttl, duration drift) noexcept;

// The votes of one round.
struct redlock_tally {
    std::uint8_t nodes = 0;
    std::uint8_t quorum = 0;
    std::uint8_t yes = 0;
    std::uint8_t no = 0;  // refused, failed or timed out

    bool won() const noexcept { return yes >= quorum; }
    // Decided against us: the nodes still out cannot make up the quorum.
    bool lost() const noexcept { return no > nodes - quorum; }
    bool all_in() const noexcept { return yes + no >= nodes; }
};

}  // namespace edgelock
