// A redis-sentinel:// node's watch: a connection to one sentinel, subscribed
// to +switch-master, so that a failover is followed the moment the sentinels
// announce it rather than at the next reconnect. After SENTINEL FAILOVER the
// old master keeps taking writes until the sentinels demote it (seconds:
// they look at it once per INFO period); a client still on it would lock
// there while others lock on the new master. On "+switch-master NAME old-ip
// old-port new-ip new-port" for its master, the node's lock connection goes
// to the new master at once (its requests in flight count as "no", as for
// any disconnect).
//
// The watch is made while the node is wanted, to the sentinel that answered
// last, the next one after each failure (with the node's backoff), over the
// socket itself (no transport: sentinels are spoken to in plain TCP), with
// the sentinel's own password when client_options has one. A sentinel given
// by name is looked up as the lock connection's hosts are (host_lookup),
// within the same sentinel_timeout as the connect. Its buffer holds one
// message at a time; anything else that comes is read and ignored.
#include <string.h>

#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/resp_encoder.hpp"
#include "node_url_internal.hpp"

namespace edgelock {

using namespace detail;

namespace {

constexpr std::size_t watch_setup_capacity = 2 * node_url_max_secret + 96;

std::size_t watch_setup(char* buf, std::size_t capacity, const client_options& o) {
    std::size_t size = encode_sentinel_auth(buf, capacity, o);
    const str_view subscribe[] = {"SUBSCRIBE", "+switch-master"};
    size += resp_encode_command(buf + size, capacity - size, subscribe, 2).size;
    return size;
}

// The next whitespace-separated word of `s` from `pos`.
str_view next_word(str_view s, std::size_t& pos) {
    while (pos < s.size && s[pos] == ' ') {
        ++pos;
    }
    const std::size_t from = pos;
    while (pos < s.size && s[pos] != ' ') {
        ++pos;
    }
    return url_detail::sub(s, from, pos);
}

}  // namespace

bool client_base::watch_wanted(std::uint8_t n) const noexcept {
    return n < node_count_ && conns_[n].address.sentinel_count > 0 && node_wanted(n);
}

int client_base::watch_fd(std::uint8_t n) const noexcept {
    const sentinel_watch& w = conns_[n].watch;
    return w.phase == watch_phase::resolving ? w.lookup.fd() : w.fd;
}

void client_base::watch_service(std::uint8_t n, instant now) noexcept {
    sentinel_watch& w = conns_[n].watch;
    w.lookup.tidy(now, lookup_max_age());
    if ((w.phase == watch_phase::resolving || w.phase == watch_phase::connecting) && w.due <= now) {
        watch_close(n, now);  // the sentinel did not take the connection in time
    }
    if ((w.phase == watch_phase::off || (w.phase == watch_phase::backoff && w.due <= now)) &&
        watch_wanted(n)) {
        watch_connect(n, now);
    }
}

// The sentinel the watch goes to now.
bool client_base::watch_sentinel(std::uint8_t n, port::endpoint& where) const noexcept {
    const detail::connection& c = conns_[n];
    const std::uint8_t i =
        static_cast<std::uint8_t>((c.sentinel.front + c.watch.tried) % c.address.sentinel_count);
    return node_url_sentinel(c.address, i, where.host, where.port);
}

void client_base::watch_connect(std::uint8_t n, instant now) noexcept {
    sentinel_watch& w = conns_[n].watch;
    port::endpoint where;
    if (!watch_sentinel(n, where)) {
        watch_close(n, now);
        return;
    }
    w.rx_size = 0;
    w.sent = 0;
    w.due = now + options_.sentinel_timeout;
    const port::net_result r = w.lookup.begin(where.host, now, lookup_max_age());
    if (r.status == port::net_status::ok) {
        watch_dial(n, now);
    } else if (r.status == port::net_status::in_progress) {
        w.phase = watch_phase::resolving;
    } else {
        watch_close(n, now);
    }
}

// The sentinel's host is looked up: connects to its first address.
void client_base::watch_dial(std::uint8_t n, instant now) noexcept {
    sentinel_watch& w = conns_[n].watch;
    port::endpoint where;
    char address[port::address_text_capacity];
    const std::size_t size = w.lookup.address(0, address, sizeof address);
    w.lookup.end();
    if (size == 0 || !watch_sentinel(n, where)) {
        watch_close(n, now);
        return;
    }
    where.host = str_view(address, size);
    int fd = -1;
    const port::net_result r = port::connect(where, fd);
    if (r.status == port::net_status::ok || r.status == port::net_status::in_progress) {
        w.fd = fd;
        w.phase =
            r.status == port::net_status::ok ? watch_phase::listening : watch_phase::connecting;
        if (w.phase == watch_phase::listening) {
            watch_send(n, now);
        }
        return;
    }
    watch_close(n, now);
}

// Sends what is left of the set-up, written afresh each time (it may hold
// the sentinel's password).
void client_base::watch_send(std::uint8_t n, instant now) noexcept {
    sentinel_watch& w = conns_[n].watch;
    char buf[watch_setup_capacity];
    const std::size_t size = watch_setup(buf, sizeof buf, options_);
    port::net_result r{port::net_status::ok};
    if (size > w.sent) {
        r = port::send(w.fd, buf + w.sent, size - w.sent);
    }
    volatile char* wipe = buf;
    for (std::size_t i = 0; i < size; ++i) {
        wipe[i] = 0;
    }
    if (r.status == port::net_status::would_block) {
        return;
    }
    if (r.status != port::net_status::ok) {
        watch_close(n, now);
        return;
    }
    w.sent = static_cast<std::uint16_t>(w.sent + r.size);
    w.setup_size = static_cast<std::uint16_t>(size);
}

void client_base::watch_ready(std::uint8_t n, std::uint8_t events, instant now) noexcept {
    sentinel_watch& w = conns_[n].watch;
    if (w.phase == watch_phase::resolving) {
        const port::net_result r = w.lookup.result();
        if (r.status == port::net_status::ok) {
            watch_dial(n, now);
        } else if (r.status != port::net_status::in_progress) {
            watch_close(n, now);
        }
        return;
    }
    if (w.phase == watch_phase::connecting) {
        if ((events & (port::want_write | port::ready_error)) == 0) {
            return;
        }
        const port::net_result r = port::connect_finish(w.fd);
        if (r.status == port::net_status::in_progress) {
            return;
        }
        if (r.status != port::net_status::ok) {
            watch_close(n, now);
            return;
        }
        w.phase = watch_phase::listening;
        w.sent = 0;
    }
    if (w.sent < w.setup_size || w.setup_size == 0) {
        watch_send(n, now);
    }
    if (w.fd >= 0 && (events & (port::want_read | port::ready_error)) != 0) {
        watch_read(n, now);
    }
}

void client_base::watch_read(std::uint8_t n, instant now) noexcept {
    sentinel_watch& w = conns_[n].watch;
    for (unsigned guard = 0; guard < 64 && w.fd >= 0; ++guard) {
        const std::size_t space = sizeof w.rx - w.rx_size;
        const port::net_result r = port::recv(w.fd, w.rx + w.rx_size, space);
        if (r.status == port::net_status::would_block) {
            return;
        }
        if (r.status != port::net_status::ok) {
            watch_close(n, now);
            return;
        }
        w.rx_size += r.size;
        std::size_t pos = 0;
        while (w.fd >= 0 && pos < w.rx_size) {
            const resp_result m = resp_decode_whole(w.rx + pos, w.rx_size - pos, nodes_,
                                                    EDGELOCK_CLIENT_REPLY_NODES, reply_limits());
            const bool truncated =
                m.status == resp_status::error && m.error == resp_errc::truncated;
            if (truncated && w.rx_size - pos < sizeof w.rx) {
                break;  // the rest is still to come
            }
            if (m.status != resp_status::complete) {
                // Malformed or too long: a switch may have been missed, so
                // the lock connection asks the sentinels again.
                watch_close(n, now);
                if (conns_[n].fd >= 0) {
                    drop(n, now);  // made again by asking the sentinels
                    conns_[n].state = node_state::down;
                }
                return;
            }
            pos += m.size;
            watch_message(n, nodes_, m.nodes, now);
        }
        if (w.fd < 0) {
            return;
        }
        memmove(w.rx, w.rx + pos, w.rx_size - pos);
        w.rx_size -= pos;
        if (r.size < space) {
            return;
        }
    }
}

// ["subscribe", "+switch-master", 1] confirms; ["message", "+switch-master",
// "NAME old-ip old-port new-ip new-port"] announces; an error refuses.
void client_base::watch_message(std::uint8_t n, const resp_node* nodes, std::size_t count,
                                instant now) noexcept {
    detail::connection& c = conns_[n];
    sentinel_watch& w = c.watch;
    const std::size_t top = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    if (top < count && nodes[top].is_error()) {
        watch_close(n, now);  // a sentinel that will not tell us: the next one
        return;
    }
    const bool message = top + 3 < count && nodes[top].type == resp_type::array &&
                         nodes[top].count == 3 && nodes[top + 1].has_text() &&
                         nodes[top + 1].text == str_view("message") && nodes[top + 3].has_text();
    if (!message) {
        if (top + 1 < count && nodes[top + 1].has_text() &&
            nodes[top + 1].text == str_view("subscribe")) {
            w.failures = 0;  // listening: a good sentinel
        }
        return;
    }
    const str_view payload = nodes[top + 3].text;
    std::size_t pos = 0;
    const str_view name = next_word(payload, pos);
    next_word(payload, pos);  // the old master's address
    next_word(payload, pos);
    const str_view host = next_word(payload, pos);
    const str_view port_text = next_word(payload, pos);
    std::uint32_t port = 0;
    if (name != c.address.master_name || host.empty() || host.size > node_url_max_host ||
        !url_detail::parse_decimal(port_text, 65535, port) || port == 0) {
        return;  // another master's, or not one we can read
    }
    if (c.target.port == port && c.target.host_view() == host && c.state == node_state::ready) {
        return;  // already there
    }
    memcpy(c.target.host, host.data, host.size);
    c.target.host_size = static_cast<std::uint8_t>(host.size);
    c.target.port = static_cast<std::uint16_t>(port);
    if ((c.fd >= 0 || c.state == node_state::resolving) && !c.sentinel.asking) {
        // Straight to the new master, with a connect's whole time.
        sentinel_reconnect(n, now, now + options_.connect_timeout);
    }
}

void client_base::watch_close(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    sentinel_watch& w = c.watch;
    if (w.fd >= 0) {
        port::close(w.fd);
        w.fd = -1;
    }
    w.lookup.end();
    w.rx_size = 0;
    w.sent = 0;
    w.setup_size = 0;
    w.phase = watch_phase::backoff;
    if (c.address.sentinel_count > 0) {
        w.tried = static_cast<std::uint8_t>((w.tried + 1) % c.address.sentinel_count);
    }
    w.due = backoff_until(w.failures, now);
}

void client_base::watch_shut(std::uint8_t n) noexcept {
    sentinel_watch& w = conns_[n].watch;
    if (w.fd >= 0) {
        port::close(w.fd);
        w.fd = -1;
    }
    w.lookup.end();
    w.phase = watch_phase::off;
    w.failures = 0;
    w.rx_size = 0;
}

}  // namespace edgelock
