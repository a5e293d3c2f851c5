// The POSIX port's host name lookups: numeric hosts at once, names on a
// helper thread whose end shows as a readable fd, bad arguments refused, and a
// name server that never answers holding up nothing but its own lookup.
#include <catch2/catch.hpp>

#include <errno.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "edgelock/config.hpp"
#include "edgelock/port.hpp"
#include "tools/net.hpp"
#include "tools/skip.hpp"
#include "tools/stuck_dns.hpp"

using namespace edgelock;

namespace {

// Whether fd becomes readable within ms.
bool readable_within(int fd, int ms) {
    port::wait_entry e;
    e.fd = fd;
    e.want = port::want_read;
    return port::wait(&e, 1, port::now() + duration::millis(static_cast<std::uint64_t>(ms))) == 1 &&
           (e.ready & port::want_read) != 0;
}

std::string address_of(int id, unsigned index) {
    char buf[port::address_text_capacity];
    const std::size_t n = port::lookup_address(id, index, buf, sizeof buf);
    return n == 0 ? std::string() : std::string(buf, n);
}

}  // namespace

TEST_CASE("port lookup: a numeric host is done at once, with no thread and no fd", "[port]") {
    struct row {
        const char* host;
        const char* text;  // as lookup_address() gives it back
    };
    const row rows[] = {
        {"127.0.0.1", "127.0.0.1"},
        {"::1", "::1"},
        {"fe80::1%1", "fe80::1%1"},  // a scoped address: getaddrinfo(AI_NUMERICHOST)
    };
    for (const row& r : rows) {
        INFO(r.host);
        int id = -1;
        const port::net_result s = port::lookup_start(str_view(r.host), id);
        REQUIRE(s.status == port::net_status::ok);
        REQUIRE(id >= 0);
        CHECK(port::lookup_fd(id) == -1);
        const port::net_result done = port::lookup_result(id);
        CHECK(done.status == port::net_status::ok);
        CHECK(done.size == 1);
        CHECK(address_of(id, 0) == r.text);
        CHECK(address_of(id, 1).empty());
        CHECK(port::lookup_is_for(id, str_view(r.host)));
        CHECK_FALSE(port::lookup_is_for(id, "localhost"));
        port::lookup_release(id);
        CHECK(port::lookup_result(id).status == port::net_status::bad_argument);  // stale
    }
}

TEST_CASE("port lookup: a name is looked up off the caller's thread, and its fd says when",
          "[port]") {
    edgelock_test::loopback_listener listener(AF_INET);
    REQUIRE(listener.fd() >= 0);
    int id = -1;
    const port::net_result s = port::lookup_start("localhost", id);
    REQUIRE(s.status == port::net_status::in_progress);
    const int fd = port::lookup_fd(id);
    REQUIRE(fd >= 0);
    REQUIRE(readable_within(fd, 10000));
    const port::net_result done = port::lookup_result(id);
    REQUIRE(done.status == port::net_status::ok);
    REQUIRE(done.size >= 1);
    REQUIRE(done.size <= port::lookup_max_addresses);
    CHECK(port::lookup_is_for(id, "localhost"));
    // Every address is numeric (connect() takes it as it is); one of them is
    // 127.0.0.1, where the listener is.
    bool reached = false;
    for (unsigned i = 0; i < done.size; ++i) {
        const std::string a = address_of(id, i);
        INFO("address " << i << ": " << a);
        REQUIRE(!a.empty());
        port::endpoint where;
        where.host = str_view(a.data(), a.size());
        where.port = listener.port();
        int sock = -1;
        const port::net_result c = port::connect(where, sock);
        CHECK(c.status != port::net_status::bad_argument);
        if (sock >= 0) {
            port::close(sock);
        }
        reached = reached || a == "127.0.0.1";
    }
    CHECK(reached);
    CHECK(address_of(id, static_cast<unsigned>(done.size)).empty());
    // Too small a buffer: nothing written, nothing returned.
    char tiny[2] = {'x', 'x'};
    CHECK(port::lookup_address(id, 0, tiny, sizeof tiny) == 0);
    port::lookup_release(id);
    port::lookup_release(id);  // twice: harmless
}

