// RESP command encoder: a command is an array of bulk strings.
//
// resp_encode_command() writes into a caller buffer. When the buffer is too
// small it writes nothing at all and reports the size needed, so a partial
// command can never be sent by mistake. Integers are formatted by hand
// (decimal_arg), not with printf.
//
//   decimal_arg ttl(30000);
//   const str_view args[] = {"SET", key, token, "NX", "PX", ttl.view()};
//   resp_encoded r = resp_encode_command(buf, sizeof buf, args, 6);
//   if (r.error == resp_encode_errc::ok) send(buf, r.size);
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/str_view.hpp"

namespace edgelock {

enum class resp_encode_errc : std::uint8_t {
    ok = 0,
    buffer_too_small,  // nothing written; size is the bytes needed
    empty_command,     // no arguments
    too_large,         // the encoded size does not fit in size_t
};

const char* describe(resp_encode_errc code) noexcept;

struct resp_encoded {
    resp_encode_errc error = resp_encode_errc::ok;
    std::size_t size = 0;  // ok: bytes written; buffer_too_small: bytes needed
};

// Bytes the command takes on the wire; 0 when argc == 0 or it would overflow.
std::size_t resp_command_size(const str_view* args, std::size_t argc) noexcept;

resp_encoded resp_encode_command(char* out, std::size_t capacity, const str_view* args,
                                 std::size_t argc) noexcept;

// Decimal text of an integer, held in the object: keep it alive while its
// view is used. Formatted by hand; INT64_MIN included.
class decimal_arg {
public:
    explicit decimal_arg(std::int64_t value) noexcept;
    static decimal_arg from_unsigned(std::uint64_t value) noexcept;
    str_view view() const noexcept { return str_view(buf_ + start_, sizeof buf_ - start_); }

private:
    decimal_arg() noexcept = default;
    char buf_[20] = {};
    std::uint8_t start_ = sizeof buf_;
};

// Writes the decimal text of value into out (which must hold 20 bytes for an
// unsigned, 20 for a signed value) and returns the length.
std::size_t format_unsigned(char* out, std::uint64_t value) noexcept;
std::size_t format_signed(char* out, std::int64_t value) noexcept;

}  // namespace edgelock
