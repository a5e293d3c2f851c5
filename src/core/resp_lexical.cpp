// The RESP decoder's lexical checks: lengths, integers, RESP3 doubles and
// big numbers, each on a line's text without its CRLF (resp_decoder.cpp
// walks the elements; these say whether a line's text is well formed).
#include "resp_lexical.hpp"

namespace edgelock {
namespace detail {

namespace {

constexpr bool is_digit(char c) noexcept {
    return c >= '0' && c <= '9';
}

// Returns the length of the run of digits at p, at most n.
std::size_t digit_run(const char* p, std::size_t n) noexcept {
    std::size_t i = 0;
    while (i < n && is_digit(p[i])) {
        ++i;
    }
    return i;
}

}  // namespace

bool parse_length(const char* p, std::size_t n, bool allow_null, std::uint64_t limit,
                  std::uint64_t* out, bool* is_null, resp_errc* err, std::size_t* err_at) noexcept {
    *is_null = false;
    if (n == 0) {
        *err = resp_errc::bad_length;
        *err_at = 0;
        return false;
    }
    if (p[0] == '?') {
        *err = resp_errc::streamed_unsupported;
        *err_at = 0;
        return false;
    }
    if (p[0] == '-') {
        if (allow_null && n == 2 && p[1] == '1') {
            *is_null = true;
            *out = 0;
            return true;
        }
        // Point at the first byte that departs from "-1" (the only negative
        // length), or at the sign itself where no negative is allowed.
        *err = resp_errc::bad_length;
        *err_at = !allow_null ? 0 : (n < 2 || p[1] != '1') ? 1 : 2;
        return false;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!is_digit(p[i])) {
            *err = resp_errc::bad_length;
            *err_at = i;
            return false;
        }
        const auto d = static_cast<std::uint64_t>(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            *err = resp_errc::length_overflow;
            *err_at = i;
            return false;
        }
        v = v * 10 + d;
    }
    *out = v > limit ? limit + 1 : v;
    return true;
}

bool parse_integer(const char* p, std::size_t n, std::int64_t* out, resp_errc* err,
                   std::size_t* err_at) noexcept {
    std::size_t i = 0;
    bool negative = false;
    if (n > 0 && (p[0] == '-' || p[0] == '+')) {
        negative = p[0] == '-';
        i = 1;
    }
    if (i == n) {
        *err = resp_errc::bad_integer;
        *err_at = i;
        return false;
    }
    // Magnitude in unsigned arithmetic against the bound for this sign, so the
    // overflow is caught at the digit that causes it.
    const std::uint64_t max = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
    std::uint64_t v = 0;
    for (; i < n; ++i) {
        if (!is_digit(p[i])) {
            *err = resp_errc::bad_integer;
            *err_at = i;
            return false;
        }
        const auto d = static_cast<std::uint64_t>(p[i] - '0');
        if (v > (max - d) / 10) {
            *err = resp_errc::integer_overflow;
            *err_at = i;
            return false;
        }
        v = v * 10 + d;
    }
    if (!negative) {
        *out = static_cast<std::int64_t>(v);
    } else if (v == max) {
        *out = INT64_MIN;
    } else {
        *out = -static_cast<std::int64_t>(v);
    }
    return true;
}

bool check_double(const char* p, std::size_t n, std::size_t* bad) noexcept {
    std::size_t i = 0;
    if (i < n && (p[i] == '-' || p[i] == '+')) {
        ++i;
    }
    if (i < n && (p[i] == 'i' || p[i] == 'I' || p[i] == 'n' || p[i] == 'N')) {
        // inf or nan, in any case; point at the first byte that departs.
        const char* word = (p[i] == 'i' || p[i] == 'I') ? "inf" : "nan";
        for (std::size_t k = 0; k < 3; ++k, ++i) {
            if (i >= n || (p[i] | 0x20) != word[k]) {
                *bad = i;
                return false;
            }
        }
        *bad = i;
        return i == n;
    }
    std::size_t run = digit_run(p + i, n - i);
    if (run == 0) {
        *bad = i;
        return false;
    }
    i += run;
    if (i < n && p[i] == '.') {
        ++i;
        run = digit_run(p + i, n - i);
        if (run == 0) {
            *bad = i;
            return false;
        }
        i += run;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        ++i;
        if (i < n && (p[i] == '-' || p[i] == '+')) {
            ++i;
        }
        run = digit_run(p + i, n - i);
        if (run == 0) {
            *bad = i;
            return false;
        }
        i += run;
    }
    *bad = i;
    return i == n;
}

bool check_big_number(const char* p, std::size_t n, std::size_t* bad) noexcept {
    std::size_t i = 0;
    if (i < n && (p[i] == '-' || p[i] == '+')) {
        ++i;
    }
    const std::size_t run = digit_run(p + i, n - i);
    *bad = i + run;
    return run != 0 && i + run == n;
}

}  // namespace detail
}  // namespace edgelock
