// Owner tokens: 128 random bits, hex encoded.
#include "edgelock/token.hpp"

namespace edgelock {

bool owner_token::generate(const random_source& source) noexcept {
    std::uint8_t fresh[size];
    if (!source(fresh, sizeof fresh)) {
        return false;
    }
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = fresh[i];
    }
    return true;
}

bool owner_token::from_hex(const char* text, std::size_t length) noexcept {
    if (text == nullptr || length != hex_size) {
        return false;
    }
    std::uint8_t parsed[size];
    for (std::size_t i = 0; i < hex_size; ++i) {
        const char c = text[i];
        int v = -1;
        if (c >= '0' && c <= '9') {
            v = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v = c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            v = c - 'A' + 10;
        }
        if (v < 0) {
            return false;
        }
        if (i % 2 == 0) {
            parsed[i / 2] = static_cast<std::uint8_t>(v << 4);
        } else {
            parsed[i / 2] = static_cast<std::uint8_t>(parsed[i / 2] | v);
        }
    }
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = parsed[i];
    }
    return true;
}

void owner_token::to_hex(char* out) const noexcept {
    static const char digits[] = "0123456789abcdef";
    for (std::size_t i = 0; i < size; ++i) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 0x0f];
    }
}

bool owner_token::operator==(const owner_token& other) const noexcept {
    for (std::size_t i = 0; i < size; ++i) {
        if (bytes[i] != other.bytes[i]) {
            return false;
        }
    }
    return true;
}

bool random_between(const random_source& source, std::uint64_t low, std::uint64_t high,
                    std::uint64_t& out) noexcept {
    if (high <= low) {
        if (!source.valid()) {
            return false;  // like every failure: out unchanged
        }
        out = low;
        return true;
    }
    const std::uint64_t span = high - low;
    // One 64-bit draw, reduced modulo span + 1. A plain modulo would favour
    // small delays (the point of the random delay is to spread contenders
    // evenly), so draws from the incomplete top block are drawn again: the
    // block is less than span + 1 of 2^64 values, so that almost never
    // happens, and one draw (one getrandom) almost always does.
    constexpr std::uint64_t all_ones = ~std::uint64_t{0};
    const std::uint64_t n = span + 1;  // 0 when the range is all of 2^64
    const std::uint64_t top_block = n == 0 ? 0 : (all_ones % n + 1) % n;
    for (int attempt = 0; attempt < 64; ++attempt) {
        std::uint8_t raw[8];
        if (!source(raw, sizeof raw)) {
            return false;
        }
        std::uint64_t v = 0;
        for (std::uint8_t b : raw) {
            v = (v << 8) | b;
        }
        if (n == 0) {
            out = v;
            return true;
        }
        if (v <= all_ones - top_block) {
            out = low + v % n;
            return true;
        }
    }
    // Each attempt succeeds with probability > 1/2 (nearly 1); 64 misses
    // means the source is not random at all.
    return false;
}

}  // namespace edgelock
