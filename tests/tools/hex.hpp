// Bytes as lowercase hex, as Redis holds a lock's owner token.
//
//   CHECK(admin.command({"GET", key_of("jobs")}).text == hex(l.token()));
#pragma once

#include <cstddef>
#include <string>

#include "edgelock/token.hpp"

namespace edgelock_test {

// Writes 2 * size lowercase hex digits to out (no terminating NUL); allocates
// nothing, so an allocation count around it stays honest.
inline void hex_encode(const void* bytes, std::size_t size, char* out) {
    static const char digits[] = "0123456789abcdef";
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (std::size_t i = 0; i < size; ++i) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
}

// A token as the lock stores it in Redis: 32 hex digits.
inline std::string hex(const edgelock::owner_token& t) {
    char h[edgelock::owner_token::hex_size];
    t.to_hex(h);
    return std::string(h, sizeof h);
}

}  // namespace edgelock_test
