// Requests out and replies in, per connection: the in-flight FIFO, moving
// the set-up's and the machines' requests into the send buffer and the buffer
// into the transport, reading, decoding (one decoder per connection, resumed
// across reads) and handing each reply to whoever asked.
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
        c.report.error = node_error::server_error;
        c.report.code = 0;
        c.report.set_message(nodes[i].text);
    } else if (c.report.error == node_error::server_error) {
        c.report.error = node_error::none;
        c.report.message_size = 0;
    }
}

// The whole size of the bulk or verbatim string starting at `data` once its
// header is in, for a reply too long to buffer; 0 when it is not one, its
// header is not all there, or it is longer than any bulk string accepted
// (EDGELOCK_RESP_MAX_BULK: no INFO is that long).
std::size_t bulk_reply_size(const char* data, std::size_t size) {
    if (size == 0 || (data[0] != '$' && data[0] != '=')) {
        return 0;
    }
    bool header = false;
    for (std::size_t i = 1; i + 1 < size && !header; ++i) {
        header = data[i] == '\r' && data[i + 1] == '\n';
    }
    if (!header) {
        return 0;
    }
    resp_limits l = reply_limits();
    l.max_bulk = EDGELOCK_RESP_MAX_BULK;
    resp_decoder measure(l);
    const resp_result r = measure.decode(data, size, nullptr, 0);
    // With the header in, "incomplete" waits for the payload: needed is exact.
    return r.status == resp_status::incomplete ? r.needed : 0;
}

// The reply in front made progress: the stall timer starts again, or stops
// when nothing is left in flight.
void progress(detail::connection& c, instant now, duration stall_timeout) {
    if (c.fifo.empty()) {
        c.timers.stop(connection_timer::stall);
    } else {
        c.timers.set(connection_timer::stall, now + stall_timeout);
    }
}

}  // namespace

bool client_base::push_in_flight(std::uint8_t n, const detail::in_flight& f, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.fifo.empty()) {
        c.timers.set(connection_timer::stall, now + options_.stall_timeout);
    }
    return c.fifo.push(f);
}

// Writes the set-up requests that fit; the rest follow as the buffer drains.
void client_base::queue_setup(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    while (!c.fifo.full()) {
        std::uint8_t request = 0;
        const std::size_t size =
            c.setup.poll_request(c.tx + c.tx_size, sizeof c.tx - c.tx_size, request);
        if (size == 0) {
            break;
        }
        c.tx_size += size;
        detail::in_flight f;
        f.tag = request;
        f.to = reply_to::setup;
        push_in_flight(n, f, now);
    }
    if (c.setup.status() == handshake_status::ready) {
        setup_reply(n, 0, nullptr, 0, now);  // nothing was due: ready at once
    }
}

// A set-up reply (nodes nullptr: one not kept), or the handshake's end.
void client_base::setup_reply(std::uint8_t n, std::uint32_t request, const resp_node* nodes,
                              std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    handshake_status s = c.setup.status();
    if (s == handshake_status::pending) {
        s = c.setup.on_reply(static_cast<std::uint8_t>(request), nodes, count, c.report);
    }
    if (s == handshake_status::failed) {
        fail(n, c.report.error, 0, now);
    } else if (s == handshake_status::ready && c.state == node_state::handshake) {
        c.state = node_state::ready;
        c.cluster.map_due = c.address.seed_count > 0 && n < node_count_;  // where the slots are
        c.report.error = node_error::none;
        c.report.code = 0;
        c.failures = 0;
        c.timers.stop(connection_timer::connect);
    }
}

// Moves requests from the machines into the buffer, then the buffer into the
// socket, until one of them is full or nothing is left.
void client_base::transmit(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    for (unsigned guard = 0; guard < 1024 && c.fd >= 0; ++guard) {
        if (c.state == node_state::handshake && !c.sentinel.asking) {
            queue_setup(n, now);
        } else if (c.state == node_state::ready) {
            queue_requests(n, now);
        }
        if (c.tx_size == 0) {
            c.want_write = false;
            return;
        }
        const port::net_result r = transport_->send(n, c.fd, c.tx, c.tx_size);
        if (r.status == port::net_status::would_block) {
            c.want_write = true;
            return;
        }
        if (r.status != port::net_status::ok) {
            fail_io(n, r, now);
            return;
        }
        if (r.size < c.tx_size) {
            memmove(c.tx, c.tx + r.size, c.tx_size - r.size);
        }
        c.tx_size -= r.size;
    }
}

