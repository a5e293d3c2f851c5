// The test port itself (sim/net.hpp), called through edgelock::port as the
// driver calls it: virtual time, addresses, delivery order and shape, a
// closed connection's late bytes, and a wait that could never end failing
// instead of hanging.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "driver/driver_helpers.hpp"
#include "driver/sim_sockets.hpp"
#include "edgelock/port.hpp"
#include "sim/net.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::port::net_status;
using edgelock::port::wait_entry;
namespace port = edgelock::port;

namespace {

using edgelock_test::endpoint_of;

// Sends everything, waiting for the socket when it is full (partial sends
// and would_block are part of the port's contract).
void send_all(int fd, const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const port::net_result r = port::send(fd, bytes.data() + sent, bytes.size() - sent);
        if (r.status == net_status::would_block) {
            wait_entry e{fd, port::want_write, 0};
            REQUIRE(port::wait(&e, 1, instant::never()) == 1);
            continue;
        }
        REQUIRE(r.status == net_status::ok);
        sent += r.size;
    }
}

const std::string ping = "*1\r\n$4\r\nPING\r\n";

}  // namespace

TEST_CASE("sim port: the clock moves only in wait, to the deadline or the next delivery",
          "[port][sim]") {
    sim::net n(1);
    n.add_nodes(1);
    const instant t0 = port::now();
    CHECK(t0 == n.now());
    CHECK(port::now() == t0);
    CHECK(port::wait(nullptr, 0, t0 + duration::millis(7)) == 0);
    CHECK(port::now() == t0 + duration::millis(7));
    // A delivery wakes a wait before its deadline.
    n.faults(0).latency_min_us = n.faults(0).latency_max_us = 4000;
    n.partial_sends = false;  // no socket-full moment to shift the timing
    const int fd = edgelock_test::open_node(n, 0);
    const instant sent = port::now();
    send_all(fd, ping);
    wait_entry e{fd, port::want_read, 0};
    REQUIRE(port::wait(&e, 1, sent + duration::seconds(1)) == 1);
    CHECK(e.ready == port::want_read);
    CHECK(port::now() == sent + duration::millis(4));
    char buf[64];
    n.recv_split = sim::split::whole;
    const port::net_result r = port::recv(fd, buf, sizeof buf);
    REQUIRE(r.status == net_status::ok);
    CHECK(std::string(buf, r.size) == "+PONG\r\n");
    CHECK(port::recv(fd, buf, sizeof buf).status == net_status::would_block);
    port::close(fd);
}

TEST_CASE("sim port: a wait that nothing could ever end fails instead of hanging", "[port][sim]") {
    sim::net n(2);
    n.add_nodes(1);
    const int fd = edgelock_test::open_node(n, 0);
    wait_entry e{fd, port::want_read, 0};
    CHECK(port::wait(&e, 1, instant::never()) == -1);
    CHECK_FALSE(n.failure().empty());
    port::close(fd);
}

TEST_CASE("sim port: addresses", "[port][sim]") {
    sim::net n(3);
    n.add_nodes(2);
    int fd = -1;
    CHECK(port::connect(endpoint_of("10.0.0.2", 7002), fd).status == net_status::in_progress);
    port::close(fd);
    CHECK(port::connect(endpoint_of("10.0.0.2", 7001), fd).status == net_status::refused);
    CHECK(port::connect(endpoint_of("10.9.9.9", 7001), fd).status == net_status::unreachable);
    CHECK(port::connect(endpoint_of("redis.example", 7001), fd).status ==
          net_status::bad_argument);  // names are looked up first
    n.crash(1);
    CHECK(port::connect(endpoint_of("10.0.0.2", 7002), fd).status == net_status::refused);
    n.restart(1, true);
    CHECK(port::connect(endpoint_of("10.0.0.2", 7002), fd).status == net_status::in_progress);
    port::close(fd);
    CHECK(n.url(1, ":pw", "/3") == "redis://:pw@10.0.0.2:7002/3");
}

