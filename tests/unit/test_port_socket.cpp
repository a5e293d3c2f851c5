// The POSIX port: stream sockets and wait(), over loopback and Unix sockets.
//
// Every socket is owned by an fd_guard so that a failed REQUIRE still closes
// it, and every wait has a deadline so a broken port fails instead of hanging.
// SIGPIPE is deliberately left at its default: a send to a broken connection
// must not kill the process, and that is for the port to ensure.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/net.hpp"
#include "tools/skip.hpp"

using namespace edgelock;

namespace {

// Long enough for a slow CI machine or qemu, short enough to fail quickly.
constexpr duration io_timeout = duration::seconds(2);

struct fd_guard {
    int fd = -1;
    fd_guard() = default;
    explicit fd_guard(int f) : fd(f) {}
    fd_guard(const fd_guard&) = delete;
    fd_guard& operator=(const fd_guard&) = delete;
    ~fd_guard() { reset(); }
    void reset(int f = -1) {
        if (fd >= 0) {
            ::close(fd);
        }
        fd = f;
    }
    int release() {
        const int f = fd;
        fd = -1;
        return f;
    }
};

// Polls for one event on one descriptor, up to io_timeout.
bool poll_for(int fd, short events) {
    pollfd p{};
    p.fd = fd;
    p.events = events;
    const int ms = static_cast<int>(io_timeout.ms());
    int rc = 0;
    do {
        rc = ::poll(&p, 1, ms);
    } while (rc < 0 && errno == EINTR);
    return rc == 1;
}

// Accepts one connection within io_timeout, or returns -1.
int accept_within(int listen_fd) {
    if (!poll_for(listen_fd, POLLIN)) {
        return -1;
    }
    return ::accept(listen_fd, nullptr, nullptr);
}

// Waits for a port socket to become ready for `want`; returns the ready bits.
std::uint8_t wait_for(int fd, std::uint8_t want) {
    port::wait_entry e;
    e.fd = fd;
    e.want = want;
    const int n = port::wait(&e, 1, port::now() + io_timeout);
    return n == 1 ? e.ready : 0;
}

// Completes an ok or in_progress connect() the way the driver does: wait until
// writable, then ask connect_finish(). Any other status is returned as is.
port::net_status finish(const port::net_result& started, int fd) {
    if (started.status != port::net_status::in_progress) {
        return started.status;
    }
    REQUIRE(fd >= 0);
    REQUIRE(wait_for(fd, port::want_write) != 0);
    return port::connect_finish(fd).status;
}

// Connects to `where` (first address) and accepts on `listen_fd`; both ends
// end up in the guards.
void connect_pair(const port::endpoint& where, int listen_fd, fd_guard& client, fd_guard& server) {
    int fd = -1;
    const port::net_result r = port::connect(where, fd);
    client.reset(fd);
    REQUIRE((r.status == port::net_status::ok || r.status == port::net_status::in_progress));
    REQUIRE(fd >= 0);
    REQUIRE(finish(r, fd) == port::net_status::ok);
    server.reset(accept_within(listen_fd));
    REQUIRE(server.fd >= 0);
}

// Sends all of `text` through the port, waiting when the buffer is full.
void send_all(int fd, const std::string& text) {
    std::size_t done = 0;
    const instant deadline = port::now() + io_timeout;
    while (done < text.size()) {
        const port::net_result r = port::send(fd, text.data() + done, text.size() - done);
        if (r.status == port::net_status::would_block) {
            REQUIRE(port::now() < deadline);
            REQUIRE(wait_for(fd, port::want_write) != 0);
            continue;
        }
        REQUIRE(r.status == port::net_status::ok);
        REQUIRE(r.size > 0);
        done += r.size;
    }
}

// Receives exactly `size` bytes through the port, waiting when none are there.
std::string recv_exactly(int fd, std::size_t size) {
    std::string out;
    char buf[256];
    const instant deadline = port::now() + io_timeout;
    while (out.size() < size) {
        const port::net_result r = port::recv(fd, buf, sizeof buf);
        if (r.status == port::net_status::would_block) {
            REQUIRE(port::now() < deadline);
            REQUIRE((wait_for(fd, port::want_read) & port::want_read) != 0);
            continue;
        }
        REQUIRE(r.status == port::net_status::ok);
        REQUIRE(r.size > 0);
        out.append(buf, r.size);
    }
    return out;
}

// Checks a port socket and its accepted peer carry bytes both ways, with
// the peer on plain blocking POSIX calls.
void check_round_trip(int client, int server) {
    send_all(client, "PING\r\n");
    char buf[16];
    std::size_t got = 0;
    while (got < 6) {
        REQUIRE(poll_for(server, POLLIN));
        const ssize_t n = ::recv(server, buf + got, sizeof buf - got, 0);
        REQUIRE(n > 0);
        got += static_cast<std::size_t>(n);
    }
    REQUIRE(std::string(buf, got) == "PING\r\n");

    const char reply[] = "+PONG\r\n";
    REQUIRE(::send(server, reply, sizeof reply - 1, 0) == static_cast<ssize_t>(sizeof reply - 1));
    REQUIRE(recv_exactly(client, sizeof reply - 1) == reply);
}

port::endpoint tcp_endpoint(const char* host, std::uint16_t p) {
    port::endpoint e;
    e.host = str_view(host);
    e.port = p;
    return e;
}

int int_option(int fd, int level, int name) {
    int value = 0;
    socklen_t len = sizeof value;
    REQUIRE(::getsockopt(fd, level, name, &value, &len) == 0);
    return value;
}

// Catches SIGALRM for the lifetime of the object (no SA_RESTART) and fires it
// every `period_us` microseconds, so a wait is interrupted even if the first
// signal lands before poll() starts.
struct alarm_timer {
    struct sigaction old_action {};
    bool armed = false;