void client_base::queue_requests(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (!queue_redirect(n, now) || !queue_cluster_map(n, now)) {
        return;  // they go first, once there is room
    }
    const std::uint8_t node = c.node;
    for (client_lock* l = locks_; l != nullptr; l = l->next_) {
        if (!serves(n, *l)) {
            continue;  // a Cluster node's lock whose slot is on another master
        }
        lock_node_caps caps;
        caps.set_nx_get = c.report.set_nx_get;  // INFO server
        caps.told = c.report.tracking;          // CLIENT TRACKING
        l->machine_.set_node_caps(node, caps);
        // A request may take four entries: ASKING ahead of one a Cluster
        // node sent here, CLIENT CACHING ahead of an acquire on a told node,
        // and WAIT after it with min_replicas.
        const bool asking = l->ask_[node] == n;
        const std::size_t entries = 1u + (caps.told ? 1u : 0u) + (asking ? 1u : 0u) +
                                    (l->machine_.options().min_replicas > 0 ? 1u : 0u);
        while (c.fifo.size() + entries <= c.fifo.capacity) {
            // Fill the buffer to the brim: a request that does not fit is
            // left with its machine (nothing written) until the buffer has
            // gone out. An empty buffer always holds one (lock_max_request).
            static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
            const std::size_t ahead = l->ask_[node] == n ? sizeof asking_cmd - 1 : 0;
            if (sizeof c.tx - c.tx_size < ahead) {
                return;
            }
            const lock_transmit t = l->machine_.poll_transmit(node, c.tx + c.tx_size + ahead,
                                                              sizeof c.tx - c.tx_size - ahead);
            if (t.error == lock_errc::buffer_too_small) {
                return;
            }
            if (t.error != lock_errc::ok || t.size == 0) {
                break;
            }
            if (ahead > 0) {
                // ASK: this one request, once, where the slot is moving to.
                memcpy(c.tx + c.tx_size, asking_cmd, ahead);
                c.tx_size += ahead;
                detail::in_flight skip;
                skip.to = reply_to::discard;
                push_in_flight(n, skip, now);
                l->ask_[node] = no_connection;
            }
            c.tx_size += t.size;
            for (std::uint8_t i = 0; i < t.preceding; ++i) {
                detail::in_flight skip;  // CLIENT CACHING yes: its +OK is not read
                skip.to = reply_to::discard;
                push_in_flight(n, skip, now);
            }
            detail::in_flight f;
            f.lock = l;
            f.tag = t.tag;
            f.to = reply_to::lock;
            push_in_flight(n, f, now);
            if (t.following > 0) {
                f.tag = t.following_tag;  // WAIT: the machine reads its count
                f.follows = true;
                push_in_flight(n, f, now);
            }
        }
    }
}

void client_base::read(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    const std::uint32_t generation = c.generation;
    for (unsigned guard = 0; guard < 1024 && c.fd >= 0 && c.generation == generation; ++guard) {
        if (c.rx_size == sizeof c.rx) {
            fail(n, node_error::reply_too_large, 0, now);
            return;
        }
        const std::size_t space = sizeof c.rx - c.rx_size;
        const port::net_result r = transport_->recv(n, c.fd, c.rx + c.rx_size, space);
        if (r.status == port::net_status::would_block) {
            return;
        }
        if (r.status != port::net_status::ok) {
            fail_io(n, r, now);
            return;
        }
        c.rx_size += r.size;
        c.heard = c.heard || r.size > 0;
        process_replies(n, now);
        if (c.generation != generation) {
            return;  // another connection now (a sentinel named the master)
        }
        // A short read took everything the socket had: stop rather than pay
        // a system call for the would-block. Data arriving later makes the fd
        // readable again (level- and edge-triggered waits both report it);
        // bytes the transport holds do not, so those are read now.
        if (r.size < space && c.fd >= 0 && transport_->buffered(n) == 0) {
            return;
        }
    }
}

