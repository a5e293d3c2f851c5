// Owner tokens and the random source they come from.
//
// Each acquisition draws a fresh 128-bit token, the base of its rounds' own
// tokens (lock.hpp, "Tokens"), from a random_source the caller injects (the
// driver wraps port::random_bytes, tests pass a seeded generator). A source
// that fails is an error for the operation that needed it; the core never
// falls back to weaker randomness.
//
//   owner_token t;
//   if (!t.generate(source)) { /* report lock_errc::random_failed */ }
//   char hex[owner_token::hex_size];
//   t.to_hex(hex);  // 32 lowercase hex digits, not NUL-terminated
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgelock {

// A callback instead of a virtual interface: no RTTI, no vtable, and a C port
// can provide one. fill() returns false when no secure randomness could be had.
struct random_source {
    bool (*fill)(void* ctx, void* buf, std::size_t size) = nullptr;
    void* ctx = nullptr;

    bool valid() const noexcept { return fill != nullptr; }
    bool operator()(void* buf, std::size_t size) const noexcept {
        return fill != nullptr && fill(ctx, buf, size);
    }
};

struct owner_token {
    static constexpr std::size_t size = 16;  // 128 bits, as the Redlock spec asks
    static constexpr std::size_t hex_size = 2 * size;

    std::uint8_t bytes[size] = {};

    // Leaves the token unchanged when the source fails.
    bool generate(const random_source& source) noexcept;
    void to_hex(char* out) const noexcept;  // writes hex_size chars
    // Parses exactly hex_size hex digits (either case); false, unchanged, otherwise.
    bool from_hex(const char* text, std::size_t size) noexcept;
    bool operator==(const owner_token& other) const noexcept;
    bool operator!=(const owner_token& other) const noexcept { return !(*this == other); }
};

// A uniformly drawn value in [low, high] (inclusive), for retry delays.
// Returns false when the source fails.
bool random_between(const random_source& source, std::uint64_t low, std::uint64_t high,
                    std::uint64_t& out) noexcept;

}  // namespace edgelock
