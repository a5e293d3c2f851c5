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
// last, the next one after each failure (with the node's backoff), through
// the client's transport (TLS for rediss-sentinel://), with the sentinel's
// own password when client_options has one. A sentinel given by name is
// looked up as the lock connection's hosts are (host_lookup), within the
// same sentinel_timeout as the connect. Its buffer holds one message at a
// time; one longer than that means a switch may have been missed, and the
// lock connection asks the sentinels again.
//
// A sentinel that answers where the master is but never confirms the
// SUBSCRIBE, or that falls silent, would keep the watch deaf while another
// announces a switch: the confirmation is awaited sentinel_timeout, and
// after watch_silence without a word the sentinel is PINGed and given
// sentinel_timeout to answer; either unanswered, the watch moves to the next
// sentinel (sentinel_watch.hpp).
#include "edgelock/detail/sentinel_watch.hpp"

#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/detail/backoff.hpp"
#include "edgelock/resp_encoder.hpp"
#include "node_url_internal.hpp"
#include "stream_read.hpp"

namespace edgelock {
namespace detail {

namespace {

constexpr std::size_t watch_setup_capacity = 2 * node_url_max_secret + 96;

// The buffer always holds the longest AUTH and the SUBSCRIBE.
std::size_t watch_setup(char* buf, std::size_t capacity, const client_options& o) {
    std::size_t size = encode_sentinel_auth(buf, capacity, o);
    const str_view subscribe[] = {"SUBSCRIBE", "+switch-master"};
    size += resp_encode_command(buf + size, capacity - size, subscribe, 2).size;
    return size;
}

// The next space-separated word of `s` from `pos`.
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

int sentinel_watch::fd() const noexcept {
    return phase_ == watch_phase::resolving ? lookup_.fd() : io_.fd();
}

std::uint8_t sentinel_watch::wants(const transport& t) const noexcept {
    if (phase_ == watch_phase::resolving) {
        return port::want_read;
    }
    return io_.wants(t, sent_ < setup_size_ || setup_size_ == 0);
}

instant sentinel_watch::next_deadline(bool wanted, instant now) const noexcept {
    switch (phase_) {
    case watch_phase::off:
        return wanted ? now : instant::never();
    case watch_phase::backoff:
        return wanted ? timers_.get(timer::due) : instant::never();
    case watch_phase::resolving:
    case watch_phase::connecting:
    case watch_phase::listening:
        return timers_.get(timer::due);
    }
    return instant::never();
}

std::uint8_t sentinel_watch::service(bool wanted, const watch_link& link, instant now) noexcept {
    lookup_.tidy(now, link.lookup_max_age);
    std::uint8_t out = watch_none;
    if ((phase_ == watch_phase::resolving || phase_ == watch_phase::connecting) &&
        timers_.expired(timer::due, now)) {
        out = close(link, now);  // the sentinel did not take the connection in time
    } else if (phase_ == watch_phase::listening && timers_.expired(timer::due, now)) {
        out = silent(link, now);
    }
    if (wanted && (phase_ == watch_phase::off ||
                   (phase_ == watch_phase::backoff && timers_.expired(timer::due, now)))) {
        out = static_cast<std::uint8_t>(out | connect(link, now));
    }
    return out;
}

// The sentinel the watch goes to now.
bool sentinel_watch::sentinel(const watch_link& link, str_view& host,
                              std::uint16_t& port) const noexcept {
    const node_address& a = *link.address;
    if (a.sentinel_count == 0) {
        return false;
    }
    const std::uint8_t i = static_cast<std::uint8_t>((link.front + tried_) % a.sentinel_count);
    return node_url_sentinel(a, i, host, port);
}

std::uint8_t sentinel_watch::connect(const watch_link& link, instant now) noexcept {
    std::uint16_t port = 0;
    if (!sentinel(link, named_, port)) {
        return close(link, now);
    }
    sent_ = 0;
    setup_size_ = 0;
    timers_.set(timer::due, now + link.options->sentinel_timeout);
    const port::net_result r = lookup_.begin(named_, now, link.lookup_max_age);
    if (r.status == port::net_status::ok) {
        return dial(link, now);
    }
    if (r.status == port::net_status::in_progress) {
        phase_ = watch_phase::resolving;
        return watch_none;
    }
    return close(link, now);
}

// The sentinel's host is looked up: connects to its first address.
std::uint8_t sentinel_watch::dial(const watch_link& link, instant now) noexcept {
    port::endpoint where;
    char address[port::address_text_capacity];
    const std::size_t size = lookup_.address(0, address, sizeof address);
    lookup_.end();
    if (size == 0 || !sentinel(link, named_, where.port)) {
        return close(link, now);
    }
    where.host = str_view(address, size);
    int fd = -1;
    const port::net_result r = port::connect(where, fd);
    if (r.status != port::net_status::ok && r.status != port::net_status::in_progress) {
        return close(link, now);
    }
    phase_ = watch_phase::connecting;
    io_.attach(fd, r.status == port::net_status::ok);
    if (r.status == port::net_status::ok) {
        return opened(io_.open(*link.via, session_peer_of(*link.address, named_)), link, now);
    }
    return watch_none;
}

std::uint8_t sentinel_watch::opened(port::net_result r, const watch_link& link,
                                    instant now) noexcept {
    if (r.status == port::net_status::in_progress) {
        return watch_none;
    }
    if (r.status != port::net_status::ok) {
        return close(link, now);
    }
    phase_ = watch_phase::listening;
    confirmed_ = false;
    pinged_ = false;
    timers_.set(timer::due, now + link.options->sentinel_timeout);  // for the confirmation
    sent_ = 0;
    return send_setup(link, now);
}

// Sends what is left of the set-up, written afresh each time (it may hold
// the sentinel's password).
std::uint8_t sentinel_watch::send_setup(const watch_link& link, instant now) noexcept {
    char buf[watch_setup_capacity];
    const std::size_t size = watch_setup(buf, sizeof buf, *link.options);
    port::net_result r{port::net_status::ok};
    if (size > sent_) {
        r = io_.send(*link.via, buf + sent_, size - sent_);
    }
    wipe(buf, size);
    if (r.status == port::net_status::would_block) {
        return watch_none;
    }
    if (r.status != port::net_status::ok) {
        return close(link, now);
    }
    sent_ = static_cast<std::uint16_t>(sent_ + r.size);
    setup_size_ = static_cast<std::uint16_t>(size);
    return watch_none;
}

std::uint8_t sentinel_watch::on_ready(std::uint8_t events, const watch_link& link,
                                      instant now) noexcept {
    if (phase_ == watch_phase::resolving) {
        const port::net_result r = lookup_.result();
        if (r.status == port::net_status::ok) {
            return dial(link, now);
        }
        return r.status == port::net_status::in_progress ? watch_none : close(link, now);
    }
    if (io_.phase() == stream_phase::connecting) {
        if (!io_.answers(*link.via, events)) {
            return watch_none;
        }
        const port::net_result r = io_.finish_connect();
        if (r.status == port::net_status::ok) {
            return opened(io_.open(*link.via, session_peer_of(*link.address, named_)), link, now);
        }
        return r.status == port::net_status::in_progress ? watch_none : close(link, now);
    }
    if (io_.phase() == stream_phase::opening) {
        return io_.answers(*link.via, events) ? opened(io_.proceed(*link.via), link, now)
                                              : watch_none;
    }
    if (phase_ != watch_phase::listening) {
        return watch_none;
    }
    std::uint8_t out = watch_none;
    if (sent_ < setup_size_ || setup_size_ == 0) {
        out = send_setup(link, now);
    }
    if (io_.fd() >= 0 && (events & (port::want_read | port::ready_error)) != 0) {
        out = static_cast<std::uint8_t>(out | read(link, now));
    }
    return out;
}

std::uint8_t sentinel_watch::silent(const watch_link& link, instant now) noexcept {
    if (!confirmed_ || pinged_) {
        return close(link, now);  // unconfirmed, or the PING unanswered: the next sentinel
    }
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    const port::net_result r = io_.send(*link.via, ping, sizeof ping - 1);
    if (r.status != port::net_status::ok || r.size != sizeof ping - 1) {
        return close(link, now);  // 14 bytes an idle socket does not take: not a good one
    }
    pinged_ = true;
    timers_.set(timer::due, now + link.options->sentinel_timeout);
    return watch_none;
}

std::uint8_t sentinel_watch::read(const watch_link& link, instant now) noexcept {
    events_ = watch_none;
    refused_ = false;
    heard_ = false;
    link_ = &link;
    port::net_result io;
    const read_end e = io_.read(*link.via, link.nodes, link.node_capacity, *this, io);
    link_ = nullptr;
    if (heard_ && confirmed_) {
        pinged_ = false;  // the sentinel is there: silence is counted from now
        timers_.set(timer::due, now + watch_silence);
    }
    std::uint8_t out = events_;
    if (refused_ || e == read_end::io_failed) {
        out = static_cast<std::uint8_t>(out | close(link, now));
    } else if ((events_ & watch_missed) != 0 || e == read_end::too_large ||
               e == read_end::malformed) {
        // A switch may have been missed: the lock connection asks again.
        out = static_cast<std::uint8_t>(out | close(link, now) | watch_missed);
    }
    return out;
}

// ["subscribe", "+switch-master", 1] confirms; ["message", "+switch-master",
// "NAME old-ip old-port new-ip new-port"] announces; an error refuses.
void sentinel_watch::on_message(const stream_message& m) noexcept {
    if (refused_ || (events_ & watch_missed) != 0) {
        return;
    }
    const resp_node* nodes = m.nodes;
    const std::size_t count = m.count;
    heard_ = true;
    if (nodes == nullptr) {
        events_ |= watch_missed;  // more than the node array: not one we can read
        return;
    }
    const std::size_t top = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    if (top < count && nodes[top].is_error()) {
        refused_ = true;  // a sentinel that will not tell us: the next one
        return;
    }
    const bool message = top + 3 < count && nodes[top].type == resp_type::array &&
                         nodes[top].count == 3 && nodes[top + 1].has_text() &&
                         nodes[top + 1].text == str_view("message") && nodes[top + 3].has_text();
    if (!message) {
        if (top + 1 < count && nodes[top + 1].has_text() &&
            nodes[top + 1].text == str_view("subscribe")) {
            failures_ = 0;  // listening: a good sentinel
            confirmed_ = true;
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
    if (name != link_->address->master_name || host.empty() || host.size > node_url_max_host ||
        !url_detail::parse_decimal(port_text, 65535, port) || port == 0) {
        return;  // another master's, or not one we can read
    }
    announced_.set(host, static_cast<std::uint16_t>(port));
    events_ |= watch_switched;
}

std::uint8_t sentinel_watch::close(const watch_link& link, instant now) noexcept {
    io_.close(*link.via);
    lookup_.end();
    sent_ = 0;
    setup_size_ = 0;
    confirmed_ = false;
    pinged_ = false;
    phase_ = watch_phase::backoff;
    if (link.address->sentinel_count > 0) {
        tried_ = static_cast<std::uint8_t>((tried_ + 1) % link.address->sentinel_count);
    }
    timers_.set(timer::due, backoff_until(*link.options, *link.random, failures_, now));
    return watch_none;
}

void sentinel_watch::shut(transport& t) noexcept {
    io_.close(t);
    lookup_.end();
    phase_ = watch_phase::off;
    failures_ = 0;
    confirmed_ = false;
    pinged_ = false;
    sent_ = 0;
    setup_size_ = 0;
    timers_.stop(timer::due);
}

}  // namespace detail
}  // namespace edgelock
