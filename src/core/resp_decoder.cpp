// Incremental RESP2/RESP3 decoder. See include/edgelock/resp_decoder.hpp.
//
// The decoder walks one element at a time. An element is a type byte, a line
// ending in CRLF, and for bulk types a payload plus CRLF. Aggregates push a
// frame on a fixed stack (no recursion) and are closed when their last element
// is done. All positions are offsets from the reply's first byte, so a caller
// may move its buffer between calls; views are made into pointers only when
// the reply is complete.
#include "edgelock/resp_decoder.hpp"

#include <cstdint>

#include "resp_lexical.hpp"

namespace edgelock {

using detail::check_big_number;
using detail::check_double;
using detail::parse_integer;
using detail::parse_length;

namespace {

constexpr bool is_type_byte(char c) noexcept {
    switch (c) {
    case '+':
    case '-':
    case ':':
    case '$':
    case '*':
    case '_':
    case '#':
    case ',':
    case '(':
    case '!':
    case '=':
    case '%':
    case '~':
    case '|':
    case '>':
        return true;
    default:
        return false;
    }
}

resp_type aggregate_type(char t) noexcept {
    switch (t) {
    case '*':
        return resp_type::array;
    case '%':
        return resp_type::map;
    case '~':
        return resp_type::set;
    case '|':
        return resp_type::attribute;
    default:
        return resp_type::push;
    }
}

}  // namespace

void resp_decoder::set_limits(const resp_limits& limits) noexcept {
    limits_ = limits;
    if (limits_.max_depth > EDGELOCK_RESP_MAX_DEPTH) {
        limits_.max_depth = EDGELOCK_RESP_MAX_DEPTH;
    }
    // Upper bounds that keep every length comparison exact on 32-bit targets.
    if (limits_.max_elements > resp_limits::elements_ceiling) {
        limits_.max_elements = resp_limits::elements_ceiling;
    }
    if (limits_.max_bulk > resp_limits::size_ceiling) {
        limits_.max_bulk = resp_limits::size_ceiling;
    }
    if (limits_.max_line > resp_limits::size_ceiling) {
        limits_.max_line = resp_limits::size_ceiling;
    }
}

void resp_decoder::reset() noexcept {
    pos_ = 0;
    scan_ = 0;
    seen_ = 0;
    count_ = 0;
    depth_ = 0;
    error_ = resp_errc::ok;
    error_offset_ = 0;
}

resp_result resp_decoder::fail(resp_errc code, std::size_t offset) noexcept {
    error_ = code;
    error_offset_ = offset;
    resp_result r;
    r.status = resp_status::error;
    r.error = code;
    r.offset = offset;
    return r;
}

// Called when an element (scalar or a whole aggregate) is done. `counts` is
// false for an attribute: it annotates the element after it and is not one of
// its parent's elements. Returns true when the top-level reply is done.
bool resp_decoder::finish_element(bool counts, resp_node* nodes) noexcept {
    for (;;) {
        if (!counts) {
            return false;
        }
        if (depth_ == 0) {
            return true;
        }
        frame& f = stack_[depth_ - 1];
        if (--f.remaining > 0) {
            return false;
        }
        if (nodes != nullptr) {
            nodes[f.node].end = static_cast<std::uint32_t>(count_);
        }
        counts = !f.attribute;
        --depth_;
    }
}

resp_result resp_decoder::decode(const char* data, std::size_t size, resp_node* nodes,
                                 std::size_t capacity) noexcept {
    if (error_ != resp_errc::ok) {
        resp_result r;
        r.status = resp_status::error;
        r.error = error_;
        r.offset = error_offset_;
        return r;
    }
    if (size < seen_) {
        return fail(resp_errc::input_shrank, size);
    }
    seen_ = size;
    if (capacity > UINT32_MAX) {
        capacity = UINT32_MAX;
    }

    for (;;) {
        const std::size_t start = pos_;
        if (start >= size) {
            resp_result r;
            r.needed = start + 1;
            return r;
        }

        if (!is_type_byte(data[start])) {
            return fail(resp_errc::bad_type, start);
        }

        // Find the CRLF ending this element's line. scan_ remembers how far an
        // earlier call got, so a long line trickling in is scanned once.
        const std::size_t line = start + 1;
        const std::size_t line_cap = limits_.max_line;
        std::size_t i = scan_ > line ? scan_ : line;
        std::size_t cr = 0;
        bool found = false;
        for (; i < size; ++i) {
            const char c = data[i];
            if (c == '\r') {
                cr = i;
                found = true;
                break;
            }
            if (c == '\n') {
                return fail(resp_errc::bad_line_end, i);
            }
            if (i - line >= line_cap) {
                // This byte would make the line one longer than allowed.
                return fail(resp_errc::line_too_long, i);
            }
        }
        if (!found) {
            scan_ = i;
            resp_result r;
            r.needed = i + 1;
            return r;
        }
        if (cr + 1 >= size) {
            scan_ = cr;
            resp_result r;
            r.needed = cr + 2;
            return r;
        }
        if (data[cr + 1] != '\n') {
            return fail(resp_errc::bad_line_end, cr + 1);
        }
        const char* text = data + line;
        const std::size_t text_len = cr - line;
        std::size_t next = cr + 2;  // offset after this element, for line types

        resp_node node;
        node.offset = line;
        bool counts = true;
        bool opens = false;
        std::uint32_t elements = 0;
        resp_errc err = resp_errc::ok;
        std::size_t err_at = 0;

        const char t = data[start];
        switch (t) {
        case '+':
        case '-':
            node.type = t == '+' ? resp_type::simple_string : resp_type::simple_error;
            node.text = str_view(text, text_len);
            break;
        case ':':
            node.type = resp_type::integer;
            if (!parse_integer(text, text_len, &node.integer, &err, &err_at)) {
                return fail(err, line + err_at);
            }
            break;
        case '_':
            if (text_len != 0) {
                return fail(resp_errc::bad_null, line);
            }
            node.type = resp_type::null;
            break;
        case '#':
            if (text_len != 1 || (text[0] != 't' && text[0] != 'f')) {
                const bool first_ok = text_len > 0 && (text[0] == 't' || text[0] == 'f');
                return fail(resp_errc::bad_boolean, first_ok ? line + 1 : line);
            }
            node.type = resp_type::boolean;
            node.integer = text[0] == 't' ? 1 : 0;
            break;
        case ',': {
            std::size_t bad = 0;
            if (!check_double(text, text_len, &bad)) {
                return fail(resp_errc::bad_double, line + bad);
            }
            node.type = resp_type::double_number;
            node.text = str_view(text, text_len);
            break;
        }
        case '(': {
            std::size_t bad = 0;
            if (!check_big_number(text, text_len, &bad)) {
                return fail(resp_errc::bad_big_number, line + bad);
            }
            node.type = resp_type::big_number;
            node.text = str_view(text, text_len);
            break;
        }
        case '$':
        case '!':
        case '=': {
            std::uint64_t len = 0;
            bool is_null = false;
            if (!parse_length(text, text_len, t == '$', limits_.max_bulk, &len, &is_null, &err,
                              &err_at)) {
                return fail(err, line + err_at);
            }
            if (is_null) {
                node.type = resp_type::null;
                break;
            }
            if (len > limits_.max_bulk) {
                return fail(resp_errc::bulk_too_long, line);
            }
            const auto n = static_cast<std::size_t>(len);  // <= 2^31 - 1
            const std::size_t payload = cr + 2;            // <= size, checked above
            if (size - payload < n + 2) {
                // Keep scan_ at this CR: the header is re-read next time, the
                // payload is not scanned at all.
                scan_ = cr;
                resp_result r;
                r.needed = payload > SIZE_MAX - (n + 2) ? SIZE_MAX : payload + n + 2;
                return r;
            }
            const std::size_t total = payload + n + 2;
            if (data[payload + n] != '\r' || data[payload + n + 1] != '\n') {
                return fail(resp_errc::bad_bulk_end,
                            data[payload + n] != '\r' ? payload + n : payload + n + 1);
            }
            node.offset = payload;
            node.text = str_view(data + payload, n);
            if (t == '$') {
                node.type = resp_type::bulk_string;
            } else if (t == '!') {
                node.type = resp_type::bulk_error;
            } else {
                if (n < 4 || data[payload + 3] != ':') {
                    // Too short for "fmt:" means the length is wrong.
                    return fail(resp_errc::bad_verbatim, n < 4 ? line : payload + 3);
                }
                node.type = resp_type::verbatim_string;
                node.offset = payload + 4;
                node.text = str_view(data + payload + 4, n - 4);
            }
            next = total;
            break;
        }
        case '*':
        case '%':
        case '~':
        case '|':
        case '>': {
            std::uint64_t len = 0;
            bool is_null = false;
            const std::uint64_t max = limits_.max_elements;
            if (!parse_length(text, text_len, t == '*', max, &len, &is_null, &err, &err_at)) {
                return fail(err, line + err_at);
            }
            if (is_null) {
                node.type = resp_type::null;
                break;
            }
            const bool pairs = t == '%' || t == '|';
            const std::uint64_t count = len;
            const std::uint64_t total = pairs ? count * 2 : count;
            if (total > max) {
                return fail(resp_errc::too_many_elements, line);
            }
            node.type = aggregate_type(t);
            node.count = static_cast<std::uint32_t>(count);
            node.text = str_view();
            counts = t != '|';
            // An empty aggregate still nests: it counts toward the depth.
            if (depth_ >= limits_.max_depth) {
                return fail(resp_errc::too_deep, start);
            }
            if (total > 0) {
                opens = true;
                elements = static_cast<std::uint32_t>(total);
            }
            break;
        }
        default:
            return fail(resp_errc::bad_type, start);  // unreachable: checked above
        }

        if (nodes != nullptr) {
            if (count_ >= capacity) {
                return fail(resp_errc::node_capacity, start);
            }
            node.end = static_cast<std::uint32_t>(count_ + 1);
            nodes[count_] = node;
        } else if (count_ >= UINT32_MAX) {
            return fail(resp_errc::node_capacity, start);
        }
        const std::size_t index = count_;
        ++count_;
        pos_ = next;
        scan_ = 0;

        bool done = false;
        if (opens) {
            stack_[depth_] = frame{elements, static_cast<std::uint32_t>(index), !counts};
            ++depth_;
        } else {
            done = finish_element(counts, nodes);
        }
        if (!done) {
            continue;
        }

        // Complete: turn payload offsets into views of the caller's bytes.
        if (nodes != nullptr) {
            for (std::size_t k = 0; k < count_; ++k) {
                resp_node& n = nodes[k];
                n.text.data = n.has_text() ? data + n.offset : nullptr;
            }
        }
        resp_result r;
        r.status = resp_status::complete;
        r.size = pos_;
        r.nodes = count_;
        pos_ = 0;
        scan_ = 0;
        seen_ = 0;
        count_ = 0;
        depth_ = 0;
        return r;
    }
}

resp_result resp_decode_whole(const char* data, std::size_t size, resp_node* nodes,
                              std::size_t capacity, const resp_limits& limits) noexcept {
    resp_decoder d(limits);
    resp_result r = d.decode(data, size, nodes, capacity);
    if (r.status == resp_status::incomplete) {
        r.status = resp_status::error;
        r.error = resp_errc::truncated;
        r.offset = size;
        r.needed = 0;
    }
    return r;
}

std::size_t skip_attributes(const resp_node* nodes, std::size_t count, std::size_t i) noexcept {
    while (i < count && nodes[i].type == resp_type::attribute) {
        const std::size_t next = nodes[i].end;
        i = next > i ? next : i + 1;
    }
    return i < count ? i : count;
}

}  // namespace edgelock
