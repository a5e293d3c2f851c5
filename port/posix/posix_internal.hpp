// What the POSIX port's files share. Internal: not installed.
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstring>

#include "edgelock/port.hpp"

namespace edgelock {
namespace port {

// The longest DNS name (RFC 1035, without the trailing dot). Numeric
// addresses, even scoped IPv6 ones, are shorter.
constexpr std::size_t max_host_size = 253;

inline net_result make_result(net_status status, int code = 0) noexcept {
    net_result r;
    r.status = status;
    r.code = code;
    return r;
}

// getaddrinfo() hints for stream sockets of either family, with `flags`.
inline addrinfo stream_hints(int flags) noexcept {
    addrinfo hints;
    std::memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = flags;
    return hints;
}

inline bool contains_nul(str_view s) noexcept {
    return s.size != 0 && std::memchr(s.data, '\0', s.size) != nullptr;
}

}  // namespace port
}  // namespace edgelock
