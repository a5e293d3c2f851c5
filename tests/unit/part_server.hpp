// The server end of a driver part's connection, played by a test over
// loopback TCP, and the loop that drives the part (service() and on_ready()
// as its client would) until something happened. Every wait is bounded.
//
//   edgelock_test::part_server server;
//   part.service(true, link, port::now());
//   const int fd = server.accept();
//   CHECK(server.commands(fd, 2) == (std::vector<std::string>{"CLIENT ID", ...}));
//   server.send(fd, ":42\r\n");
//   events |= edgelock_test::pump(part, link, [&] { return part.id() != 0; });
#pragma once

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp_decoder.hpp"
#include "tools/net.hpp"

namespace edgelock_test {

// The address points into `url`: keep it.
inline edgelock::node_address parse(const char* url) {
    edgelock::node_address a;
    REQUIRE(edgelock::parse_node_url(edgelock::str_view(url), a) == edgelock::url_errc::ok);
    return a;
}

inline std::string text(edgelock::str_view s) {
    return std::string(s.data, s.size);
}

inline std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

// Long enough for a loaded machine, short enough to fail quickly.
constexpr int part_wait_ms = 1000;

class part_server {
public:
    part_server() { REQUIRE(listener_.fd() >= 0); }
    ~part_server() {
        for (const int fd : accepted_) {
            ::close(fd);
        }
    }
    part_server(const part_server&) = delete;
    part_server& operator=(const part_server&) = delete;

    std::uint16_t port() const { return listener_.port(); }
    std::string port_text() const { return std::to_string(port()); }

    // The next connection, within part_wait_ms; -1 when none came.
    int accept(int wait_ms = part_wait_ms) {
        pollfd p{listener_.fd(), POLLIN, 0};
        if (::poll(&p, 1, wait_ms) != 1) {
            return -1;
        }
        const int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
            accepted_.push_back(fd);
        }
        return fd;
    }

    static void send(int fd, const std::string& bytes) {
        REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(bytes.size()));
    }

    // The next `count` commands the part sent on fd, each as its arguments
    // joined by spaces.
    std::vector<std::string> commands(int fd, std::size_t count) {
        std::vector<std::string> out;
        const instant_ms deadline = ms_now() + part_wait_ms;
        while (out.size() < count) {
            edgelock::resp_node nodes[16];
            edgelock::resp_result r;
            r.status = edgelock::resp_status::incomplete;
            if (!pending_.empty()) {
                r = edgelock::resp_decode_whole(pending_.data(), pending_.size(), nodes, 16);
            }
            if (r.status == edgelock::resp_status::complete) {
                std::string joined;
                for (std::size_t i = 1; i < r.nodes; ++i) {
                    joined +=
                        (i > 1 ? " " : "") + std::string(nodes[i].text.data, nodes[i].text.size);
                }
                out.push_back(joined);
                pending_.erase(0, r.size);
                continue;
            }
            REQUIRE(r.status == edgelock::resp_status::incomplete);
            const long left = deadline - ms_now();
            pollfd p{fd, POLLIN, 0};
            REQUIRE(left > 0);
            REQUIRE(::poll(&p, 1, static_cast<int>(left)) == 1);
            char buf[1024];
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            REQUIRE(n > 0);
            pending_.append(buf, static_cast<std::size_t>(n));
        }
        return out;
    }

    // Whether the part closed fd (EOF within part_wait_ms); what it sent
    // before is read and dropped.
    static bool closed_by_peer(int fd) {
        for (;;) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, part_wait_ms) != 1) {
                return false;
            }
            char buf[1024];
            if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) {
                return true;
            }
        }
    }

private:
    using instant_ms = long;
    static instant_ms ms_now() { return static_cast<long>(edgelock::port::now().us / 1000); }

    loopback_listener listener_;
    std::vector<int> accepted_;
    std::string pending_;
};

// Drives a part as its client does, service() then on_ready() for what its
// fd is ready for, until done() or part_wait_ms; the events it returned.
template <class Part, class Link, class Done>
std::uint8_t pump(Part& part, const Link& link, bool wanted, Done done) {
    std::uint8_t events = 0;
    const edgelock::instant deadline =
        edgelock::port::now() + edgelock::duration::millis(part_wait_ms);
    while (!done()) {
        const edgelock::instant now = edgelock::port::now();
        REQUIRE(now < deadline);
        events = static_cast<std::uint8_t>(events | part.service(wanted, link, now));
        if (done()) {
            break;
        }
        if (part.fd() < 0) {
            continue;
        }
        edgelock::port::wait_entry e;
        e.fd = part.fd();
        e.want = part.wants(*link.via);
        if (e.want == 0) {
            continue;
        }
        if (edgelock::port::wait(&e, 1, now + edgelock::duration::millis(5)) == 1) {
            events = static_cast<std::uint8_t>(events |
                                               part.on_ready(e.ready, link, edgelock::port::now()));
        }
    }
    return events;
}

}  // namespace edgelock_test
