// The event-loop API: wanted, next_deadline, on_ready, on_timeout. The
// blocking calls (blocking.cpp) are built on the same pieces.
#include "edgelock/client.hpp"

#include "client_internal.hpp"

namespace edgelock {

using namespace detail;

namespace {

// Appends one entry when there is room; the count says how many were written.
void add_entry(port::wait_entry* out, std::size_t capacity, std::size_t& count, int fd,
               std::uint8_t want) {
    if (fd < 0 || count >= capacity) {
        return;
    }
    out[count].fd = fd;
    out[count].want = want;
    out[count].ready = 0;
    ++count;
}

}  // namespace

// Each connection's entries: the lock connection's (or its lookup's), its
// subscription's and, for a node's own, its watch's.
std::size_t client_base::wanted(port::wait_entry* out, std::size_t capacity) const noexcept {
    std::size_t count = 0;
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        const detail::connection& c = conns_[n];
        if (c.state == node_state::resolving) {
            add_entry(out, capacity, count, c.lookup.fd(), port::want_read);
        } else {
            add_entry(out, capacity, count, c.io.fd(), c.io.wants(*transport_, c.want_write));
        }
        add_entry(out, capacity, count, c.sub.fd(), c.sub.wants(*transport_));
        add_entry(out, capacity, count, c.watch.fd(), c.watch.wants(*transport_));
    }
    return count;
}

// A fold over what each part says of itself: the locks' machines and
// timers, each connection's timers, its parts'.
instant client_base::next_deadline() const noexcept {
    instant next = instant::never();
    const bool settled = all_startable();
    for (const client_lock* l = locks_; l != nullptr; l = l->next_) {
        next = earliest(next, l->machine_.next_deadline());
        next = earliest(next, l->timers_.get(client_lock::timer::renew));
        next = earliest(next, l->timers_.get(client_lock::timer::max_hold));
        if (l->queued_ != client_lock::op::none) {
            // Started from a callback, say: due now unless a node is connecting.
            next =
                earliest(next, settled ? instant{0} : l->timers_.get(client_lock::timer::begin_by));
        }
    }
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        const detail::connection& c = conns_[n];
        const bool wanted = node_wanted(n);
        if (c.state == node_state::down && wanted) {
            next = instant{0};
        } else if (c.state != node_state::backoff || wanted) {
            // A settled connection's connect timer is stopped; the stall
            // timer runs only while requests are in flight.
            next = earliest(next, c.timers.next());
        }
        if (c.where.asking()) {
            next = earliest(next, c.where.deadline());
        }
        next = earliest(next, c.sub.next_deadline(tracking_side::wanted(*this, n), instant{0}));
        if (n < node_count_) {
            next =
                earliest(next, c.watch.next_deadline(failover_side::wanted(*this, n), instant{0}));
        }
    }
    return next;
}

void client_base::handle_ready(int fd, std::uint8_t events, instant now) noexcept {
    if (fd < 0) {
        return;
    }
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        detail::connection& c = conns_[n];
        if (c.state == node_state::resolving && c.lookup.fd() == fd) {
            resolved(n, now);
            return;
        }
        if (c.io.fd() == fd) {
            if (c.state == node_state::connecting) {
                if (c.io.answers(*transport_, events)) {
                    connect_ready(n, now);
                }
                return;
            }
            const std::uint32_t generation = c.io.generation();
            if ((events & (port::want_read | port::ready_error)) != 0) {
                read(n, now);
            }
            // Unless the read ended this connection (and maybe began another).
            if (c.io.generation() == generation && (events & port::want_write) != 0) {
                transmit(n, now);
            }
            return;
        }
        if (c.sub.fd() == fd) {
            tracking_side::apply(*this, n,
                                 c.sub.on_ready(events, tracking_side::link(*this, n), now), now);
            return;
        }
        if (c.watch.fd() == fd) {
            failover_side::apply(*this, n,
                                 c.watch.on_ready(events, failover_side::link(*this, n), now), now);
            return;
        }
    }
}

void client_base::on_ready(int fd, std::uint8_t events) noexcept {
    const instant now = port::now();
    handle_ready(fd, events, now);
    service(now);
}

void client_base::on_ready(const port::wait_entry* entries, std::size_t count) noexcept {
    // Every event first, then one service: service() may open a connection
    // whose fd number an entry of this batch still names. Fresh time for
    // every fd: callbacks run in between, and a validity is judged against
    // the moment a reply is handled.
    for (std::size_t i = 0; i < count; ++i) {
        if (entries[i].ready != 0) {
            handle_ready(entries[i].fd, entries[i].ready, port::now());
        }
    }
    service(port::now());
}

void client_base::on_timeout() noexcept {
    service(port::now());
}

}  // namespace edgelock
