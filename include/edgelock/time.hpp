// Monotonic time as the core sees it: values passed in, never read inside.
//
// An instant is microseconds since an arbitrary origin (the port's monotonic
// clock); a duration is a non-negative span in microseconds. Arithmetic
// saturates instead of wrapping: an instant minus a later instant is zero, and
// adding to the far future stays at the far future (instant::never()).
#pragma once

#include <cstdint>

namespace edgelock {

struct duration {
    std::uint64_t us = 0;

    static constexpr duration micros(std::uint64_t v) noexcept { return duration{v}; }
    static constexpr duration millis(std::uint64_t v) noexcept {
        return duration{v > UINT64_MAX / 1000 ? UINT64_MAX : v * 1000};
    }
    static constexpr duration seconds(std::uint64_t v) noexcept {
        return millis(v > UINT64_MAX / 1000 ? UINT64_MAX : v * 1000);
    }
    // Whole milliseconds, rounded down (the safe direction for a validity).
    constexpr std::uint64_t ms() const noexcept { return us / 1000; }
};

struct instant {
    std::uint64_t us = 0;

    static constexpr instant never() noexcept { return instant{UINT64_MAX}; }
    constexpr bool is_never() const noexcept { return us == UINT64_MAX; }
};

constexpr instant operator+(instant t, duration d) noexcept {
    return instant{t.us > UINT64_MAX - d.us ? UINT64_MAX : t.us + d.us};
}
// Time from b to a; zero when a is not after b.
constexpr duration operator-(instant a, instant b) noexcept {
    return duration{a.us > b.us ? a.us - b.us : 0};
}
constexpr duration operator+(duration a, duration b) noexcept {
    return duration{a.us > UINT64_MAX - b.us ? UINT64_MAX : a.us + b.us};
}
constexpr duration operator-(duration a, duration b) noexcept {
    return duration{a.us > b.us ? a.us - b.us : 0};
}

constexpr bool operator==(instant a, instant b) noexcept {
    return a.us == b.us;
}
constexpr bool operator!=(instant a, instant b) noexcept {
    return a.us != b.us;
}
constexpr bool operator<(instant a, instant b) noexcept {
    return a.us < b.us;
}
constexpr bool operator<=(instant a, instant b) noexcept {
    return a.us <= b.us;
}
constexpr bool operator>(instant a, instant b) noexcept {
    return a.us > b.us;
}
constexpr bool operator>=(instant a, instant b) noexcept {
    return a.us >= b.us;
}
constexpr bool operator==(duration a, duration b) noexcept {
    return a.us == b.us;
}
constexpr bool operator!=(duration a, duration b) noexcept {
    return a.us != b.us;
}
constexpr bool operator<(duration a, duration b) noexcept {
    return a.us < b.us;
}
constexpr bool operator<=(duration a, duration b) noexcept {
    return a.us <= b.us;
}
constexpr bool operator>(duration a, duration b) noexcept {
    return a.us > b.us;
}
constexpr bool operator>=(duration a, duration b) noexcept {
    return a.us >= b.us;
}

constexpr instant earliest(instant a, instant b) noexcept {
    return a < b ? a : b;
}
constexpr instant latest(instant a, instant b) noexcept {
    return a < b ? b : a;
}

}  // namespace edgelock
