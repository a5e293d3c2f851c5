// What the driver's files share: the tags of set-up replies, and the small
// helpers more than one of them needs. Internal: not installed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"

namespace edgelock {
namespace detail {

// Set-up steps, in the order they go out; each may be skipped. A pending
// reply with no lock carries one of these as its tag.
enum : std::uint32_t {
    step_auth = 0,  // HELLO 3 [AUTH] [SETNAME], or AUTH
    step_select,
    step_setname,
    step_info_replication,  // a replica fails the node
    step_info_memory,       // an evicting policy is a warning
    step_script,            // + i for lock_scripts_all[i]
    step_end = step_script + lock_scripts_count,
    step_command = 0xfffffffeu,  // the reply to command()
    step_discard = 0xffffffffu,  // a reply whose lock was detached, or a command given up
};

inline node_error from_net(port::net_status s) {
    switch (s) {
    case port::net_status::refused:
        return node_error::refused;
    case port::net_status::unreachable:
    case port::net_status::no_address:
        return node_error::unreachable;
    case port::net_status::timed_out:
        return node_error::connect_timeout;
    case port::net_status::resolve_failed:
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

// The decoder limits for replies: the compile-time ones, within the buffer.
inline resp_limits reply_limits() {
    resp_limits l;
    l.max_bulk = EDGELOCK_CLIENT_RX_BUFFER;
    l.max_line = EDGELOCK_CLIENT_RX_BUFFER;
    l.max_elements = EDGELOCK_CLIENT_REPLY_NODES;
    return l;
}

// Copies a server's text into a fixed buffer, control bytes made visible.
inline std::size_t copy_text(char* out, std::size_t capacity, str_view text) {
    const std::size_t k = text.size < capacity ? text.size : capacity;
    for (std::size_t i = 0; i < k; ++i) {
        const char ch = text.data[i];
        out[i] = (ch < 0x20 || ch == 0x7f) ? '?' : ch;
    }
    return k;
}

}  // namespace detail
}  // namespace edgelock
