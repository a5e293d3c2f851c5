// POSIX port: non-blocking stream sockets (TCP and Unix domain) and poll().
//
// connect() takes numeric addresses only (names go through lookup.cpp first).
// They are parsed with inet_pton(); getaddrinfo(AI_NUMERICHOST), which never
// asks the network, reads the forms it does not take (a scoped IPv6 address,
// "127.1") and is the one call here that allocates.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "edgelock/port.hpp"
#include "posix_internal.hpp"

namespace edgelock {
namespace port {
namespace {

// The longest single poll() of wait(): see there.
constexpr std::uint64_t max_poll_ms = 1000;

// send()/recv() take a size_t but return ssize_t; asking for more than fits
// would make a successful count look negative.
constexpr std::size_t max_io_size = static_cast<std::size_t>(SSIZE_MAX);

// Keepalive for a request/reply protocol that may sit idle between lock
// renewals: a dead peer (power cut, NAT timeout) is noticed within about a
// minute instead of the kernel default of two hours.
constexpr int keepalive_idle_s = 30;
constexpr int keepalive_interval_s = 10;
constexpr int keepalive_count = 3;

union socket_address {
    sockaddr sa;
    sockaddr_in in4;
    sockaddr_in6 in6;
    sockaddr_un un;
    sockaddr_storage storage;
};

// How connect() and a pending connection's SO_ERROR read.
net_status connect_status(int err) noexcept {
    switch (err) {
    case 0:
        return net_status::ok;
    case EINPROGRESS:
    // A non-blocking connect interrupted by a signal goes on in the
    // background, just as one that said EINPROGRESS.
    case EINTR:
        return net_status::in_progress;
    case ECONNREFUSED:
    case ENOENT:
        return net_status::refused;
    case ENETUNREACH:
    case ENETDOWN:
    case EHOSTUNREACH:
#ifdef EHOSTDOWN
    case EHOSTDOWN:
#endif
    case EADDRNOTAVAIL:
    case EAFNOSUPPORT:
        return net_status::unreachable;
    case ETIMEDOUT:
        return net_status::timed_out;
    default:
        return net_status::error;
    }
}

// How send() and recv() errors read. Besides a reset, a connection that
// keepalive or the peer's stack gave up on is broken for good, and the caller
// must reconnect just the same.
net_status transfer_status(int err) noexcept {
    if (err == EAGAIN || err == EWOULDBLOCK) {
        return net_status::would_block;
    }
    switch (err) {
    case EPIPE:
    case ECONNRESET:
    case ECONNABORTED:
    case ENETRESET:
    case ETIMEDOUT:
        return net_status::reset;
    default:
        return net_status::error;
    }
}

int set_int_option(int fd, int level, int name, int value) noexcept {
    return ::setsockopt(fd, level, name, &value, static_cast<socklen_t>(sizeof value));
}

// A new stream socket, non-blocking and close-on-exec, or -1 with errno set.
int open_stream_socket(int family) noexcept {
#if defined(SOCK_NONBLOCK) && defined(SOCK_CLOEXEC)
    return ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
#else
    // Without the atomic flags a fork()+exec() in another thread may still
    // inherit the descriptor between socket() and fcntl(); nothing better
    // exists on such systems.
    const int fd = ::socket(family, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || flags < 0 ||
        ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        const int err = errno;
        ::close(fd);
        errno = err;
        return -1;
    }
    return fd;
#endif
}

// Everything the header promises about a socket, or false with errno set.
bool configure(int fd, bool tcp) noexcept {
#ifdef SO_NOSIGPIPE
    // macOS and the BSDs lack MSG_NOSIGNAL on older releases; the socket
    // option is their way to never raise SIGPIPE.
    if (set_int_option(fd, SOL_SOCKET, SO_NOSIGPIPE, 1) != 0) {
        return false;
    }
#endif
    if (!tcp) {
        return true;
    }
    // Requests are small and answered one by one: Nagle would hold each one
    // back for the previous reply's delayed ACK.
    if (set_int_option(fd, IPPROTO_TCP, TCP_NODELAY, 1) != 0 ||
        set_int_option(fd, SOL_SOCKET, SO_KEEPALIVE, 1) != 0) {
        return false;
    }
    // The timings are best effort: a stack without them still has keepalive,
    // only with slower detection, which is no reason to refuse to connect.
#ifdef TCP_KEEPIDLE
    (void)set_int_option(fd, IPPROTO_TCP, TCP_KEEPIDLE, keepalive_idle_s);
#endif
#ifdef TCP_KEEPINTVL
    (void)set_int_option(fd, IPPROTO_TCP, TCP_KEEPINTVL, keepalive_interval_s);
#endif
#ifdef TCP_KEEPCNT
    (void)set_int_option(fd, IPPROTO_TCP, TCP_KEEPCNT, keepalive_count);
#endif
    return true;
}

net_result start_connect(const socket_address& addr, socklen_t size, bool tcp, int& fd) noexcept {
    const int s = open_stream_socket(addr.sa.sa_family);
    if (s < 0) {
        const int err = errno;
        return make_result(connect_status(err), err);
    }
    if (!configure(s, tcp)) {
        const int err = errno;
        ::close(s);
        return make_result(net_status::error, err);
    }
    if (::connect(s, &addr.sa, size) == 0) {
        fd = s;
        return make_result(net_status::ok);
    }
    const int err = errno;
    const net_status status = connect_status(err);
    if (status == net_status::in_progress) {
        fd = s;
    } else {
        ::close(s);
    }
    return make_result(status, err);
}

net_result connect_unix(str_view path, int& fd) noexcept {
    socket_address addr;
    std::memset(&addr, 0, sizeof addr);
    // The path must leave room for its terminator: not every system accepts
    // an unterminated sun_path, and an embedded NUL would silently name
    // another socket (a Linux abstract one, when it comes first).
    if (path.size >= sizeof addr.un.sun_path || contains_nul(path)) {
        return make_result(net_status::bad_argument);
    }
    addr.un.sun_family = AF_UNIX;
    std::memcpy(addr.un.sun_path, path.data, path.size);
    const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size + 1);
    return start_connect(addr, size, false, fd);
}

// A numeric form inet_pton() does not take (a scoped IPv6 address, "127.1"),
// read without the network; false when the host is not numeric.
bool numeric_address(const char* host, socket_address& out, socklen_t& out_size) noexcept {
    const addrinfo hints = stream_hints(AI_NUMERICHOST);
    addrinfo* list = nullptr;
    if (::getaddrinfo(host, nullptr, &hints, &list) != 0) {
        return false;
    }
    const bool usable = list != nullptr && list->ai_addr != nullptr &&
                        (list->ai_family == AF_INET || list->ai_family == AF_INET6) &&
                        list->ai_addrlen <= sizeof out.storage;
    if (usable) {
        std::memcpy(&out.storage, list->ai_addr, list->ai_addrlen);
        out_size = list->ai_addrlen;
    }
    ::freeaddrinfo(list);
    return usable;
}

net_result connect_tcp(str_view host, std::uint16_t port_number, int& fd) noexcept {
    if (host.empty() || host.size > max_host_size || contains_nul(host) || port_number == 0) {
        return make_result(net_status::bad_argument);
    }
    char name[max_host_size + 1];
    std::memcpy(name, host.data, host.size);
    name[host.size] = '\0';

    socket_address addr;
    std::memset(&addr, 0, sizeof addr);
    socklen_t size = 0;
    if (::inet_pton(AF_INET, name, &addr.in4.sin_addr) == 1) {
        addr.in4.sin_family = AF_INET;
        size = static_cast<socklen_t>(sizeof addr.in4);
    } else if (::inet_pton(AF_INET6, name, &addr.in6.sin6_addr) == 1) {
        addr.in6.sin6_family = AF_INET6;
        size = static_cast<socklen_t>(sizeof addr.in6);
    }
    if (size == 0 && !numeric_address(name, addr, size)) {
        return make_result(net_status::bad_argument);  // a name: look it up first
    }
    // The port goes in here rather than as getaddrinfo()'s service: the
    // literal path has no getaddrinfo() at all.
    if (addr.sa.sa_family == AF_INET) {
        addr.in4.sin_port = htons(port_number);
    } else {
        addr.in6.sin6_port = htons(port_number);
    }
    return start_connect(addr, size, true, fd);
}

}  // namespace

const char* describe(net_status status) noexcept {
    switch (status) {
    case net_status::ok:
        return "ok";
    case net_status::in_progress:
        return "connection in progress";
    case net_status::would_block:
        return "would block";
    case net_status::closed:
        return "closed by the peer";
    case net_status::refused:
        return "connection refused";
    case net_status::unreachable:
        return "network or host unreachable";
    case net_status::timed_out:
        return "connection timed out";
    case net_status::reset:
        return "connection reset";
    case net_status::no_address:
        return "no further address";
    case net_status::resolve_failed:
        return "name resolution failed";
    case net_status::bad_argument:
        return "bad host, port or path";
    case net_status::error:
        return "socket error";
    }
    // A value cast from an integer; still a printable string.
    return "unknown network status";
}

net_result connect(const endpoint& where, int& fd) noexcept {
    fd = -1;
    if (!where.unix_path.empty()) {
        return connect_unix(where.unix_path, fd);
    }
    return connect_tcp(where.host, where.port, fd);
}

net_result connect_finish(int fd) noexcept {
    int err = 0;
    socklen_t size = static_cast<socklen_t>(sizeof err);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &size) != 0) {
        const int e = errno;
        return make_result(net_status::error, e);
    }
    if (err == 0) {
        // SO_ERROR is 0 both when connected and while still connecting: a
        // stale readiness report must not pass for a finished connect.
        sockaddr_storage peer;
        socklen_t peer_size = static_cast<socklen_t>(sizeof peer);
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) {
            const int e = errno;
            return make_result(e == ENOTCONN ? net_status::in_progress : net_status::error, e);
        }
        return make_result(net_status::ok);
    }
    return make_result(connect_status(err), err);
}

