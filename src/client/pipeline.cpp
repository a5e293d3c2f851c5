// Requests out and replies in, per connection: the in-flight FIFO, moving
// the set-up's and the machines' requests into the send buffer and the buffer
// into the transport, reading (the streams' one read loop, stream_read.hpp)
// and handing each reply to whoever asked. What a reply means is its
// receiver's to say: the handshake, a lock (lock_reply.cpp), a sentinel
// (sentinel.cpp), the Cluster router (cluster.cpp), the subscription's
// redirect (notify.cpp).
#include "edgelock/client.hpp"

#include <string.h>

#include "client_internal.hpp"
#include "stream_read.hpp"

namespace edgelock {

using namespace detail;

namespace {

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
// when nothing is left in flight. It runs on a ready connection only: until
// then the connect's timer bounds the wait.
void progress(detail::connection& c, instant now, duration stall_timeout) {
    if (c.fifo.empty() || c.state != node_state::ready) {
        c.timers.stop(connection_timer::stall);
    } else {
        c.timers.set(connection_timer::stall, now + stall_timeout);
    }
}

// Whether a lock's scripts not yet run on this connection go as EVAL (their
// text) rather than EVALSHA (their digest) first: where the server's cache
// is known empty (a NOSCRIPT on this connection), and where a NOSCRIPT's
// extra round trip would cost a round too much of its time: a link whose
// smoothed round trip is an eighth of the round's allowance or more. The
// text costs a few hundred bytes more, once per script and connection; on
// a fast link a NOSCRIPT (after a restart or SCRIPT FLUSH) costs one quick
// round trip instead.
bool scripts_unknown(const detail::connection& c, const node_stats& s, const client_lock& l) {
    return c.scripts_cold ||
           (s.rtt_smoothed_us != 0 && s.rtt_smoothed_us >= l.machine().round_allowance().us / 8);
}

// Lock replies are still due on a connection whose set-up they followed.
bool lock_replies_due(const detail::connection& c) {
    for (std::size_t i = 0; i < c.fifo.size(); ++i) {
        if (c.fifo[i].to == reply_to::lock) {
            return true;
        }
    }
    return false;
}

}  // namespace

// Lock requests may follow the set-up in one flight (handshake.hpp), once
// every set-up request is written: on a standalone node, on a Cluster
// connection (its requests go where the routes say, and follow a MOVED or an
// ASK as they do after the set-up: cluster.cpp), and on the master a
// sentinel named, unless setup_first says otherwise (holds_setup) or a switch
// is being followed. After a refused check, only cleanups go: they undo what
// the requests before took.
bool client_base::pipelines(std::uint8_t n) const noexcept {
    const detail::connection& c = conns_[n];
    return c.state == node_state::handshake && !c.setup_first && !c.where.asking() &&
           c.moving.leaving == failover_leave::no && c.moving.trip == failover_trip::none &&
           c.setup.sent_all() && c.io.is_open();
}

// Whether a new connection's set-up is done before its first lock request:
// on a Sentinel node after a switch (failover.cpp checks the kept locks on
// the new master once it is set up), and when its last connect met a replica
// (while the sentinels still name a demoted master, its role is read first
// rather than an acquire spent there each time).
bool client_base::holds_setup(std::uint8_t n) const noexcept {
    const detail::connection& c = conns_[n];
    return c.address.sentinel_count > 0 &&
           (c.moving.renew || c.report.error == node_error::replica);
}

bool client_base::undoing(std::uint8_t n) const noexcept {
    const detail::connection& c = conns_[n];
    return c.state == node_state::handshake && c.setup.refused() && setup_owes(n);
}

// Lock requests went behind the set-up and are not answered yet, or (after a
// refused check) a cleanup is still to go: the connection must not be left.
bool client_base::setup_owes(std::uint8_t n) const noexcept {
    const detail::connection& c = conns_[n];
    if (c.state != node_state::handshake || !c.io.is_open()) {
        return false;
    }
    if (lock_replies_due(c)) {
        return true;
    }
    if (!c.setup.refused() || !pipelines(n)) {
        return false;  // (none may go here: they wait for the node's next connection)
    }
    for (const client_lock* l = locks_; l != nullptr; l = l->next_) {
        if (serves(n, *l) && l->machine_.next_send(c.node) == lock::outgoing::cleanup) {
            return true;  // to go out here before the connection closes
        }
    }
    return false;
}

bool client_base::push_in_flight(std::uint8_t n, const detail::in_flight& f, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.fifo.empty() && c.state == node_state::ready) {
        c.timers.set(connection_timer::stall, now + options_.stall_timeout);
    }
    // Timed when alone on the connection: its reply then waits for nothing
    // else (a WAIT waits for replicas, a sentinel is another server).
    const bool probe = c.fifo.empty() && !f.follows && f.to != reply_to::sentinel;
    if (!c.fifo.push(f)) {
        return false;
    }
    ++stats_of(n).requests;
    if (probe) {
        c.probing = true;
        c.probe_sent = now;
    }
    return true;
}

