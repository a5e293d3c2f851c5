// What the driver's files share: the small helpers more than one of them
// needs. Internal: not installed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client.hpp"

namespace edgelock {
namespace detail {

constexpr std::size_t max_connections = 64;  // of a client, extra ones included

inline node_error from_net(port::net_status s) {
    switch (s) {
    case port::net_status::refused:
        return node_error::refused;
    case port::net_status::unreachable:
        return node_error::unreachable;
    case port::net_status::timed_out:
        return node_error::connect_timeout;
    case port::net_status::resolve_failed:
    case port::net_status::no_address:
    case port::net_status::bad_argument:
        return node_error::resolve_failed;
    case port::net_status::closed:
        return node_error::closed;
    case port::net_status::reset:
        return node_error::reset;
    default:
        return node_error::io_error;
    }
}

// The counters (stats.cpp): an error met, by its kind; a round trip timed.
void count_error(node_stats& s, node_error why) noexcept;
void count_rtt(node_stats& s, duration rtt) noexcept;
// A connect's round trip: the smoothed one until a reply's is timed.
void connect_rtt(node_stats& s, duration rtt) noexcept;
// A lock's event; `contended`: the acquisition it ends found the key taken.
void count_event(lock_stats& s, const lock_event& ev, bool contended) noexcept;

// AUTH with a sentinel's own user and password (client_options) into buf;
// 0 when the sentinels have none, or when it does not fit (sentinel.cpp).
std::size_t encode_sentinel_auth(char* buf, std::size_t capacity, const client_options& o);

// What a transport session is opened to: the host as the connection named it.
inline session_peer session_peer_of(const node_address& a, str_view host) {
    session_peer p;
    p.host = host;
    p.tls = a.tls;
    p.unix_socket = !a.unix_path.empty();
    return p;
}

// Overwrites a buffer that held a secret (a compiler may not drop it).
inline void wipe(char* buf, std::size_t size) {
    volatile char* w = buf;
    for (std::size_t i = 0; i < size; ++i) {
        w[i] = 0;
    }
}

// How long a queued operation waits for nodes still connecting before its
// round starts without them: node_timeout, or a quarter of the round's
// allowance (an eighth of the ttl), so that a Redlock's slower nodes (a
// Sentinel node asks its sentinels first) take part in the round, and one
// that cannot connect does not hold it up long.
inline duration begin_wait(const lock& machine) {
    const duration fixed = machine.options().node_timeout;
    return fixed.us != 0 ? fixed : duration::micros(machine.round_allowance().us / 4);
}

// The decoder limits for replies: the compile-time ones, within the buffer.
inline resp_limits reply_limits() {
    resp_limits l;
    l.max_bulk = EDGELOCK_CLIENT_RX_BUFFER;
    l.max_line = EDGELOCK_CLIENT_RX_BUFFER;
    l.max_elements = EDGELOCK_CLIENT_REPLY_NODES;
    return l;
}

}  // namespace detail
}  // namespace edgelock
