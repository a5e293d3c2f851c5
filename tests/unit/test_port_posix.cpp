// The POSIX port: monotonic clock and CSPRNG.
#include <catch2/catch.hpp>

#include <cstring>

#include "edgelock/port.hpp"

using namespace edgelock;

TEST_CASE("port posix: the clock is monotonic and moves", "[port]") {
    const instant a = port::now();
    instant b = a;
    // Spin until it changes; a microsecond clock must move within a few
    // million reads, and must never go back meanwhile.
    for (int i = 0; i < 10000000 && b == a; ++i) {
        const instant c = port::now();
        REQUIRE(c >= b);
        b = c;
    }
    REQUIRE(b > a);
}

TEST_CASE("port posix: random bytes fill the buffer and differ between calls", "[port]") {
    unsigned char x[64];
    unsigned char y[64];
    std::memset(x, 0, sizeof x);
    std::memset(y, 0, sizeof y);
    REQUIRE(port::random_bytes(x, sizeof x));
    REQUIRE(port::random_bytes(y, sizeof y));
    // 512 random bits colliding, or staying all zero, has odds of 2^-512.
    REQUIRE(std::memcmp(x, y, sizeof x) != 0);
    const unsigned char zero[64] = {};
    REQUIRE(std::memcmp(x, zero, sizeof x) != 0);
    REQUIRE(port::random_bytes(x, 0));
}