// The request in front was answered: its round trip, if it was timed.
void client_base::answered(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.fifo.pop();
    if (c.probing) {
        c.probing = false;
        count_rtt(stats_of(n), now - c.probe_sent);
    }
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
        if (!undoing(n)) {
            fail(n, c.report.error, 0, now);
        }
        // else once the lock replies (and the cleanups behind) are in.
    } else if (s == handshake_status::ready && c.state == node_state::handshake) {
        c.state = node_state::ready;
        c.report.error = node_error::none;
        c.report.code = 0;
        c.failures = 0;
        c.timers.stop(connection_timer::connect);
        progress(c, now, options_.stall_timeout);  // the stall timer runs from here
        failover_side::arrived(*this, n, now);     // after a switch: held locks renew
    }
}

// Moves requests from the machines into the buffer, then the buffer into the
// socket, until one of them is full or nothing is left.
void client_base::transmit(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    for (unsigned guard = 0; guard < 1024 && c.io.is_open(); ++guard) {
        if (c.state == node_state::handshake && !c.where.asking()) {
            queue_setup(n, now);
            if (pipelines(n)) {
                queue_requests(n, now);
            }
        } else if (c.state == node_state::ready && c.moving.leaving == failover_leave::no &&
                   c.moving.trip <= failover_trip::armed) {
            // (A Sentinel node leaving its master, or going back to the one
            // it left, writes nothing more of the locks there.)
            queue_requests(n, now);
        }
        if (c.tx_size == 0) {
            c.want_write = false;
            return;
        }
        const port::net_result r = c.io.send(*transport_, c.tx, c.tx_size);
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
    if ((c.redirect_due || c.address.seed_count > 0) && !queue_extras(n, now)) {
        return;  // they go first, once there is room
    }
    const std::uint8_t node = c.node;
    const bool ready = c.state == node_state::ready;
    const bool cleanups_only = !ready && c.setup.refused();
    for (client_lock* l = locks_; l != nullptr; l = l->next_) {
        if (!serves(n, *l)) {
            continue;  // a Cluster node's lock whose slot is on another master
        }
        if (l->machine_.next_send(node) == lock::outgoing::none) {
            continue;  // nothing of this lock for this node now
        }
        if (c.address.seed_count > 0 && in_flight_elsewhere(n, *l)) {
            continue;  // its requests to a node go out in order (cluster.cpp)
        }
        for (;;) {
            // Each request where served_by() says: after one sent by ASK
            // (or a cleanup sent where one went), the next may go elsewhere.
            const lock::outgoing next = l->machine_.next_send(node);
            if (next == lock::outgoing::none || served_by(*l, node) != n) {
                break;
            }
            const bool cleanup = next == lock::outgoing::cleanup;
            if (cleanups_only && !cleanup) {
                break;
            }
            const bool to_asked = cleanup && l->asked_[node] == n;
            const bool asking = to_asked || l->ask_[node] == n;
            // Behind the set-up, before its replies: SET NX PX GET unless
            // HELLO was refused (an older server's syntax error sends the
            // script instead). Told where the name is tracked, or a waiter's
            // CLIENT TRACKING goes ahead (notify.cpp); not after ASKING,
            // which holds for the one command after it (its waiter polls).
            const waiter_tracking tracking = tracking_for(n, *l, ready && !asking && !cleanup);
            lock_node_caps caps;
            caps.set_nx_get = ready ? c.report.set_nx_get : !c.setup.hello_refused();
            caps.told = tracking != waiter_tracking::polls;
            caps.migrating = asking;
            caps.scripts_unknown = scripts_unknown(c, stats_of(n), *l);
            l->machine_.set_node_caps(node, caps);
            // A request may take five entries: ASKING ahead of one a Cluster
            // node sent here, CLIENT TRACKING and PTTL ahead of a told
            // waiter's acquire, and WAIT after it with min_replicas.
            const bool ask = tracking == waiter_tracking::asks;
            const std::size_t entries = 1u + (caps.told ? 1u : 0u) + (ask ? 1u : 0u) +
                                        (asking ? 1u : 0u) +
                                        (l->machine_.options().min_replicas > 0 ? 1u : 0u);
            if (c.fifo.size() + entries > c.fifo.capacity) {
                break;
            }
            // Fill the buffer to the brim: a request that does not fit is
            // left with its machine (nothing written) until the buffer has
            // gone out. An empty buffer always holds one (lock_max_request).
            static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
            if (ask && !ask_tracking(n, *l, now)) {
                return;  // once the buffer has room
            }
            const std::size_t ahead = asking ? sizeof asking_cmd - 1 : 0;
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
                if (to_asked) {
                    l->asked_[node] = no_connection;
                } else {
                    l->ask_[node] = no_connection;
                }
            }
            if (!cleanup) {
                // A write here: a cleanup that follows comes here too.
                l->asked_[node] = asking ? n : no_connection;
            }
            c.tx_size += t.size;
            detail::in_flight f;
            f.lock = l;
            f.to = reply_to::lock;
            if (t.preceding > 0) {
                // The PTTL ahead of a told waiter's SET: the machine reads it
                // (as it reads a WAIT: never redirected).
                f.tag = t.preceding_tag;
                f.follows = true;
                push_in_flight(n, f, now);
                f.follows = false;
            }
            f.tag = t.tag;
            f.cleanup = cleanup;
            push_in_flight(n, f, now);
            f.cleanup = false;
            if (t.following > 0) {
                f.tag = t.following_tag;  // WAIT: the machine reads its count
                f.follows = true;
                push_in_flight(n, f, now);
            }
        }
    }
}

