// Where a connection goes when it is not where its URL says: the master a
// sentinel named, or the Cluster master an extra connection serves.
#pragma once

#include <cstdint>
#include <cstring>

#include "edgelock/node_url.hpp"
#include "edgelock/str_view.hpp"

namespace edgelock {
namespace detail {

struct peer {
    std::uint8_t host_size = 0;
    std::uint16_t port = 0;  // 0: not known
    char host[node_url_max_host + 1] = {};

    str_view host_view() const noexcept { return str_view(host, host_size); }
    bool is(str_view h, std::uint16_t p) const noexcept { return port == p && host_view() == h; }
    // host must be at most node_url_max_host long.
    void set(str_view h, std::uint16_t p) noexcept {
        std::memcpy(host, h.data, h.size);
        host_size = static_cast<std::uint8_t>(h.size);
        port = p;
    }
};

}  // namespace detail
}  // namespace edgelock
