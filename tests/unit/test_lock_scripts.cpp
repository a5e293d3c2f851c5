// The script digests in lock_scripts.cpp must be the SHA1 of the script text,
// or every EVALSHA would miss. The SHA1 lives here, not in the library: the
// core only ever needs the constants.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>

#include "edgelock/lock_scripts.hpp"
#include "tools/hex.hpp"

namespace {

// FIPS 180-4 SHA1, written for clarity rather than speed.
std::string sha1_hex(const std::string& msg) {
    std::uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::string m = msg;
    const std::uint64_t bits = static_cast<std::uint64_t>(msg.size()) * 8;
    m.push_back(static_cast<char>(0x80));
    while (m.size() % 64 != 56) {
        m.push_back('\0');
    }
    for (int i = 7; i >= 0; --i) {
        m.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    }
    auto rotl = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
    for (std::size_t off = 0; off < m.size(); off += 64) {
        std::uint32_t w[80];
        for (int i = 0; i < 16; ++i) {
            const auto* p = reinterpret_cast<const unsigned char*>(m.data() + off + 4 * i);
            w[i] = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                   (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
        }
        for (int i = 16; i < 80; ++i) {
            w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        }
        std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; ++i) {
            std::uint32_t f = 0;
            std::uint32_t k = 0;
            if (i < 20) {
                f = (b & c) | (~b & d);
                k = 0x5A827999;
            } else if (i < 40) {
                f = b ^ c ^ d;
                k = 0x6ED9EBA1;
            } else if (i < 60) {
                f = (b & c) | (b & d) | (c & d);
                k = 0x8F1BBCDC;
            } else {
                f = b ^ c ^ d;
                k = 0xCA62C1D6;
            }
            const std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
            e = d;
            d = c;
            c = rotl(b, 30);
            b = a;
            a = t;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
    }
    unsigned char digest[20];
    for (int i = 0; i < 20; ++i) {
        digest[i] = static_cast<unsigned char>(h[i / 4] >> (24 - 8 * (i % 4)));
    }
    char out[40];
    edgelock_test::hex_encode(digest, sizeof digest, out);
    return std::string(out, sizeof out);
}

}  // namespace

TEST_CASE("the test's SHA1 matches the FIPS examples", "[lock]") {
    CHECK(sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    CHECK(sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK(sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    CHECK(sha1_hex(std::string(1000000, 'a')) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST_CASE("every script's digest is the SHA1 of its text", "[lock]") {
    for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
        const edgelock::lock_script& s = *edgelock::lock_scripts_all[i];
        const std::string text(s.text.data, s.text.size);
        const std::string sha(s.sha1.data, s.sha1.size);
        INFO("script " << i << ":\n" << text);
        CHECK(sha.size() == 40);
        CHECK(sha1_hex(text) == sha);
    }
}

TEST_CASE("scripts are distinct", "[lock]") {
    for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
        for (unsigned j = i + 1; j < edgelock::lock_scripts_count; ++j) {
            CHECK(edgelock::lock_scripts_all[i]->sha1 != edgelock::lock_scripts_all[j]->sha1);
        }
    }
}
