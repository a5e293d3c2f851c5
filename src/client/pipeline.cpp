// Requests out and replies in, per connection: the in-flight FIFO, moving
// the machines' requests into the send buffer and the buffer into the socket,
// reading, decoding and handing each reply to whoever asked.
#include "edgelock/client.hpp"

#include <string.h>

#include "client_internal.hpp"

namespace edgelock {

using namespace detail;

namespace {

// A reply to a lock request: an error is the node's latest reason (the
// connection stays), anything else clears it.
void note_lock_reply(detail::connection& c, const resp_node* nodes, std::size_t count) {
    const std::size_t i = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    if (i < count && nodes[i].is_error()) {
        c.error = node_error::server_error;
        c.code = 0;
        c.message_size = copy_text(c.message, sizeof c.message, nodes[i].text);
    } else if (c.error == node_error::server_error) {
        c.error = node_error::none;
        c.message_size = 0;
    }
}

}  // namespace

bool client_base::push_pending(std::uint8_t n, client_lock* l, std::uint32_t tag,
                               instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.fifo.empty()) {
        c.progress_at = now;
    }
    return c.fifo.push(detail::pending_reply{l, tag});
}

// Moves requests from the machines into the buffer, then the buffer into the
// socket, until one of them is full or nothing is left.
void client_base::transmit(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    for (unsigned guard = 0; guard < 1024 && c.fd >= 0; ++guard) {
        if (c.state == node_state::handshake) {
            fill_setup(n, now);
        } else if (c.state == node_state::ready) {
            fill(n, now);
        }
        if (c.tx_size == 0) {
            c.want_write = false;
            return;
        }
        const port::net_result r = port::send(c.fd, c.tx, c.tx_size);
        if (r.status == port::net_status::would_block) {
            c.want_write = true;
            return;
        }
        if (r.status != port::net_status::ok) {
            fail(n, from_net(r.status), r.code, now);
            return;
        }
        if (r.size < c.tx_size) {
            memmove(c.tx, c.tx + r.size, c.tx_size - r.size);
        }
        c.tx_size -= r.size;
    }
}

void client_base::fill(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    for (client_lock* l = locks_; l != nullptr; l = l->next_) {
        while (!c.fifo.full()) {
            // Fill the buffer to the brim: a request that does not fit is
            // left with its machine (nothing written) until the buffer has
            // gone out. An empty buffer always holds one (lock_max_request).
            const lock_transmit t =
                l->machine_.poll_transmit(n, c.tx + c.tx_size, sizeof c.tx - c.tx_size);
            if (t.error == lock_errc::buffer_too_small) {
                return;
            }
            if (t.error != lock_errc::ok || t.size == 0) {
                break;
            }
            c.tx_size += t.size;
            push_pending(n, l, t.tag, now);
        }
    }
}

void client_base::read(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    for (unsigned guard = 0; guard < 1024 && c.fd >= 0; ++guard) {
        if (c.rx_size == sizeof c.rx) {
            fail(n, node_error::reply_too_large, 0, now);
            return;
        }
        const std::size_t space = sizeof c.rx - c.rx_size;
        const port::net_result r = port::recv(c.fd, c.rx + c.rx_size, space);
        if (r.status == port::net_status::would_block) {
            return;
        }
        if (r.status != port::net_status::ok) {
            fail(n, from_net(r.status), r.code, now);
            return;
        }
        c.rx_size += r.size;
        process_replies(n, now);
        // A short read took everything the socket had: stop rather than pay
        // a system call for the would-block. Data arriving later makes the fd
        // readable again (level- and edge-triggered waits both report it).
        if (r.size < space) {
            return;
        }
    }
}

void client_base::process_replies(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    std::size_t pos = 0;
    while (c.fd >= 0 && pos < c.rx_size) {
        if (c.skip > 0) {
            const std::size_t k = c.skip < c.rx_size - pos ? c.skip : c.rx_size - pos;
            pos += k;
            c.skip -= k;
            c.progress_at = now;
            continue;
        }
        resp_decoder decoder(reply_limits());
        resp_result r =
            decoder.decode(c.rx + pos, c.rx_size - pos, nodes_, EDGELOCK_CLIENT_REPLY_NODES);
        const bool too_long =
            (r.status == resp_status::incomplete && r.needed > sizeof c.rx) ||
            (r.status == resp_status::error && r.error == resp_errc::bulk_too_long);
        if (too_long && skip_info(n, pos, now)) {
            continue;  // its bytes are skipped as they come
        }
        if (r.status == resp_status::incomplete) {
            if (r.needed > sizeof c.rx) {
                fail(n, node_error::reply_too_large, 0, now);
                return;
            }
            break;
        }
        bool kept = true;
        if (r.status == resp_status::error) {
            if (r.error != resp_errc::node_capacity) {
                fail(n,
                     r.error == resp_errc::bulk_too_long || r.error == resp_errc::line_too_long ||
                             r.error == resp_errc::too_many_elements
                         ? node_error::reply_too_large
                         : node_error::protocol_error,
                     0, now);
                return;
            }
            // Too many nodes to keep (a large HELLO map): measure it instead.
            resp_decoder measure(reply_limits());
            r = measure.decode(c.rx + pos, c.rx_size - pos, nullptr, 0);
            if (r.status == resp_status::incomplete) {
                break;
            }
            if (r.status == resp_status::error) {
                fail(n, node_error::protocol_error, 0, now);
                return;
            }
            kept = false;
        }
        const char first = c.rx[pos];
        pos += r.size;
        c.progress_at = now;
        const bool push = kept ? nodes_[skip_attributes(nodes_, r.nodes, 0)].type == resp_type::push
                               : first == '>';
        if (push) {
            continue;  // a RESP3 push (tracking, pub/sub): nothing we asked for
        }
        if (c.fifo.empty()) {
            fail(n, node_error::unexpected_reply, 0, now);
            return;
        }
        const detail::pending_reply p = c.fifo.front();
        c.fifo.pop();
        if (p.lock == nullptr) {
            if (p.tag == step_discard) {
                continue;
            }
            if (p.tag == step_command) {
                if (command_fn_ != nullptr) {
                    const reply_callback fn = command_fn_;
                    command_fn_ = nullptr;
                    fn(command_ctx_, kept ? nodes_ : nullptr, kept ? r.nodes : 0);
                }
                continue;
            }
            if (!kept) {
                // Only an error needs reading, and an error is one node.
                resp_node err;
                err.type = first == '-' ? resp_type::simple_error : resp_type::map;
                setup_reply(n, p.tag, &err, first == '-' || first == '!' ? 1 : 0, now);
            } else {
                setup_reply(n, p.tag, nodes_, r.nodes, now);
            }
            continue;
        }
        if (!kept) {
            fail(n, node_error::unexpected_reply, 0, now);
            return;
        }
        // Before the machine: a callback it triggers may ask node(n) why.
        note_lock_reply(c, nodes_, r.nodes);
        p.lock->machine_.on_reply(n, p.tag, nodes_, r.nodes, now);
        pump_events(*p.lock, now);
    }
    if (c.fd < 0) {
        return;  // dropped meanwhile; the buffer is already empty
    }
    if (pos > 0) {
        memmove(c.rx, c.rx + pos, c.rx_size - pos);
        c.rx_size -= pos;
    }
}

}  // namespace edgelock
