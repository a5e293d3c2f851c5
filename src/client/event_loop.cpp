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

std::size_t client_base::wanted(port::wait_entry* out, std::size_t capacity) const noexcept {
    std::size_t count = 0;
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        const detail::connection& c = conns_[n];
        if (c.state == node_state::resolving) {
            add_entry(out, capacity, count, c.lookup.fd(), port::want_read);
        } else if (c.state == node_state::connecting) {
            add_entry(
                out, capacity, count, c.fd,
                c.opening ? transport_->wants(n) : static_cast<std::uint8_t>(port::want_write));
        } else {
            add_entry(
                out, capacity, count, c.fd,
                static_cast<std::uint8_t>(port::want_read | (c.want_write ? port::want_write : 0)));
        }
        const detail::subscription& s = c.sub;
        if (s.phase == sub_phase::connecting) {
            add_entry(out, capacity, count, s.fd,
                      s.opening ? transport_->wants(sub_index(n))
                                : static_cast<std::uint8_t>(port::want_write));
        } else {
            const bool unsent = s.phase == sub_phase::setup && s.sent < s.setup_size;
            add_entry(out, capacity, count, s.fd,
                      static_cast<std::uint8_t>(port::want_read | (unsent ? port::want_write : 0)));
        }
    }
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        const detail::sentinel_watch& w = conns_[n].watch;
        if (w.phase == watch_phase::resolving) {
            add_entry(out, capacity, count, w.lookup.fd(), port::want_read);
            continue;
        }
        const bool unsent =
            w.phase == watch_phase::connecting || w.sent < w.setup_size || w.setup_size == 0;
        add_entry(
            out, capacity, count, w.fd,
            static_cast<std::uint8_t>((w.phase == watch_phase::connecting ? 0 : port::want_read) |
                                      (unsent ? port::want_write : 0)));
    }
    return count;
}

instant client_base::next_deadline() const noexcept {
    instant next = instant::never();
    const bool settled = all_settled();
    for (const client_lock* l = locks_; l != nullptr; l = l->next_) {
        next = earliest(next, l->machine_.next_deadline());
        next = earliest(next, l->timers_.get(client_lock::timer::renew));
        if (l->queued_ != client_lock::op::none) {
            // Started from a callback, say: due now unless a node is connecting.
            next =
                earliest(next, settled ? instant{0} : l->timers_.get(client_lock::timer::begin_by));
        }
    }
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        const detail::connection& c = conns_[n];
        if (!node_settled(n)) {
            next = earliest(next, c.timers.get(connection_timer::connect));
            if (c.sentinel.asking) {
                next = earliest(next, c.timers.get(connection_timer::sentinel));
            }
        } else if (c.state == node_state::down && node_wanted(n)) {
            next = instant{0};
        } else if (c.state == node_state::backoff && node_wanted(n)) {
            next = earliest(next, c.timers.get(connection_timer::backoff));
        } else if (c.state == node_state::ready && !c.fifo.empty()) {
            next = earliest(next, c.timers.get(connection_timer::stall));
        }
        const sub_phase p = c.sub.phase;
        if (p == sub_phase::connecting || p == sub_phase::setup ||
            ((p == sub_phase::backoff || p == sub_phase::off) && sub_wanted(n))) {
            next = earliest(next, p == sub_phase::off ? instant{0} : c.sub.due);
        }
        const watch_phase w = c.watch.phase;
        if (n < node_count_ &&
            (w == watch_phase::resolving || w == watch_phase::connecting ||
             ((w == watch_phase::off || w == watch_phase::backoff) && watch_wanted(n)))) {
            next = earliest(next, w == watch_phase::off ? instant{0} : c.watch.due);
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
        if (c.fd != fd) {
            continue;
        }
        if (c.state == node_state::connecting) {
            const std::uint8_t wanted =
                c.opening ? transport_->wants(n) : static_cast<std::uint8_t>(port::want_write);
            if ((events & (wanted | port::ready_error)) != 0) {
                connect_ready(n, now);
            }
            return;
        }
        const std::uint32_t generation = c.generation;
        if ((events & (port::want_read | port::ready_error)) != 0) {
            read(n, now);
        }
        // Unless the read ended this connection (and maybe began another).
        if (c.fd >= 0 && c.generation == generation && (events & port::want_write) != 0) {
            transmit(n, now);
        }
        return;
    }
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        if (conns_[n].sub.fd == fd) {
            sub_ready(n, events, now);
            return;
        }
    }
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        if (watch_fd(n) == fd) {
            watch_ready(n, events, now);
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
