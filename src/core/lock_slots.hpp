// Internal to the lock machine: the flags of a node's slot and the layout
// of request tags, shared by lock.cpp (operations and rounds) and lock_io.cpp
// (what comes in and goes out).
#pragma once

#include <cstdint>

namespace edgelock {
namespace detail {

// slot::flags
constexpr std::uint16_t slot_in_flight = 1;        // this round's request is out
constexpr std::uint16_t slot_eval = 2;             // send it as EVAL (after NOSCRIPT)
constexpr std::uint16_t slot_retried = 4;          // the NOSCRIPT retry is spent
constexpr std::uint16_t slot_cleanup = 8;          // a cleanup waits to be sent
constexpr std::uint16_t slot_cleanup_out = 16;     // a cleanup is out
constexpr std::uint16_t slot_holder = 32;          // the node holds our acquisition
constexpr std::uint16_t slot_cleanup_resent = 64;  // a cleanup cut off was sent again
// The plain acquire as one SET NX PX GET (see lock.hpp, "The acquire"):
constexpr std::uint16_t slot_set_get = 128;       // the driver says the node speaks it
constexpr std::uint16_t slot_set_get_off = 256;   // the node refused it: scripts only
constexpr std::uint16_t slot_as_script = 512;     // this round: resend as the script
constexpr std::uint16_t slot_found_taken = 1024;  // this round: SET found another's key
constexpr std::uint16_t slot_said_busy = 2048;    // this round: the node answered "busy"
constexpr std::uint16_t slot_told = 4096;         // the node tells of key changes
constexpr std::uint16_t slot_wait_due = 8192;     // this round: "yes", once WAIT agrees
constexpr std::uint16_t slot_told_set = 16384;    // this round: SET behind PTTL
constexpr std::uint16_t slot_unmarked = 32768;    // this round: requests without the marks
// Kept from round to round; the rest describe the current round.
constexpr std::uint16_t slot_round_bits = slot_in_flight | slot_eval | slot_retried |
                                          slot_as_script | slot_found_taken | slot_said_busy |
                                          slot_wait_due | slot_told_set | slot_unmarked;

// Tags: round number in the high 29 bits, request kind in the low 3: a
// lock::req, tag_set_acquire for an acquire sent as SET NX PX GET (its
// reply reads differently from the script's, late ones included), or
// tag_wait for the WAIT that follows a request (lock_options::min_replicas)
// or, without min_replicas, the PTTL ahead of a told waiter's SET acquire.
constexpr std::uint32_t tag_kind_bits = 3;
constexpr std::uint32_t tag_wait = 6;
constexpr std::uint32_t tag_set_acquire = 7;
constexpr std::uint32_t round_mask = 0xffffffffU >> tag_kind_bits;
// In a slot's cleanup_round above the round: a cleanup for this connection
// only (lock::undo of a renew, which names the live hold's key): dropped, not
// sent again, when the connection breaks or the request is redirected.
constexpr std::uint32_t cleanup_here_only = 0x80000000U;

// Lua numbers are doubles: counters past 2^53 cannot be trusted to increase.
constexpr std::int64_t max_fence = (std::int64_t{1} << 53) - 1;

}  // namespace detail
}  // namespace edgelock