    static void on_alarm(int) {}

    explicit alarm_timer(long period_us) {
        struct sigaction sa {};
        sa.sa_handler = on_alarm;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0;
        REQUIRE(::sigaction(SIGALRM, &sa, &old_action) == 0);
        itimerval t{};
        t.it_value.tv_usec = period_us;
        t.it_interval.tv_usec = period_us;
        armed = ::setitimer(ITIMER_REAL, &t, nullptr) == 0;
    }
    alarm_timer(const alarm_timer&) = delete;
    alarm_timer& operator=(const alarm_timer&) = delete;
    ~alarm_timer() {
        itimerval off{};
        ::setitimer(ITIMER_REAL, &off, nullptr);
        ::sigaction(SIGALRM, &old_action, nullptr);
    }
};

const port::net_status all_statuses[] = {
    port::net_status::ok,           port::net_status::in_progress,
    port::net_status::would_block,  port::net_status::closed,
    port::net_status::refused,      port::net_status::unreachable,
    port::net_status::timed_out,    port::net_status::reset,
    port::net_status::no_address,   port::net_status::resolve_failed,
    port::net_status::bad_argument, port::net_status::error,
};

}  // namespace

TEST_CASE("port socket: describe() names every status", "[port]") {
    for (const port::net_status s : all_statuses) {
        const char* text = port::describe(s);
        REQUIRE(text != nullptr);
        REQUIRE(std::strlen(text) > 0);
    }
    // Distinct phrases, so a log line says which one happened.
    for (const port::net_status a : all_statuses) {
        for (const port::net_status b : all_statuses) {
            if (a != b) {
                REQUIRE(std::strcmp(port::describe(a), port::describe(b)) != 0);
            }
        }
    }
    const char* unknown = port::describe(static_cast<port::net_status>(200));
    REQUIRE(unknown != nullptr);
    REQUIRE(std::strlen(unknown) > 0);
}