void client_base::process_replies(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    // A reply may end this connection and, for a sentinel's answer, make the
    // next one at once: the buffer is then the new connection's.
    const std::uint32_t generation = c.generation;
    std::size_t pos = 0;
    while (c.fd >= 0 && c.generation == generation && pos < c.rx_size) {
        if (c.skip > 0) {
            const std::size_t k = c.skip < c.rx_size - pos ? c.skip : c.rx_size - pos;
            pos += k;
            c.skip -= k;
            progress(c, now, options_.stall_timeout);
            continue;
        }
        const char* const data = c.rx + pos;
        const std::size_t size = c.rx_size - pos;
        // A new reply is decoded straight into the node array. One that came
        // in part before resumes where it stopped, measured only: the array
        // serves every connection, so its nodes are collected once it is whole.
        bool kept = !c.decoder.in_progress();
        resp_result r = c.decoder.decode(data, size, kept ? nodes_ : nullptr,
                                         kept ? EDGELOCK_CLIENT_REPLY_NODES : 0);
        if (r.status == resp_status::error && r.error == resp_errc::node_capacity) {
            // Too many nodes to keep (a large HELLO map): measure it instead.
            c.decoder.reset();
            r = c.decoder.decode(data, size, nullptr, 0);
            kept = false;
        }
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
        if (r.status == resp_status::error) {
            fail(n,
                 r.error == resp_errc::bulk_too_long || r.error == resp_errc::line_too_long ||
                         r.error == resp_errc::too_many_elements
                     ? node_error::reply_too_large
                     : node_error::protocol_error,
                 0, now);
            return;
        }
        if (!kept) {
            // Whole now: its nodes in one pass over it, when they fit.
            const resp_result whole = resp_decode_whole(
                data, r.size, nodes_, EDGELOCK_CLIENT_REPLY_NODES, reply_limits());
            kept = whole.status == resp_status::complete;
            r.nodes = kept ? whole.nodes : 0;
        }
        const char first = data[0];
        pos += r.size;
        const bool push = kept ? nodes_[skip_attributes(nodes_, r.nodes, 0)].type == resp_type::push
                               : first == '>';
        if (push) {
            progress(c, now, options_.stall_timeout);
            on_push(n, kept ? nodes_ : nullptr, kept ? r.nodes : 0, now);
            if (c.fd < 0) {
                return;  // a callback dropped the connection
            }
            continue;  // not a reply: nothing in the FIFO answers it
        }
        if (c.fifo.empty()) {
            fail(n, node_error::unexpected_reply, 0, now);
            return;
        }
        const detail::in_flight f = c.fifo.front();
        c.fifo.pop();
        progress(c, now, options_.stall_timeout);
        switch (f.to) {
        case reply_to::discard:
            break;
        case reply_to::tracking:
            tracking_reply(n, f.tag, kept ? nodes_ : nullptr, kept ? r.nodes : 0, now);
            break;
        case reply_to::sentinel:
            sentinel_reply(n, f.tag, kept ? nodes_ : nullptr, kept ? r.nodes : 0, now);
            break;
        case reply_to::cluster:
            cluster_map_reply(n, data, r.size, now);
            break;
        case reply_to::command:
            if (command_fn_ != nullptr) {
                const reply_callback fn = command_fn_;
                command_fn_ = nullptr;
                fn(command_ctx_, kept ? nodes_ : nullptr, kept ? r.nodes : 0);
            }
            break;
        case reply_to::setup:
            if (!kept) {
                // Only an error needs reading, and an error is one node.
                resp_node err;
                err.type = first == '-' ? resp_type::simple_error : resp_type::map;
                setup_reply(n, f.tag, &err, first == '-' || first == '!' ? 1 : 0, now);
            } else {
                setup_reply(n, f.tag, nodes_, r.nodes, now);
            }
            break;
        case reply_to::lock:
            if (!kept) {
                fail(n, node_error::unexpected_reply, 0, now);
                return;
            }
            // Before the machine: a callback it triggers may ask node(n) why.
            note_lock_reply(c, nodes_, r.nodes);
            if (c.address.seed_count > 0 && !f.follows &&
                cluster_redirect(n, *f.lock, f.tag, nodes_, r.nodes, now)) {
                // MOVED or ASK: nothing ran; the request goes out again where
                // the node said, and the WAIT behind it here means nothing.
                if (!c.fifo.empty() && c.fifo.front().lock == f.lock && c.fifo.front().follows) {
                    c.fifo.front().to = reply_to::discard;
                }
                break;
            }
            f.lock->machine_.on_reply(c.node, f.tag, nodes_, r.nodes, now);
            pump_events(*f.lock, now);
            if (c.address.sentinel_count > 0 && c.generation == generation &&
                c.report.error == node_error::server_error && c.report.message_size >= 8 &&
                str_view(c.report.message, 8) == str_view("READONLY")) {
                // The master was demoted under us: ask the sentinels again.
                fail(n, node_error::replica, 0, now,
                     str_view(c.report.message, c.report.message_size));
            }
            break;
        }
    }
    if (c.fd < 0 || c.generation != generation) {
        return;  // dropped meanwhile; the buffer is already empty (or another's)
    }
    if (pos > 0) {
        memmove(c.rx, c.rx + pos, c.rx_size - pos);
        c.rx_size -= pos;
    }
}

// A set-up INFO reply longer than the receive buffer (a future server's, say)
// does not fail the node: when the reply at `pos` is one, it is answered as
// "nothing known" now and its bytes are thrown away as they arrive.
bool client_base::skip_info(std::uint8_t n, std::size_t pos, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.fifo.empty()) {
        return false;
    }
    const detail::in_flight f = c.fifo.front();
    if (f.to != reply_to::setup || !handshake::reply_optional(static_cast<std::uint8_t>(f.tag))) {
        return false;
    }
    const std::size_t size = bulk_reply_size(c.rx + pos, c.rx_size - pos);
    if (size == 0) {
        return false;
    }
    c.fifo.pop();
    c.decoder.reset();
    c.skip = size;
    progress(c, now, options_.stall_timeout);
    setup_reply(n, f.tag, nullptr, 0, now);
    return true;
}

}  // namespace edgelock
