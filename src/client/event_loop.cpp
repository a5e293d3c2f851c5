// The event-loop API (wanted, next_deadline, on_ready, on_timeout) and the
// blocking calls built on it (step, run_until, connect, command).
#include "edgelock/client.hpp"

#include "client_internal.hpp"
#include "edgelock/resp_encoder.hpp"

namespace edgelock {

using namespace detail;

std::size_t client_base::wanted(port::wait_entry* out, std::size_t capacity) const noexcept {
    std::size_t count = 0;
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        const detail::connection& c = conns_[n];
        if (c.fd < 0) {
            continue;
        }
        if (count < capacity) {
            port::wait_entry& e = out[count];
            e.fd = c.fd;
            e.ready = 0;
            if (c.state == node_state::connecting) {
                e.want =
                    c.opening ? transport_->wants(n) : static_cast<std::uint8_t>(port::want_write);
            } else {
                e.want = static_cast<std::uint8_t>(port::want_read |
                                                   (c.want_write ? port::want_write : 0));
            }
        }
        ++count;
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
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        const detail::connection& c = conns_[n];
        if (c.state == node_state::connecting || c.state == node_state::handshake) {
            next = earliest(next, c.timers.get(connection_timer::connect));
        } else if (c.state == node_state::down && node_wanted(n)) {
            next = instant{0};
        } else if (c.state == node_state::backoff && node_wanted(n)) {
            next = earliest(next, c.timers.get(connection_timer::backoff));
        } else if (c.state == node_state::ready && !c.fifo.empty()) {
            next = earliest(next, c.timers.get(connection_timer::stall));
        }
    }
    return next;
}

void client_base::handle_ready(int fd, std::uint8_t events, instant now) noexcept {
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        detail::connection& c = conns_[n];
        if (c.fd != fd || fd < 0) {
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
        if ((events & (port::want_read | port::ready_error)) != 0) {
            read(n, now);
        }
        if (c.fd >= 0 && (events & port::want_write) != 0) {
            transmit(n, now);
        }
        return;
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

// One wait for I/O, at most until `until`, then service. The clock is read
// after the wait (and after each ready fd: see on_ready); `now` is the last.
client_errc client_base::wait_once(instant until, instant& now) noexcept {
    port::wait_entry entries[lock_max_nodes];
    const std::size_t count = wanted(entries, lock_max_nodes);
    const instant deadline = earliest(next_deadline(), until);
    const int ready = port::wait(entries, count, deadline);
    if (ready < 0) {
        now = port::now();
        return client_errc::wait_failed;
    }
    for (std::size_t i = 0; ready > 0 && i < count; ++i) {
        if (entries[i].ready != 0) {
            handle_ready(entries[i].fd, entries[i].ready, port::now());
        }
    }
    now = port::now();
    service(now);
    return client_errc::ok;
}

client_errc client_base::run_until(instant deadline) noexcept {
    if (in_callback_) {
        return client_errc::reentered;
    }
    if (node_count_ == 0) {
        return client_errc::not_configured;
    }
    instant now = port::now();
    service(now);
    while (now < deadline) {
        const client_errc e = wait_once(deadline, now);
        if (e != client_errc::ok) {
            return e;
        }
    }
    return client_errc::ok;
}

std::uint8_t client_base::connect(instant deadline, std::uint8_t enough) noexcept {
    if (in_callback_ || node_count_ == 0) {
        return 0;
    }
    connect_wanted_ = true;
    instant now = port::now();
    service(now);
    for (;;) {
        if (all_settled() || (enough > 0 && ready_count() >= enough) || now >= deadline ||
            wait_once(deadline, now) != client_errc::ok) {
            break;
        }
    }
    connect_wanted_ = false;
    return ready_count();
}

client_errc client_base::command(std::uint8_t index, const str_view* args, std::size_t argc,
                                 instant deadline, reply_callback fn, void* ctx) noexcept {
    if (in_callback_) {
        return client_errc::reentered;
    }
    if (node_count_ == 0) {
        return client_errc::not_configured;
    }
    // Arguments that can never go out are refused before anything is connected
    // or waited for: none at all, or more than the send buffer holds.
    const std::size_t size = resp_command_size(args, argc);
    if (index >= node_count_ || fn == nullptr || command_fn_ != nullptr || size == 0 ||
        size > EDGELOCK_CLIENT_TX_BUFFER) {
        return client_errc::bad_option;
    }
    detail::connection& c = conns_[index];
    if (c.state != node_state::ready) {
        connect(deadline);
    }
    // Room in the buffer and the pipeline: let what is queued drain first.
    instant now = port::now();
    while (c.state == node_state::ready && (c.fifo.full() || size > sizeof c.tx - c.tx_size) &&
           now < deadline) {
        if (wait_once(deadline, now) != client_errc::ok) {
            break;
        }
    }
    if (c.state != node_state::ready) {
        return client_errc::node_unavailable;
    }
    const resp_encoded e =
        resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, args, argc);
    if (e.error != resp_encode_errc::ok || c.fifo.full()) {
        return e.error == resp_encode_errc::ok ? client_errc::timed_out : client_errc::bad_option;
    }
    c.tx_size += e.size;
    detail::in_flight f;
    f.to = reply_to::command;
    push_in_flight(index, f, now);
    command_fn_ = fn;
    command_ctx_ = ctx;
    transmit(index, now);
    while (command_fn_ != nullptr && now < deadline) {
        if (wait_once(deadline, now) != client_errc::ok) {
            break;
        }
    }
    if (command_fn_ == nullptr) {
        return client_errc::ok;
    }
    // Given up: its reply, if it ever comes, is read and thrown away.
    command_fn_ = nullptr;
    for (std::size_t i = 0; i < c.fifo.size(); ++i) {
        if (c.fifo[i].to == reply_to::command) {
            c.fifo[i].to = reply_to::discard;
        }
    }
    return client_errc::timed_out;
}

}  // namespace edgelock
