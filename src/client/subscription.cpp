// Waiters told over RESP2. A node spoken to in RESP2 (client_options::resp3
// false, or a server or proxy without HELLO) cannot push on the lock
// connection, so the client keeps a second connection to it, subscribed to
// __redis__:invalidate, and the lock connection's tracking is redirected
// there: CLIENT TRACKING ON REDIRECT <its CLIENT ID> OPTIN NOLOOP. The server
// then publishes on that channel what it would have pushed, and a waiter is
// woken as over RESP3 (notify.cpp).
//
// It lives while the lock connection is ready. When it drops, the node's
// waiters poll (node(i).tracking is false) and it is made again after a
// backoff; once it is subscribed again, the lock connection redirects to its
// new id and every waiter tries at once, for what was missed meanwhile. A
// server that refuses a part of it (an ACL without SUBSCRIBE, CLIENT or
// CLIENT TRACKING) is not asked again until the lock connection is made anew:
// its waiters poll. Redis before 6 has no tracking and is not asked.
//
// Over TLS it takes the transport's session number capacity + n (a
// tls_mbedtls<2 * N> for a client<N>); a transport without room refuses it,
// and that node's waiters poll.
#include <string.h>

#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/resp_encoder.hpp"

namespace edgelock {

using namespace detail;

namespace {

// A subscription's set-up: AUTH with the longest user and password, CLIENT
// ID and SUBSCRIBE, with their RESP framing.
constexpr std::size_t setup_capacity = 2 * node_url_max_secret + 128;

}  // namespace

bool client_base::sub_wanted(std::uint8_t n) const noexcept {
    const detail::connection& c = conns_[n];
    return options_.notify && c.state == node_state::ready && c.report.tracks_keys &&
           (c.report.resp2 || !options_.resp3);
}

std::uint8_t client_base::sub_index(std::uint8_t n) const noexcept {
    return static_cast<std::uint8_t>(conn_total_ + n);
}

void client_base::sub_service(std::uint8_t n, instant now) noexcept {
    subscription& s = conns_[n].sub;
    switch (s.phase) {
    case sub_phase::off:
        if (sub_wanted(n)) {
            s.due = now + options_.connect_timeout;
            sub_connect(n, now);
        }
        break;
    case sub_phase::backoff:
        if (s.due <= now && sub_wanted(n)) {
            s.due = now + options_.connect_timeout;
            sub_connect(n, now);
        }
        break;
    case sub_phase::connecting:
    case sub_phase::setup:
        if (s.due <= now) {
            sub_close(n, false, now);
        }
        break;
    case sub_phase::listening:
    case sub_phase::refused:
        break;
    }
}

// Connects to the very address the lock connection reached: the server
// redirects tracking only to a client of its own.
void client_base::sub_connect(std::uint8_t n, instant now) noexcept {
    const detail::connection& c = conns_[n];
    subscription& s = conns_[n].sub;
    s.phase = sub_phase::connecting;
    s.opening = false;
    s.subscribed = false;
    s.id = 0;
    s.rx_size = 0;
    port::endpoint where = endpoint_of(n);
    if (where.unix_path.empty()) {
        where.host = str_view(c.connected_to, c.connected_size);
    }
    int fd = -1;
    const port::net_result r = port::connect(where, fd);
    if (r.status == port::net_status::ok) {
        s.fd = fd;
        sub_open(n, transport_->open(sub_index(n), fd, c.address), now);
        return;
    }
    if (r.status == port::net_status::in_progress) {
        s.fd = fd;
        return;
    }
    sub_close(n, false, now);
}

// The socket is up; the transport's open() or proceed() said `r`.
void client_base::sub_open(std::uint8_t n, port::net_result r, instant now) noexcept {
    subscription& s = conns_[n].sub;
    if (r.status == port::net_status::in_progress) {
        s.opening = true;
        return;
    }
    if (r.status != port::net_status::ok) {
        // No session for this index (a transport sized for the lock
        // connections only) will not get better by trying again.
        sub_close(n, r.status == port::net_status::bad_argument, now);
        return;
    }
    s.opening = false;
    s.phase = sub_phase::setup;
    s.sent = 0;
    sub_send(n, now);
}

// Sends what is left of the set-up. It is written afresh each time rather
// than kept (it may hold the password), and the same every time.
void client_base::sub_send(std::uint8_t n, instant now) noexcept {
    subscription& s = conns_[n].sub;
    char buf[setup_capacity];
    std::uint8_t replies = 0;
    const std::size_t size =
        subscription_setup(buf, sizeof buf, conns_[n].address, options_, replies);
    port::net_result r{port::net_status::bad_argument};
    if (size > s.sent) {
        r = transport_->send(sub_index(n), s.fd, buf + s.sent, size - s.sent);
    }
    volatile char* wipe = buf;
    for (std::size_t i = 0; i < size; ++i) {
        wipe[i] = 0;
    }
    if (r.status == port::net_status::would_block) {
        return;  // wanted() asks for writability
    }
    if (r.status != port::net_status::ok) {
        sub_close(n, false, now);
        return;
    }
    s.sent = static_cast<std::uint16_t>(s.sent + r.size);
    s.setup_size = static_cast<std::uint16_t>(size);
    s.replies_due = replies;
}

void client_base::sub_ready(std::uint8_t n, std::uint8_t events, instant now) noexcept {
    const detail::connection& c = conns_[n];
    subscription& s = conns_[n].sub;
    if (s.phase != sub_phase::connecting) {
        if ((events & port::want_write) != 0 && s.phase == sub_phase::setup &&
            s.sent < s.setup_size) {
            sub_send(n, now);
        }
        if (s.fd >= 0 && (events & (port::want_read | port::ready_error)) != 0) {
            sub_read(n, now);
        }
        return;
    }
    const std::uint8_t wanted =
        s.opening ? transport_->wants(sub_index(n)) : static_cast<std::uint8_t>(port::want_write);
    if ((events & (wanted | port::ready_error)) == 0) {
        return;
    }
    if (s.opening) {
        sub_open(n, transport_->proceed(sub_index(n), s.fd), now);
        return;
    }
    const port::net_result r = port::connect_finish(s.fd);
    if (r.status == port::net_status::ok) {
        sub_open(n, transport_->open(sub_index(n), s.fd, c.address), now);
    } else if (r.status != port::net_status::in_progress) {
        sub_close(n, false, now);
    }
}

void client_base::sub_read(std::uint8_t n, instant now) noexcept {
    subscription& s = conns_[n].sub;
    for (unsigned guard = 0; guard < 1024 && s.fd >= 0; ++guard) {
        const std::size_t space = sizeof s.rx - s.rx_size;
        const port::net_result r = transport_->recv(sub_index(n), s.fd, s.rx + s.rx_size, space);
        if (r.status == port::net_status::would_block) {
            return;
        }
        if (r.status != port::net_status::ok) {
            sub_close(n, false, now);
            return;
        }
        s.rx_size += r.size;
        // Each message whole, decoded afresh from its start: they are short.
        std::size_t pos = 0;
        while (s.fd >= 0 && pos < s.rx_size) {
            const resp_result m = resp_decode_whole(s.rx + pos, s.rx_size - pos, nodes_,
                                                    EDGELOCK_CLIENT_REPLY_NODES, reply_limits());
            const bool whole = m.status != resp_status::error || m.error != resp_errc::truncated;
            if (!whole && s.rx_size - pos < sizeof s.rx) {
                break;  // the rest is still to come
            }
            if (m.status != resp_status::complete) {
                // Malformed, or longer than the buffer: what it said is
                // lost, so every waiter tries again, and the subscription
                // is made anew.
                sub_close(n, false, now);
                wake_all(now);
                return;
            }
            pos += m.size;
            sub_message(n, nodes_, m.nodes, now);
        }
        if (s.fd < 0) {
            return;
        }
        memmove(s.rx, s.rx + pos, s.rx_size - pos);
        s.rx_size -= pos;
        if (r.size < space && transport_->buffered(sub_index(n)) == 0) {
            return;
        }
    }
}

void client_base::sub_message(std::uint8_t n, const resp_node* nodes, std::size_t count,
                              instant now) noexcept {
    detail::connection& c = conns_[n];
    subscription& s = c.sub;
    const std::size_t top = skip_attributes(nodes, count, 0);
    if (top >= count) {
        return;
    }
    const resp_node& t = nodes[top];
    if (s.phase == sub_phase::listening) {
        if (t.is_error()) {
            // Nothing was asked: a server in trouble. What it meant to say
            // is lost, so every waiter tries again, and it is made anew.
            sub_close(n, false, now);
            wake_all(now);
            return;
        }
        on_push(n, nodes, count, now);  // a published invalidation, or nothing of ours
        return;
    }
    if (s.phase != sub_phase::setup || s.replies_due == 0 || t.is_error()) {
        // NOPERM, an unknown command, NOAUTH: this server will not have it.
        sub_close(n, true, now);
        return;
    }
    --s.replies_due;
    if (t.type == resp_type::integer) {
        s.id = t.integer;  // CLIENT ID
    } else if (t.type == resp_type::array && t.count == 3 && top + 1 < count &&
               nodes[top + 1].has_text() && equals_icase(nodes[top + 1].text, "subscribe")) {
        s.subscribed = true;
    }
    if (s.replies_due > 0) {
        return;  // AUTH's +OK, or the CLIENT ID before SUBSCRIBE's answer
    }
    if (s.id <= 0 || !s.subscribed) {
        sub_close(n, true, now);
        return;
    }
    s.phase = sub_phase::listening;
    s.failures = 0;
    c.redirect_due = true;  // the lock connection sends it next (queue_requests)
}

void client_base::sub_close(std::uint8_t n, bool refused, instant now) noexcept {
    detail::connection& c = conns_[n];
    subscription& s = c.sub;
    sub_shut(n);
    c.report.tracking = false;  // its waiters poll until it is back
    if (refused) {
        s.phase = sub_phase::refused;
        return;
    }
    s.phase = sub_phase::backoff;
    s.due = backoff_until(s.failures, now);
}

void client_base::sub_shut(std::uint8_t n) noexcept {
    detail::connection& c = conns_[n];
    subscription& s = c.sub;
    if (s.fd >= 0) {
        transport_->close(sub_index(n));
        port::close(s.fd);
        s.fd = -1;
    }
    s.opening = false;
    s.subscribed = false;
    s.id = 0;
    s.rx_size = 0;
    s.replies_due = 0;
    s.sent = 0;
    s.setup_size = 0;
    c.redirect_due = false;
}

// The lock connection accepted (or refused) the redirect to the
// subscription whose id is `id`.
void client_base::tracking_reply(std::uint8_t n, std::uint32_t id, const resp_node* nodes,
                                 std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    const subscription& s = c.sub;
    const std::size_t top = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    const bool accepted = nodes != nullptr && top < count && !nodes[top].is_error();
    if (s.phase != sub_phase::listening || static_cast<std::uint32_t>(s.id) != id) {
        return;  // the subscription it named is gone; a new one redirects anew
    }
    if (!accepted) {
        sub_close(n, true, now);  // an ACL without CLIENT TRACKING, say
        return;
    }
    c.report.tracking = true;
    wake_all(now);  // whatever changed before the redirect was not told
}

// Appends CLIENT TRACKING ON REDIRECT <id> OPTIN NOLOOP when it is due and
// fits; false when it is due and does not fit yet.
bool client_base::queue_redirect(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (!c.redirect_due) {
        return true;
    }
    if (c.fifo.full()) {
        return false;
    }
    const decimal_arg id(c.sub.id);
    const str_view args[] = {"CLIENT", "TRACKING", "ON", "REDIRECT", id.view(), "OPTIN", "NOLOOP"};
    const resp_encoded e = resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, args, 7);
    if (e.error != resp_encode_errc::ok) {
        return false;
    }
    c.tx_size += e.size;
    c.redirect_due = false;
    detail::in_flight f;
    f.tag = static_cast<std::uint32_t>(c.sub.id);
    f.to = reply_to::tracking;
    push_in_flight(n, f, now);
    return true;
}

}  // namespace edgelock