net_result send(int fd, const void* data, std::size_t size) noexcept {
    if (size == 0) {
        return make_result(net_status::ok);
    }
    if (size > max_io_size) {
        size = max_io_size;
    }
#ifdef MSG_NOSIGNAL
    // A write to a connection the peer reset must fail with EPIPE, not kill
    // the process: a library cannot own the process's signal dispositions.
    const int flags = MSG_NOSIGNAL;
#else
    // SO_NOSIGPIPE, set in configure(), does the same where it exists.
    const int flags = 0;
#endif
    for (;;) {
        const ssize_t n = ::send(fd, data, size, flags);
        if (n >= 0) {
            net_result r = make_result(net_status::ok);
            r.size = static_cast<std::size_t>(n);
            return r;
        }
        const int err = errno;
        if (err != EINTR) {
            return make_result(transfer_status(err), err);
        }
    }
}

net_result recv(int fd, void* buf, std::size_t capacity) noexcept {
    // recv() into no room returns 0, which would read as end of stream.
    if (capacity == 0) {
        return make_result(net_status::ok);
    }
    if (capacity > max_io_size) {
        capacity = max_io_size;
    }
    for (;;) {
        const ssize_t n = ::recv(fd, buf, capacity, 0);
        if (n > 0) {
            net_result r = make_result(net_status::ok);
            r.size = static_cast<std::size_t>(n);
            return r;
        }
        if (n == 0) {
            return make_result(net_status::closed);
        }
        const int err = errno;
        if (err != EINTR) {
            return make_result(transfer_status(err), err);
        }
    }
}

