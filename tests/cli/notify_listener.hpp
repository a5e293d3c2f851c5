// A NOTIFY_SOCKET for the agent's tests: a unix datagram socket a test binds
// and reads the agent's STATUS= lines from, as systemd would.
#pragma once

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace edgelock_test {

// A unix datagram socket bound to `name` (a path, or "@name": abstract).
struct notify_listener {
    int fd = -1;
    std::string name;

    explicit notify_listener(const std::string& n) : name(n) {
        fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        REQUIRE(fd >= 0);
        sockaddr_un a;
        std::memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        REQUIRE(n.size() < sizeof a.sun_path);
        std::memcpy(a.sun_path, n.data(), n.size());
        if (n[0] == '@') {
            a.sun_path[0] = '\0';
        }
        const socklen_t size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n.size());
        REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), size) == 0);
    }
    ~notify_listener() { ::close(fd); }
    notify_listener(const notify_listener&) = delete;
    notify_listener& operator=(const notify_listener&) = delete;

    // Every datagram queued now.
    std::vector<std::string> take() {
        std::vector<std::string> got;
        char buf[512];
        for (;;) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n < 0) {
                break;
            }
            got.emplace_back(buf, static_cast<std::size_t>(n));
        }
        return got;
    }
};

}  // namespace edgelock_test
