// Human-readable names for the codec's enums, for logs and error messages.
#include "edgelock/resp.hpp"
#include "edgelock/resp_encoder.hpp"

namespace edgelock {

const char* describe(resp_type type) noexcept {
    switch (type) {
    case resp_type::simple_string:
        return "simple string";
    case resp_type::simple_error:
        return "simple error";
    case resp_type::integer:
        return "integer";
    case resp_type::bulk_string:
        return "bulk string";
    case resp_type::array:
        return "array";
    case resp_type::null:
        return "null";
    case resp_type::boolean:
        return "boolean";
    case resp_type::double_number:
        return "double";
    case resp_type::big_number:
        return "big number";
    case resp_type::bulk_error:
        return "bulk error";
    case resp_type::verbatim_string:
        return "verbatim string";
    case resp_type::map:
        return "map";
    case resp_type::set:
        return "set";
    case resp_type::attribute:
        return "attribute";
    case resp_type::push:
        return "push";
    }
    return "unknown type";
}

const char* describe(resp_errc code) noexcept {
    switch (code) {
    case resp_errc::ok:
        return "ok";
    case resp_errc::bad_type:
        return "unknown RESP type byte";
    case resp_errc::bad_line_end:
        return "line not terminated by CRLF";
    case resp_errc::line_too_long:
        return "line longer than the configured limit";
    case resp_errc::bad_integer:
        return "malformed integer";
    case resp_errc::integer_overflow:
        return "integer outside the 64-bit signed range";
    case resp_errc::bad_length:
        return "malformed length (negative lengths other than -1 are invalid)";
    case resp_errc::length_overflow:
        return "length too large to represent";
    case resp_errc::bulk_too_long:
        return "bulk length above the configured limit";
    case resp_errc::too_many_elements:
        return "aggregate element count above the configured limit";
    case resp_errc::too_deep:
        return "aggregates nested deeper than the configured limit";
    case resp_errc::bad_bulk_end:
        return "bulk payload not followed by CRLF";
    case resp_errc::bad_null:
        return "malformed null";
    case resp_errc::bad_boolean:
        return "malformed boolean (expected t or f)";
    case resp_errc::bad_double:
        return "malformed double";
    case resp_errc::bad_big_number:
        return "malformed big number";
    case resp_errc::bad_verbatim:
        return "verbatim string without a format prefix";
    case resp_errc::streamed_unsupported:
        return "streamed RESP3 strings and aggregates are not supported";
    case resp_errc::truncated:
        return "input ended inside a reply";
    case resp_errc::node_capacity:
        return "reply has more elements than the node array holds";
    case resp_errc::input_shrank:
        return "decoder called with fewer bytes than it had already parsed";
    }
    return "unknown error";
}

const char* describe(resp_encode_errc code) noexcept {
    switch (code) {
    case resp_encode_errc::ok:
        return "ok";
    case resp_encode_errc::buffer_too_small:
        return "buffer too small for the command";
    case resp_encode_errc::empty_command:
        return "command has no arguments";
    case resp_encode_errc::too_large:
        return "command too large to encode";
    }
    return "unknown error";
}

}  // namespace edgelock
