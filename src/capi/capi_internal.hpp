// The C API's objects (include/edgelock/edgelock.h) and what its files share.
// The opaque structs of the header are defined here, in C++; a C program only
// ever holds pointers to them, into memory it gave.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client.hpp"
#include "edgelock/edgelock.h"

namespace edgelock {
namespace capi {

// A client with room for a count of connections known only at run time: the
// connections live in the caller's memory, after the client.
class sized_client final : public client_base {
public:
    sized_client(detail::connection* conns, std::uint8_t nodes, std::uint8_t extra) noexcept
        : client_base(conns, nodes, extra) {}
    ~sized_client() { shutdown(); }
};

// From a client_errc (lock_rejected: from the lock_errc) to the C API's code.
int status_of(client_errc e, lock_errc lock_error = lock_errc::ok) noexcept;
int status_of(lock_errc e) noexcept;
// What a blocking call (or an ended operation) returns.
int status_of(const op_result& r) noexcept;
edgelock_event event_of(const lock_event& e) noexcept;

// Milliseconds as a duration.
constexpr duration ms(std::uint32_t v) noexcept {
    return duration::millis(v);
}

// Where a pointer is aligned for T.
template <class T>
bool aligned_for(const void* p) noexcept {
    return reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0;
}

constexpr std::size_t align_up(std::size_t n, std::size_t a) noexcept {
    return (n + a - 1) / a * a;
}

}  // namespace capi
}  // namespace edgelock

struct edgelock_client {
    edgelock_client(edgelock::detail::connection* conns, std::uint8_t nodes,
                    std::uint8_t extra) noexcept
        : impl(conns, nodes, extra), connections(conns), connection_count(nodes + extra) {}

    edgelock::capi::sized_client impl;
    edgelock::detail::connection* connections;
    unsigned connection_count;
};

struct edgelock_lock {
    edgelock::client_lock impl;
    edgelock_lock_cb callback = nullptr;
    void* callback_ctx = nullptr;
    // The lock keeps views of these: its own copies, so the caller's strings
    // may go.
    char name[edgelock::lock_max_name];
    char owner[edgelock::lock_max_owner];
    char holder[edgelock::lock_max_holder];
};

// A TLS transport (src/tls/capi_tls.cpp): what a client needs of it.
struct edgelock_tls {
    edgelock::transport* via = nullptr;
    void* object = nullptr;  // what holds the transport, for its deinit
};
