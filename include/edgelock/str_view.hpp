// A pointer and a length: the only string type the core uses.
//
// std::string_view is not among the freestanding headers, so the core carries
// its own. A str_view never owns its bytes; whoever hands one out says how long
// the bytes stay valid.
#pragma once

#include <cstddef>

namespace edgelock {

struct str_view {
    const char* data = nullptr;
    std::size_t size = 0;

    constexpr str_view() noexcept = default;
    constexpr str_view(const char* d, std::size_t n) noexcept : data(d), size(n) {}
    // From a NUL-terminated string (a literal, usually). nullptr gives an empty view.
    constexpr str_view(const char* cstr) noexcept : data(cstr), size(0) {
        if (cstr != nullptr) {
            while (cstr[size] != '\0') {
                ++size;
            }
        }
    }

    constexpr bool empty() const noexcept { return size == 0; }
    constexpr char operator[](std::size_t i) const noexcept { return data[i]; }
    constexpr const char* begin() const noexcept { return data; }
    constexpr const char* end() const noexcept { return data + size; }
};

constexpr bool operator==(str_view a, str_view b) noexcept {
    if (a.size != b.size) {
        return false;
    }
    for (std::size_t i = 0; i < a.size; ++i) {
        if (a.data[i] != b.data[i]) {
            return false;
        }
    }
    return true;
}

constexpr bool operator!=(str_view a, str_view b) noexcept {
    return !(a == b);
}

// ASCII case-insensitive comparison (RESP error codes and HELLO keys).
constexpr bool equals_icase(str_view a, str_view b) noexcept {
    if (a.size != b.size) {
        return false;
    }
    for (std::size_t i = 0; i < a.size; ++i) {
        char x = a.data[i];
        char y = b.data[i];
        if (x >= 'A' && x <= 'Z') {
            x = static_cast<char>(x - 'A' + 'a');
        }
        if (y >= 'A' && y <= 'Z') {
            y = static_cast<char>(y - 'A' + 'a');
        }
        if (x != y) {
            return false;
        }
    }
    return true;
}

constexpr bool starts_with(str_view s, str_view prefix) noexcept {
    return s.size >= prefix.size && str_view(s.data, prefix.size) == prefix;
}

}  // namespace edgelock
