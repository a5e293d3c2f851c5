// The driver's stream endpoint (detail/stream.hpp): socket, session and
// buffer; its read loop is in stream_read.hpp.
#include "edgelock/detail/stream.hpp"

#include "client_internal.hpp"

namespace edgelock {
namespace detail {

resp_limits stream::decoder_limits() const noexcept {
    resp_limits l;
    l.max_bulk = capacity_;
    l.max_line = capacity_;
    l.max_elements = EDGELOCK_CLIENT_REPLY_NODES;
    return l;
}

void stream::attach(int fd, bool connected) noexcept {
    fd_ = fd;
    session_ = no_session;
    phase_ = connected ? stream_phase::opening : stream_phase::connecting;
    heard_ = false;
    rx_size_ = 0;
    skip_ = 0;
    decoder_.set_limits(decoder_limits());
    decoder_.reset();
}

port::net_result stream::finish_connect() noexcept {
    return port::connect_finish(fd_);
}

port::net_result stream::open(transport& t, const session_peer& peer) noexcept {
    phase_ = stream_phase::opening;
    const port::net_result r = t.open(fd_, peer, session_);
    if (r.status == port::net_status::ok) {
        phase_ = stream_phase::open;
    }
    return r;
}

port::net_result stream::proceed(transport& t) noexcept {
    const port::net_result r = t.proceed(session_, fd_);
    if (r.status == port::net_status::ok) {
        phase_ = stream_phase::open;
    }
    return r;
}

std::uint8_t stream::wants(const transport& t, bool write) const noexcept {
    switch (phase_) {
    case stream_phase::closed:
        return 0;
    case stream_phase::connecting:
        return port::want_write;
    case stream_phase::opening:
        return t.wants(session_);
    case stream_phase::open:
        break;
    }
    return static_cast<std::uint8_t>(port::want_read | (write ? port::want_write : 0));
}

bool stream::answers(const transport& t, std::uint8_t events) const noexcept {
    return (events & (wants(t, false) | port::ready_error)) != 0;
}

port::net_result stream::send(transport& t, const void* data, std::size_t size) noexcept {
    return t.send(session_, fd_, data, size);
}

node_error stream::failure(const transport& t) const noexcept {
    return session_ != no_session ? t.failure(session_) : node_error::none;
}

str_view stream::failure_text(const transport& t) const noexcept {
    return session_ != no_session ? t.failure_text(session_) : str_view();
}

void stream::close(transport& t) noexcept {
    ++generation_;
    if (session_ != no_session) {
        t.close(session_);
        session_ = no_session;
    }
    if (fd_ >= 0) {
        port::close(fd_);
        fd_ = -1;
    }
    phase_ = stream_phase::closed;
    heard_ = false;
    rx_size_ = 0;
    skip_ = 0;
    decoder_.reset();
}

}  // namespace detail
}  // namespace edgelock
