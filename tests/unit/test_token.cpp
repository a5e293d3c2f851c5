// Owner tokens and the random draws behind them (token.hpp): from_hex takes
// exactly 32 hex digits or changes nothing; a failing or stuck random source
// changes no token and no output, and is given up on rather than looped on.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>

#include "edgelock/token.hpp"
#include "tools/hex.hpp"
#include "tools/random.hpp"

using edgelock::owner_token;
using edgelock_test::counter_random;
using edgelock_test::hex;

TEST_CASE("bad input: owner_token::from_hex refuses anything but 32 hex digits", "[bad-input]") {
    const std::string good = "0123456789abcdefABCDEF0123456789";
    owner_token t;
    REQUIRE(t.from_hex(good.data(), good.size()));
    const owner_token kept = t;
    CHECK(hex(kept) == "0123456789abcdefabcdef0123456789");

    CHECK_FALSE(t.from_hex(nullptr, 32));
    CHECK_FALSE(t.from_hex(nullptr, 0));
    CHECK_FALSE(t.from_hex(good.data(), 0));
    CHECK_FALSE(t.from_hex(good.data(), 31));
    CHECK(t == kept);
    const std::string longer = good + "0";
    CHECK_FALSE(t.from_hex(longer.data(), longer.size()));
    const std::string twice = good + good;
    CHECK_FALSE(t.from_hex(twice.data(), twice.size()));
    const std::string prefixed = "0x" + good.substr(0, 30);
    CHECK_FALSE(t.from_hex(prefixed.data(), prefixed.size()));
    CHECK(t == kept);
    // One bad character anywhere, the rest valid (and different from kept).
    for (const char bad : {'g', 'G', 'x', ' ', '-', '\0', '\xff', '/', ':', '@', '`'}) {
        for (std::size_t i = 0; i < 32; ++i) {
            std::string s(32, 'e');
            s[i] = bad;
            INFO("byte " << static_cast<int>(static_cast<unsigned char>(bad)) << " at " << i);
            CHECK_FALSE(t.from_hex(s.data(), s.size()));
        }
    }
    CHECK(t == kept);
}

TEST_CASE("bad input: a failing random source changes no token and no output", "[bad-input]") {
    counter_random failing;
    failing.fail = true;
    owner_token t;
    REQUIRE(t.from_hex("ffeeddccbbaa99887766554433221100", 32));
    const owner_token kept = t;
    CHECK_FALSE(t.generate(failing.source()));
    CHECK_FALSE(t.generate(edgelock::random_source{}));
    CHECK(t == kept);

    std::uint64_t out = 12345;
    CHECK_FALSE(edgelock::random_between(failing.source(), 0, 100, out));
    CHECK_FALSE(edgelock::random_between(edgelock::random_source{}, 0, 100, out));
    // An empty range needs no bytes, but still no source means no answer.
    CHECK_FALSE(edgelock::random_between(edgelock::random_source{}, 7, 7, out));
    CHECK(out == 12345);
    // A source stuck on one value outside the range is given up on, not looped on.
    counter_random stuck{0xff, 0};  // 0xff...: always above 4 once masked to 7
    CHECK_FALSE(edgelock::random_between(stuck.source(), 0, 4, out));
    CHECK(out == 12345);
    stuck.next = 0;
    REQUIRE(edgelock::random_between(stuck.source(), 10, 14, out));
    CHECK(out == 10);
}

TEST_CASE("random_between: uniform over the range, one draw almost always", "[token]") {
    struct counted {
        std::mt19937_64 gen{42};
        int draws = 0;
        static bool fill(void* ctx, void* buf, std::size_t n) {
            auto* self = static_cast<counted*>(ctx);
            ++self->draws;
            auto* p = static_cast<unsigned char*>(buf);
            for (std::size_t i = 0; i < n; ++i) {
                p[i] = static_cast<unsigned char>(self->gen());
            }
            return true;
        }
    } src;
    const edgelock::random_source source{&counted::fill, &src};
    // The retry delay's default range, in microseconds.
    const std::uint64_t low = 50000;
    const std::uint64_t high = 200000;
    const int samples = 100000;
    int buckets[10] = {};
    for (int i = 0; i < samples; ++i) {
        std::uint64_t v = 0;
        REQUIRE(edgelock::random_between(source, low, high, v));
        REQUIRE(v >= low);
        REQUIRE(v <= high);
        ++buckets[(v - low) * 10 / (high - low + 1)];
    }
    // One draw (one getrandom) each: the draws spent on rejection are rare.
    CHECK(src.draws == samples);
    // 10,000 expected per tenth; a deterministic generator, so no flakes.
    for (const int b : buckets) {
        CHECK(b > 9500);
        CHECK(b < 10500);
    }
    // The range ends are reachable.
    std::uint64_t v = 0;
    edgelock_test::counter_random zeros{0, 0};
    REQUIRE(edgelock::random_between(zeros.source(), low, high, v));
    CHECK(v == low);
}
