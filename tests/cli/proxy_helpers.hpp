// The fault proxy's tests' own tools (test_fault_proxy*.cpp): the proxy
// started in front of a target with its ports read from its first line, a raw
// loopback TCP client whose every call has a deadline, a control connection,
// and the status line's fields.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"

#ifndef EDGELOCK_FAULT_PROXY_PATH
#error "build with -DEDGELOCK_FAULT_PROXY_PATH=\"/path/to/fault_proxy\""
#endif

namespace edgelock_test {
namespace proxy_test {

using strings = std::vector<std::string>;

inline strings proxy_args(const std::string& target, const strings& extra) {
    strings a = {EDGELOCK_FAULT_PROXY_PATH, "--target", target, "--max-seconds", "60"};
    a.insert(a.end(), extra.begin(), extra.end());  // a later option wins
    return a;
}

// The proxy in front of a target; its ports read from its first line. The
// process helper kills it at the end of the test.
struct proxy_proc {
    process proc;
    std::uint16_t port = 0;
    std::uint16_t control = 0;

    explicit proxy_proc(const std::string& target, const strings& extra = {})
        : proc(proxy_args(target, extra), {}) {
        const std::string line = proc.read_line(5.0);
        INFO("first line: '" << line << "'");
        unsigned a = 0;
        unsigned b = 0;
        char tail = 0;
        REQUIRE(std::sscanf(line.c_str(), "%u %u%c", &a, &b, &tail) == 2);
        REQUIRE(a > 0);
        REQUIRE(a < 65536);
        REQUIRE(b > 0);
        REQUIRE(b < 65536);
        REQUIRE(a != b);
        port = static_cast<std::uint16_t>(a);
        control = static_cast<std::uint16_t>(b);
    }
    explicit proxy_proc(const redis_server& srv, const strings& extra = {})
        : proxy_proc("127.0.0.1:" + std::to_string(srv.port()), extra) {}
};

inline std::string resp(const strings& args) {
    std::string s = "*" + std::to_string(args.size()) + "\r\n";
    for (const std::string& a : args) {
        s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    }
    return s;
}

enum class ending { data, eof, reset, timeout };

inline const char* describe(ending e) {
    switch (e) {
    case ending::data:
        return "data";
    case ending::eof:
        return "eof";
    case ending::reset:
        return "reset";
    case ending::timeout:
        return "timeout";
    }
    return "?";
}

// A raw non-blocking loopback TCP client: every call has a deadline.
class tcp {
public:
    explicit tcp(std::uint16_t port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        REQUIRE(fd_ >= 0);
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
            return;
        }
        if (errno != EINPROGRESS) {
            error_ = errno;
            return;
        }
        if (!wait(POLLOUT, mono_s() + 3.0)) {
            error_ = ETIMEDOUT;
            return;
        }
        socklen_t len = sizeof error_;
        ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error_, &len);
    }
    ~tcp() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    tcp(const tcp&) = delete;
    tcp& operator=(const tcp&) = delete;

    int fd() const { return fd_; }
    // 0 when the connect succeeded, else its errno.
    int error() const { return error_; }

    // Closes the socket now: with a FIN, or with a RST (SO_LINGER 0) when
    // `abort`. Nothing may be called on it after but the destructor.
    void close(bool abort) {
        if (abort) {
            linger l{};
            l.l_onoff = 1;
            l.l_linger = 0;
            REQUIRE(::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l) == 0);
        }
        ::close(fd_);
        fd_ = -1;
    }

    void send(const std::string& bytes) {
        const double deadline = mono_s() + 5.0;
        std::size_t off = 0;
        while (off < bytes.size()) {
            const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
            if (n > 0) {
                off += static_cast<std::size_t>(n);
                continue;
            }
            REQUIRE((n < 0 && (errno == EAGAIN || errno == EINTR)));
            REQUIRE(wait(POLLOUT, deadline));
        }
    }

    // The next n bytes, or fewer when the deadline, an EOF or an error comes first.
    std::string read_n(std::size_t n, double timeout_s) {
        const double deadline = mono_s() + timeout_s;
        while (buf_.size() < n && fill(deadline) == ending::data) {
        }
        return take(std::min(n, buf_.size()));
    }

    // The next line without its newline, or "" when none came in time.
    std::string read_line(double timeout_s) {
        const double deadline = mono_s() + timeout_s;
        while (buf_.find('\n') == std::string::npos && fill(deadline) == ending::data) {
        }
        const std::size_t nl = buf_.find('\n');
        return nl == std::string::npos ? std::string() : take(nl + 1).substr(0, nl);
    }

    // What comes next: data, an EOF, an error (reset), or nothing in time.
    ending next(double timeout_s) {
        return buf_.empty() ? fill(mono_s() + timeout_s) : ending::data;
    }

private:
    bool wait(short events, double deadline) { return wait_fd(fd_, events, deadline); }

    ending fill(double deadline) {
        for (;;) {
            char tmp[65536];
            const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
            if (n > 0) {
                buf_.append(tmp, static_cast<std::size_t>(n));
                return ending::data;
            }
            if (n == 0) {
                return ending::eof;
            }
            if (errno != EAGAIN && errno != EINTR) {
                return ending::reset;
            }
            if (!wait(POLLIN, deadline)) {
                return ending::timeout;
            }
        }
    }

    std::string take(std::size_t n) {
        std::string s = buf_.substr(0, n);
        buf_.erase(0, n);
        return s;
    }

    int fd_ = -1;
    int error_ = 0;
    std::string buf_;
};

// A control connection: one command out, its one-line answer back.
class controller {
public:
    explicit controller(const proxy_proc& p) : t_(p.control) { REQUIRE(t_.error() == 0); }
    std::string operator()(const std::string& line) {
        t_.send(line + "\n");
        return t_.read_line(3.0);
    }
    tcp& socket() { return t_; }

private:
    tcp t_;
};

// A number from a status line ("conns=3" -> 3); -1 when absent.
inline long long field(const std::string& status, const std::string& name) {
    const std::string key = " " + name + "=";
    const std::size_t at = status.find(key);
    return at == std::string::npos ? -1 : std::atoll(status.c_str() + at + key.size());
}

inline std::string mode_of(const std::string& status) {
    const std::size_t at = status.find(" mode=");
    return at == std::string::npos ? std::string()
                                   : status.substr(at + 6, status.find(' ', at + 6) - at - 6);
}

// A client connected through the proxy, checked to work.
inline void ping_ok(tcp& c) {
    REQUIRE(c.error() == 0);
    c.send(resp({"PING"}));
    REQUIRE(c.read_n(7, 5.0) == "+PONG\r\n");
}

// A connection the proxy resets (or closes) at once: the reset may already
// have failed the connect, or comes with the next read.
inline void check_cut(tcp& c) {
    if (c.error() != 0) {
        CHECK(c.error() == ECONNRESET);
        return;
    }
    c.send(resp({"PING"}));  // may fail quietly (MSG_NOSIGNAL): the read tells
    const ending e = c.next(3.0);
    INFO(describe(e));
    CHECK((e == ending::reset || e == ending::eof));
}

// Seconds a PING takes to go and come back on c.
inline double ping_seconds(tcp& c) {
    const double t0 = mono_s();
    ping_ok(c);
    return mono_s() - t0;
}

inline std::string incr_replies(int from, int to) {
    std::string s;
    for (int i = from; i <= to; ++i) {
        s += ":" + std::to_string(i) + "\r\n";
    }
    return s;
}

}  // namespace proxy_test
}  // namespace edgelock_test