TEST_CASE("port socket: TCP over IPv4 loopback connects and carries bytes", "[port]") {
    edgelock_test::loopback_listener listener(AF_INET);
    REQUIRE(listener.fd() >= 0);
    fd_guard client;
    fd_guard server;
    connect_pair(tcp_endpoint("127.0.0.1", listener.port()), listener.fd(), client, server);

    SECTION("the socket is set up for request/reply") {
        REQUIRE(int_option(client.fd, IPPROTO_TCP, TCP_NODELAY) != 0);
        REQUIRE(int_option(client.fd, SOL_SOCKET, SO_KEEPALIVE) != 0);
#if defined(__linux__) && defined(TCP_KEEPIDLE) && defined(TCP_KEEPINTVL) && defined(TCP_KEEPCNT)
        CHECK(int_option(client.fd, IPPROTO_TCP, TCP_KEEPIDLE) == 30);
        CHECK(int_option(client.fd, IPPROTO_TCP, TCP_KEEPINTVL) == 10);
        CHECK(int_option(client.fd, IPPROTO_TCP, TCP_KEEPCNT) == 3);
#endif
        const int fd_flags = ::fcntl(client.fd, F_GETFD);
        REQUIRE(fd_flags >= 0);
        REQUIRE((fd_flags & FD_CLOEXEC) != 0);
        const int fl_flags = ::fcntl(client.fd, F_GETFL);
        REQUIRE(fl_flags >= 0);
        REQUIRE((fl_flags & O_NONBLOCK) != 0);
    }

    SECTION("send and recv round trip") {
        check_round_trip(client.fd, server.fd);
    }

    SECTION("zero-sized send and recv do nothing") {
        const port::net_result s = port::send(client.fd, "x", 0);
        REQUIRE(s.status == port::net_status::ok);
        REQUIRE(s.size == 0);
        char buf[1];
        const port::net_result r = port::recv(client.fd, buf, 0);
        REQUIRE(r.status == port::net_status::ok);
        REQUIRE(r.size == 0);
    }

    SECTION("recv with nothing to read would block") {
        char buf[16];
        const port::net_result r = port::recv(client.fd, buf, sizeof buf);
        REQUIRE(r.status == port::net_status::would_block);
        REQUIRE(r.size == 0);
    }

    SECTION("the peer's close reads as closed after any pending bytes") {
        REQUIRE(::send(server.fd, "ab", 2, 0) == 2);
        server.reset();
        REQUIRE(recv_exactly(client.fd, 2) == "ab");
        REQUIRE((wait_for(client.fd, port::want_read) & port::want_read) != 0);
        char buf[16];
        const port::net_result r = port::recv(client.fd, buf, sizeof buf);
        REQUIRE(r.status == port::net_status::closed);
        REQUIRE(r.size == 0);
    }

    SECTION("a name is not connected to: it is looked up first") {
        int fd = 12345;
        const port::net_result r = port::connect(tcp_endpoint("localhost", listener.port()), fd);
        REQUIRE(r.status == port::net_status::bad_argument);
        REQUIRE(fd == -1);
    }
}

TEST_CASE("port socket: a closed TCP port is refused", "[port]") {
    std::uint16_t free_port = 0;
    {
        // Bound and listening, then closed: nothing listens there any more,
        // and the kernel will not hand the port out again right away.
        edgelock_test::loopback_listener probe(AF_INET);
        REQUIRE(probe.fd() >= 0);
        free_port = probe.port();
    }
    int fd = -1;
    const port::net_result r = port::connect(tcp_endpoint("127.0.0.1", free_port), fd);
    fd_guard client(fd);
    if (r.status == port::net_status::refused) {
        REQUIRE(fd == -1);
        REQUIRE(r.code == ECONNREFUSED);
    } else {
        REQUIRE(r.status == port::net_status::in_progress);
        REQUIRE(fd >= 0);
        // A failed connect reports writable (and, on most systems, an error).
        REQUIRE(wait_for(fd, port::want_write) != 0);
        const port::net_result f = port::connect_finish(fd);
        REQUIRE(f.status == port::net_status::refused);
        REQUIRE(f.code == ECONNREFUSED);
    }
}

TEST_CASE("port socket: TCP over IPv6 loopback", "[port]") {
    edgelock_test::loopback_listener listener(AF_INET6);
    if (listener.fd() < 0) {
        edgelock_test::skip("no IPv6 loopback here (socket or bind to ::1 failed)");
        return;
    }
    fd_guard client;
    fd_guard server;
    connect_pair(tcp_endpoint("::1", listener.port()), listener.fd(), client, server);
    REQUIRE(int_option(client.fd, IPPROTO_TCP, TCP_NODELAY) != 0);
    check_round_trip(client.fd, server.fd);
}

