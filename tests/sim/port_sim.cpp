// The test port: every function of include/edgelock/port.hpp, answered by the
// sim::net that exists now (sim/net.hpp). Linked instead of port_posix.
//
// Calling the port with no sim::net alive is a broken test, not a network
// condition: it stops the process with a message rather than inventing one.
#include <cstdio>
#include <cstdlib>

#include "edgelock/port.hpp"
#include "sim/net.hpp"

namespace edgelock {
namespace port {

namespace {

sim::net& the_net(const char* call) noexcept {
    sim::net* n = sim::net::current();
    if (n == nullptr) {
        std::fprintf(stderr, "test port: port::%s() called with no sim::net alive\n", call);
        std::abort();
    }
    return *n;
}

}  // namespace

instant now() noexcept {
    return the_net("now").now();
}

bool random_bytes(void* buf, std::size_t size) noexcept {
    return the_net("random_bytes").random_bytes(buf, size);
}

const char* describe(net_status status) noexcept {
    switch (status) {
    case net_status::ok:
        return "ok";
    case net_status::in_progress:
        return "in progress";
    case net_status::would_block:
        return "would block";
    case net_status::closed:
        return "closed by peer";
    case net_status::refused:
        return "connection refused";
    case net_status::unreachable:
        return "unreachable";
    case net_status::timed_out:
        return "timed out";
    case net_status::reset:
        return "connection reset";
    case net_status::no_address:
        return "no (further) address";
    case net_status::resolve_failed:
        return "name resolution failed";
    case net_status::bad_argument:
        return "bad argument";
    case net_status::error:
        return "error";
    }
    return "unknown";
}

net_result connect(const endpoint& where, int& fd) noexcept {
    return the_net("connect").connect(where, fd);
}

net_result lookup_start(str_view host, int& id, bool numeric_only) noexcept {
    return the_net("lookup_start").lookup_start(host, id, numeric_only);
}

int lookup_fd(int id) noexcept {
    return the_net("lookup_fd").lookup_fd(id);
}

net_result lookup_result(int id) noexcept {
    return the_net("lookup_result").lookup_result(id);
}

bool lookup_is_for(int id, str_view host) noexcept {
    return the_net("lookup_is_for").lookup_is_for(id, host);
}

std::size_t lookup_address(int id, unsigned index, char* buf, std::size_t capacity) noexcept {
    return the_net("lookup_address").lookup_address(id, index, buf, capacity);
}

void lookup_release(int id) noexcept {
    the_net("lookup_release").lookup_release(id);
}

net_result connect_finish(int fd) noexcept {
    return the_net("connect_finish").connect_finish(fd);
}

net_result send(int fd, const void* data, std::size_t size) noexcept {
    return the_net("send").send(fd, data, size);
}

net_result recv(int fd, void* buf, std::size_t capacity) noexcept {
    return the_net("recv").recv(fd, buf, capacity);
}

void close(int fd) noexcept {
    the_net("close").close(fd);
}

int wait(wait_entry* entries, std::size_t count, instant deadline) noexcept {
    return the_net("wait").wait(entries, count, deadline);
}

}  // namespace port
}  // namespace edgelock
