// Zero heap allocations in steady state, counted rather than assumed.
//
// This binary links tools/alloc_count.cpp, which interposes malloc and friends,
// so every allocation in the process is seen; counting is switched on only
// around the cycles under test. It needs a dynamically linked glibc, so it is
// built for the host only (the static cross builds cannot interpose malloc).
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "edgelock/client.hpp"
#include "integration/redis_server.hpp"
#include "tools/alloc_count.hpp"

#if EDGELOCK_TEST_TLS
#include "edgelock/tls_mbedtls.hpp"
#include "integration/tls_fixture.hpp"
#endif

using namespace edgelock;
using edgelock_test::redis_server;
using edgelock_test::redis_url;

namespace {

unsigned long run_cycles(client_base& c, client_lock& l, int cycles, int& completed) {
    completed = 0;
    edgelock_test::alloc_window w;
    for (int i = 0; i < cycles; ++i) {
        if (l.try_acquire().event.kind != lock_event_kind::acquired) {
            break;
        }
        if (l.renew().event.kind != lock_event_kind::renewed) {
            break;
        }
        if (l.release().event.kind != lock_event_kind::released) {
            break;
        }
        ++completed;
    }
    (void)c;
    const unsigned long seen = w.count();
    return seen;
}

}  // namespace

TEST_CASE("the interposer sees allocations", "[alloc]") {
    unsigned long seen = 0;
    std::size_t size = 0;
    {
        edgelock_test::alloc_window w;
        // Through volatile, so the compiler cannot pair the calls away.
        void* volatile p = std::malloc(16);
        std::free(p);
        std::string s(100, 'x');  // operator new goes through malloc
        size = s.size();
        seen = w.count();
    }
    CHECK(size == 100);
    CHECK(seen >= 2);
}

TEST_CASE("1,000 acquire/renew/release cycles allocate nothing, one node", "[alloc]") {
    redis_server srv;
    const std::string url = redis_url(srv);
    const str_view urls[] = {str_view(url.c_str())};
    client<1> c;
    REQUIRE(c.configure(urls, 1, client_options{}) == client_errc::ok);
    client_lock l;
    lock_options o;
    o.ttl = duration::seconds(5);
    o.node_timeout = duration::millis(500);
    REQUIRE(l.attach(c, "alloc-one", o) == client_errc::ok);
    // Warm up: connect, load scripts.
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    REQUIRE(l.release().event.kind == lock_event_kind::released);

    int completed = 0;
    const unsigned long seen = run_cycles(c, l, 1000, completed);
    std::printf("alloc: %d cycles on 1 node, %lu allocations\n", completed, seen);
    CHECK(completed == 1000);
    CHECK(seen == 0);
}

TEST_CASE("reading the counters allocates nothing", "[alloc][stats]") {
    redis_server srv;
    const std::string url = redis_url(srv);
    const str_view urls[] = {str_view(url.c_str())};
    client<1> c;
    REQUIRE(c.configure(urls, 1, client_options{}) == client_errc::ok);
    client_lock l;
    lock_options o;
    o.ttl = duration::seconds(5);
    o.node_timeout = duration::millis(500);
    REQUIRE(l.attach(c, "alloc-stats", o) == client_errc::ok);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    REQUIRE(l.release().event.kind == lock_event_kind::released);

    int completed = 0;
    std::uint64_t requests = 0;
    std::uint64_t acquisitions = 0;
    unsigned long seen = 0;
    {
        edgelock_test::alloc_window w;
        for (int i = 0; i < 100; ++i) {
            if (l.try_acquire().event.kind != lock_event_kind::acquired ||
                l.release().event.kind != lock_event_kind::released) {
                break;
            }
            const node_stats ns = c.node_stats(0);
            const lock_stats ls = l.stats();
            requests = ns.requests + ns.errors() + ns.rtt_sum_us * 0;
            acquisitions = ls.acquisitions;
            ++completed;
        }
        seen = w.count();
    }
    std::printf("alloc: %d cycles reading the counters, %lu allocations\n", completed, seen);
    CHECK(completed == 100);
    CHECK(seen == 0);
    CHECK(acquisitions == 101);
    CHECK(requests >= 202);
}

TEST_CASE("1,000 fenced cycles on three nodes allocate nothing", "[alloc]") {
    redis_server a, b, d;
    std::string s[3];
    str_view urls[3];
    redis_server* servers[3] = {&a, &b, &d};
    for (int i = 0; i < 3; ++i) {
        s[i] = redis_url(*servers[i]);
        urls[i] = str_view(s[i].c_str());
    }
    client<3> c;
    REQUIRE(c.configure(urls, 3, client_options{}) == client_errc::ok);
    client_lock l;
    lock_options o;
    o.mode = lock_mode::fenced;
    o.ttl = duration::seconds(5);
    o.node_timeout = duration::millis(500);
    REQUIRE(l.attach(c, "alloc-three", o) == client_errc::ok);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    REQUIRE(l.release().event.kind == lock_event_kind::released);

    int completed = 0;
    const unsigned long seen = run_cycles(c, l, 1000, completed);
    std::printf("alloc: %d fenced cycles on 3 nodes, %lu allocations\n", completed, seen);
    CHECK(completed == 1000);
    CHECK(seen == 0);
}

#if EDGELOCK_TEST_TLS
TEST_CASE("1,000 fenced cycles on three TLS nodes allocate nothing after the handshake",
          "[alloc][tls]") {
    edgelock_test::tls_certs certs;
    redis_server a(certs.server_files(), {}), b(certs.server_files(), {}),
        d(certs.server_files(), {});
    std::string s[3];
    str_view urls[3];
    redis_server* servers[3] = {&a, &b, &d};
    for (int i = 0; i < 3; ++i) {
        s[i] = "rediss://localhost:" + std::to_string(servers[i]->port());
        urls[i] = str_view(s[i].c_str());
    }
    tls_mbedtls<3> tls;
    const std::string ca = certs.ca_file();
    tls_options t;
    t.ca_file = str_view(ca.c_str());
    REQUIRE(tls.configure(t) == tls_errc::ok);
    client_options co;
    co.via = &tls;
    client<3> c;
    REQUIRE(c.configure(urls, 3, co) == client_errc::ok);
    client_lock l;
    lock_options o;
    o.mode = lock_mode::fenced;
    o.ttl = duration::seconds(5);
    o.node_timeout = duration::millis(500);
    REQUIRE(l.attach(c, "alloc-tls", o) == client_errc::ok);
    // Warm up: the handshakes (which allocate), the scripts.
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    REQUIRE(l.release().event.kind == lock_event_kind::released);
    REQUIRE(c.ready_count() == 3);

    int completed = 0;
    const unsigned long seen = run_cycles(c, l, 1000, completed);
    std::printf("alloc: %d fenced cycles on 3 TLS nodes, %lu allocations\n", completed, seen);
    CHECK(completed == 1000);
    CHECK(seen == 0);
}
#endif
