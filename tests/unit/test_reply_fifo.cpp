// reply_fifo: the requests in flight on a connection, oldest first.
#include <catch2/catch.hpp>

#include "edgelock/detail/reply_fifo.hpp"

using edgelock::detail::reply_fifo;

TEST_CASE("reply_fifo: first in, first out, across the wrap", "[client][fifo]") {
    reply_fifo<int, 4> f;
    CHECK(f.empty());
    CHECK_FALSE(f.full());
    int next_in = 0;
    int next_out = 0;
    // Fill and drain unevenly for many rounds, so head and tail wrap at
    // every offset.
    for (int round = 0; round < 50; ++round) {
        const int pushes = round % 5;
        for (int i = 0; i < pushes; ++i) {
            if (f.push(next_in)) {
                ++next_in;
            }
        }
        REQUIRE(f.size() == static_cast<std::size_t>(next_in - next_out));
        for (std::size_t i = 0; i < f.size(); ++i) {
            CHECK(f[i] == next_out + static_cast<int>(i));  // oldest first
        }
        const int pops = (round * 7) % 4;
        for (int i = 0; i < pops && !f.empty(); ++i) {
            CHECK(f.front() == next_out);
            f.pop();
            ++next_out;
        }
    }
    CHECK(next_in > 40);
}

TEST_CASE("reply_fifo: a full ring refuses and keeps what it has", "[client][fifo]") {
    reply_fifo<int, 3> f;
    REQUIRE(f.push(1));
    REQUIRE(f.push(2));
    REQUIRE(f.push(3));
    CHECK(f.full());
    CHECK_FALSE(f.push(4));
    CHECK(f.size() == 3);
    CHECK(f[0] == 1);
    CHECK(f[2] == 3);
    f.pop();
    CHECK(f.push(4));
    CHECK(f[2] == 4);
    f.clear();
    CHECK(f.empty());
    f.pop();  // on an empty ring: nothing happens
    CHECK(f.size() == 0);
    CHECK(f.push(5));
    CHECK(f.front() == 5);
}
