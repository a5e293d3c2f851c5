// The RESP decoder's lexical checks (resp_lexical.cpp), on a line's text
// without its CRLF. Internal to the library.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/resp.hpp"

namespace edgelock {
namespace detail {

// A length: "-1" (only when allow_null; *is_null is set) or one or more
// digits. False with *err and *err_at set on malformed input. Values above
// `limit` come out as `limit + 1`, so the caller can name the limit it broke;
// limits are below 2^31, so that value fits any size_t.
bool parse_length(const char* p, std::size_t n, bool allow_null, std::uint64_t limit,
                  std::uint64_t* out, bool* is_null, resp_errc* err, std::size_t* err_at) noexcept;
// A RESP integer, within int64.
bool parse_integer(const char* p, std::size_t n, std::int64_t* out, resp_errc* err,
                   std::size_t* err_at) noexcept;
// A RESP3 double: [sign] digits [. digits] [(e|E) [sign] digits], or inf,
// -inf, nan (any sign, any case). On failure *bad is the offset of the first
// byte that does not fit (n when the text ends too early).
bool check_double(const char* p, std::size_t n, std::size_t* bad) noexcept;
// A RESP3 big number: [sign] digits.
bool check_big_number(const char* p, std::size_t n, std::size_t* bad) noexcept;

}  // namespace detail
}  // namespace edgelock
