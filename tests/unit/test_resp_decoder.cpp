// Tests of the RESP decoder against the contract in resp.hpp and resp_decoder.hpp.
//
// Every vector is fed whole, one byte at a time and split at every offset (one
// over 2 KiB: split at its first and last 24 offsets and its middle). Each
// call gets a fresh heap copy sized exactly to the bytes it passes and the
// previous copy is freed, so under ASan a read past the input or a view kept
// from an earlier call is reported, and a decoder that keeps pointers instead
// of offsets fails. All feeding modes must give the same result.
//
// Error offsets: a syntax error points at the first byte that cannot belong to
// a valid reply; a number that overflows points at the digit that overflows it;
// a length or count above a limit points at the first byte of the number;
// too_deep and node_capacity point at the type byte of the element that does
// not fit; line_too_long at the first byte past max_line.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "edgelock/config.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/resp_decoder.hpp"

using namespace std::string_literals;

namespace edgelock {
namespace {

const char* name_of(resp_status status) {
    switch (status) {
    case resp_status::complete:
        return "complete";
    case resp_status::incomplete:
        return "incomplete";
    case resp_status::error:
        return "error";
    }
    return "?";
}

bool counts_pairs(resp_type type) {
    return type == resp_type::map || type == resp_type::attribute;
}

// A node with its view copied out, so nodes decoded from different buffers compare.
struct node_view {
    resp_type type = resp_type::null;
    std::uint32_t count = 0;
    std::uint32_t end = 0;  // in a table, 0 on a scalar means "its index + 1"
    std::string text;
    std::int64_t integer = 0;
};

bool operator==(const node_view& a, const node_view& b) {
    return a.type == b.type && a.count == b.count && a.end == b.end && a.text == b.text &&
           a.integer == b.integer;
}

std::string escaped(const std::string& bytes) {
    std::string out;
    for (const char c : bytes) {
        if (c == '\r') {
            out += "\\r";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\0') {
            out += "\\0";
        } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
            static const char hex[] = "0123456789abcdef";
            const auto u = static_cast<unsigned char>(c);
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    return out;
}

std::string describe_node(const node_view& n) {
    std::ostringstream os;
    os << describe(n.type) << "{count " << n.count << ", end " << n.end << ", text \""
       << escaped(n.text) << "\", integer " << n.integer << "}";
    return os.str();
}

// Everything a decode call reports that must not depend on how the input was split.
struct decoded {
    resp_status status = resp_status::incomplete;
    resp_errc error = resp_errc::ok;
    std::size_t size = 0;
    std::size_t nodes = 0;
    std::size_t needed = 0;
    std::size_t offset = 0;
    std::vector<node_view> tree;
    std::vector<std::size_t> payload_offsets;
    std::vector<std::ptrdiff_t> text_positions;  // text.data - buffer, or -1 when null
};

bool operator==(const decoded& a, const decoded& b) {
    if (a.status != b.status || a.error != b.error) {
        return false;
    }
    switch (a.status) {
    case resp_status::complete:
        return a.size == b.size && a.nodes == b.nodes && a.tree == b.tree &&
               a.payload_offsets == b.payload_offsets && a.text_positions == b.text_positions;
    case resp_status::incomplete:
        return a.needed == b.needed;
    case resp_status::error:
        return a.offset == b.offset;
    }
    return false;
}

std::string describe_decoded(const decoded& d) {
    std::ostringstream os;
    os << name_of(d.status);
    if (d.status == resp_status::complete) {
        os << " size " << d.size << ", " << d.nodes << " nodes";
        for (std::size_t i = 0; i < d.tree.size(); ++i) {
            os << "\n  [" << i << "] " << describe_node(d.tree[i]) << " at "
               << d.payload_offsets[i];
        }
    } else if (d.status == resp_status::incomplete) {
        os << " needed " << d.needed;
    } else {
        os << " " << describe(d.error) << " at " << d.offset;
    }
    return os.str();
}

}  // namespace
}  // namespace edgelock

// Only this file's own types get a StringMaker: one for a library enum would
// clash with the default one other test files instantiate (an ODR violation).
namespace Catch {
template <>
struct StringMaker<edgelock::node_view> {
    static std::string convert(const edgelock::node_view& v) { return edgelock::describe_node(v); }
};
template <>
struct StringMaker<edgelock::decoded> {
    static std::string convert(const edgelock::decoded& v) { return edgelock::describe_decoded(v); }
};
}  // namespace Catch

namespace edgelock {
namespace {

// Walks one element of an aggregate (any attributes, then the value) from index i
// and returns the index after it; records in `why` what does not add up.
std::size_t walk_element(const resp_node* nodes, std::size_t count, std::size_t i,
                         std::string& why);

std::size_t walk_value(const resp_node* nodes, std::size_t count, std::size_t i, std::string& why) {
    if (i >= count) {
        why += "element missing at node " + std::to_string(i) + "; ";
        return count;
    }
    const resp_node& n = nodes[i];
    std::size_t next = i + 1;
    if (n.is_aggregate()) {
        const std::size_t elements = counts_pairs(n.type) ? 2 * std::size_t{n.count} : n.count;
        for (std::size_t e = 0; e < elements && next < count; ++e) {
            next = walk_element(nodes, count, next, why);
        }
    }
    if (n.end != next) {
        why += "node " + std::to_string(i) + " end " + std::to_string(n.end) +
               ", subtree ends at " + std::to_string(next) + "; ";
    }
    return next;
}

std::size_t walk_element(const resp_node* nodes, std::size_t count, std::size_t i,
                         std::string& why) {
    while (i < count && nodes[i].type == resp_type::attribute) {
        i = walk_value(nodes, count, i, why);
    }
    return walk_value(nodes, count, i, why);
}

// What every result must satisfy, whatever the input: returns a list of violations.
std::string invariant_violations(const resp_result& r, const char* base, std::size_t size,
                                 const resp_node* nodes, std::size_t capacity) {
    std::string why;
    switch (r.status) {
    case resp_status::complete: {
        if (r.error != resp_errc::ok) {
            why += "complete with an error code; ";
        }
        if (r.size == 0 || r.size > size) {
            why += "size " + std::to_string(r.size) + " outside [1, input]; ";
        }
        if (r.nodes == 0) {
            why += "complete with no nodes; ";
        }
        if (nodes == nullptr) {
            break;
        }
        if (r.nodes > capacity) {
            why += "more nodes than capacity; ";
            break;
        }
        for (std::size_t i = 0; i < r.nodes; ++i) {
            const resp_node& n = nodes[i];
            if (n.end < i + 1 || n.end > r.nodes) {
                why += "node " + std::to_string(i) + " end out of range; ";
            }
            if (n.text.size != 0 &&
                (n.text.data < base || n.text.data > base + r.size ||
                 n.text.size > static_cast<std::size_t>(base + r.size - n.text.data))) {
                why += "node " + std::to_string(i) + " text outside the reply; ";
            }
            if (!n.has_text() && n.text.size != 0) {
                why += "node " + std::to_string(i) + " of a non-string type has text; ";
            }
            // The payload offset and the view must agree (verbatim: the view skips "txt:").
            if (n.has_text() && n.text.size != 0 && n.text.data != base + n.offset &&
                !(n.type == resp_type::verbatim_string && n.text.data == base + n.offset + 4)) {
                why += "node " + std::to_string(i) + " offset does not locate its text; ";
            }
            if (n.type == resp_type::verbatim_string && n.text.data == nullptr) {
                why += "verbatim node " + std::to_string(i) + " with a null view; ";
            }
        }
        if (why.empty() && walk_element(nodes, r.nodes, 0, why) != r.nodes) {
            why += "the reply's tree does not end at the last node; ";
        }
        break;
    }
    case resp_status::incomplete:
        if (r.error != resp_errc::ok) {
            why += "incomplete with an error code; ";
        }
        if (r.needed <= size) {
            why += "needed " + std::to_string(r.needed) + " not above the " + std::to_string(size) +
                   " bytes given; ";
        }
        break;
    case resp_status::error:
        if (r.error == resp_errc::ok) {
            why += "error without a code; ";
        }
        // The decoder cannot blame a byte it was not given.
        if (r.error != resp_errc::input_shrank && r.error != resp_errc::truncated &&
            r.offset >= size) {
            why += "error offset " + std::to_string(r.offset) + " not inside the " +
                   std::to_string(size) + " bytes given; ";
        }
        break;
    }
    return why;
}

decoded snapshot(const resp_result& r, const char* base, const resp_node* nodes,
                 std::size_t capacity) {
    decoded d;
    d.status = r.status;
    d.error = r.error;
    d.size = r.size;
    d.nodes = r.nodes;
    d.needed = r.needed;
    d.offset = r.offset;
    if (r.status == resp_status::complete && nodes != nullptr) {
        for (std::size_t i = 0; i < r.nodes && i < capacity; ++i) {
            const resp_node& n = nodes[i];
            node_view v;
            v.type = n.type;
            v.count = n.count;
            v.end = n.end;
            if (n.text.size != 0) {
                v.text.assign(n.text.data, n.text.size);
            }
            v.integer = n.integer;
            d.tree.push_back(v);
            d.payload_offsets.push_back(n.offset);
            d.text_positions.push_back(n.text.data != nullptr ? n.text.data - base : -1);
        }
    }
    return d;
}

// One decoding session: one decoder and one node array (exactly `capacity` long,
// on the heap) for the life of a reply, and a fresh exact copy of the input per call.
class feeder {
public:
    feeder(const resp_limits& limits, std::size_t capacity, bool keep_nodes)
        : decoder_(limits),
          capacity_(capacity),
          nodes_(keep_nodes ? new resp_node[capacity] : nullptr) {}

    resp_result feed(const std::string& input, std::size_t n) {
        // Free the previous copy first: a view or pointer kept from it is now dangling.
        buffer_.reset();
        buffer_.reset(new char[n]);
        if (n != 0) {
            std::memcpy(buffer_.get(), input.data(), n);
        }
        size_ = n;
        last_ = decoder_.decode(buffer_.get(), n, nodes_.get(), capacity_);
        violations_ = invariant_violations(last_, buffer_.get(), n, nodes_.get(), capacity_);
        return last_;
    }

