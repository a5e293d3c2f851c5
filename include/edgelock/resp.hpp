// The RESP vocabulary shared by the decoder and the encoder: value types, the
// flat node a decoded reply is made of, error codes and decoder limits.
//
// A decoded reply is an array of resp_node in pre-order. An aggregate node
// (array, map, set, push, attribute) is followed by its elements; node.end is
// the index one past its whole subtree, so a reader skips an element with
// `i = nodes[i].end`. A map or attribute of `count` pairs is followed by
// 2 * count elements, key then value. String-like nodes (simple and bulk
// strings and errors, verbatim strings, doubles and big numbers) are views
// into the bytes the decoder was given; they stay valid while those bytes do.
//
// RESP3 attributes are kept, in place, before the value they annotate; they
// are not counted among the elements of an enclosing aggregate. Use
// skip_attributes() to get at the value itself.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/config.hpp"
#include "edgelock/str_view.hpp"

namespace edgelock {

enum class resp_type : std::uint8_t {
    // RESP2
    simple_string,  // +OK
    simple_error,   // -ERR message
    integer,        // :42
    bulk_string,    // $5 hello
    array,          // *2 ...
    // RESP3
    null,             // _  (also RESP2's $-1 and *-1)
    boolean,          // #t / #f
    double_number,    // ,1.5  (text kept as a view; see resp_node::text)
    big_number,       // (123456789012345678901234567890
    bulk_error,       // !21 SYNTAX invalid syntax
    verbatim_string,  // =15 txt:Some string (text is after "txt:")
    map,              // %2 ...
    set,              // ~3 ...
    attribute,        // |1 ... (precedes the value it annotates)
    push,             // >3 ... (out-of-band message)
};

const char* describe(resp_type type) noexcept;

// True for the types whose payload is a view of the input: simple and bulk
// strings and errors, verbatim strings, doubles and big numbers.
constexpr bool resp_has_text(resp_type t) noexcept {
    return t == resp_type::simple_string || t == resp_type::simple_error ||
           t == resp_type::bulk_string || t == resp_type::bulk_error ||
           t == resp_type::verbatim_string || t == resp_type::double_number ||
           t == resp_type::big_number;
}

struct resp_node {
    resp_type type = resp_type::null;
    // Aggregates: number of elements (pairs for a map or attribute).
    std::uint32_t count = 0;
    // Index one past the last node of this node's subtree.
    std::uint32_t end = 0;
    // String-like types: the payload. Aggregates, null, boolean, integer: empty.
    // verbatim_string: the text after the 3-byte format and ':'.
    str_view text;
    // integer: the value. boolean: 1 for true, 0 for false.
    std::int64_t integer = 0;
    // Offset of the payload from the first byte of the reply.
    std::size_t offset = 0;

    bool is_error() const noexcept {
        return type == resp_type::simple_error || type == resp_type::bulk_error;
    }
    // String-like types: text is their payload (possibly empty).
    bool has_text() const noexcept { return resp_has_text(type); }
    bool is_aggregate() const noexcept {
        return type == resp_type::array || type == resp_type::map || type == resp_type::set ||
               type == resp_type::attribute || type == resp_type::push;
    }
    // The 3-byte format of a verbatim string ("txt", "mkd"); empty otherwise.
    str_view verbatim_format() const noexcept {
        return type == resp_type::verbatim_string ? str_view(text.data - 4, 3) : str_view();
    }
};

// Index of the first node at or after `i` that is not an attribute (skipping
// attribute subtrees), or `count` when there is none.
std::size_t skip_attributes(const resp_node* nodes, std::size_t count, std::size_t i) noexcept;

enum class resp_errc : std::uint8_t {
    ok = 0,
    // Malformed input (the peer's fault); the offset says where.
    bad_type,              // unknown type byte
    bad_line_end,          // LF without CR, or CR not followed by LF
    line_too_long,         // no CRLF within limits.max_line bytes
    bad_integer,           // integer with no digits, a non-digit, or a misplaced sign
    integer_overflow,      // integer outside int64
    bad_length,            // length with no digits, a non-digit, or negative other than -1
    length_overflow,       // length too large to represent
    bulk_too_long,         // bulk length above limits.max_bulk
    too_many_elements,     // aggregate count above limits.max_elements
    too_deep,              // nesting above limits.max_depth
    bad_bulk_end,          // bulk payload not followed by CRLF
    bad_null,              // "_" followed by anything
    bad_boolean,           // "#" not followed by exactly t or f
    bad_double,            // "," not followed by a number, or inf or nan (any case, any sign)
    bad_big_number,        // "(" not followed by an optionally signed run of digits
    bad_verbatim,          // verbatim string without a 3-byte format and ':'
    streamed_unsupported,  // RESP3 streamed string or aggregate ($? *? ...)
    truncated,             // the input ended inside a reply (decode_whole only)
    // Local misuse (the caller's fault).
    node_capacity,  // the caller's node array is too small for this reply
    input_shrank,   // fewer bytes passed than an earlier call had already parsed
};

const char* describe(resp_errc code) noexcept;

// Runtime limits of a decoder. Defaults come from config.hpp. The decoder
// clamps max_depth to EDGELOCK_RESP_MAX_DEPTH (the capacity of its stack),
// max_elements to elements_ceiling, and max_bulk and max_line to size_ceiling.
//
// Error offsets: a syntax error points at the first byte that cannot continue
// a valid reply; an overflowing number at the digit that overflows; a length
// or count above its limit at the length's first digit; too_deep and
// node_capacity at the element's type byte; line_too_long at the first byte
// past max_line; a verbatim string too short for its format at its length.
struct resp_limits {
    static constexpr std::uint32_t elements_ceiling = 0x3fffffffU;
    static constexpr std::size_t size_ceiling = 0x7fffffffU;

    std::uint32_t max_depth = EDGELOCK_RESP_MAX_DEPTH;
    std::uint32_t max_elements = EDGELOCK_RESP_MAX_ELEMENTS;
    std::size_t max_bulk = EDGELOCK_RESP_MAX_BULK;
    std::size_t max_line = EDGELOCK_RESP_MAX_LINE;
};

}  // namespace edgelock
