// The agent's writers of text read from Redis, as units: the JSON writer
// (RFC 8259 strings, U+FFFD for bytes that are not UTF-8, numbers only from
// parsed integers) and the terminal quoting (no raw control byte, \xNN for
// bytes that are not UTF-8), table-driven over every kind of byte.
#include <catch2/catch.hpp>

#include <string>

#include "../../src/cli/json_writer.hpp"
#include "../../src/cli/terminal_text.hpp"
#include "../../src/cli/utf8.hpp"
#include "tools/strict_json.hpp"

using edgelock_cli::json_quote;
using edgelock_cli::json_writer;
using edgelock_cli::terminal_text;
using edgelock_test::json_value;
using edgelock_test::strict_json;

namespace {

struct escape_case {
    const char* what;
    std::string in;
    std::string json;      // json_quote's output, quotes included
    std::string terminal;  // terminal_text's output
};

const std::string fffd = "\xef\xbf\xbd";

bool has_raw_control(const std::string& s) {
    for (const char c : s) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            return true;
        }
    }
    return false;
}

}  // namespace

TEST_CASE("cli escape: JSON strings and terminal text, case by case", "[cli][escape]") {
    const escape_case cases[] = {
        {"plain", "gw-17 nightly", "\"gw-17 nightly\"", "gw-17 nightly"},
        {"quote", "x\"", "\"x\\\"\"", "x\""},
        {"backslash", "a\\b", "\"a\\\\b\"", "a\\\\b"},
        {"newline forging a line", "x\nFAKE: held by root", "\"x\\nFAKE: held by root\"",
         "x\\nFAKE: held by root"},
        {"carriage return, tab", "a\rb\tc", "\"a\\rb\\tc\"", "a\\rb\\tc"},
        {"window title", "\x1b]0;owned\x07", "\"\\u001b]0;owned\\u0007\"", "\\033]0;owned\\007"},
        {"clear screen", "\x1b[2J", "\"\\u001b[2J\"", "\\033[2J"},
        {"DEL", "a\x7f", "\"a\\u007f\"", "a\\177"},
        {"NUL", std::string("a\0b", 3), "\"a\\u0000b\"", "a\\000b"},
        {"2-byte UTF-8", "caf\xc3\xa9", "\"caf\xc3\xa9\"", "caf\xc3\xa9"},
        {"3-byte UTF-8", "\xe2\x82\xac", "\"\xe2\x82\xac\"", "\xe2\x82\xac"},
        {"4-byte UTF-8", "\xf0\x9f\x94\x92", "\"\xf0\x9f\x94\x92\"", "\xf0\x9f\x94\x92"},
        {"U+10FFFF", "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"", "\xf4\x8f\xbf\xbf"},
        {"C1 control, well-formed (CSI)",
         "\xc2\x9b"
         "2J",
         "\"\\u009b2J\"", "\\u009b2J"},
        {"C1 byte alone",
         "\x9b"
         "2J",
         "\"" + fffd + "2J\"", "\\x9b2J"},
        {"stray continuation", "a\x80", "\"a" + fffd + "\"", "a\\x80"},
        {"overlong slash", "\xc0\xaf", "\"" + fffd + fffd + "\"", "\\xc0\\xaf"},
        {"overlong 3-byte", "\xe0\x80\xaf", "\"" + fffd + fffd + fffd + "\"", "\\xe0\\x80\\xaf"},
        {"overlong 4-byte", "\xf0\x8f\xbf\xbf", "\"" + fffd + fffd + fffd + fffd + "\"",
         "\\xf0\\x8f\\xbf\\xbf"},
        {"surrogate", "\xed\xa0\x80", "\"" + fffd + fffd + fffd + "\"", "\\xed\\xa0\\x80"},
        {"past U+10FFFF", "\xf4\x90\x80\x80", "\"" + fffd + fffd + fffd + fffd + "\"",
         "\\xf4\\x90\\x80\\x80"},
        {"F5 and FF", "\xf5\xff", "\"" + fffd + fffd + "\"", "\\xf5\\xff"},
        {"cut 3-byte sequence", "\xe2\x82", "\"" + fffd + fffd + "\"", "\\xe2\\x82"},
        {"cut 4-byte sequence, then text", "\xf0\x9f\x94x", "\"" + fffd + fffd + fffd + "x\"",
         "\\xf0\\x9f\\x94x"},
    };
    for (const escape_case& c : cases) {
        INFO(c.what);
        CHECK(json_quote(c.in) == c.json);
        CHECK(terminal_text(c.in) == c.terminal);
    }
}

TEST_CASE("cli escape: every control byte is escaped, never raw", "[cli][escape]") {
    for (int b = 0; b < 0x100; ++b) {
        const std::string in(1, static_cast<char>(b));
        INFO("byte " << b);
        const std::string j = json_quote(in);
        const std::string t = terminal_text(in);
        CHECK_FALSE(has_raw_control(j));
        CHECK_FALSE(has_raw_control(t));
        json_value v;
        strict_json p;
        REQUIRE(p.parse(j, v));
        CHECK(v.text == (b < 0x80 ? in : fffd));
        if (b < 0x20 || b == 0x7f) {
            CHECK(t[0] == '\\');
        }
    }
}

TEST_CASE("cli escape: utf8_sequence takes well-formed UTF-8 only", "[cli][escape]") {
    const auto size = [](const std::string& s) {
        return edgelock_cli::utf8_sequence(reinterpret_cast<const unsigned char*>(s.data()),
                                           s.size());
    };
    CHECK(size("a") == 1);
    CHECK(size("\xc2\x80") == 2);
    CHECK(size("\xdf\xbf") == 2);
    CHECK(size("\xe0\xa0\x80") == 3);
    CHECK(size("\xed\x9f\xbf") == 3);  // U+D7FF, just below the surrogates
    CHECK(size("\xee\x80\x80") == 3);  // U+E000, just above
    CHECK(size("\xf0\x90\x80\x80") == 4);
    CHECK(size("\xf4\x8f\xbf\xbf") == 4);
    for (const char* bad :
         {"\x80", "\xc1\xbf", "\xc2", "\xc2\x41", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",
          "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf8\x88\x80", "\xfe", "\xff", "\xe2\x82"}) {
        INFO(terminal_text(bad));
        CHECK(size(bad) == 0);
    }
    CHECK(size("") == 0);
}

TEST_CASE("cli escape: a fencing counter is a number only when it is one", "[cli][escape]") {
    const struct {
        std::string counter;
        std::string json;
    } cases[] = {
        {"42", "42"},
        {"1733150000000001", "1733150000000001"},
        {"-3", "-3"},
        {"9223372036854775807", "9223372036854775807"},
        {"9223372036854775808", "\"9223372036854775808\""},  // past 64 bits: as written
        {"1}],\"held\":false,\"x\":[{", "\"1}],\\\"held\\\":false,\\\"x\\\":[{\""},
        {"x\"", "\"x\\\"\""},
        {"", "\"\""},
        {"-", "\"-\""},
        {"1e3", "\"1e3\""},
        {"0x10", "\"0x10\""},
        {" 7", "\" 7\""},
    };
    for (const auto& c : cases) {
        INFO(c.counter);
        json_writer w;
        w.begin_object().key("fencing_counter").integer_text(c.counter).end_object();
        CHECK(w.text() == "{\"fencing_counter\":" + c.json + "}");
        json_value v;
        strict_json p;
        CHECK(p.parse(w.text(), v));
    }
}

TEST_CASE("cli escape: the writer nests, separates and names", "[cli][escape]") {
    json_writer inner;
    inner.begin_object().key("a").integer(1).key("b").null().end_object();
    json_writer w;
    w.begin_object().key("held").boolean(true).key("list").begin_array();
    w.string("x\ny").integer(-2).value(inner).begin_array().end_array();
    w.end_array().key("empty").begin_object().end_object().end_object();
    CHECK(w.text() ==
          "{\"held\":true,\"list\":[\"x\\ny\",-2,{\"a\":1,\"b\":null},[]],\"empty\":{}}");
    json_value v;
    strict_json p;
    REQUIRE(p.parse(w.text(), v));
    REQUIRE(v.at("held") != nullptr);
    CHECK(v.at("held")->b);
}

TEST_CASE("cli escape: the strict checker refuses what parsers disagree on", "[cli][escape]") {
    for (const char* bad :
         {"{\"a\":1,\"a\":2}", "{\"a\":\"x\ny\"}", "{\"a\":1}}", "[1,]", "{\"a\":01}", "\"\xff\"",
          "\"\\ud800\"", "{\"a\":1} x", "[\"\xc0\xaf\"]", "{'a':1}"}) {
        INFO(bad);
        json_value v;
        strict_json p;
        CHECK_FALSE(p.parse(bad, v));
    }
}