TEST_CASE("sim port: one connection is FIFO, two nodes reorder", "[port][sim]") {
    sim::net n(4);
    n.add_nodes(2);
    n.faults(0).latency_min_us = n.faults(0).latency_max_us = 9000;
    n.faults(1).latency_min_us = n.faults(1).latency_max_us = 1000;
    n.recv_split = sim::split::whole;
    const int slow = edgelock_test::open_node(n, 0);
    const int fast = edgelock_test::open_node(n, 1);
    send_all(slow, ping + ping + ping);
    send_all(fast, ping);
    wait_entry e[2] = {{slow, port::want_read, 0}, {fast, port::want_read, 0}};
    REQUIRE(port::wait(e, 2, n.now() + duration::seconds(1)) == 1);
    CHECK(e[0].ready == 0);  // sent first, answered last
    CHECK(e[1].ready == port::want_read);
    char buf[64];
    CHECK(port::recv(fast, buf, sizeof buf).size == 7);
    REQUIRE(port::wait(e, 2, n.now() + duration::seconds(1)) == 1);
    const port::net_result r = port::recv(slow, buf, sizeof buf);
    CHECK(std::string(buf, r.size) == "+PONG\r\n+PONG\r\n+PONG\r\n");
    port::close(slow);
    port::close(fast);
}

TEST_CASE("sim port: replies handed out byte by byte or cut at an offset", "[port][sim]") {
    sim::net n(5);
    n.add_nodes(1);
    const int fd = edgelock_test::open_node(n, 0);
    send_all(fd, ping + ping);
    wait_entry e{fd, port::want_read, 0};
    REQUIRE(port::wait(&e, 1, n.now() + duration::seconds(1)) == 1);
    char buf[64];
    SECTION("byte by byte") {
        n.recv_split = sim::split::bytewise;
        std::string got;
        for (int i = 0; i < 14; ++i) {
            const port::net_result r = port::recv(fd, buf, sizeof buf);
            REQUIRE(r.status == net_status::ok);
            CHECK(r.size == 1);
            got.append(buf, r.size);
        }
        CHECK(got == "+PONG\r\n+PONG\r\n");
    }
    SECTION("each reply cut three bytes in") {
        n.recv_split = sim::split::at_offset;
        n.split_offset = 3;
        std::vector<std::string> pieces;
        for (port::net_result r = port::recv(fd, buf, sizeof buf); r.status == net_status::ok;
             r = port::recv(fd, buf, sizeof buf)) {
            pieces.emplace_back(buf, r.size);
        }
        CHECK(pieces == std::vector<std::string>{"+PO", "NG\r\n+PO", "NG\r\n"});
    }
    port::close(fd);
}

TEST_CASE("sim port: a crash resets the connection and drops what was unread", "[port][sim]") {
    sim::net n(6);
    n.add_nodes(1);
    const int fd = edgelock_test::open_node(n, 0);
    send_all(fd, ping);
    wait_entry e{fd, port::want_read, 0};
    REQUIRE(port::wait(&e, 1, n.now() + duration::seconds(1)) == 1);
    n.crash(0);
    REQUIRE(port::wait(&e, 1, n.now()) == 1);
    CHECK((e.ready & port::ready_error) != 0);
    char buf[16];
    CHECK(port::recv(fd, buf, sizeof buf).status == net_status::reset);
    CHECK(port::send(fd, ping.data(), ping.size()).status == net_status::reset);
    port::close(fd);
    REQUIRE(n.closes.size() == 1);
    CHECK_FALSE(n.closes[0].by_client);
}

TEST_CASE("sim port: random bytes are seeded, and can fail", "[port][sim]") {
    unsigned char a[16];
    unsigned char b[16];
    {
        sim::net n(7);
        REQUIRE(port::random_bytes(a, sizeof a));
    }
    {
        sim::net n(7);
        REQUIRE(port::random_bytes(b, sizeof b));
        CHECK(std::string(reinterpret_cast<char*>(a), sizeof a) ==
              std::string(reinterpret_cast<char*>(b), sizeof b));
        REQUIRE(port::random_bytes(b, sizeof b));
        CHECK(std::string(reinterpret_cast<char*>(a), sizeof a) !=
              std::string(reinterpret_cast<char*>(b), sizeof b));
        n.random_fails = true;
        CHECK_FALSE(port::random_bytes(b, sizeof b));
    }
}