TEST_CASE("port socket: a numeric form inet_pton rejects still avoids DNS", "[port]") {
    // "127.1" is 127.0.0.1 to getaddrinfo(AI_NUMERICHOST) on glibc and musl;
    // a libc that rejects the short form must say so, not look it up.
    edgelock_test::loopback_listener listener(AF_INET);
    REQUIRE(listener.fd() >= 0);
    int fd = -1;
    const port::net_result r = port::connect(tcp_endpoint("127.1", listener.port()), fd);
    fd_guard client(fd);
    if (r.status == port::net_status::bad_argument) {
        edgelock_test::skip("this libc does not take 127.1 as numeric");
        return;
    }
    REQUIRE(finish(r, fd) == port::net_status::ok);
    fd_guard server(accept_within(listener.fd()));
    REQUIRE(server.fd >= 0);
    check_round_trip(client.fd, server.fd);
}

TEST_CASE("port socket: unusable TCP endpoints are bad arguments", "[port]") {
    int fd = 12345;
    SECTION("empty host") {
        REQUIRE(port::connect(tcp_endpoint("", 6379), fd).status == port::net_status::bad_argument);
    }
    SECTION("host longer than a DNS name") {
        const std::string host(300, 'a');
        port::endpoint e;
        e.host = str_view(host.data(), host.size());
        e.port = 6379;
        REQUIRE(port::connect(e, fd).status == port::net_status::bad_argument);
    }
    SECTION("host with an embedded NUL") {
        port::endpoint e;
        e.host = str_view("127.0.0.1\0evil", 14);
        e.port = 6379;
        REQUIRE(port::connect(e, fd).status == port::net_status::bad_argument);
    }
    SECTION("port 0") {
        REQUIRE(port::connect(tcp_endpoint("127.0.0.1", 0), fd).status ==
                port::net_status::bad_argument);
    }
    REQUIRE(fd == -1);
}