TEST_CASE("bad input: lookups of unusable host names", "[bad-input][port]") {
    const std::string long_name(254, 'a');
    const str_view hosts[] = {str_view(""), str_view(long_name.data(), long_name.size()),
                              str_view("local\0host", 10)};
    for (const str_view h : hosts) {
        int id = 12345;
        CHECK(port::lookup_start(h, id).status == port::net_status::bad_argument);
        CHECK(id == -1);
    }
    // Ids that name nothing.
    for (const int id : {-1, 0, 1 << 20, 0x7fffffff}) {
        CHECK(port::lookup_fd(id) == -1);
        CHECK(port::lookup_result(id).status == port::net_status::bad_argument);
        CHECK_FALSE(port::lookup_is_for(id, "localhost"));
        char buf[port::address_text_capacity];
        CHECK(port::lookup_address(id, 0, buf, sizeof buf) == 0);
        port::lookup_release(id);
    }
}

TEST_CASE("port lookup: slots run out with a clear error, and come back", "[port]") {
    std::vector<int> held;
    for (std::size_t i = 0; i < EDGELOCK_PORT_LOOKUPS; ++i) {
        int id = -1;
        REQUIRE(port::lookup_start("10.0.0.1", id).status == port::net_status::ok);
        held.push_back(id);
    }
    int id = 12345;
    const port::net_result full = port::lookup_start("10.0.0.1", id);
    CHECK(full.status == port::net_status::error);
    CHECK(full.code == EAGAIN);
    CHECK(id == -1);
    port::lookup_release(held.back());
    held.pop_back();
    REQUIRE(port::lookup_start("10.0.0.1", id).status == port::net_status::ok);
    held.push_back(id);
    for (const int h : held) {
        port::lookup_release(h);
    }
}

// In a child process, in a private mount namespace whose resolver asks a
// name server that never answers. Each check that fails exits with its own
// code; 0 is success.
namespace {

int stuck_lookups(const edgelock_test::stuck_dns& dns) {
    if (!dns.enter_here()) {
        return 100;
    }
    int stuck = -1;
    if (port::lookup_start("never.edgelock.test", stuck).status != port::net_status::in_progress) {
        return 1;
    }
    const int fd = port::lookup_fd(stuck);
    // Not done, and the caller is not held up by it.
    if (readable_within(fd, 300) ||
        port::lookup_result(stuck).status != port::net_status::in_progress) {
        return 2;
    }
    // Other lookups go on meanwhile: /etc/hosts answers, numbers need nothing.
    int local = -1;
    if (port::lookup_start("localhost", local).status != port::net_status::in_progress ||
        !readable_within(port::lookup_fd(local), 3000) ||
        port::lookup_result(local).status != port::net_status::ok) {
        return 3;
    }
    port::lookup_release(local);
    // Abandoned: released while it runs, at once.
    const instant before = port::now();
    port::lookup_release(stuck);
    if (port::now() - before > duration::millis(200)) {
        return 4;
    }
    // Once the resolver gives up (1 s a query here, a few queries with search
    // domains), its slot is free again: every slot can be taken at once.
    for (int tries = 0; tries < 50; ++tries) {
        ::usleep(200000);
        std::vector<int> held;
        bool all = true;
        for (std::size_t i = 0; i < EDGELOCK_PORT_LOOKUPS && all; ++i) {
            int id = -1;
            all = port::lookup_start("10.0.0.1", id).status == port::net_status::ok;
            if (all) {
                held.push_back(id);
            }
        }
        for (const int h : held) {
            port::lookup_release(h);
        }
        if (all) {
            return 0;
        }
    }
    return 5;
}

}  // namespace

TEST_CASE("port lookup: a name server that never answers holds up only its own lookup", "[port]") {
    const edgelock_test::stuck_dns dns(1);
    if (!dns.ok()) {
        edgelock_test::skip(("no stuck name server here: " + dns.why()).c_str());
        return;
    }
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::_exit(stuck_lookups(dns));
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 100) {
        edgelock_test::skip("no private mount namespace here (unshare or mount refused)");
        return;
    }
    INFO("the child's failed check: " << WEXITSTATUS(status));
    CHECK(WEXITSTATUS(status) == 0);
}