    decoded result() const { return snapshot(last_, buffer_.get(), nodes_.get(), capacity_); }
    const std::string& violations() const { return violations_; }
    resp_decoder& decoder() { return decoder_; }
    const resp_node* nodes() const { return nodes_.get(); }
    const char* buffer() const { return buffer_.get(); }

private:
    resp_decoder decoder_;
    std::size_t capacity_;
    std::unique_ptr<resp_node[]> nodes_;
    std::unique_ptr<char[]> buffer_;
    std::size_t size_ = 0;
    resp_result last_{};
    std::string violations_;
};

resp_limits small_limits() {
    resp_limits l;
    l.max_depth = 2;
    l.max_elements = 4;
    l.max_bulk = 16;
    l.max_line = 16;
    return l;
}

struct vector_case {
    std::string name;
    std::string input;
    resp_status status = resp_status::complete;
    resp_errc error = resp_errc::ok;
    std::size_t where = 0;  // complete: the reply's size; error: the offset
    std::vector<node_view> nodes;
    resp_limits limits{};
    std::size_t capacity = 64;
};

vector_case complete(std::string name, std::string input, std::vector<node_view> nodes) {
    vector_case v;
    v.name = std::move(name);
    v.where = input.size();
    v.input = std::move(input);
    v.nodes = std::move(nodes);
    for (std::size_t i = 0; i < v.nodes.size(); ++i) {
        if (v.nodes[i].end == 0) {
            v.nodes[i].end = static_cast<std::uint32_t>(i + 1);
        }
    }
    return v;
}

vector_case failure(std::string name, std::string input, resp_errc error, std::size_t offset) {
    vector_case v;
    v.name = std::move(name);
    v.input = std::move(input);
    v.status = resp_status::error;
    v.error = error;
    v.where = offset;
    return v;
}

vector_case with_limits(vector_case v, const resp_limits& limits) {
    v.limits = limits;
    return v;
}

vector_case with_capacity(vector_case v, std::size_t capacity) {
    v.capacity = capacity;
    return v;
}

node_view text_node(resp_type type, std::string text) {
    node_view n;
    n.type = type;
    n.text = std::move(text);
    return n;
}
node_view simple(std::string s) {
    return text_node(resp_type::simple_string, std::move(s));
}
node_view simple_err(std::string s) {
    return text_node(resp_type::simple_error, std::move(s));
}
node_view bulk(std::string s) {
    return text_node(resp_type::bulk_string, std::move(s));
}
node_view bulk_err(std::string s) {
    return text_node(resp_type::bulk_error, std::move(s));
}
node_view verbatim(std::string s) {
    return text_node(resp_type::verbatim_string, std::move(s));
}
node_view dbl(std::string s) {
    return text_node(resp_type::double_number, std::move(s));
}
node_view big(std::string s) {
    return text_node(resp_type::big_number, std::move(s));
}
node_view integer(std::int64_t value) {
    node_view n;
    n.type = resp_type::integer;
    n.integer = value;
    return n;
}
node_view boolean(bool value) {
    node_view n;
    n.type = resp_type::boolean;
    n.integer = value ? 1 : 0;
    return n;
}
node_view nil() {
    return node_view{};
}
node_view agg(resp_type type, std::uint32_t count, std::uint32_t end) {
    node_view n;
    n.type = type;
    n.count = count;
    n.end = end;
    return n;
}
node_view array(std::uint32_t count, std::uint32_t end) {
    return agg(resp_type::array, count, end);
}
node_view map(std::uint32_t count, std::uint32_t end) {
    return agg(resp_type::map, count, end);
}

std::string repeat(const std::string& s, std::size_t times) {
    std::string out;
    out.reserve(s.size() * times);
    for (std::size_t i = 0; i < times; ++i) {
        out += s;
    }
    return out;
}

decoded decode_in_one_call(const vector_case& v, bool keep_nodes) {
    feeder f(v.limits, v.capacity, keep_nodes);
    f.feed(v.input, v.input.size());
    INFO("invariants: " << f.violations());
    CHECK(f.violations().empty());
    return f.result();
}

// Feeds `first` bytes, then (if still incomplete) all of them.
decoded decode_split(const vector_case& v, std::size_t first, bool keep_nodes) {
    feeder f(v.limits, v.capacity, keep_nodes);
    const resp_result r = f.feed(v.input, first);
    std::string violations = f.violations();
    if (r.status == resp_status::incomplete && first < v.input.size()) {
        f.feed(v.input, v.input.size());
        violations += f.violations();
    }
    INFO("split at " << first << ", invariants: " << violations);
    CHECK(violations.empty());
    return f.result();
}

decoded decode_bytewise(const vector_case& v, bool keep_nodes) {
    feeder f(v.limits, v.capacity, keep_nodes);
    std::string violations;
    for (std::size_t n = 0; n <= v.input.size(); ++n) {
        const resp_result r = f.feed(v.input, n);
        violations += f.violations();
        if (r.status != resp_status::incomplete) {
            break;
        }
        // A lower bound on a reply's size cannot exceed that size.
        if (v.status == resp_status::complete && r.needed > v.input.size()) {
            violations += "needed " + std::to_string(r.needed) + " after " + std::to_string(n) +
                          " bytes exceeds the reply; ";
        }
    }
    INFO("byte by byte, invariants: " << violations);
    CHECK(violations.empty());
    return f.result();
}

decoded decode_whole_fn(const vector_case& v) {
    std::unique_ptr<char[]> buffer(new char[v.input.size()]);
    if (!v.input.empty()) {
        std::memcpy(buffer.get(), v.input.data(), v.input.size());
    }
    std::unique_ptr<resp_node[]> nodes(new resp_node[v.capacity]);
    const resp_result r =
        resp_decode_whole(buffer.get(), v.input.size(), nodes.get(), v.capacity, v.limits);
    const std::string violations =
        invariant_violations(r, buffer.get(), v.input.size(), nodes.get(), v.capacity);
    INFO("resp_decode_whole, invariants: " << violations);
    CHECK(violations.empty());
    return snapshot(r, buffer.get(), nodes.get(), v.capacity);
}

// Split points for an input too long to try them all.
std::vector<std::size_t> split_points(std::size_t size) {
    std::vector<std::size_t> points;
    if (size <= 2048) {
        for (std::size_t k = 0; k <= size; ++k) {
            points.push_back(k);
        }
        return points;
    }
    for (std::size_t k = 0; k <= 24; ++k) {
        points.push_back(k);
        points.push_back(size - k);
    }
    points.push_back(size / 2);
    return points;
}

decoded result_fields_only(decoded d) {
    d.tree.clear();
    d.payload_offsets.clear();
    d.text_positions.clear();
    return d;
}

void check_vector(const vector_case& v) {
    INFO("vector \"" << v.name << "\": " << escaped(v.input.substr(0, 200))
                     << (v.input.size() > 200 ? "..." : ""));
    const decoded whole = decode_in_one_call(v, true);

    REQUIRE(std::string(name_of(whole.status)) == name_of(v.status));
    if (v.status == resp_status::complete) {
        CHECK(whole.size == v.where);
        CHECK(whole.nodes == v.nodes.size());
        CHECK(whole.tree == v.nodes);
    } else if (v.status == resp_status::error) {
        CHECK(std::string(describe(whole.error)) == describe(v.error));
        CHECK(whole.offset == v.where);
    }

    const bool exhaustive = v.input.size() <= 2048;
    if (exhaustive) {
        CHECK(decode_bytewise(v, true) == whole);
    }
    for (const std::size_t k : split_points(v.input.size())) {
        INFO("split at " << k);
        CHECK(decode_split(v, k, true) == whole);
    }

    const decoded whole_fn = decode_whole_fn(v);
    if (whole.status == resp_status::incomplete) {
        CHECK(whole_fn.status == resp_status::error);
        CHECK(whole_fn.error == resp_errc::truncated);
        CHECK(whole_fn.offset == v.input.size());
    } else {
        CHECK(whole_fn == whole);
    }

    // Validate-only mode reports the same outcome; the node array is not needed
    // for it, so a capacity error cannot occur there.
    if (whole.error != resp_errc::node_capacity) {
        const decoded expected = result_fields_only(whole);
        CHECK(decode_in_one_call(v, false) == expected);
        if (exhaustive) {
            CHECK(decode_bytewise(v, false) == expected);
        }
        CHECK(decode_split(v, v.input.size() / 2, false) == expected);
    }
}

const std::string token = "0123456789abcdef0123456789abcdef";

const std::string hello3 =
    "%7\r\n"
    "$6\r\nserver\r\n$5\r\nredis\r\n"
    "$7\r\nversion\r\n$5\r\n7.2.4\r\n"
    "$5\r\nproto\r\n:3\r\n"
    "$2\r\nid\r\n:5\r\n"
    "$4\r\nmode\r\n$10\r\nstandalone\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n"
    "$7\r\nmodules\r\n*0\r\n";

std::vector<vector_case> valid_vectors() {
    return {
        // RESP2
        complete("simple string", "+OK\r\n", {simple("OK")}),
        complete("empty simple string", "+\r\n", {simple("")}),
        complete("simple string with spaces", "+hello world\r\n", {simple("hello world")}),
        complete("simple error", "-ERR unknown command 'FOO'\r\n",
                 {simple_err("ERR unknown command 'FOO'")}),
        complete("NOSCRIPT", "-NOSCRIPT No matching script. Please use EVAL.\r\n",
                 {simple_err("NOSCRIPT No matching script. Please use EVAL.")}),
        complete("WRONGTYPE",
                 "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
                 {simple_err("WRONGTYPE Operation against a key holding the wrong kind of value")}),
        complete("integer 0", ":0\r\n", {integer(0)}),
        complete("integer 1", ":1\r\n", {integer(1)}),
        complete("integer -1", ":-1\r\n", {integer(-1)}),
        complete("integer with a plus sign", ":+5\r\n", {integer(5)}),
        complete("integer 30000", ":30000\r\n", {integer(30000)}),
        complete("int64 max", ":9223372036854775807\r\n",
                 {integer(std::numeric_limits<std::int64_t>::max())}),
        complete("int64 min", ":-9223372036854775808\r\n",
                 {integer(std::numeric_limits<std::int64_t>::min())}),
        complete("bulk string", "$5\r\nhello\r\n", {bulk("hello")}),
        complete("empty bulk string", "$0\r\n\r\n", {bulk("")}),
        complete("token bulk", "$32\r\n" + token + "\r\n", {bulk(token)}),
        complete("bulk with CRLF inside", "$4\r\na\r\nb\r\n", {bulk("a\r\nb")}),
        complete("bulk with NUL and high bytes", "$4\r\na\0\xff\x80\r\n"s, {bulk("a\0\xff\x80"s)}),
        complete("bulk whose payload looks like a reply", "$5\r\n+OK\r\n\r\n", {bulk("+OK\r\n")}),
        complete("RESP2 null bulk", "$-1\r\n", {nil()}),
        complete("RESP2 null array", "*-1\r\n", {nil()}),
        complete("empty array", "*0\r\n", {array(0, 1)}),
        complete("array", "*2\r\n$3\r\nfoo\r\n:42\r\n", {array(2, 3), bulk("foo"), integer(42)}),
        complete("array with a null element", "*3\r\n:1\r\n$-1\r\n*-1\r\n",
                 {array(3, 4), integer(1), nil(), nil()}),
        complete("nested arrays", "*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n+x\r\n",
                 {array(2, 6), array(2, 4), integer(1), integer(2), array(1, 6), simple("x")}),
        complete("nested empty arrays", "*2\r\n*0\r\n*1\r\n*0\r\n",
                 {array(2, 4), array(0, 2), array(1, 4), array(0, 4)}),
        complete("EXEC reply", "*3\r\n+OK\r\n:1\r\n-ERR oops\r\n",
                 {array(3, 4), simple("OK"), integer(1), simple_err("ERR oops")}),
        // RESP3
        complete("null", "_\r\n", {nil()}),
        complete("true", "#t\r\n", {boolean(true)}),
        complete("false", "#f\r\n", {boolean(false)}),
        complete("double", ",1.5\r\n", {dbl("1.5")}),
        complete("negative double", ",-2.5\r\n", {dbl("-2.5")}),
        complete("integral double", ",10\r\n", {dbl("10")}),
        complete("double with exponent", ",1.5e10\r\n", {dbl("1.5e10")}),
        complete("double with signed exponent", ",-2.5E-3\r\n", {dbl("-2.5E-3")}),
        complete("inf", ",inf\r\n", {dbl("inf")}),
        complete("-inf", ",-inf\r\n", {dbl("-inf")}),
        complete("nan", ",nan\r\n", {dbl("nan")}),
        complete("big number", "(3492890328409238509324850943850943825024385\r\n",
                 {big("3492890328409238509324850943850943825024385")}),
        complete("negative big number", "(-123456789012345678901234567890\r\n",
                 {big("-123456789012345678901234567890")}),
        complete("bulk error", "!21\r\nSYNTAX invalid syntax\r\n",
                 {bulk_err("SYNTAX invalid syntax")}),
        complete("empty bulk error", "!0\r\n\r\n", {bulk_err("")}),
        complete("verbatim string", "=15\r\ntxt:Some string\r\n", {verbatim("Some string")}),
        complete("empty verbatim string", "=4\r\nmkd:\r\n", {verbatim("")}),
        complete("verbatim with CRLF inside", "=7\r\ntxt:a\r\n\r\n", {verbatim("a\r\n")}),
        complete("map", "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n",
                 {map(2, 5), simple("a"), integer(1), simple("b"), integer(2)}),
        complete("empty map", "%0\r\n", {map(0, 1)}),
        complete("set", "~3\r\n:1\r\n:2\r\n:3\r\n",
                 {agg(resp_type::set, 3, 4), integer(1), integer(2), integer(3)}),
        complete("empty set", "~0\r\n", {agg(resp_type::set, 0, 1)}),
        complete("pubsub push", ">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n",
                 {agg(resp_type::push, 3, 4), bulk("message"), bulk("channel"), bulk("hello")}),
        complete("invalidation push", ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n",
                 {agg(resp_type::push, 2, 4), bulk("invalidate"), array(1, 4), bulk("key")}),
        complete("HELLO 3 reply", hello3,
                 {map(7, 15), bulk("server"), bulk("redis"), bulk("version"), bulk("7.2.4"),
                  bulk("proto"), integer(3), bulk("id"), integer(5), bulk("mode"),
                  bulk("standalone"), bulk("role"), bulk("master"), bulk("modules"), array(0, 15)}),
        complete("map holding an array of maps",
                 "%1\r\n$7\r\nmodules\r\n*1\r\n%2\r\n$4\r\nname\r\n$6\r\nsearch\r\n"
                 "$3\r\nver\r\n:20809\r\n",
                 {map(1, 8), bulk("modules"), array(1, 8), map(2, 8), bulk("name"), bulk("search"),
                  bulk("ver"), integer(20809)}),
        complete("map with aggregate keys", "%1\r\n*1\r\n:1\r\n~1\r\n#t\r\n",
                 {map(1, 5), array(1, 3), integer(1), agg(resp_type::set, 1, 5), boolean(true)}),
        // Attributes precede the value they annotate and are not elements.
        complete("attribute at top level",
                 "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
                 "*2\r\n:2039123\r\n:9543892\r\n",
                 {agg(resp_type::attribute, 1, 7), simple("key-popularity"), map(2, 7), bulk("a"),
                  dbl("0.1923"), bulk("b"), dbl("0.0012"), array(2, 10), integer(2039123),
                  integer(9543892)}),
        complete("attribute inside an array", "*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n",
                 {array(2, 6), integer(1), agg(resp_type::attribute, 1, 5), simple("ttl"),
                  integer(3600), integer(2)}),
        complete("attribute on a map value", "%1\r\n+k\r\n|1\r\n+a\r\n+b\r\n+v\r\n",
                 {map(1, 6), simple("k"), agg(resp_type::attribute, 1, 5), simple("a"), simple("b"),
                  simple("v")}),
        complete("two attributes", "|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n:1\r\n",
                 {agg(resp_type::attribute, 1, 3), simple("a"), simple("b"),
                  agg(resp_type::attribute, 1, 6), simple("c"), simple("d"), integer(1)}),
        complete("empty attribute", "|0\r\n:7\r\n", {agg(resp_type::attribute, 0, 1), integer(7)}),
        complete("attribute annotating an attribute's value",
                 "|1\r\n+k\r\n|1\r\n+a\r\n+b\r\n+v\r\n+OK\r\n",
                 {agg(resp_type::attribute, 1, 6), simple("k"), agg(resp_type::attribute, 1, 5),
                  simple("a"), simple("b"), simple("v"), simple("OK")}),
        complete("attribute on an aggregate in an array", "*1\r\n|1\r\n+a\r\n+b\r\n*1\r\n:1\r\n",
                 {array(1, 6), agg(resp_type::attribute, 1, 4), simple("a"), simple("b"),
                  array(1, 6), integer(1)}),
    };
}

vector_case find_vector(const std::string& name) {
    for (const vector_case& v : valid_vectors()) {
        if (v.name == name) {
            return v;
        }
    }
    FAIL("no vector named " << name);
    return vector_case{};
}

TEST_CASE("resp decoder: every type, fed whole, byte by byte and split at every offset", "[resp]") {
    for (const vector_case& v : valid_vectors()) {
        check_vector(v);
    }
}

std::vector<vector_case> malformed_vectors() {
    return {
        failure("unknown type byte", "?x\r\n", resp_errc::bad_type, 0),
        failure("CR as type byte", "\r\n", resp_errc::bad_type, 0),
        failure("space as type byte", " OK\r\n", resp_errc::bad_type, 0),
        failure("NUL as type byte", "\0\r\n"s, resp_errc::bad_type, 0),
        failure("RESP3 streamed chunk as type", ";4\r\nabcd\r\n", resp_errc::bad_type, 0),
        failure("bad type inside an array", "*2\r\n:1\r\n?\r\n", resp_errc::bad_type, 8),
        failure("bad type as a map value", "%1\r\n+k\r\n@\r\n", resp_errc::bad_type, 8),
        // Line ends.
        failure("LF without CR", "+OK\n", resp_errc::bad_line_end, 3),
        failure("LF inside a line", "+O\nK\r\n", resp_errc::bad_line_end, 2),
        failure("CR followed by a non-LF", "+OK\rX\n", resp_errc::bad_line_end, 4),
        failure("CR followed by CR", "+OK\r\r\n", resp_errc::bad_line_end, 4),
        failure("LF without CR in an integer", ":1\n", resp_errc::bad_line_end, 2),
        failure("LF without CR in a bulk header", "$3\nabc\r\n", resp_errc::bad_line_end, 2),
        failure("CR without LF in an array header", "*1\rx", resp_errc::bad_line_end, 3),
        failure("LF without CR in an element", "*1\r\n+a\n", resp_errc::bad_line_end, 6),
        // Integers.
        failure("integer without digits", ":\r\n", resp_errc::bad_integer, 1),
        failure("integer with only a sign", ":-\r\n", resp_errc::bad_integer, 2),
        failure("integer with a letter", ":12a\r\n", resp_errc::bad_integer, 3),
        failure("integer with a space", ": 1\r\n", resp_errc::bad_integer, 1),
        failure("integer with a misplaced sign", ":1-2\r\n", resp_errc::bad_integer, 2),
        failure("integer with two signs", ":--1\r\n", resp_errc::bad_integer, 2),
        failure("integer with a decimal point", ":1.0\r\n", resp_errc::bad_integer, 2),
        failure("int64 max + 1", ":9223372036854775808\r\n", resp_errc::integer_overflow, 19),
        failure("int64 min - 1", ":-9223372036854775809\r\n", resp_errc::integer_overflow, 20),
        failure("int64 max * 10", ":92233720368547758070\r\n", resp_errc::integer_overflow, 20),
        failure("twenty nines", ":99999999999999999999\r\n", resp_errc::integer_overflow, 19),
        failure("int64 max + 1, with a leading plus", ":+9223372036854775808\r\n",
                resp_errc::integer_overflow, 20),
        // 2^63 overflows a positive integer at its last digit, whatever follows.
        failure("2^63 * 10", ":92233720368547758080\r\n", resp_errc::integer_overflow, 19),
        failure("2^63 then a letter", ":9223372036854775808x\r\n", resp_errc::integer_overflow, 19),
        // Lengths.
        failure("bulk length without digits", "$\r\n", resp_errc::bad_length, 1),
        failure("bulk length with a letter", "$1x\r\nab\r\n", resp_errc::bad_length, 2),
        failure("bulk length -2", "$-2\r\n", resp_errc::bad_length, 2),
        failure("bulk length -10", "$-10\r\n", resp_errc::bad_length, 3),
        failure("bulk length with only a sign", "$-\r\n", resp_errc::bad_length, 2),
        failure("bulk length with a space", "$ 1\r\na\r\n", resp_errc::bad_length, 1),
        failure("array count with a letter", "*x\r\n", resp_errc::bad_length, 1),
        failure("array count -2", "*-2\r\n", resp_errc::bad_length, 2),
        failure("map count -1", "%-1\r\n", resp_errc::bad_length, 1),
        failure("verbatim length -1", "=-1\r\n", resp_errc::bad_length, 1),
        failure("bulk error length -1", "!-1\r\n", resp_errc::bad_length, 1),
        // A length is read as an unsigned 64-bit number; one past that overflows.
        failure("bulk length 2^64 - 1", "$18446744073709551615\r\n", resp_errc::bulk_too_long, 1),
        failure("bulk length 2^64", "$18446744073709551616\r\n", resp_errc::length_overflow, 20),
        failure("overflowing bulk length", "$99999999999999999999\r\n", resp_errc::length_overflow,
                20),
        failure("overflowing array count", "*99999999999999999999\r\n", resp_errc::length_overflow,
                20),
        // Bulk payload terminators.
        failure("bulk longer than its length", "$2\r\nabc\r\n", resp_errc::bad_bulk_end, 6),
        failure("bulk followed by CR and a non-LF", "$2\r\nab\rX", resp_errc::bad_bulk_end, 7),
        failure("bulk followed by LF", "$2\r\nab\n\r", resp_errc::bad_bulk_end, 6),
        failure("empty bulk without terminator", "$0\r\nxy", resp_errc::bad_bulk_end, 4),
        failure("bulk error with a bad terminator", "!1\r\nxyz", resp_errc::bad_bulk_end, 5),
        // RESP3 scalars.
        failure("null with a payload", "_x\r\n", resp_errc::bad_null, 1),
        failure("boolean without a value", "#\r\n", resp_errc::bad_boolean, 1),
        failure("boolean x", "#x\r\n", resp_errc::bad_boolean, 1),
        failure("boolean T", "#T\r\n", resp_errc::bad_boolean, 1),
        failure("boolean tt", "#tt\r\n", resp_errc::bad_boolean, 2),
        failure("empty double", ",\r\n", resp_errc::bad_double, 1),
        failure("double word", ",abc\r\n", resp_errc::bad_double, 1),
        failure("double with trailing garbage", ",1.5x\r\n", resp_errc::bad_double, 4),
        failure("double with two points", ",1.2.3\r\n", resp_errc::bad_double, 4),
        failure("double without fraction digits", ",1.\r\n", resp_errc::bad_double, 3),
        failure("double without exponent digits", ",1e\r\n", resp_errc::bad_double, 3),
        failure("double starting with a point", ",.5\r\n", resp_errc::bad_double, 1),
        failure("inf with trailing garbage", ",infx\r\n", resp_errc::bad_double, 4),
        failure("unfinished inf", ",in\r\n", resp_errc::bad_double, 3),
        failure("empty big number", "(\r\n", resp_errc::bad_big_number, 1),
        failure("big number with only a sign", "(-\r\n", resp_errc::bad_big_number, 2),
        failure("big number with a letter", "(12a\r\n", resp_errc::bad_big_number, 3),
        failure("verbatim without ':'", "=5\r\ntxtxy\r\n", resp_errc::bad_verbatim, 7),
        failure("verbatim shorter than its format", "=3\r\ntxt\r\n", resp_errc::bad_verbatim, 1),
        // Streamed RESP3 replies are not supported.
        failure("streamed string", "$?\r\n;4\r\nabcd\r\n;0\r\n", resp_errc::streamed_unsupported,
                1),
        failure("streamed array", "*?\r\n:1\r\n.\r\n", resp_errc::streamed_unsupported, 1),
        failure("streamed map", "%?\r\n", resp_errc::streamed_unsupported, 1),
        failure("streamed set", "~?\r\n", resp_errc::streamed_unsupported, 1),
    };
}

TEST_CASE("resp decoder: malformed input is an error at the offending byte", "[resp]") {
    for (const vector_case& v : malformed_vectors()) {
        check_vector(v);
    }
}

TEST_CASE("resp decoder: limits are accepted at N and rejected at N+1 (small limits)", "[resp]") {
    const resp_limits small = small_limits();
    resp_limits wide_bulk = small;
    wide_bulk.max_bulk = 64;

    const std::vector<vector_case> vectors = {
        // max_depth = 2
        with_limits(
            complete("depth 2", "*1\r\n*1\r\n:1\r\n", {array(1, 3), array(1, 3), integer(1)}),
            small),
        with_limits(failure("depth 3", "*1\r\n*1\r\n*1\r\n:1\r\n", resp_errc::too_deep, 8), small),
        with_limits(complete("depth 2, map and set", "%1\r\n+k\r\n~1\r\n:1\r\n",
                             {map(1, 4), simple("k"), agg(resp_type::set, 1, 4), integer(1)}),
                    small),
        with_limits(failure("depth 3, push in set in map", "%1\r\n+k\r\n~1\r\n>1\r\n:1\r\n",
                            resp_errc::too_deep, 12),
                    small),
        with_limits(complete("depth 2, siblings", "*2\r\n*1\r\n:1\r\n*1\r\n:2\r\n",
                             {array(2, 5), array(1, 3), integer(1), array(1, 5), integer(2)}),
                    small),
        // An attribute is an aggregate too: it takes a level.
        with_limits(failure("depth 3, attribute innermost", "*1\r\n*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n",
                            resp_errc::too_deep, 8),
                    small),
        // An empty aggregate one level too deep still nests too deep.
        with_limits(
            failure("depth 3, empty innermost", "*1\r\n*1\r\n*0\r\n", resp_errc::too_deep, 8),
            small),
        // max_elements = 4 (a map counts keys and values)
        with_limits(complete("4 elements", "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n",
                             {array(4, 5), integer(1), integer(2), integer(3), integer(4)}),
                    small),
        with_limits(failure("5 elements", "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n",
                            resp_errc::too_many_elements, 1),
                    small),
        with_limits(complete("map of 2 pairs", "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n",
                             {map(2, 5), simple("a"), integer(1), simple("b"), integer(2)}),
                    small),
        with_limits(
            failure("map of 3 pairs", "%3\r\n+a\r\n:1\r\n", resp_errc::too_many_elements, 1),
            small),
        with_limits(failure("set of 5", "~5\r\n", resp_errc::too_many_elements, 1), small),
        with_limits(failure("push of 5", ">5\r\n", resp_errc::too_many_elements, 1), small),
        with_limits(complete("attribute of 2 pairs", "|2\r\n+a\r\n:1\r\n+b\r\n:2\r\n+OK\r\n",
                             {agg(resp_type::attribute, 2, 5), simple("a"), integer(1), simple("b"),
                              integer(2), simple("OK")}),
                    small),
        with_limits(failure("attribute of 3 pairs", "|3\r\n", resp_errc::too_many_elements, 1),
                    small),
        with_limits(failure("5 elements, nested", "*1\r\n*5\r\n", resp_errc::too_many_elements, 5),
                    small),
        // Attributes inside an aggregate are not elements of it.
        with_limits(complete("4 elements and an attribute",
                             "*4\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n:3\r\n:4\r\n",
                             {array(4, 8), agg(resp_type::attribute, 1, 4), simple("a"),
                              simple("b"), integer(1), integer(2), integer(3), integer(4)}),
                    small),
        // max_bulk = 16
        with_limits(complete("bulk of 16", "$16\r\n" + std::string(16, 'b') + "\r\n",
                             {bulk(std::string(16, 'b'))}),
                    small),
        with_limits(failure("bulk of 17", "$17\r\n" + std::string(17, 'b') + "\r\n",
                            resp_errc::bulk_too_long, 1),
                    small),
        with_limits(failure("bulk of 17, header only", "$17\r\n", resp_errc::bulk_too_long, 1),
                    small),
        with_limits(complete("bulk error of 16", "!16\r\n" + std::string(16, 'e') + "\r\n",
                             {bulk_err(std::string(16, 'e'))}),
                    small),
        with_limits(failure("bulk error of 17", "!17\r\n", resp_errc::bulk_too_long, 1), small),
        with_limits(complete("verbatim of 16", "=16\r\ntxt:" + std::string(12, 'v') + "\r\n",
                             {verbatim(std::string(12, 'v'))}),
                    small),
        with_limits(failure("verbatim of 17", "=17\r\n", resp_errc::bulk_too_long, 1), small),
        with_limits(failure("bulk of 17 in an array", "*1\r\n$17\r\n", resp_errc::bulk_too_long, 5),
                    small),
        // max_line = 16 does not apply to bulk payloads.
        with_limits(
            complete("bulk of 64 with max_line 16", "$64\r\n" + std::string(64, 'p') + "\r\n",
                     {bulk(std::string(64, 'p'))}),
            wide_bulk),
        // max_line = 16 (not counting the type byte and CRLF)
        with_limits(complete("line of 16", "+" + std::string(16, 'x') + "\r\n",
                             {simple(std::string(16, 'x'))}),
                    small),
        with_limits(failure("line of 17", "+" + std::string(17, 'x') + "\r\n",
                            resp_errc::line_too_long, 17),
                    small),
        // A line that never ends is rejected without waiting for its CRLF.
        with_limits(failure("line of 17, no CRLF", "+" + std::string(17, 'x'),
                            resp_errc::line_too_long, 17),
                    small),
        with_limits(failure("error line of 17", "-" + std::string(17, 'E') + "\r\n",
                            resp_errc::line_too_long, 17),
                    small),
        with_limits(
            complete("integer line of 16", ":1234567890123456\r\n", {integer(1234567890123456)}),
            small),
        with_limits(
            failure("integer line of 17", ":12345678901234567\r\n", resp_errc::line_too_long, 17),
            small),
        with_limits(
            complete("double line of 16", ",1.23456789012345\r\n", {dbl("1.23456789012345")}),
            small),
        with_limits(
            failure("double line of 17", ",1.234567890123456\r\n", resp_errc::line_too_long, 17),
            small),
        with_limits(failure("big number line of 17", "(12345678901234567\r\n",
                            resp_errc::line_too_long, 17),
                    small),
        with_limits(failure("line of 17 in an array", "*1\r\n+" + std::string(17, 'x') + "\r\n",
                            resp_errc::line_too_long, 21),
                    small),
    };
    for (const vector_case& v : vectors) {
        check_vector(v);
    }
}

// n arrays of one element, nested, around :1.
std::string nested_arrays(std::size_t n) {
    return repeat("*1\r\n", n) + ":1\r\n";
}

TEST_CASE("resp decoder: limits are accepted at N and rejected at N+1 (config.hpp defaults)",
          "[resp]") {
    const resp_limits defaults;
    REQUIRE(defaults.max_depth == EDGELOCK_RESP_MAX_DEPTH);
    REQUIRE(defaults.max_elements == EDGELOCK_RESP_MAX_ELEMENTS);
    REQUIRE(defaults.max_bulk == EDGELOCK_RESP_MAX_BULK);
    REQUIRE(defaults.max_line == EDGELOCK_RESP_MAX_LINE);

    const std::size_t depth = EDGELOCK_RESP_MAX_DEPTH;
    const std::size_t elements = EDGELOCK_RESP_MAX_ELEMENTS;
    const std::size_t max_bulk = EDGELOCK_RESP_MAX_BULK;
    const std::size_t max_line = EDGELOCK_RESP_MAX_LINE;

    std::vector<node_view> deep;
    for (std::size_t i = 0; i < depth; ++i) {
        deep.push_back(array(1, static_cast<std::uint32_t>(depth + 1)));
    }
    deep.push_back(integer(1));

    std::vector<node_view> wide{
        array(static_cast<std::uint32_t>(elements), static_cast<std::uint32_t>(elements + 1))};
    wide.insert(wide.end(), elements, integer(1));

    std::vector<node_view> wide_map{
        map(static_cast<std::uint32_t>(elements / 2), static_cast<std::uint32_t>(elements + 1))};
    for (std::size_t i = 0; i < elements / 2; ++i) {
        wide_map.push_back(simple("k"));
        wide_map.push_back(integer(1));
    }

    const std::vector<vector_case> vectors = {
        complete("default depth", nested_arrays(depth), deep),
        failure("default depth + 1", nested_arrays(depth + 1), resp_errc::too_deep, 4 * depth),
        with_capacity(
            complete("default elements",
                     "*" + std::to_string(elements) + "\r\n" + repeat(":1\r\n", elements), wide),
            elements + 1),
        failure("default elements + 1", "*" + std::to_string(elements + 1) + "\r\n:1\r\n",
                resp_errc::too_many_elements, 1),
        with_capacity(complete("default elements, map",
                               "%" + std::to_string(elements / 2) + "\r\n" +
                                   repeat("+k\r\n:1\r\n", elements / 2),
                               wide_map),
                      elements + 1),
        failure("default elements + 2, map", "%" + std::to_string(elements / 2 + 1) + "\r\n",
                resp_errc::too_many_elements, 1),
        complete("default bulk",
                 "$" + std::to_string(max_bulk) + "\r\n" + std::string(max_bulk, 'b') + "\r\n",
                 {bulk(std::string(max_bulk, 'b'))}),
        // Rejected on the header alone: nothing waits for a payload that will not fit.
        failure("default bulk + 1", "$" + std::to_string(max_bulk + 1) + "\r\n",
                resp_errc::bulk_too_long, 1),
        complete("default line", "+" + std::string(max_line, 'x') + "\r\n",
                 {simple(std::string(max_line, 'x'))}),
        failure("default line + 1", "+" + std::string(max_line + 1, 'x'), resp_errc::line_too_long,
                max_line + 1),
    };
    for (const vector_case& v : vectors) {
        check_vector(v);
    }
}

TEST_CASE("resp decoder: max_depth above the stack capacity is clamped", "[resp]") {
    resp_limits limits;
    limits.max_depth = EDGELOCK_RESP_MAX_DEPTH + 100;
    resp_decoder decoder(limits);
    CHECK(decoder.limits().max_depth == EDGELOCK_RESP_MAX_DEPTH);
    decoder.set_limits(limits);
    CHECK(decoder.limits().max_depth == EDGELOCK_RESP_MAX_DEPTH);

    const std::size_t depth = EDGELOCK_RESP_MAX_DEPTH;
    check_vector(with_limits(
        failure("capacity depth + 1", nested_arrays(depth + 1), resp_errc::too_deep, 4 * depth),
        limits));
    check_vector(with_limits(
        failure("capacity depth + 9", nested_arrays(depth + 9), resp_errc::too_deep, 4 * depth),
        limits));
}

TEST_CASE("resp decoder: the node array too small by one, then exactly big enough", "[resp]") {
    const std::string reply = "*2\r\n:1\r\n:2\r\n";
    const std::vector<node_view> nodes{array(2, 3), integer(1), integer(2)};
    check_vector(with_capacity(complete("capacity 3", reply, nodes), 3));
    check_vector(with_capacity(failure("capacity 2", reply, resp_errc::node_capacity, 8), 2));
    check_vector(with_capacity(failure("capacity 1", reply, resp_errc::node_capacity, 4), 1));
    check_vector(with_capacity(failure("capacity 0", reply, resp_errc::node_capacity, 0), 0));

    const std::vector<node_view> hello_nodes = find_vector("HELLO 3 reply").nodes;
    REQUIRE(hello_nodes.size() == 15);
    check_vector(with_capacity(complete("HELLO 3, exact", hello3, hello_nodes), 15));
    check_vector(with_capacity(
        failure("HELLO 3, one short", hello3, resp_errc::node_capacity, hello3.size() - 4), 14));
}

// An exactly sized heap copy of some bytes.
std::unique_ptr<char[]> copy_of(const std::string& bytes) {
    std::unique_ptr<char[]> out(new char[bytes.size()]);
    if (!bytes.empty()) {
        std::memcpy(out.get(), bytes.data(), bytes.size());
    }
    return out;
}

TEST_CASE("resp decoder: payload offsets and views point into the caller's buffer", "[resp]") {
    const std::string reply = "*4\r\n+OK\r\n$5\r\nhello\r\n-ERR x\r\n=8\r\nmkd:# hi\r\n";
    const std::unique_ptr<char[]> buffer = copy_of(reply);
    resp_node nodes[5];
    const resp_result r = resp_decode_whole(buffer.get(), reply.size(), nodes, 5);
    REQUIRE(r.status == resp_status::complete);
    REQUIRE(r.nodes == 5);
    CHECK(nodes[1].offset == 5);
    CHECK(nodes[1].text.data == buffer.get() + 5);
    CHECK(nodes[2].offset == 13);
    CHECK(nodes[2].text.data == buffer.get() + 13);
    CHECK(nodes[3].offset == 21);
    CHECK(nodes[3].text.data == buffer.get() + 21);
    // The verbatim view starts after the format and ':'.
    CHECK(nodes[4].text.data == buffer.get() + 36);
    CHECK(nodes[4].text == str_view("# hi"));
    CHECK(nodes[4].verbatim_format() == str_view("mkd"));
    CHECK(nodes[4].verbatim_format().data == buffer.get() + 32);
    CHECK(nodes[1].verbatim_format().empty());
}

TEST_CASE("resp decoder: verbatim format of an empty verbatim string", "[resp]") {
    const std::string reply = "=4\r\ntxt:\r\n";
    const std::unique_ptr<char[]> buffer = copy_of(reply);
    resp_node node;
    const resp_result r = resp_decode_whole(buffer.get(), reply.size(), &node, 1);
    REQUIRE(r.status == resp_status::complete);
    CHECK(node.type == resp_type::verbatim_string);
    CHECK(node.text.size == 0);
    // verbatim_format() reads 4 bytes before text.data, so the view must still be placed.
    REQUIRE(node.text.data == buffer.get() + 8);
    CHECK(node.verbatim_format() == str_view("txt"));
}

TEST_CASE("resp decoder: is_error and is_aggregate", "[resp]") {
    struct table_row {
        std::string reply;
        bool error;
        bool aggregate;
    };
    const std::vector<table_row> rows = {
        {"+OK\r\n", false, false}, {"-ERR\r\n", true, false},     {"!1\r\nx\r\n", true, false},
        {":1\r\n", false, false},  {"$1\r\nx\r\n", false, false}, {"_\r\n", false, false},
        {"*0\r\n", false, true},   {"%0\r\n", false, true},       {"~0\r\n", false, true},
        {">0\r\n", false, true},   {"|0\r\n:1\r\n", false, true},
    };
    for (const table_row& row : rows) {
        INFO(escaped(row.reply));
        const std::unique_ptr<char[]> buffer = copy_of(row.reply);
        resp_node nodes[2];
        REQUIRE(resp_decode_whole(buffer.get(), row.reply.size(), nodes, 2).status ==
                resp_status::complete);
        CHECK(nodes[0].is_error() == row.error);
        CHECK(nodes[0].is_aggregate() == row.aggregate);
    }
}

TEST_CASE("resp decoder: skip_attributes finds the annotated value", "[resp]") {
    struct table_row {
        std::string reply;
        std::size_t from;
        std::size_t expected;
    };
    const std::vector<table_row> rows = {
        {"+OK\r\n", 0, 0},
        {"|1\r\n+a\r\n+b\r\n:1\r\n", 0, 3},
        {"|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n:1\r\n", 0, 6},
        {"|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n:1\r\n", 3, 6},
        // An attribute whose key is an aggregate is skipped as a whole.
        {"|1\r\n*2\r\n:1\r\n:2\r\n+b\r\n:1\r\n", 0, 5},
        {"*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n", 0, 0},
        {"*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n", 1, 1},
        {"*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n", 2, 5},
        {"*1\r\n:1\r\n", 2, 2},
    };
    for (const table_row& row : rows) {
        INFO(escaped(row.reply) << " from " << row.from);
        const std::unique_ptr<char[]> buffer = copy_of(row.reply);
        resp_node nodes[16];
        const resp_result r = resp_decode_whole(buffer.get(), row.reply.size(), nodes, 16);
        REQUIRE(r.status == resp_status::complete);
        CHECK(skip_attributes(nodes, r.nodes, row.from) == row.expected);
    }

    // Attributes with nothing after them: no value, so `count`.
    resp_node lone[3];
    lone[0].type = resp_type::attribute;
    lone[0].count = 1;
    lone[0].end = 3;
    lone[1].type = resp_type::simple_string;
    lone[1].end = 2;
    lone[2].type = resp_type::simple_string;
    lone[2].end = 3;
    CHECK(skip_attributes(lone, 3, 0) == 3);
    CHECK(skip_attributes(lone, 0, 0) == 0);
}

TEST_CASE("resp decoder: needed is a lower bound that counts an announced payload", "[resp]") {
    struct table_row {
        std::string given;
        std::size_t min_needed;
        std::size_t max_needed;  // the smallest reply that could complete `given`
    };
    const std::vector<table_row> rows = {
        {"", 1, 3},
        {"+", 2, 3},
        {"+OK\r", 5, 5},
        {"$10\r\n", 17, 17},
        {"$10\r\nab", 17, 17},
        {"$10\r\n0123456789\r", 17, 17},
        {"$" + std::to_string(EDGELOCK_RESP_MAX_BULK) + "\r\n", 10 + EDGELOCK_RESP_MAX_BULK + 2,
         10 + EDGELOCK_RESP_MAX_BULK + 2},
        // The bulk is counted; the second element needs at least "_\r\n".
        {"*2\r\n$10\r\nab", 21, 24},
        {"*2\r\n:1\r\n", 9, 11},
    };
    for (const table_row& row : rows) {
        INFO(escaped(row.given));
        resp_decoder decoder;
        resp_node nodes[4];
        const std::unique_ptr<char[]> buffer = copy_of(row.given);
        const resp_result r = decoder.decode(buffer.get(), row.given.size(), nodes, 4);
        REQUIRE(r.status == resp_status::incomplete);
        CHECK(r.needed >= row.min_needed);
        CHECK(r.needed <= row.max_needed);
    }
}

TEST_CASE("resp decoder: calling again without new bytes changes nothing", "[resp]") {
    const std::string given = "*3\r\n$5\r\nhello\r\n:1";
    resp_decoder decoder;
    resp_node nodes[4];
    const std::unique_ptr<char[]> buffer = copy_of(given);
    const resp_result first = decoder.decode(buffer.get(), given.size(), nodes, 4);
    const resp_result second = decoder.decode(buffer.get(), given.size(), nodes, 4);
    REQUIRE(first.status == resp_status::incomplete);
    CHECK(second.status == resp_status::incomplete);
    CHECK(second.needed == first.needed);

    const std::string rest = given + "\r\n+x\r\n";
    const std::unique_ptr<char[]> full = copy_of(rest);
    const resp_result done = decoder.decode(full.get(), rest.size(), nodes, 4);
    REQUIRE(done.status == resp_status::complete);
    CHECK(done.size == rest.size());
    CHECK(nodes[1].text == str_view("hello"));
    CHECK(nodes[2].integer == 1);
    CHECK(nodes[3].text == str_view("x"));
}

TEST_CASE("resp decoder: fewer bytes than already parsed is input_shrank, sticky", "[resp]") {
    const std::string full = "*2\r\n:1\r\n:2\r\n";
    const std::unique_ptr<char[]> buffer = copy_of(full);
    resp_node nodes[3];

    SECTION("after a whole element") {
        resp_decoder decoder;
        REQUIRE(decoder.decode(buffer.get(), 8, nodes, 3).status == resp_status::incomplete);
        const resp_result shrank = decoder.decode(buffer.get(), 4, nodes, 3);
        CHECK(shrank.status == resp_status::error);
        CHECK(shrank.error == resp_errc::input_shrank);
        CHECK(decoder.in_progress());
        const resp_result again = decoder.decode(buffer.get(), full.size(), nodes, 3);
        CHECK(again.status == resp_status::error);
        CHECK(again.error == resp_errc::input_shrank);
        CHECK(again.offset == shrank.offset);

        decoder.reset();
        CHECK_FALSE(decoder.in_progress());
        const resp_result fresh = decoder.decode(buffer.get(), full.size(), nodes, 3);
        CHECK(fresh.status == resp_status::complete);
        CHECK(fresh.size == full.size());
    }
    SECTION("after part of a line") {
        // "+OK" was scanned for a CRLF: those three bytes cannot disappear either.
        const std::string line = "+OK\r\n";
        const std::unique_ptr<char[]> ok = copy_of(line);
        resp_decoder decoder;
        REQUIRE(decoder.decode(ok.get(), 3, nodes, 3).status == resp_status::incomplete);
        const resp_result shrank = decoder.decode(ok.get(), 2, nodes, 3);
        CHECK(shrank.status == resp_status::error);
        CHECK(shrank.error == resp_errc::input_shrank);
    }
}

TEST_CASE("resp decoder: an error is sticky until reset()", "[resp]") {
    const std::string bad = "*2\r\n:1\r\n:x\r\n";
    const std::string good = "+OK\r\n";
    const std::unique_ptr<char[]> bad_buffer = copy_of(bad);
    const std::unique_ptr<char[]> good_buffer = copy_of(good);
    resp_decoder decoder;
    resp_node nodes[4];

    const resp_result first = decoder.decode(bad_buffer.get(), bad.size(), nodes, 4);
    REQUIRE(first.status == resp_status::error);
    CHECK(first.error == resp_errc::bad_integer);
    CHECK(first.offset == 9);
    CHECK(decoder.in_progress());

    for (int i = 0; i < 2; ++i) {
        const resp_result again = decoder.decode(good_buffer.get(), good.size(), nodes, 4);
        CHECK(again.status == resp_status::error);
        CHECK(again.error == resp_errc::bad_integer);
        CHECK(again.offset == 9);
    }

    decoder.reset();
    CHECK_FALSE(decoder.in_progress());
    const resp_result after = decoder.decode(good_buffer.get(), good.size(), nodes, 4);
    REQUIRE(after.status == resp_status::complete);
    CHECK(nodes[0].text == str_view("OK"));
}

TEST_CASE("resp decoder: reset() forgets a partial reply", "[resp]") {
    const std::string partial = "*3\r\n:1\r\n";
    const std::string next = ":7\r\n";
    const std::unique_ptr<char[]> a = copy_of(partial);
    const std::unique_ptr<char[]> b = copy_of(next);
    resp_decoder decoder;
    resp_node nodes[4];
    REQUIRE(decoder.decode(a.get(), partial.size(), nodes, 4).status == resp_status::incomplete);
    decoder.reset();
    const resp_result r = decoder.decode(b.get(), next.size(), nodes, 4);
    REQUIRE(r.status == resp_status::complete);
    CHECK(r.nodes == 1);
    CHECK(nodes[0].type == resp_type::integer);
    CHECK(nodes[0].integer == 7);
}

TEST_CASE("resp decoder: in_progress() tells a clean end of stream from a truncated one",
          "[resp]") {
    struct table_row {
        std::string given;
        bool in_progress;
    };
    const std::vector<table_row> rows = {
        {"", false},         {"+OK\r\n", false}, {"+", true},
        {"+OK", true},       {"+OK\r", true},    {"$5\r\n", true},
        {"$5\r\nhel", true}, {"*2\r\n", true},   {"*2\r\n:1\r\n", true},
        {"?", true},  // an error
    };
    for (const table_row& row : rows) {
        INFO(escaped(row.given));
        resp_decoder decoder;
        resp_node nodes[4];
        const std::unique_ptr<char[]> buffer = copy_of(row.given);
        decoder.decode(buffer.get(), row.given.size(), nodes, 4);
        CHECK(decoder.in_progress() == row.in_progress);
    }
}

TEST_CASE("resp decoder: pipelined replies in one buffer, one after another", "[resp]") {
    const std::string stream =
        "+OK\r\n:1\r\n$-1\r\n*2\r\n$3\r\nfoo\r\n%1\r\n+a\r\n#t\r\n"
        "-NOSCRIPT No matching script. Please use EVAL.\r\n:0\r\n";
    const std::vector<resp_type> types = {resp_type::simple_string, resp_type::integer,
                                          resp_type::null,          resp_type::array,
                                          resp_type::simple_error,  resp_type::integer};
    const std::vector<std::size_t> sizes = {5, 4, 5, 25, 48, 4};
    const std::unique_ptr<char[]> buffer = copy_of(stream);

    SECTION("all bytes at once") {
        resp_decoder decoder;
        resp_node nodes[8];
        std::size_t start = 0;
        for (std::size_t i = 0; i < types.size(); ++i) {
            INFO("reply " << i);
            const resp_result r =
                decoder.decode(buffer.get() + start, stream.size() - start, nodes, 8);
            REQUIRE(r.status == resp_status::complete);
            CHECK(r.size == sizes[i]);
            CHECK(nodes[0].type == types[i]);
            CHECK_FALSE(decoder.in_progress());
            start += r.size;
        }
        CHECK(start == stream.size());
        CHECK(nodes[0].integer == 0);
    }
    SECTION("arriving three bytes at a time") {
        resp_decoder decoder;
        resp_node nodes[8];
        std::size_t start = 0;
        std::size_t received = 0;
        std::size_t reply = 0;
        while (start < stream.size()) {
            received = std::min(received + 3, stream.size());
            const resp_result r = decoder.decode(buffer.get() + start, received - start, nodes, 8);
            REQUIRE(r.status != resp_status::error);
            if (r.status == resp_status::complete) {
                REQUIRE(reply < types.size());
                CHECK(r.size == sizes[reply]);
                CHECK(nodes[0].type == types[reply]);
                start += r.size;
                ++reply;
            } else {
                REQUIRE(received < stream.size());
            }
        }
        CHECK(reply == types.size());
    }
    SECTION("an error in the second reply is located from its own first byte") {
        const std::string two = "+OK\r\n:1x\r\n";
        const std::unique_ptr<char[]> b = copy_of(two);
        resp_decoder decoder;
        resp_node nodes[2];
        const resp_result first = decoder.decode(b.get(), two.size(), nodes, 2);
        REQUIRE(first.status == resp_status::complete);
        const resp_result second =
            decoder.decode(b.get() + first.size, two.size() - first.size, nodes, 2);
        CHECK(second.status == resp_status::error);
        CHECK(second.error == resp_errc::bad_integer);
        CHECK(second.offset == 2);
    }
}

TEST_CASE("resp decoder: unconsumed bytes moved between calls decode the same", "[resp]") {
    // A connection buffer: the first reply is consumed, the partial second one is
    // moved to the front (as a caller compacting its buffer does), more arrives.
    const std::string stream = "+OK\r\n*3\r\n$3\r\nfoo\r\n+bar\r\n$5\r\nhello\r\n";
    const std::size_t first_read = 20;
    std::vector<char> connection(64, '#');
    std::memcpy(connection.data(), stream.data(), first_read);

    resp_decoder decoder;
    resp_node nodes[4];
    const resp_result ok = decoder.decode(connection.data(), first_read, nodes, 4);
    REQUIRE(ok.status == resp_status::complete);
    REQUIRE(ok.size == 5);

    const resp_result partial = decoder.decode(connection.data() + 5, first_read - 5, nodes, 4);
    REQUIRE(partial.status == resp_status::incomplete);

    std::memmove(connection.data(), connection.data() + 5, first_read - 5);
    std::memset(connection.data() + first_read - 5, '#', connection.size() - (first_read - 5));
    std::memcpy(connection.data() + first_read - 5, stream.data() + first_read,
                stream.size() - first_read);

    const std::size_t available = stream.size() - 5;
    const resp_result r = decoder.decode(connection.data(), available, nodes, 4);
    REQUIRE(r.status == resp_status::complete);
    CHECK(r.size == available);
    REQUIRE(r.nodes == 4);
    CHECK(nodes[0].type == resp_type::array);
    CHECK(nodes[1].text == str_view("foo"));
    CHECK(nodes[1].text.data == connection.data() + 8);
    CHECK(nodes[2].text == str_view("bar"));
    CHECK(nodes[2].text.data == connection.data() + 14);
    CHECK(nodes[3].text == str_view("hello"));
    CHECK(nodes[3].text.data == connection.data() + 23);
}

TEST_CASE("resp decoder: resp_decode_whole on truncated input and trailing bytes", "[resp]") {
    struct table_row {
        std::string input;
        resp_status status;
        resp_errc error;
        std::size_t where;  // complete: size; error: offset
    };
    const std::vector<table_row> rows = {
        {"", resp_status::error, resp_errc::truncated, 0},
        {"+OK", resp_status::error, resp_errc::truncated, 3},
        {"+OK\r", resp_status::error, resp_errc::truncated, 4},
        {"$5\r\nhello", resp_status::error, resp_errc::truncated, 9},
        {"$5\r\nhello\r", resp_status::error, resp_errc::truncated, 10},
        {"*2\r\n:1\r\n", resp_status::error, resp_errc::truncated, 8},
        {"%1\r\n+k\r\n", resp_status::error, resp_errc::truncated, 8},
        {"*1\r\n*1\r\n*1\r\n", resp_status::error, resp_errc::truncated, 12},
        // An attribute is not the element the array is waiting for.
        {"*1\r\n|1\r\n+a\r\n+b\r\n", resp_status::error, resp_errc::truncated, 16},
        {"|1\r\n+a\r\n+b\r\n", resp_status::error, resp_errc::truncated, 12},
        {"+OK\r\n:1\r\n", resp_status::complete, resp_errc::ok, 5},
        {"*1\r\n:1\r\n+tail", resp_status::complete, resp_errc::ok, 8},
        {"$1\r\nx\r\n?garbage", resp_status::complete, resp_errc::ok, 7},
    };
    for (const table_row& row : rows) {
        INFO(escaped(row.input));
        const std::unique_ptr<char[]> buffer = copy_of(row.input);
        resp_node nodes[8];
        const resp_result r = resp_decode_whole(buffer.get(), row.input.size(), nodes, 8);
        CHECK(r.status == row.status);
        CHECK(r.error == row.error);
        if (row.status == resp_status::complete) {
            CHECK(r.size == row.where);
        } else {
            CHECK(r.offset == row.where);
        }
    }

    // The limits argument is honoured.
    const std::string deep = "*1\r\n*1\r\n*1\r\n:1\r\n";
    const std::unique_ptr<char[]> buffer = copy_of(deep);
    resp_node nodes[8];
    const resp_result r = resp_decode_whole(buffer.get(), deep.size(), nodes, 8, small_limits());
    CHECK(r.status == resp_status::error);
    CHECK(r.error == resp_errc::too_deep);
    CHECK(r.offset == 8);
    CHECK(resp_decode_whole(buffer.get(), deep.size(), nodes, 8).status == resp_status::complete);
}

TEST_CASE("resp decoder: validate-only mode measures without a node array", "[resp]") {
    const std::string reply = hello3;
    const std::unique_ptr<char[]> buffer = copy_of(reply);
    resp_decoder decoder;
    const resp_result r = decoder.decode(buffer.get(), reply.size(), nullptr, 0);
    CHECK(r.status == resp_status::complete);
    CHECK(r.size == reply.size());
    CHECK(r.nodes == 15);

    // Far more nodes than any array the caller could have passed.
    const std::string big_reply = "*4000\r\n" + repeat(":1\r\n", 4000);
    const std::unique_ptr<char[]> big_buffer = copy_of(big_reply);
    const resp_result b = decoder.decode(big_buffer.get(), big_reply.size(), nullptr, 0);
    CHECK(b.status == resp_status::complete);
    CHECK(b.nodes == 4001);

    const std::string bad = "*2\r\n:1\r\n$-3\r\n";
    const std::unique_ptr<char[]> bad_buffer = copy_of(bad);
    const resp_result e = decoder.decode(bad_buffer.get(), bad.size(), nullptr, 0);
    CHECK(e.status == resp_status::error);
    CHECK(e.error == resp_errc::bad_length);
    CHECK(e.offset == 10);
}

TEST_CASE("resp decoder: describe() names every type and error code", "[resp]") {
    std::vector<std::string> seen;
    for (int i = 0; i <= static_cast<int>(resp_errc::input_shrank); ++i) {
        const char* text = describe(static_cast<resp_errc>(i));
        INFO("resp_errc " << i);
        REQUIRE(text != nullptr);
        CHECK(std::strlen(text) > 0);
        seen.emplace_back(text);
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
        for (std::size_t j = i + 1; j < seen.size(); ++j) {
            INFO(seen[i]);
            CHECK(seen[i] != seen[j]);
        }
    }
    seen.clear();
    for (int i = 0; i <= static_cast<int>(resp_type::push); ++i) {
        const char* text = describe(static_cast<resp_type>(i));
        INFO("resp_type " << i);
        REQUIRE(text != nullptr);
        CHECK(std::strlen(text) > 0);
        seen.emplace_back(text);
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
        for (std::size_t j = i + 1; j < seen.size(); ++j) {
            INFO(seen[i]);
            CHECK(seen[i] != seen[j]);
        }
    }
}

TEST_CASE("resp decoder: a huge length is never a null or a short bulk, whatever max_bulk",
          "[resp]") {
    // A caller may lift the bulk limit ("no limit"); lengths of 2^32, 2^63 or
    // 2^64 - 1 must then wait for their payload or fail, not wrap around.
    resp_limits unlimited;
    unlimited.max_bulk = std::numeric_limits<std::size_t>::max();
    const std::vector<std::string> inputs = {
        "$9223372036854775808\r\n",
        "$18446744073709551615\r\n",
        "$4294967296\r\n\r\n",
        "*1\r\n$18446744073709551615\r\n",
    };
    for (const std::string& input : inputs) {
        INFO(escaped(input));
        const std::unique_ptr<char[]> buffer = copy_of(input);
        resp_node nodes[4];
        resp_decoder decoder(unlimited);
        const resp_result r = decoder.decode(buffer.get(), input.size(), nodes, 4);
        INFO("decoded as " << name_of(r.status) << ", " << r.nodes << " nodes, the first a "
                           << describe(nodes[0].type) << " of " << nodes[0].text.size << " bytes");
        CHECK(r.status != resp_status::complete);
        if (r.status == resp_status::incomplete) {
            CHECK(r.needed > input.size());
        }
    }

    const std::string ok = "$5\r\nhello\r\n";
    const std::unique_ptr<char[]> buffer = copy_of(ok);
    resp_node node;
    const resp_result r = resp_decode_whole(buffer.get(), ok.size(), &node, 1, unlimited);
    REQUIRE(r.status == resp_status::complete);
    CHECK(node.text == str_view("hello"));
}

// --- bad input: a hostile server's inputs at the default and at tiny limits ---------------

struct decode_outcome {
    edgelock::resp_result result;
    bool nodes_past_capacity_untouched = true;
};

// Decodes `input` fed in pieces of `piece` bytes (0: whole) into `capacity`
// nodes, with sentinels after them.
decode_outcome decode_in_pieces(const std::string& input, std::size_t piece,
                                std::size_t capacity = 8,
                                const edgelock::resp_limits& limits = {}) {
    std::vector<edgelock::resp_node> nodes(capacity + 4);
    for (std::size_t i = capacity; i < nodes.size(); ++i) {
        nodes[i].type = edgelock::resp_type::push;
        nodes[i].integer = 4242;
    }
    edgelock::resp_decoder d(limits);
    decode_outcome out;
    std::size_t given = piece == 0 ? input.size() : 0;
    for (;;) {
        if (piece != 0) {
            given = given + piece < input.size() ? given + piece : input.size();
        }
        out.result = d.decode(input.data(), given, nodes.data(), capacity);
        if (out.result.status != edgelock::resp_status::incomplete || given == input.size()) {
            break;
        }
    }
    for (std::size_t i = capacity; i < nodes.size(); ++i) {
        out.nodes_past_capacity_untouched = out.nodes_past_capacity_untouched &&
                                            nodes[i].type == edgelock::resp_type::push &&
                                            nodes[i].integer == 4242;
    }
    return out;
}

TEST_CASE("bad input: 100,000-deep nesting fails at the depth limit, whole or trickled",
          "[bad-input]") {
    std::string deep;
    deep.reserve(400000);
    for (int i = 0; i < 100000; ++i) {
        deep += "*1\r\n";
    }
    for (const std::size_t piece : {std::size_t{0}, std::size_t{1}, std::size_t{4096}}) {
        INFO("piece " << piece);
        const decode_outcome o = decode_in_pieces(deep, piece, 64);
        CHECK(o.result.status == edgelock::resp_status::error);
        CHECK(o.result.error == edgelock::resp_errc::too_deep);
        CHECK(o.result.offset == 4 * std::size_t{EDGELOCK_RESP_MAX_DEPTH});
        CHECK(o.nodes_past_capacity_untouched);
    }
    // A depth limit asked above the decoder's stack is clamped, not trusted.
    edgelock::resp_limits wide;
    wide.max_depth = 100000;
    const decode_outcome o = decode_in_pieces(deep, 0, 64, wide);
    CHECK(o.result.error == edgelock::resp_errc::too_deep);
    CHECK(o.result.offset == 4 * std::size_t{EDGELOCK_RESP_MAX_DEPTH});
}

TEST_CASE("bad input: a 1 MB error line stops at the line limit", "[bad-input]") {
    const std::string big = "-ERR " + std::string(1000000, 'x') + "\r\n";
    for (const std::size_t piece : {std::size_t{0}, std::size_t{65536}, std::size_t{1000}}) {
        INFO("piece " << piece);
        const decode_outcome o = decode_in_pieces(big, piece);
        CHECK(o.result.status == edgelock::resp_status::error);
        CHECK(o.result.error == edgelock::resp_errc::line_too_long);
        CHECK(o.result.offset == 1 + std::size_t{EDGELOCK_RESP_MAX_LINE});
    }
    // As a bulk error it is over the bulk limit on its header alone.
    const std::string bulk = "!1000005\r\n";
    edgelock::resp_limits small;
    small.max_bulk = 1000000;
    const decode_outcome b = decode_in_pieces(bulk, 0, 8, small);
    CHECK(b.result.error == edgelock::resp_errc::bulk_too_long);
    CHECK(b.result.offset == 1);
}

TEST_CASE("bad input: lengths of 2^63 and negative lengths at the default limits", "[bad-input]") {
    struct row {
        std::string input;
        edgelock::resp_errc error;
        std::size_t offset;
    };
    const row rows[] = {
        {"$9223372036854775808\r\n", edgelock::resp_errc::bulk_too_long, 1},
        {"!9223372036854775808\r\n", edgelock::resp_errc::bulk_too_long, 1},
        {"=9223372036854775808\r\n", edgelock::resp_errc::bulk_too_long, 1},
        {"*9223372036854775808\r\n", edgelock::resp_errc::too_many_elements, 1},
        {"%4611686018427387904\r\n", edgelock::resp_errc::too_many_elements, 1},
        {"|9223372036854775808\r\n", edgelock::resp_errc::too_many_elements, 1},
        {"*1\r\n$9223372036854775808\r\n", edgelock::resp_errc::bulk_too_long, 5},
        {"$-9223372036854775808\r\n", edgelock::resp_errc::bad_length, 2},
        {"*-9223372036854775808\r\n", edgelock::resp_errc::bad_length, 2},
        {"~-1\r\n", edgelock::resp_errc::bad_length, 1},
        {"$-2\r\n", edgelock::resp_errc::bad_length, 2},
        {"*-5\r\n", edgelock::resp_errc::bad_length, 2},
        {":9223372036854775808\r\n", edgelock::resp_errc::integer_overflow, 19},
        {":-9223372036854775809\r\n", edgelock::resp_errc::integer_overflow, 20},
    };
    for (const row& r : rows) {
        INFO(r.input.substr(0, r.input.size() - 2));
        const decode_outcome o = decode_in_pieces(r.input, 0);
        CHECK(o.result.status == edgelock::resp_status::error);
        CHECK(o.result.error == r.error);
        CHECK(o.result.offset == r.offset);
        CHECK(o.nodes_past_capacity_untouched);
    }
}

TEST_CASE("bad input: limits of zero refuse everything that needs room", "[bad-input]") {
    // Every header is a line too: with max_line 0 only empty lines pass.
    edgelock::resp_limits zero;
    zero.max_depth = 0;
    zero.max_elements = 0;
    zero.max_bulk = 0;
    zero.max_line = 0;
    // Only the aggregate limits at zero.
    edgelock::resp_limits flat;
    flat.max_depth = 0;
    flat.max_elements = 0;
    // Only the bulk limit at zero.
    edgelock::resp_limits no_bulk;
    no_bulk.max_bulk = 0;
    struct row {
        std::string input;
        const edgelock::resp_limits& limits;
        edgelock::resp_status status;
        edgelock::resp_errc error;
        std::size_t offset;
    };
    const row rows[] = {
        {"+a\r\n", zero, edgelock::resp_status::error, edgelock::resp_errc::line_too_long, 1},
        {":1\r\n", zero, edgelock::resp_status::error, edgelock::resp_errc::line_too_long, 1},
        {"*0\r\n", zero, edgelock::resp_status::error, edgelock::resp_errc::line_too_long, 1},
        {"+\r\n", zero, edgelock::resp_status::complete, edgelock::resp_errc::ok, 0},
        {"_\r\n", zero, edgelock::resp_status::complete, edgelock::resp_errc::ok, 0},
        {"*0\r\n", flat, edgelock::resp_status::error, edgelock::resp_errc::too_deep, 0},
        {"%0\r\n", flat, edgelock::resp_status::error, edgelock::resp_errc::too_deep, 0},
        {"*1\r\n:1\r\n", flat, edgelock::resp_status::error, edgelock::resp_errc::too_many_elements,
         1},
        {"*-1\r\n", flat, edgelock::resp_status::complete, edgelock::resp_errc::ok, 0},
        {"$1\r\na\r\n", no_bulk, edgelock::resp_status::error, edgelock::resp_errc::bulk_too_long,
         1},
        {"$0\r\n\r\n", no_bulk, edgelock::resp_status::complete, edgelock::resp_errc::ok, 0},
    };
    for (const row& r : rows) {
        INFO(r.input);
        const decode_outcome o = decode_in_pieces(r.input, 0, 4, r.limits);
        CHECK(o.result.status == r.status);
        CHECK(o.result.error == r.error);
        if (r.status == edgelock::resp_status::error) {
            CHECK(o.result.offset == r.offset);
        }
    }
}

TEST_CASE("bad input: random bytes never overrun the input or the node array", "[bad-input]") {
    std::mt19937 rng(424242u);
    const char alphabet[] = "+-:$*_#,(!=%~|>\r\n0123456789-?tfx";
    for (int round = 0; round < 3000; ++round) {
        const std::size_t size = 1 + rng() % 200;
        std::vector<char> input(size);
        const bool structured = round % 2 == 0;  // half from RESP's own bytes
        for (char& c : input) {
            c = structured ? alphabet[rng() % (sizeof alphabet - 1)]
                           : static_cast<char>(rng() & 0xffu);
        }
        const std::size_t capacity = rng() % 6;
        std::vector<edgelock::resp_node> nodes(capacity + 2);
        for (std::size_t i = capacity; i < nodes.size(); ++i) {
            nodes[i].integer = 777;
        }
        edgelock::resp_decoder d;
        const edgelock::resp_result r = d.decode(input.data(), size, nodes.data(), capacity);
        INFO("round " << round);
        switch (r.status) {
        case edgelock::resp_status::complete:
            CHECK(r.size <= size);
            CHECK(r.nodes <= capacity);
            break;
        case edgelock::resp_status::incomplete:
            CHECK(r.needed > size);
            break;
        case edgelock::resp_status::error:
            CHECK(r.error != edgelock::resp_errc::ok);
            CHECK(r.offset < size);
            break;
        }
        for (std::size_t i = capacity; i < nodes.size(); ++i) {
            CHECK(nodes[i].integer == 777);
        }
    }
    // No bytes at all, from no pointer: just incomplete.
    edgelock::resp_decoder d;
    edgelock::resp_node node;
    node.integer = 777;
    const edgelock::resp_result r = d.decode(nullptr, 0, &node, 1);
    CHECK(r.status == edgelock::resp_status::incomplete);
    CHECK(r.needed == 1);
    CHECK(node.integer == 777);
    CHECK_FALSE(d.in_progress());
}

}  // namespace
}  // namespace edgelock
