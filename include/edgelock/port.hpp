// The port: everything edgelock needs from the platform, in one header.
//
// The core (codec, lock state machine) never includes this file; it is given
// time and random bytes as arguments. The driver calls these functions, and a
// port implementation defines them. Link exactly one: edgelock::port_posix
// (port/posix) on Linux and other POSIX systems, or your own on an RTOS, the
// way lwIP links a sys_arch.
//
// The stream-socket part of the port comes with the driver.
#pragma once

#include <cstddef>

#include "edgelock/time.hpp"

namespace edgelock {
namespace port {

// The monotonic clock (CLOCK_MONOTONIC on POSIX). Never goes back; its origin
// is arbitrary, so only differences mean anything.
instant now() noexcept;

// Fills buf with size bytes from the platform's CSPRNG. Returns false, with
// buf in an unspecified state, when no secure randomness could be had; callers
// must then fail rather than fall back to a weak source.
bool random_bytes(void* buf, std::size_t size) noexcept;

}  // namespace port
}  // namespace edgelock