void close(int fd) noexcept {
    if (fd < 0) {
        return;
    }
    // Linux releases the descriptor even when close() says EINTR, and
    // another thread may already have been given the same number: retrying
    // could close someone else's file. Nothing useful can be done with an
    // error here either.
    (void)::close(fd);
}

int wait(wait_entry* entries, std::size_t count, instant deadline) noexcept {
    if (count > wait_capacity || (entries == nullptr && count > 0)) {
        errno = EINVAL;
        return -1;
    }
    pollfd fds[wait_capacity];
    for (std::size_t i = 0; i < count; ++i) {
        wait_entry& e = entries[i];
        e.ready = 0;
        // poll() skips negative descriptors. An entry with nothing wanted is
        // still polled: errors and hang-ups are always reported.
        fds[i].fd = e.fd < 0 ? -1 : e.fd;
        short events = 0;
        if ((e.want & want_read) != 0) {
            events = static_cast<short>(events | POLLIN);
        }
        if ((e.want & want_write) != 0) {
            events = static_cast<short>(events | POLLOUT);
        }
        fds[i].events = events;
        fds[i].revents = 0;
    }

    for (;;) {
        int timeout_ms = -1;
        if (!deadline.is_never()) {
            // Rounded up: waking a fraction of a millisecond early would find
            // nothing due and come straight back with a zero timeout, spinning.
            const std::uint64_t left_us = (deadline - now()).us;
            const std::uint64_t ms = left_us / 1000 + (left_us % 1000 != 0 ? 1 : 0);
            // poll() counts its timeout on a clock that stands still while
            // the system is suspended; now() does not. Waiting in slices of
            // at most a second notices a deadline that passed during a
            // suspend within a second of the resume.
            timeout_ms = static_cast<int>(ms > max_poll_ms ? max_poll_ms : ms);
        }
        const int rc = ::poll(fds, static_cast<nfds_t>(count), timeout_ms);
        if (rc < 0) {
            // An interruption returns at once so the caller can look at
            // whatever flag the signal handler set.
            return errno == EINTR ? 0 : -1;
        }
        if (rc > 0) {
            break;
        }
        // poll() may return early (or the timeout was cut into slices);
        // 0 must mean the deadline has passed.
        if (!deadline.is_never() && now() >= deadline) {
            return 0;
        }
    }

    int ready_count = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const short revents = fds[i].revents;
        std::uint8_t ready = 0;
        if ((revents & POLLIN) != 0) {
            ready |= want_read;
        }
        if ((revents & POLLOUT) != 0) {
            ready |= want_write;
        }
        if ((revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
            ready |= ready_error;
        }
        if ((revents & POLLHUP) != 0) {
            // Some systems report a peer's close as POLLHUP without POLLIN; a
            // reader must still try recv() to see the end of stream.
            ready |= want_read;
        }
        entries[i].ready = ready;
        if (ready != 0) {
            ++ready_count;
        }
    }
    return ready_count;
}

}  // namespace port
}  // namespace edgelock
