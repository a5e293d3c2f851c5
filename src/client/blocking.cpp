// The blocking calls of the client: one wait for I/O (wait_once), and
// run_until, connect and command built on it. client_lock's blocking
// acquire/renew/release wait the same way.
#include "edgelock/client.hpp"

#include <new>

#include "client_internal.hpp"
#include "edgelock/resp_encoder.hpp"

namespace edgelock {

using namespace detail;

// One wait for I/O, at most until `until`, then service. The clock is read
// after the wait (and after each ready fd: see on_ready); `now` is the last.
client_errc client_base::wait_once(instant until, instant& now) noexcept {
    // Room for the largest client, left uninitialised: wanted() writes every
    // field of the entries it gives, and zeroing 144 entries on every wait
    // cost more than the rest of the wait.
    constexpr std::size_t room = fd_capacity_for(lock_max_nodes, max_connections);
    static_assert(room <= port::wait_capacity, "one wait() takes every fd of the largest client");
    alignas(port::wait_entry) unsigned char storage[room * sizeof(port::wait_entry)];
    port::wait_entry* const entries = std::launder(reinterpret_cast<port::wait_entry*>(storage));
    const std::size_t count = wanted(entries, room);
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

bool client_base::busy() const noexcept {
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        if (setup_owes(n)) {
            return true;
        }
        if (conns_[n].address.sentinel_count > 0 && failover_side::owes(*this, n)) {
            return true;
        }
    }
    return false;
}

client_errc client_base::settle(instant deadline) noexcept {
    if (in_callback_) {
        return client_errc::reentered;
    }
    instant now = port::now();
    service(now);
    while (busy()) {
        if (!(now < deadline)) {
            return client_errc::deadline;
        }
        const client_errc e = wait_once(deadline, now);
        if (e != client_errc::ok) {
            return e;
        }
    }
    return client_errc::ok;
}

std::uint8_t client_base::connect(instant deadline, std::uint8_t enough) noexcept {
    return connect_until(deadline, enough, false);
}

std::uint8_t client_base::open(instant deadline, std::uint8_t enough) noexcept {
    return connect_until(deadline, enough, true);
}

// connect() and open(): `early` counts a node whose set-up is written.
std::uint8_t client_base::connect_until(instant deadline, std::uint8_t enough,
                                        bool early) noexcept {
    if (in_callback_ || node_count_ == 0) {
        return 0;
    }
    connect_wanted_ = true;
    instant now = port::now();
    service(now);
    for (;;) {
        const bool done = early ? all_startable() : all_settled();
        const std::uint8_t count = early ? startable_count() : ready_count();
        if (done || (enough > 0 && count >= enough) || now >= deadline ||
            wait_once(deadline, now) != client_errc::ok) {
            break;
        }
    }
    connect_wanted_ = false;
    return early ? startable_count() : ready_count();
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
