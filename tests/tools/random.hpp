// Random sources (edgelock::random_source) for tests that must know what the
// lock draws: its tokens and its retry delays.
//
//   counter_random rnd;                     // 1, 2, 3, ... : tokens known in advance
//   l.configure("jobs", 3, options, rnd.source());
//   rnd.fail = true;                        // the next draw fails (random_failed)
//   counter_random stuck{0xff, 0};          // 0xff, 0xff, ... : a source stuck on one value
//
// Code that needs real randomness uses the library's
// edgelock::client_base::system_random().
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/token.hpp"

namespace edgelock_test {

// Deterministic bytes: next, next + step, ... (mod 256). A lock and its twin
// configured alike draw the same tokens.
struct counter_random {
    unsigned char next = 1;
    unsigned char step = 1;
    bool fail = false;

    static bool fill(void* ctx, void* buf, std::size_t n) {
        auto* self = static_cast<counter_random*>(ctx);
        if (self->fail) {
            return false;
        }
        auto* p = static_cast<unsigned char*>(buf);
        for (std::size_t i = 0; i < n; ++i) {
            p[i] = self->next;
            self->next = static_cast<unsigned char>(self->next + self->step);
        }
        return true;
    }
    edgelock::random_source source() { return {&counter_random::fill, this}; }
};

// Bytes taken from a fuzzer's input (anything with `std::uint8_t byte()`), so
// the fuzzer steers the tokens too. A draw whose first byte is 0xee fails:
// that path must hold as well.
template <class Input>
struct input_random {
    Input* in;

    static bool fill(void* ctx, void* buf, std::size_t n) {
        auto* self = static_cast<input_random*>(ctx);
        auto* out = static_cast<std::uint8_t*>(buf);
        const std::uint8_t first = self->in->byte();
        if (first == 0xee) {
            return false;
        }
        for (std::size_t i = 0; i < n; ++i) {
            out[i] = static_cast<std::uint8_t>(first + i * 37 + self->in->byte());
        }
        return true;
    }
    edgelock::random_source source() { return {&input_random::fill, this}; }
};

}  // namespace edgelock_test
