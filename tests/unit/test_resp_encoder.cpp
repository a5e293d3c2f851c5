// Tests of the RESP command encoder against resp_encoder.hpp: exact bytes, the
// all-or-nothing rule for small buffers, hand-formatted integers, and
// round-trips through the decoder.
//
// Output buffers are heap allocations of exactly the capacity passed, so under
// ASan a write past the capacity is reported even when the sentinel check
// cannot see it.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "edgelock/resp_decoder.hpp"
#include "edgelock/resp_encoder.hpp"

using namespace std::string_literals;

namespace edgelock {
namespace {

std::string printable(const std::string& bytes) {
    std::string out;
    for (const char c : bytes) {
        if (c == '\r') {
            out += "\\r";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\0') {
            out += "\\0";
        } else {
            out += c;
        }
    }
    return out;
}

const char sentinel = '\x5a';

// A command's arguments, owning their bytes.
struct command {
    std::vector<std::string> args;

    std::vector<str_view> views() const {
        std::vector<str_view> out;
        for (const std::string& a : args) {
            out.emplace_back(a.data(), a.size());
        }
        return out;
    }
};

// The encoder's output for `cmd` into an exactly sized buffer of `capacity`
// bytes filled with the sentinel beforehand.
struct encode_run {
    resp_encoded result;
    std::string bytes;  // the whole buffer afterwards
};

encode_run encode(const command& cmd, std::size_t capacity) {
    std::unique_ptr<char[]> out(new char[capacity]);
    std::memset(out.get(), sentinel, capacity);
    const std::vector<str_view> args = cmd.views();
    encode_run run;
    run.result = resp_encode_command(out.get(), capacity, args.data(), args.size());
    run.bytes.assign(out.get(), capacity);
    return run;
}

struct encoding {
    command cmd;
    std::string wire;
};

std::vector<encoding> encodings() {
    const std::string token = "6f1c0e3a9b2d4c5e8f7a6b5c4d3e2f1a";
    const std::string sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff831";
    return {
        {{{"PING"}}, "*1\r\n$4\r\nPING\r\n"},
        {{{"SET", "job:nightly", token, "NX", "PX", "30000"}},
         "*6\r\n$3\r\nSET\r\n$11\r\njob:nightly\r\n$32\r\n" + token +
             "\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n"},
        {{{"EVALSHA", sha, "1", "lock", token}},
         "*5\r\n$7\r\nEVALSHA\r\n$40\r\n" + sha + "\r\n$1\r\n1\r\n$4\r\nlock\r\n$32\r\n" + token +
             "\r\n"},
        {{{"HELLO", "3"}}, "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"},
        // Empty arguments are sent as empty bulk strings.
        {{{""}}, "*1\r\n$0\r\n\r\n"},
        {{{"GET", ""}}, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n"},
        {{{"", "", ""}}, "*3\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n"},
        // Binary-safe: CR, LF and NUL inside an argument are payload, not framing.
        {{{"SET", "k", "a\r\n\0b"s}}, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\r\n\0b\r\n"s},
        {{{"\r\n"}}, "*1\r\n$2\r\n\r\n\r\n"},
        {{{"\0"s}}, "*1\r\n$1\r\n\0\r\n"s},
        {{{"*1\r\n$4\r\nPING\r\n"}}, "*1\r\n$14\r\n*1\r\n$4\r\nPING\r\n\r\n"},
        // Counts and lengths of more than one digit.
        {{{"MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f"}},
         "*12\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"
         "$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n$1\r\n5\r\n$1\r\nf\r\n"},
        {{{std::string(9, 'x')}}, "*1\r\n$9\r\n" + std::string(9, 'x') + "\r\n"},
        {{{std::string(10, 'x')}}, "*1\r\n$10\r\n" + std::string(10, 'x') + "\r\n"},
        {{{std::string(100, 'y')}}, "*1\r\n$100\r\n" + std::string(100, 'y') + "\r\n"},
        {{{std::string(1000, 'z')}}, "*1\r\n$1000\r\n" + std::string(1000, 'z') + "\r\n"},
    };
}

TEST_CASE("resp encoder: exact bytes for commands", "[resp]") {
    for (const encoding& e : encodings()) {
        INFO(printable(e.wire));
        const std::vector<str_view> args = e.cmd.views();
        CHECK(resp_command_size(args.data(), args.size()) == e.wire.size());

        const encode_run exact = encode(e.cmd, e.wire.size());
        CHECK(exact.result.error == resp_encode_errc::ok);
        CHECK(exact.result.size == e.wire.size());
        CHECK(exact.bytes == e.wire);

        // Room to spare: the bytes after the command are left alone.
        const encode_run roomy = encode(e.cmd, e.wire.size() + 16);
        CHECK(roomy.result.error == resp_encode_errc::ok);
        CHECK(roomy.result.size == e.wire.size());
        CHECK(roomy.bytes == e.wire + std::string(16, sentinel));
    }
}

TEST_CASE("resp encoder: a buffer too small by any amount is left untouched", "[resp]") {
    for (const encoding& e : encodings()) {
        INFO(printable(e.wire));
        for (std::size_t capacity = 0; capacity < e.wire.size(); ++capacity) {
            INFO("capacity " << capacity);
            const encode_run run = encode(e.cmd, capacity);
            CHECK(run.result.error == resp_encode_errc::buffer_too_small);
            CHECK(run.result.size == e.wire.size());
            CHECK(run.bytes == std::string(capacity, sentinel));
        }
    }
}

TEST_CASE("resp encoder: sizing with a null buffer of capacity 0", "[resp]") {
    const str_view args[] = {"SET", "k", "v"};
    const resp_encoded r = resp_encode_command(nullptr, 0, args, 3);
    CHECK(r.error == resp_encode_errc::buffer_too_small);
    CHECK(r.size == 27);
    CHECK(resp_command_size(args, 3) == 27);
}

TEST_CASE("resp encoder: no arguments is empty_command and writes nothing", "[resp]") {
    char out[32];
    std::memset(out, sentinel, sizeof out);
    const str_view args[] = {"PING"};
    const resp_encoded r = resp_encode_command(out, sizeof out, args, 0);
    CHECK(r.error == resp_encode_errc::empty_command);
    CHECK(std::string(out, sizeof out) == std::string(sizeof out, sentinel));
    CHECK(resp_command_size(args, 0) == 0);

    const resp_encoded null_args = resp_encode_command(out, sizeof out, nullptr, 0);
    CHECK(null_args.error == resp_encode_errc::empty_command);
    CHECK(resp_command_size(nullptr, 0) == 0);
}

TEST_CASE("resp encoder: a size that does not fit in size_t is too_large", "[resp]") {
    // The views are never read: sizing must fail before any byte is touched.
    const std::size_t max = std::numeric_limits<std::size_t>::max();
    const char* fake = "x";
    struct table_row {
        std::vector<str_view> args;
    };
    const std::vector<table_row> rows = {
        {{str_view(fake, max)}},
        {{str_view(fake, max - 10)}},
        {{str_view(fake, max / 2), str_view(fake, max / 2)}},
        {{str_view("SET"), str_view(fake, max / 3), str_view(fake, max / 3),
          str_view(fake, max / 3)}},
    };
    char out[16];
    std::memset(out, sentinel, sizeof out);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        INFO("row " << i);
        const std::vector<str_view>& args = rows[i].args;
        CHECK(resp_command_size(args.data(), args.size()) == 0);
        const resp_encoded r = resp_encode_command(out, sizeof out, args.data(), args.size());
        CHECK(r.error == resp_encode_errc::too_large);
        CHECK(std::string(out, sizeof out) == std::string(sizeof out, sentinel));
    }

    // Just below the edge the size is still exact: 1 + 1 + 2 ("*1\r\n"),
    // then '$', the length's digits, CRLF, the payload and CRLF.
    const std::size_t payload = max - 100;
    const std::size_t digits = std::to_string(payload).size();
    const str_view near(fake, payload);
    CHECK(resp_command_size(&near, 1) == 4 + 1 + digits + 2 + payload + 2);
}

std::string format_u(std::uint64_t value) {
    std::unique_ptr<char[]> out(new char[20]);
    const std::size_t n = format_unsigned(out.get(), value);
    REQUIRE(n >= 1);
    REQUIRE(n <= 20);
    return std::string(out.get(), n);
}

std::string format_s(std::int64_t value) {
    std::unique_ptr<char[]> out(new char[20]);
    const std::size_t n = format_signed(out.get(), value);
    REQUIRE(n >= 1);
    REQUIRE(n <= 20);
    return std::string(out.get(), n);
}

std::string view_text(str_view v) {
    return std::string(v.data, v.size);
}

TEST_CASE("resp encoder: integers formatted by hand", "[resp]") {
    const std::int64_t min = std::numeric_limits<std::int64_t>::min();
    const std::int64_t max = std::numeric_limits<std::int64_t>::max();
    const std::uint64_t umax = std::numeric_limits<std::uint64_t>::max();

    struct signed_row {
        std::int64_t value;
        const char* text;
    };
    const std::vector<signed_row> fixed = {
        {0, "0"},
        {1, "1"},
        {-1, "-1"},
        {9, "9"},
        {10, "10"},
        {-9, "-9"},
        {-10, "-10"},
        {30000, "30000"},
        {max, "9223372036854775807"},
        {min, "-9223372036854775808"},
        {min + 1, "-9223372036854775807"},
        {max - 1, "9223372036854775806"},
    };
    for (const signed_row& row : fixed) {
        INFO(row.text);
        CHECK(format_s(row.value) == row.text);
        CHECK(view_text(decimal_arg(row.value).view()) == row.text);
    }

    struct unsigned_row {
        std::uint64_t value;
        const char* text;
    };
    const std::vector<unsigned_row> fixed_unsigned = {
        {0, "0"},
        {1, "1"},
        {9, "9"},
        {10, "10"},
        {umax, "18446744073709551615"},
        {umax - 1, "18446744073709551614"},
        {10000000000000000000ULL, "10000000000000000000"},
        {9999999999999999999ULL, "9999999999999999999"},
        {static_cast<std::uint64_t>(max) + 1, "9223372036854775808"},
    };
    for (const unsigned_row& row : fixed_unsigned) {
        INFO(row.text);
        CHECK(format_u(row.value) == row.text);
        CHECK(view_text(decimal_arg::from_unsigned(row.value).view()) == row.text);
    }

    // Every power-of-ten boundary, both signs.
    std::uint64_t power = 1;
    for (int exponent = 0; exponent <= 19; ++exponent) {
        for (const std::uint64_t u : {power - 1, power, power + 1}) {
            INFO("unsigned " << u);
            CHECK(format_u(u) == std::to_string(u));
            CHECK(view_text(decimal_arg::from_unsigned(u).view()) == std::to_string(u));
            if (u <= static_cast<std::uint64_t>(max)) {
                const auto s = static_cast<std::int64_t>(u);
                CHECK(format_s(s) == std::to_string(s));
                CHECK(format_s(-s) == std::to_string(-s));
                CHECK(view_text(decimal_arg(s).view()) == std::to_string(s));
                CHECK(view_text(decimal_arg(-s).view()) == std::to_string(-s));
            }
        }
        if (exponent < 19) {
            power *= 10;
        }
    }
}

TEST_CASE("resp encoder: decimal_arg as an argument", "[resp]") {
    const decimal_arg ttl(30000);
    const decimal_arg negative(-42);
    const str_view args[] = {"PEXPIRE", "k", ttl.view(), negative.view()};
    char out[64];
    const resp_encoded r = resp_encode_command(out, sizeof out, args, 4);
    REQUIRE(r.error == resp_encode_errc::ok);
    CHECK(std::string(out, r.size) ==
          "*4\r\n$7\r\nPEXPIRE\r\n$1\r\nk\r\n$5\r\n30000\r\n$3\r\n-42\r\n");
}

// Decodes `wire` (one reply) and returns the bulk strings of its top array.
std::vector<std::string> decode_command(const std::string& wire, std::size_t piece) {
    std::vector<std::string> out;
    std::vector<resp_node> nodes(wire.size() + 1);
    resp_decoder decoder;
    resp_result r;
    std::unique_ptr<char[]> buffer;
    // Arrives `piece` bytes at a time, each call from an exactly sized copy.
    for (std::size_t n = std::min(piece, wire.size());; n = std::min(n + piece, wire.size())) {
        buffer.reset(new char[n]);
        std::memcpy(buffer.get(), wire.data(), n);
        r = decoder.decode(buffer.get(), n, nodes.data(), nodes.size());
        if (r.status != resp_status::incomplete || n == wire.size()) {
            break;
        }
    }
    REQUIRE(r.status == resp_status::complete);
    CHECK(r.size == wire.size());
    REQUIRE(nodes[0].type == resp_type::array);
    CHECK(r.nodes == std::size_t{nodes[0].count} + 1);
    for (std::size_t i = 1; i < r.nodes; ++i) {
        CHECK(nodes[i].type == resp_type::bulk_string);
        out.emplace_back(nodes[i].text.data, nodes[i].text.size);
    }
    return out;
}

TEST_CASE("resp encoder: round-trips through the decoder", "[resp]") {
    for (const encoding& e : encodings()) {
        INFO(printable(e.wire));
        for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, e.wire.size()}) {
            INFO("pieces of " << piece);
            CHECK(decode_command(e.wire, piece) == e.cmd.args);
        }
    }

