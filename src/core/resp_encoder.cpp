// RESP command encoder. See include/edgelock/resp_encoder.hpp.
#include "edgelock/resp_encoder.hpp"

#include <cstdint>

namespace edgelock {
namespace {

// Decimal digits of v.
std::size_t digits(std::uint64_t v) noexcept {
    std::size_t n = 1;
    while (v >= 10) {
        v /= 10;
        ++n;
    }
    return n;
}

// Adds b to *a; false when the sum does not fit.
bool add(std::size_t* a, std::size_t b) noexcept {
    if (b > SIZE_MAX - *a) {
        return false;
    }
    *a += b;
    return true;
}

char* put_header(char* out, char type, std::uint64_t n) noexcept {
    *out++ = type;
    out += format_unsigned(out, n);
    *out++ = '\r';
    *out++ = '\n';
    return out;
}

}  // namespace

std::size_t format_unsigned(char* out, std::uint64_t value) noexcept {
    const std::size_t n = digits(value);
    for (std::size_t i = n; i > 0; --i) {
        out[i - 1] = static_cast<char>('0' + value % 10);
        value /= 10;
    }
    return n;
}

std::size_t format_signed(char* out, std::int64_t value) noexcept {
    if (value >= 0) {
        return format_unsigned(out, static_cast<std::uint64_t>(value));
    }
    // Negate in unsigned arithmetic: -INT64_MIN does not fit an int64.
    out[0] = '-';
    return 1 + format_unsigned(out + 1, 0 - static_cast<std::uint64_t>(value));
}

decimal_arg::decimal_arg(std::int64_t value) noexcept {
    char tmp[20];
    const std::size_t n = format_signed(tmp, value);
    start_ = static_cast<std::uint8_t>(sizeof buf_ - n);
    for (std::size_t i = 0; i < n; ++i) {
        buf_[start_ + i] = tmp[i];
    }
}

decimal_arg decimal_arg::from_unsigned(std::uint64_t value) noexcept {
    decimal_arg d;
    char tmp[20];
    const std::size_t n = format_unsigned(tmp, value);
    d.start_ = static_cast<std::uint8_t>(sizeof d.buf_ - n);
    for (std::size_t i = 0; i < n; ++i) {
        d.buf_[d.start_ + i] = tmp[i];
    }
    return d;
}

std::size_t resp_command_size(const str_view* args, std::size_t argc) noexcept {
    if (argc == 0 || args == nullptr) {
        return 0;
    }
    // "*<argc>\r\n" then "$<len>\r\n<bytes>\r\n" per argument.
    std::size_t total = 3 + digits(argc);
    for (std::size_t i = 0; i < argc; ++i) {
        const std::size_t len = args[i].size;
        if (!add(&total, 5 + digits(len)) || !add(&total, len)) {
            return 0;
        }
    }
    return total;
}

resp_encoded resp_encode_command(char* out, std::size_t capacity, const str_view* args,
                                 std::size_t argc) noexcept {
    resp_encoded r;
    if (argc == 0 || args == nullptr) {
        r.error = resp_encode_errc::empty_command;
        return r;
    }
    const std::size_t need = resp_command_size(args, argc);
    if (need == 0) {
        r.error = resp_encode_errc::too_large;
        return r;
    }
    r.size = need;
    // Measure first and write only when everything fits: a half-written
    // command in a send buffer would desynchronise the connection.
    if (out == nullptr || capacity < need) {
        r.error = resp_encode_errc::buffer_too_small;
        return r;
    }
    char* p = put_header(out, '*', argc);
    for (std::size_t i = 0; i < argc; ++i) {
        const str_view a = args[i];
        p = put_header(p, '$', a.size);
        for (std::size_t k = 0; k < a.size; ++k) {
            p[k] = a.data[k];
        }
        p += a.size;
        *p++ = '\r';
        *p++ = '\n';
    }
    return r;
}

}  // namespace edgelock
