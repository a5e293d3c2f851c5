// Loopback sockets for the tests and their tools: a port nothing listens on,
// a listener on a port the kernel picks, a blocking client connection, and a
// wait with a deadline.
//
//   edgelock_test::loopback_listener node;     // sees every connection attempt
//   ... run something against redis_url(node.port()) ...
//   CHECK(node.accepted() == 0);
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tools/clock.hpp"

namespace edgelock_test {

// A 127.0.0.1 port nothing listens on: one the kernel just handed out, read
// back and released. Another process could take it meanwhile; a caller that
// binds it retries on a fresh one if so.
inline std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        const int e = errno;
        ::close(fd);
        throw std::runtime_error(std::string("bind: ") + std::strerror(e));
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

// A blocking TCP connection to 127.0.0.1:port with Nagle off; -1, errno set,
// when it cannot be made.
inline int connect_loopback(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// Waits until fd is ready for `events` (POLLIN, POLLOUT) or mono_s() reaches
// deadline_s; an interrupted poll() resumes. True when ready.
inline bool wait_fd(int fd, short events, double deadline_s) {
    for (;;) {
        const double left = deadline_s - mono_s();
        if (left <= 0) {
            return false;
        }
        pollfd p{fd, events, 0};
        const int r = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
        if (r > 0) {
            return true;
        }
        if (r < 0 && errno != EINTR) {
            return false;
        }
    }
}

// A listening TCP socket on the loopback address of `family` (AF_INET or
// AF_INET6), on a port the kernel picks, non-blocking. Nobody answers on it,
// but the kernel completes every handshake into the backlog: accepted()
// counts the connection attempts. fd() is -1 when the family is not
// available here.
class loopback_listener {
public:
    explicit loopback_listener(int family = AF_INET) {
        const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            return;
        }
        const int one = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_storage ss{};
        socklen_t len = 0;
        if (family == AF_INET6) {
            auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
            a->sin6_family = AF_INET6;
            a->sin6_addr = in6addr_loopback;
            len = sizeof *a;
        } else {
            auto* a = reinterpret_cast<sockaddr_in*>(&ss);
            a->sin_family = AF_INET;
            a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            len = sizeof *a;
        }
        if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 128) != 0) {
            ::close(fd);
            return;
        }
        len = sizeof ss;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
            ::close(fd);
            return;
        }
        port_ = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
        fd_ = fd;
    }
    ~loopback_listener() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    loopback_listener(const loopback_listener&) = delete;
    loopback_listener& operator=(const loopback_listener&) = delete;

    int fd() const { return fd_; }
    std::uint16_t port() const { return port_; }

    // Connections made since the last call (accepted and closed).
    int accepted() {
        int n = 0;
        for (;;) {
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) {
                return n;
            }
            ::close(c);
            ++n;
        }
    }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

}  // namespace edgelock_test
