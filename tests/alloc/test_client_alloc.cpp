// Zero heap allocations in steady state, counted rather than assumed.
//
// This binary replaces malloc and friends with counting versions that forward
// to the C library's own (glibc exports them as __libc_*), so every allocation
// in the process is seen: the library's, the C library's on its behalf (the
// resolver, stdio) and the test's. Counting is switched on only around the
// cycles under test. It needs a dynamically linked glibc, so it is built for
// the host only (the static cross builds cannot interpose malloc).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <new>
#include <string>

#include "edgelock/client.hpp"
#include "integration/redis_server.hpp"

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* p);
}

namespace {
std::atomic<bool> counting{false};
std::atomic<unsigned long> allocations{0};

void note() {
    if (counting.load(std::memory_order_relaxed)) {
        allocations.fetch_add(1, std::memory_order_relaxed);
    }
}
}  // namespace

extern "C" {
void* malloc(std::size_t size) {
    note();
    return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
    note();
    return __libc_calloc(count, size);
}
void* realloc(void* p, std::size_t size) {
    note();
    return __libc_realloc(p, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
    note();
    return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
    note();
    return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
    note();
    void* p = __libc_memalign(alignment, size);
    if (p == nullptr) {
        return 12;  // ENOMEM
    }
    *out = p;
    return 0;
}
void free(void* p) {
    __libc_free(p);
}
}

using namespace edgelock;
using edgelock_test::redis_server;

namespace {

struct counted_window {
    counted_window() {
        allocations = 0;
        counting = true;
    }
    ~counted_window() { counting = false; }
};

unsigned long run_cycles(client_base& c, client_lock& l, int cycles, int& completed) {
    completed = 0;
    counted_window w;
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
    const unsigned long seen = allocations;
    return seen;
}

}  // namespace

TEST_CASE("the interposer sees allocations", "[alloc]") {
    unsigned long seen = 0;
    {
        counted_window w;
        void* p = std::malloc(16);
        std::free(p);
        std::string s(100, 'x');  // operator new goes through malloc
        seen = allocations;
    }
    CHECK(seen >= 2);
}

TEST_CASE("1,000 acquire/renew/release cycles allocate nothing, one node", "[alloc]") {
    redis_server srv;
    const std::string url = "redis://127.0.0.1:" + std::to_string(srv.port());
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

TEST_CASE("1,000 fenced cycles on three nodes allocate nothing", "[alloc]") {
    redis_server a, b, d;
    std::string s[3];
    str_view urls[3];
    redis_server* servers[3] = {&a, &b, &d};
    for (int i = 0; i < 3; ++i) {
        s[i] = "redis://127.0.0.1:" + std::to_string(servers[i]->port());
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