    // Random binary arguments, weighted towards the framing bytes.
    std::mt19937 rng(20240611);
    const char alphabet[] = {'\r', '\n', '\0', '$', '*', ':', '-', '1', 'a', '\xff'};
    for (int round = 0; round < 200; ++round) {
        command cmd;
        const std::size_t argc = 1 + rng() % 6;
        for (std::size_t i = 0; i < argc; ++i) {
            std::string arg(rng() % 40, '\0');
            for (char& c : arg) {
                c = alphabet[rng() % sizeof alphabet];
            }
            cmd.args.push_back(arg);
        }
        const std::vector<str_view> args = cmd.views();
        const std::size_t size = resp_command_size(args.data(), args.size());
        REQUIRE(size > 0);
        const encode_run run = encode(cmd, size);
        REQUIRE(run.result.error == resp_encode_errc::ok);
        REQUIRE(run.result.size == size);
        INFO(printable(run.bytes));
        CHECK(decode_command(run.bytes, 1 + rng() % 9) == cmd.args);
    }
}

TEST_CASE("resp encoder: describe() names every error code", "[resp]") {
    std::vector<std::string> seen;
    for (const resp_encode_errc code :
         {resp_encode_errc::ok, resp_encode_errc::buffer_too_small, resp_encode_errc::empty_command,
          resp_encode_errc::too_large}) {
        const char* text = describe(code);
        INFO(describe(code));
        REQUIRE(text != nullptr);
        CHECK(std::strlen(text) > 0);
        for (const std::string& other : seen) {
            CHECK(other != text);
        }
        seen.emplace_back(text);
    }
}

TEST_CASE("bad input: the encoder with null pointers and sizes", "[bad-input]") {
    const str_view args[] = {"SET", "k", "v"};
    // A null buffer claiming room is sized, never written through.
    const edgelock::resp_encoded r = edgelock::resp_encode_command(nullptr, 4096, args, 3);
    CHECK(r.error == edgelock::resp_encode_errc::buffer_too_small);
    CHECK(r.size == 27);
    // A null argument array with a count is no command at all.
    char out[64];
    std::memset(out, sentinel, sizeof out);
    const edgelock::resp_encoded n = edgelock::resp_encode_command(out, sizeof out, nullptr, 3);
    CHECK(n.error == edgelock::resp_encode_errc::empty_command);
    CHECK(edgelock::resp_command_size(nullptr, 3) == 0);
    CHECK(std::string(out, sizeof out) == std::string(sizeof out, sentinel));
    // An empty view with a null pointer is an empty argument, read as zero bytes.
    const str_view empty_arg[] = {str_view(nullptr, 0)};
    const edgelock::resp_encoded e = edgelock::resp_encode_command(out, sizeof out, empty_arg, 1);
    REQUIRE(e.error == edgelock::resp_encode_errc::ok);
    CHECK(std::string(out, e.size) == "*1\r\n$0\r\n\r\n");
    CHECK(out[e.size] == sentinel);
}

}  // namespace
}  // namespace edgelock