TEST_CASE("sim port: a closed connection's requests still run, late when held back",
          "[port][sim][late]") {
    sim::net n(8);
    n.add_nodes(1);
    n.faults(0).latency_min_us = n.faults(0).latency_max_us = 4000;  // 2 ms each way
    n.partial_sends = false;
    std::vector<std::pair<std::string, instant>> ran;
    n.on_command = [&](int, std::uint64_t, const std::vector<std::string>& argv) {
        ran.emplace_back(argv[0] + (argv.size() > 1 ? " " + argv[1] : ""), n.now());
    };
    const std::string set = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
    const std::string del = "*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n";
    SECTION("without the fault: at their latency, replies thrown away") {
        const int fd = edgelock_test::open_node(n, 0);
        const instant sent = n.now();
        send_all(fd, set);
        port::close(fd);
        n.advance(duration::seconds(1));
        REQUIRE(ran.size() == 1);
        CHECK(ran[0].second == sent + duration::millis(2));
        CHECK(n.requests_after_close == 1);
        CHECK(n.held_back == 0);
        CHECK(edgelock_test::value_at(n, 0, "k") == "v");
    }
    SECTION("held back: in order, the window after the close") {
        n.faults(0).late_delivery = 1.0;
        n.faults(0).late_min_us = n.faults(0).late_max_us = 600000;
        const int fd = edgelock_test::open_node(n, 0);
        send_all(fd, set);
        n.advance(duration::micros(1000));  // on its way
        send_all(fd, del);
        const instant closed = n.now();
        port::close(fd);
        // A new connection's request runs at once, before the old ones.
        const int fresh = edgelock_test::open_node(n, 0);
        send_all(fresh, ping);
        n.advance(duration::seconds(1));
        REQUIRE(ran.size() == 3);
        CHECK(ran[0].first == "PING");
        CHECK(ran[1] == std::make_pair(std::string("SET k"), closed + duration::millis(600)));
        CHECK(ran[2] == std::make_pair(std::string("DEL k"), closed + duration::millis(600)));
        CHECK(n.requests_after_close == 2);
        CHECK(n.held_back == 1);
        CHECK(edgelock_test::value_at(n, 0, "k").empty());
        port::close(fresh);
    }
    SECTION("held back, then lost with a crash of the node") {
        n.faults(0).late_delivery = 1.0;
        n.faults(0).late_min_us = n.faults(0).late_max_us = 600000;
        const int fd = edgelock_test::open_node(n, 0);
        send_all(fd, set);
        port::close(fd);
        n.advance(duration::millis(300));
        n.crash(0);
        n.restart(0, true);
        n.advance(duration::seconds(1));
        CHECK(ran.empty());
        CHECK(n.held_back == 1);
    }
}

TEST_CASE("sim port: a request delay slows the way in only", "[port][sim][late]") {
    sim::net n(9);
    n.add_nodes(1);
    n.faults(0).latency_min_us = n.faults(0).latency_max_us = 4000;
    n.partial_sends = false;
    n.recv_split = sim::split::whole;
    instant ran;
    n.on_command = [&](int, std::uint64_t, const std::vector<std::string>&) { ran = n.now(); };
    const int fd = edgelock_test::open_node(n, 0);  // connects at the usual round trip
    n.faults(0).request_delay_us = 500000;
    const instant sent = n.now();
    send_all(fd, ping);
    n.faults(0).request_delay_us = 0;  // lifted: bytes already sent stay late
    wait_entry e{fd, port::want_read, 0};
    REQUIRE(port::wait(&e, 1, sent + duration::seconds(2)) == 1);
    CHECK(ran == sent + duration::millis(502));
    CHECK(n.now() == sent + duration::millis(504));
    port::close(fd);
}
