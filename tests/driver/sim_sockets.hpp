// Raw connections to simulated nodes through edgelock::port, for the tests
// that speak to sim::net below the driver (test_port_sim.cpp,
// test_sim_tracking_bcast.cpp): an endpoint, a connect that waits until the
// connection is up, and a read of at least so many bytes.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "edgelock/port.hpp"
#include "sim/net.hpp"

namespace edgelock_test {

inline edgelock::port::endpoint endpoint_of(const std::string& host, std::uint16_t p) {
    edgelock::port::endpoint e;
    e.host = edgelock::str_view(host.data(), host.size());
    e.port = p;
    return e;
}

// Connects to node i and waits until the connection is up.
inline int open_node(sim::net& n, int i) {
    namespace port = edgelock::port;
    int fd = -1;
    REQUIRE(port::connect(endpoint_of(n.host(i), n.port(i)), fd).status ==
            port::net_status::in_progress);
    port::wait_entry e{fd, port::want_write, 0};
    REQUIRE(port::wait(&e, 1, n.now() + edgelock::duration::seconds(1)) == 1);
    REQUIRE(port::connect_finish(fd).status == port::net_status::ok);
    return fd;
}

// Reads from fd until at least `size` bytes came, waiting up to a second of
// virtual time for each piece.
inline std::string read_at_least(int fd, std::size_t size) {
    namespace port = edgelock::port;
    char buf[512];
    std::string in;
    while (in.size() < size) {
        port::wait_entry e{fd, port::want_read, 0};
        REQUIRE(port::wait(&e, 1, port::now() + edgelock::duration::seconds(1)) == 1);
        const port::net_result r = port::recv(fd, buf, sizeof buf);
        REQUIRE(r.status == port::net_status::ok);
        in.append(buf, r.size);
    }
    return in;
}

}  // namespace edgelock_test
