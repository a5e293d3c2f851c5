// Waiters told over RESP2. A node spoken to in RESP2 (client_options::resp3
// false, or a server or proxy without HELLO) cannot push on the lock
// connection, so the client keeps a second connection to it, subscribed to
// __redis__:invalidate, and a waiter's tracking is redirected there:
// CLIENT TRACKING ON REDIRECT <its CLIENT ID> BCAST NOLOOP PREFIX <name>. The
// server then publishes on that channel what it would have pushed, and a
// waiter is woken as over RESP3 (notify.cpp).
//
// It lives while the lock connection is ready. When it drops, the node's
// waiters poll (node(i).tracking is false) and it is made again after a
// backoff; once it is subscribed again, the lock connection switches off the
// tracking redirected to the old one and every waiter tries at once, for
// what was missed meanwhile, asking for its name anew. A server that refuses
// a part of it (an ACL without SUBSCRIBE or CLIENT) is not asked again until
// the lock connection is made anew: its waiters poll. Redis before 6 has no
// tracking and is not asked.
//
// Over TLS it takes a session of its own; a transport without room refuses
// it, and that node's waiters poll.
#include "edgelock/detail/subscription.hpp"

#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/detail/backoff.hpp"
#include "stream_read.hpp"

namespace edgelock {
namespace detail {

namespace {

// A subscription's set-up: AUTH with the longest user and password, CLIENT
// ID and SUBSCRIBE, with their RESP framing.
constexpr std::size_t setup_capacity = 2 * node_url_max_secret + 128;

}  // namespace

std::uint8_t subscription::wants(const transport& t) const noexcept {
    return io_.wants(t, phase_ == sub_phase::setup && sent_ < setup_size_);
}

instant subscription::next_deadline(bool wanted, instant now) const noexcept {
    switch (phase_) {
    case sub_phase::off:
        return wanted ? now : instant::never();
    case sub_phase::backoff:
        return wanted ? timers_.get(timer::due) : instant::never();
    case sub_phase::connecting:
    case sub_phase::setup:
        return timers_.get(timer::due);
    case sub_phase::listening:
    case sub_phase::refused:
        break;
    }
    return instant::never();
}

std::uint8_t subscription::service(bool wanted, const sub_link& link, instant now) noexcept {
    switch (phase_) {
    case sub_phase::off:
        return wanted ? connect(link, now) : sub_none;
    case sub_phase::backoff:
        return wanted && timers_.expired(timer::due, now) ? connect(link, now) : sub_none;
    case sub_phase::connecting:
    case sub_phase::setup:
        return timers_.expired(timer::due, now) ? close(false, link, now) : sub_none;
    case sub_phase::listening:
    case sub_phase::refused:
        break;
    }
    return sub_none;
}

// Connects to the very address the lock connection reached: the server
// redirects tracking only to a client of its own.
std::uint8_t subscription::connect(const sub_link& link, instant now) noexcept {
    phase_ = sub_phase::connecting;
    subscribed_ = false;
    id_ = 0;
    timers_.set(timer::due, now + link.options->connect_timeout);
    int fd = -1;
    const port::net_result r = port::connect(link.where, fd);
    if (r.status == port::net_status::ok || r.status == port::net_status::in_progress) {
        io_.attach(fd, r.status == port::net_status::ok);
        if (r.status == port::net_status::ok) {
            return opened(io_.open(*link.via, session_peer_of(*link.address, link.named)), link,
                          now);
        }
        return sub_none;
    }
    return close(false, link, now);
}

// The socket is up; the transport's open() or proceed() said `r`.
std::uint8_t subscription::opened(port::net_result r, const sub_link& link, instant now) noexcept {
    if (r.status == port::net_status::in_progress) {
        return sub_none;
    }
    if (r.status != port::net_status::ok) {
        // No session left (a transport sized for the lock connections only)
        // will not get better by trying again.
        return close(r.status == port::net_status::bad_argument, link, now);
    }
    phase_ = sub_phase::setup;
    sent_ = 0;
    return send_setup(link, now);
}

// Sends what is left of the set-up. It is written afresh each time rather
// than kept (it may hold the password), and the same every time.
std::uint8_t subscription::send_setup(const sub_link& link, instant now) noexcept {
    char buf[setup_capacity];
    std::uint8_t replies = 0;
    const std::size_t size =
        subscription_setup(buf, sizeof buf, *link.address, *link.options, replies);
    port::net_result r{port::net_status::bad_argument};
    if (size > sent_) {
        r = io_.send(*link.via, buf + sent_, size - sent_);
    }
    wipe(buf, size);
    // Its size first: a first send that would block leaves wants() asking
    // for writability, not waiting to read replies to nothing sent.
    setup_size_ = static_cast<std::uint16_t>(size);
    replies_due_ = replies;
    if (r.status == port::net_status::would_block) {
        return sub_none;  // wants() asks for writability
    }
    if (r.status != port::net_status::ok) {
        return close(false, link, now);
    }
    sent_ = static_cast<std::uint16_t>(sent_ + r.size);
    return sub_none;
}

std::uint8_t subscription::on_ready(std::uint8_t events, const sub_link& link,
                                    instant now) noexcept {
    if (io_.phase() == stream_phase::connecting) {
        if (!io_.answers(*link.via, events)) {
            return sub_none;
        }
        const port::net_result r = io_.finish_connect();
        if (r.status == port::net_status::ok) {
            return opened(io_.open(*link.via, session_peer_of(*link.address, link.named)), link,
                          now);
        }
        return r.status == port::net_status::in_progress ? sub_none : close(false, link, now);
    }
    if (io_.phase() == stream_phase::opening) {
        return io_.answers(*link.via, events) ? opened(io_.proceed(*link.via), link, now)
                                              : sub_none;
    }
    std::uint8_t out = sub_none;
    if ((events & port::want_write) != 0 && phase_ == sub_phase::setup && sent_ < setup_size_) {
        out = send_setup(link, now);
    }
    if (io_.fd() >= 0 && (events & (port::want_read | port::ready_error)) != 0) {
        out = static_cast<std::uint8_t>(out | read(link, now));
    }
    return out;
}

std::uint8_t subscription::read(const sub_link& link, instant now) noexcept {
    events_ = sub_none;
    refused_ = false;
    link_ = &link;
    now_ = now;
    port::net_result io;
    const read_end e = io_.read(*link.via, link.nodes, link.node_capacity, *this, io);
    link_ = nullptr;
    std::uint8_t out = events_;
    if (refused_) {
        out = static_cast<std::uint8_t>(out | close(true, link, now));
    } else if ((events_ & sub_missed) != 0 || e == read_end::too_large ||
               e == read_end::malformed) {
        // What it said is lost: every waiter tries again, and it is made anew.
        out = static_cast<std::uint8_t>(out | close(false, link, now) | sub_missed);
    } else if (e == read_end::io_failed) {
        out = static_cast<std::uint8_t>(out | close(false, link, now));
    }
    return out;
}

void subscription::on_message(const stream_message& m) noexcept {
    if (refused_ || (events_ & sub_missed) != 0) {
        return;  // closing after this read: the rest is not heard
    }
    const resp_node* nodes = m.nodes;
    const std::size_t count = m.count;
    const std::size_t top = nodes != nullptr ? skip_attributes(nodes, count, 0) : count;
    if (nodes == nullptr) {
        // Longer than the node array: what it said is lost, so every waiter
        // tries again, and it is made anew.
        events_ |= sub_missed;
        return;
    }
    if (top >= count) {
        return;
    }
    const resp_node& t = nodes[top];
    if (phase_ == sub_phase::listening) {
        if (t.is_error()) {
            // Nothing was asked: a server in trouble. What it meant to say
            // is lost, so every waiter tries again, and it is made anew.
            events_ |= sub_missed;
            return;
        }
        link_->push.fn(link_->push.ctx, link_->push.node, nodes, count,
                       now_);  // ours, or nothing of ours
        return;
    }
    if (phase_ != sub_phase::setup || replies_due_ == 0 || t.is_error()) {
        refused_ = true;  // NOPERM, an unknown command, NOAUTH: this server will not have it
        return;
    }
    --replies_due_;
    if (t.type == resp_type::integer) {
        id_ = t.integer;  // CLIENT ID
    } else if (t.type == resp_type::array && t.count == 3 && top + 1 < count &&
               nodes[top + 1].has_text() && equals_icase(nodes[top + 1].text, "subscribe")) {
        subscribed_ = true;
    }
    if (replies_due_ > 0) {
        return;  // AUTH's +OK, or the CLIENT ID before SUBSCRIBE's answer
    }
    if (id_ <= 0 || !subscribed_) {
        refused_ = true;
        return;
    }
    phase_ = sub_phase::listening;
    failures_ = 0;
    timers_.stop(timer::due);
    events_ |= sub_listening;
}

std::uint8_t subscription::close(bool refused, const sub_link& link, instant now) noexcept {
    close_io(*link.via);
    if (refused) {
        phase_ = sub_phase::refused;
        timers_.stop(timer::due);
    } else {
        phase_ = sub_phase::backoff;
        timers_.set(timer::due, backoff_until(*link.options, *link.random, failures_, now));
    }
    return sub_lost;
}

void subscription::shut(transport& t) noexcept {
    close_io(t);
    phase_ = sub_phase::off;
    failures_ = 0;
}

void subscription::close_io(transport& t) noexcept {
    io_.close(t);
    id_ = 0;
    replies_due_ = 0;
    sent_ = 0;
    setup_size_ = 0;
    timers_.stop(timer::due);
}

}  // namespace detail
}  // namespace edgelock