TEST_CASE("port socket: Unix domain sockets", "[port]") {
    edgelock_test::temp_dir dir("edgelock-sock");
    REQUIRE(!dir.path.empty());
    const std::string path = dir.path + "/node.sock";

    SECTION("connect, carry bytes, see the close and a broken pipe") {
        fd_guard listener(::socket(AF_UNIX, SOCK_STREAM, 0));
        REQUIRE(listener.fd >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        REQUIRE(path.size() < sizeof addr.sun_path);
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        REQUIRE(::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(listener.fd, 8) == 0);

        port::endpoint where;
        where.unix_path = str_view(path.c_str());
        fd_guard client;
        fd_guard server;
        connect_pair(where, listener.fd, client, server);

        const int fd_flags = ::fcntl(client.fd, F_GETFD);
        REQUIRE(fd_flags >= 0);
        REQUIRE((fd_flags & FD_CLOEXEC) != 0);

        check_round_trip(client.fd, server.fd);

        server.reset();
        REQUIRE((wait_for(client.fd, port::want_read) & port::want_read) != 0);
        char buf[8];
        REQUIRE(port::recv(client.fd, buf, sizeof buf).status == port::net_status::closed);
        // No SIGPIPE: the test process is still here to check the status.
        const port::net_result s = port::send(client.fd, "x", 1);
        REQUIRE(s.status == port::net_status::reset);
        REQUIRE(s.code == EPIPE);
    }

    SECTION("a path nobody listens on is refused") {
        port::endpoint where;
        where.unix_path = str_view(path.c_str());
        int fd = -1;
        const port::net_result r = port::connect(where, fd);
        REQUIRE(r.status == port::net_status::refused);
        REQUIRE(r.code == ENOENT);
        REQUIRE(fd == -1);
    }

    SECTION("a path must fit sun_path with its terminator") {
        const std::size_t room = sizeof(sockaddr_un{}.sun_path);
        // The longest path that fits is accepted (and, not existing, refused).
        std::string longest = "/";
        longest.append(room - 2, 'a');
        REQUIRE(longest.size() == room - 1);
        port::endpoint where;
        where.unix_path = str_view(longest.data(), longest.size());
        int fd = 12345;
        REQUIRE(port::connect(where, fd).status == port::net_status::refused);
        REQUIRE(fd == -1);

        const std::string too_long = longest + "a";
        where.unix_path = str_view(too_long.data(), too_long.size());
        fd = 12345;
        REQUIRE(port::connect(where, fd).status == port::net_status::bad_argument);
        REQUIRE(fd == -1);
    }
}

TEST_CASE("port socket: sending into a broken TCP connection says reset", "[port]") {
    edgelock_test::loopback_listener listener(AF_INET);
    REQUIRE(listener.fd() >= 0);
    fd_guard client;
    fd_guard server;
    connect_pair(tcp_endpoint("127.0.0.1", listener.port()), listener.fd(), client, server);

    SECTION("the peer closed, then answered our data with a reset") {
        server.reset();
        // The first send reaches a closed socket, which answers with RST; a
        // send after that fails with EPIPE, the case that raises SIGPIPE
        // without MSG_NOSIGNAL.
        port::net_result s;
        const instant deadline = port::now() + io_timeout;
        do {
            s = port::send(client.fd, "PING\r\n", 6);
            if (s.status == port::net_status::ok) {
                edgelock_test::sleep_ms(5);
            }
        } while (s.status == port::net_status::ok && port::now() < deadline);
        REQUIRE(s.status == port::net_status::reset);
        REQUIRE((s.code == EPIPE || s.code == ECONNRESET));
    }

    SECTION("the peer aborted the connection") {
        const linger abort_on_close{1, 0};
        REQUIRE(::setsockopt(server.fd, SOL_SOCKET, SO_LINGER, &abort_on_close,
                             sizeof abort_on_close) == 0);
        server.reset();
        const std::uint8_t ready = wait_for(client.fd, port::want_read);
        REQUIRE(ready != 0);
        char buf[8];
        const port::net_result r = port::recv(client.fd, buf, sizeof buf);
        REQUIRE(r.status == port::net_status::reset);
        REQUIRE(r.code == ECONNRESET);
        const port::net_result s = port::send(client.fd, "x", 1);
        REQUIRE(s.status == port::net_status::reset);
    }
}

TEST_CASE("port socket: wait() sleeps until the deadline when nothing is ready", "[port]") {
    edgelock_test::loopback_listener listener(AF_INET);
    REQUIRE(listener.fd() >= 0);
    fd_guard client;
    fd_guard server;
    connect_pair(tcp_endpoint("127.0.0.1", listener.port()), listener.fd(), client, server);

    port::wait_entry entries[3];
    entries[0].fd = client.fd;
    entries[0].want = port::want_read;
    entries[0].ready = 0xff;  // stale: wait() must clear it
    entries[1].fd = -1;       // ignored
    entries[1].want = port::want_read | port::want_write;
    entries[1].ready = 0xff;
    entries[2].fd = listener.fd();  // no pending connection
    entries[2].want = port::want_read;

    const instant start = port::now();
    const instant deadline = start + duration::millis(30);
    const int n = port::wait(entries, 3, deadline);
    const instant end = port::now();
    REQUIRE(n == 0);
    REQUIRE(end >= deadline);
    REQUIRE(end - start >= duration::millis(30));
    REQUIRE(end - start < duration::seconds(2));
    for (const port::wait_entry& e : entries) {
        REQUIRE(e.ready == 0);
    }
}

TEST_CASE("port socket: wait() reports readiness", "[port]") {
    edgelock_test::loopback_listener listener(AF_INET);
    REQUIRE(listener.fd() >= 0);
    fd_guard client;
    fd_guard server;
    connect_pair(tcp_endpoint("127.0.0.1", listener.port()), listener.fd(), client, server);
    REQUIRE(::send(server.fd, "x", 1, 0) == 1);

    port::wait_entry entries[3];
    entries[0].fd = client.fd;
    entries[0].want = port::want_read;
    entries[1].fd = -1;
    entries[1].want = port::want_read;
    entries[1].ready = 0xff;
    entries[2].fd = client.fd;
    entries[2].want = port::want_write;

    SECTION("without a deadline, at once when something is ready") {
        const instant start = port::now();
        REQUIRE(port::wait(entries, 3, instant::never()) == 2);
        REQUIRE(port::now() - start < duration::seconds(2));
        REQUIRE(entries[0].ready == port::want_read);
        REQUIRE(entries[1].ready == 0);
        REQUIRE(entries[2].ready == port::want_write);
    }

    SECTION("with a deadline already past, as a non-blocking check") {
        const instant start = port::now();
        REQUIRE(port::wait(entries, 3, instant{0}) == 2);
        REQUIRE(port::now() - start < duration::seconds(2));
        REQUIRE(entries[0].ready == port::want_read);
        REQUIRE(entries[2].ready == port::want_write);

        // Nothing ready and the deadline past: back at once with 0.
        char buf[4];
        REQUIRE(recv_exactly(client.fd, 1) == "x");
        REQUIRE(port::recv(client.fd, buf, sizeof buf).status == port::net_status::would_block);
        const instant again = port::now();
        REQUIRE(port::wait(entries, 1, instant{0}) == 0);
        REQUIRE(port::now() - again < duration::seconds(2));
        REQUIRE(entries[0].ready == 0);
    }

    SECTION("a hang-up wakes a reader") {
        char buf[4];
        REQUIRE(recv_exactly(client.fd, 1) == "x");
        server.reset();
        REQUIRE(port::wait(entries, 1, port::now() + io_timeout) == 1);
        REQUIRE((entries[0].ready & port::want_read) != 0);
        REQUIRE(port::recv(client.fd, buf, sizeof buf).status == port::net_status::closed);
    }

    SECTION("a closed descriptor is an error") {
        fd_guard spare(::dup(client.fd));
        REQUIRE(spare.fd >= 0);
        port::wait_entry e;
        e.fd = spare.fd;
        e.want = port::want_read;
        spare.reset();
        REQUIRE(port::wait(&e, 1, port::now() + io_timeout) == 1);
        REQUIRE((e.ready & port::ready_error) != 0);
    }
}

TEST_CASE("port socket: wait() returns 0 when a signal interrupts it", "[port]") {
    edgelock_test::loopback_listener listener(AF_INET);
    REQUIRE(listener.fd() >= 0);
    port::wait_entry e;
    e.fd = listener.fd();
    e.want = port::want_read;
    e.ready = 0xff;

    alarm_timer timer(20000);
    REQUIRE(timer.armed);
    const instant start = port::now();
    const int n = port::wait(&e, 1, start + duration::seconds(10));
    // Far short of the 10 s deadline: the signal ended the wait.
    REQUIRE(port::now() - start < duration::seconds(5));
    REQUIRE(n == 0);
    REQUIRE(e.ready == 0);
}

TEST_CASE("port socket: wait() limits", "[port]") {
    // Every fd of the largest client fits one wait, and no more than the port says.
    port::wait_entry many[port::wait_capacity + 1];
    static_assert(
        edgelock::client<edgelock::lock_max_nodes, 64 - edgelock::lock_max_nodes>::max_fds <=
            port::wait_capacity,
        "the largest client's fds fit one wait");
    REQUIRE(port::wait(many, port::wait_capacity + 1, instant{0}) == -1);
    REQUIRE(port::wait(many, port::wait_capacity, instant{0}) == 0);
    REQUIRE(port::wait(nullptr, 0, instant{0}) == 0);
    REQUIRE(port::wait(nullptr, 1, instant{0}) == -1);
}

TEST_CASE("bad input: port calls on a descriptor that is not open", "[bad-input]") {
    char buf[8] = {};
    for (const int fd : {-1, 1 << 20}) {
        INFO("fd " << fd);
        const edgelock::port::net_result s = edgelock::port::send(fd, "x", 1);
        CHECK(s.status == edgelock::port::net_status::error);
        CHECK(s.code == EBADF);
        CHECK(s.size == 0);
        const edgelock::port::net_result r = edgelock::port::recv(fd, buf, sizeof buf);
        CHECK(r.status == edgelock::port::net_status::error);
        CHECK(r.code == EBADF);
        CHECK(r.size == 0);
        const edgelock::port::net_result f = edgelock::port::connect_finish(fd);
        CHECK(f.status == edgelock::port::net_status::error);
        CHECK(f.code == EBADF);
        edgelock::port::close(fd);  // harmless
    }
    // Too many entries: refused before any entry is touched.
    constexpr std::size_t too_many = edgelock::port::wait_capacity + 1;
    edgelock::port::wait_entry many[too_many];
    for (edgelock::port::wait_entry& e : many) {
        e.fd = 0;
        e.want = edgelock::port::want_read;
        e.ready = 0x5a;
    }
    CHECK(edgelock::port::wait(many, too_many, instant{0}) == -1);
    for (const edgelock::port::wait_entry& e : many) {
        CHECK(e.ready == 0x5a);
    }
    CHECK(edgelock::port::random_bytes(nullptr, 0));
}
