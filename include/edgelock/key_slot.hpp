// Redis Cluster hash slots: which of the 16384 slots a key belongs to, as
// the server computes it (CRC16-CCITT/XMODEM of the key, or of its hash tag:
// the bytes between the first '{' and the first '}' after it, when there are
// any, modulo 16384). A lock's key and its fencing counter always share one
// (lock_key), so a script that touches both runs on one Cluster node.
//
//   edgelock::key_slot("{fleet}:upload") == edgelock::key_slot("fleet")
#pragma once

#include <cstdint>

#include "edgelock/str_view.hpp"

namespace edgelock {

constexpr std::uint16_t key_slot_count = 16384;

// The slot of `key`, in [0, key_slot_count).
std::uint16_t key_slot(str_view key) noexcept;

}  // namespace edgelock