// The read loop's handler for a lock connection: each reply to whoever
// asked; an INFO too long for the buffer skipped.
struct client_base::reply_reader {
    client_base& self;
    std::uint8_t n;
    instant now;

    void on_message(const stream_message& m) noexcept;
    std::size_t oversize(const char* data, std::size_t size) noexcept;
    void skipped() noexcept { progress(self.conns_[n], now, self.options_.stall_timeout); }
};

void client_base::read(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    reply_reader reader{*this, n, now};
    port::net_result io;
    switch (c.io.read(*transport_, nodes_, EDGELOCK_CLIENT_REPLY_NODES, reader, io)) {
    case read_end::drained:
    case read_end::stopped:
        break;
    case read_end::io_failed:
        fail_io(n, io, now);
        break;
    case read_end::too_large:
        fail(n, node_error::reply_too_large, 0, now);
        break;
    case read_end::malformed:
        fail(n, node_error::protocol_error, 0, now);
        break;
    }
}

void client_base::reply_reader::on_message(const stream_message& m) noexcept {
    detail::connection& c = self.conns_[n];
    const bool kept = m.nodes != nullptr;
    if (m.push) {
        progress(c, now, self.options_.stall_timeout);
        self.on_push(c.node, m.nodes, m.count, now);
        return;  // not a reply: nothing in the FIFO answers it
    }
    if (c.fifo.empty()) {
        self.fail(n, node_error::unexpected_reply, 0, now);
        return;
    }
    const detail::in_flight f = c.fifo.front();
    self.answered(n, now);
    progress(c, now, self.options_.stall_timeout);
    switch (f.to) {
    case reply_to::discard:
        break;
    case reply_to::tracking:
        self.tracking_answer(n, f.tag, m.nodes, m.count);
        break;
    case reply_to::sentinel:
        self.master_answer(n, f.tag, m.nodes, m.count, now);
        break;
    case reply_to::cluster:
        self.slot_map_reply(n, m.data, m.size, now);
        break;
    case reply_to::command:
        if (self.command_fn_ != nullptr) {
            const reply_callback fn = self.command_fn_;
            self.command_fn_ = nullptr;
            fn(self.command_ctx_, m.nodes, m.count);
        }
        break;
    case reply_to::setup:
        if (!kept) {
            // Only an error needs reading, and an error is one node.
            resp_node err;
            const char first = m.data[0];
            err.type = first == '-' ? resp_type::simple_error : resp_type::map;
            self.setup_reply(n, f.tag, &err, first == '-' || first == '!' ? 1 : 0, now);
        } else {
            self.setup_reply(n, f.tag, m.nodes, m.count, now);
        }
        break;
    case reply_to::lock:
        if (!kept) {
            self.fail(n, node_error::unexpected_reply, 0, now);
            return;
        }
        self.lock_reply(n, f, m.nodes, m.count, now);
        break;
    }
    if (c.state == node_state::handshake && c.setup.status() == handshake_status::failed &&
        !self.undoing(n)) {
        self.fail(n, c.report.error, 0, now);  // what followed the set-up is undone
    }
}

// A set-up INFO reply longer than the receive buffer (a future server's, say)
// does not fail the node: when the reply at `data` is one, it is answered as
// "nothing known" now and its bytes are thrown away as they arrive.
std::size_t client_base::reply_reader::oversize(const char* data, std::size_t size) noexcept {
    detail::connection& c = self.conns_[n];
    if (c.fifo.empty()) {
        return 0;
    }
    const detail::in_flight f = c.fifo.front();
    if (f.to != reply_to::setup || !handshake::reply_optional(static_cast<std::uint8_t>(f.tag))) {
        return 0;
    }
    const std::size_t whole = bulk_reply_size(data, size);
    if (whole == 0) {
        return 0;
    }
    self.answered(n, now);
    progress(c, now, self.options_.stall_timeout);
    self.setup_reply(n, f.tag, nullptr, 0, now);
    return whole;
}

}  // namespace edgelock
