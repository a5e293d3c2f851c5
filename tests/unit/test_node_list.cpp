// Node lists (node_list.hpp): split where a new URL begins, and URLs and
// lists with their credentials masked or removed, for passwords holding every
// character the parser accepts, on every scheme; the caller's buffer.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "edgelock/node_list.hpp"
#include "edgelock/node_url.hpp"

using edgelock::credentials;
using edgelock::node_list_next;
using edgelock::node_list_redact;
using edgelock::node_url_redact;
using edgelock::redact_errc;
using edgelock::redacted;
using edgelock::str_view;

namespace {

str_view view(const std::string& s) {
    return {s.data(), s.size()};
}

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::size_t from = 0;
    str_view url;
    while (node_list_next(view(list), from, url)) {
        out.emplace_back(url.data == nullptr ? std::string() : std::string(url.data, url.size));
        REQUIRE(out.size() <= list.size() + 1);  // never a loop
    }
    return out;
}

std::string redact_url(const std::string& url, credentials how) {
    char buf[2 * edgelock::node_url_max];
    const redacted r = node_url_redact(view(url), how, buf, sizeof buf);
    REQUIRE(r.error == redact_errc::ok);
    return std::string(buf, r.size);
}

std::string redact_list(const std::string& list, credentials how) {
    std::vector<char> buf(list.size() + 64);
    const redacted r = node_list_redact(view(list), how, buf.data(), buf.size());
    REQUIRE(r.error == redact_errc::ok);
    return std::string(buf.data(), r.size);
}

// Passwords as a URL carries them: every unescaped character the parser
// takes in a password (',' and ':' among them), and escapes of what it does
// not ('@', '/', '%', '?', '#', a space, a byte above 0x7f).
const std::vector<std::string> passwords = {
    "s3cr,etPW",
    ",",
    ",,",
    "a,,b",
    "pw,",
    ",pw",
    "a:b:c",
    ":",
    "a%40b",
    "%40",
    "a%2Fb",
    "a%25b",
    "%25%40%2F%3A%2C",
    "a%3Fb%23c%20d%C3%A9",
    "-._~!$&'()*+;=",
    "x,redis:y",
    "x,redis%3A%2F%2Fh",
    "0",
    "",
};

struct scheme_case {
    std::string what;
    std::string before;  // the scheme and "://"
    std::string after;   // "@" onwards
};

const std::vector<scheme_case> schemes = {
    {"redis", "redis://", "@10.0.0.7:6380/2"},
    {"rediss", "rediss://", "@gw.example:6380"},
    {"IPv6", "redis://", "@[::1]:6381"},
    {"sentinel of three", "redis-sentinel://", "@s1,s2:26380,[fe80::1]/mymaster/3"},
    {"rediss-sentinel", "rediss-sentinel://", "@s1,s2/mymaster"},
    {"cluster of three", "redis-cluster://", "@h1:7000,h2:7001,h3"},
    {"scheme in capitals", "REDIS://", "@h"},
};

const std::vector<std::string> users = {"", "app", "a-p.p_~1", "%61pp"};

}  // namespace

TEST_CASE("node_list_next splits where a new URL begins", "[url][list]") {
    struct row {
        std::string list;
        std::vector<std::string> want;
    };
    const std::vector<row> rows = {
        {"", {""}},
        {"redis://a", {"redis://a"}},
        {"redis://a,redis://b", {"redis://a", "redis://b"}},
        {"redis://a,,redis://b", {"redis://a", "", "redis://b"}},
        {"redis://a,", {"redis://a", ""}},
        {",redis://a", {"", "redis://a"}},
        {",", {"", ""}},
        {",,", {"", "", ""}},
        {"redis-sentinel://s1,s2,s3/m,redis://b", {"redis-sentinel://s1,s2,s3/m", "redis://b"}},
        {"redis-cluster://h1:7000,h2:7000", {"redis-cluster://h1:7000,h2:7000"}},
        {"redis://u:a,b@h,redis://c", {"redis://u:a,b@h", "redis://c"}},
        {"redis://u:a,,b@h", {"redis://u:a,,b@h"}},
        {"redis://u:,@h,,redis://c", {"redis://u:,@h", "", "redis://c"}},
        {"redis://u:a,redis:x@h", {"redis://u:a,redis:x@h"}},
        {"redis://h,1redis://x", {"redis://h,1redis://x"}},  // a scheme starts with a letter
        {"redis://h,+x://y", {"redis://h,+x://y"}},
        {"REDIS://h,Rediss://x", {"REDIS://h", "Rediss://x"}},
        {"redis://h,a.b-c+d://x", {"redis://h", "a.b-c+d://x"}},  // any scheme begins a URL
        {"unix:///run/a,b.sock,redis://h", {"unix:///run/a,b.sock", "redis://h"}},
        {"redis://h,redis:/", {"redis://h,redis:/"}},
    };
    for (const row& r : rows) {
        INFO("list: " << r.list);
        CHECK(split(r.list) == r.want);
    }
}

TEST_CASE("node_list_next keeps every password of a valid list in its URL", "[url][list]") {
    for (const scheme_case& s : schemes) {
        for (const std::string& pw : passwords) {
            const std::string url = s.before + "app:" + pw + s.after;
            edgelock::node_address a;
            INFO(s.what << ": " << url);
            REQUIRE(edgelock::parse_node_url(view(url), a) == edgelock::url_errc::ok);
            const std::string list = "redis://h," + url + "," + url + ",unix:///x.sock";
            CHECK(split(list) == std::vector<std::string>{"redis://h", url, url, "unix:///x.sock"});
        }
    }
}

TEST_CASE("node_url_redact masks or removes the credentials of every scheme", "[url][list]") {
    for (const scheme_case& s : schemes) {
        for (const std::string& user : users) {
            for (const std::string& pw : passwords) {
                const std::string url = s.before + user + ":" + pw + s.after;
                INFO(s.what << ": " << url);
                edgelock::node_address a;
                REQUIRE(edgelock::parse_node_url(view(url), a) == edgelock::url_errc::ok);
                CHECK(redact_url(url, credentials::mask) == s.before + user + ":****" + s.after);
                CHECK(redact_url(url, credentials::remove) == s.before + s.after.substr(1));
                const std::string list = url + "," + url;
                CHECK(redact_list(list, credentials::mask) == s.before + user + ":****" + s.after +
                                                                  "," + s.before + user + ":****" +
                                                                  s.after);
                CHECK(redact_list(list, credentials::remove) ==
                      s.before + s.after.substr(1) + "," + s.before + s.after.substr(1));
            }
        }
    }
}

TEST_CASE("node_url_redact: URLs without a password, unix paths, refused URLs", "[url][list]") {
    struct row {
        std::string what;
        std::string url;
        std::string masked;
        std::string removed;
    };
    const std::vector<row> rows = {
        {"no credentials", "redis://h:6379/1", "redis://h:6379/1", "redis://h:6379/1"},
        {"a user alone", "redis://app@h", "redis://app@h", "redis://h"},
        {"an empty user information", "redis://@h", "redis://@h", "redis://h"},
        {"an empty password", "redis://app:@h", "redis://app:****@h", "redis://h"},
        {"unix:// with '@' in its path", "unix:///run/r@dis.sock?db=1",
         "unix:///run/r@dis.sock?db=1", "unix:///run/r@dis.sock?db=1"},
        {"a sentinel without credentials", "redis-sentinel://s1,s2/m", "redis-sentinel://s1,s2/m",
         "redis-sentinel://s1,s2/m"},
        // Refused by the parser: everything before the last '@' hidden.
        {"a raw '@' in the password", "redis://app:p@ss@h", "redis://****@h", "redis://h"},
        {"a raw '/' in the password", "redis://app:a/b,c@h", "redis://****@h", "redis://h"},
        {"a bad escape", "redis://app:a%zz@h", "redis://****@h", "redis://h"},
        {"a bad port", "redis://app:pw@h:0", "redis://****@h:0", "redis://h:0"},
        {"no scheme", "app:s3cr,et@h", "****@h", "h"},
        {"an unknown scheme", "http://app:pw@h", "http://****@h", "http://h"},
        {"refused, no '@'", "redis://h:0", "redis://h:0", "redis://h:0"},
        {"too long", "redis://app:" + std::string(edgelock::node_url_max, 'p') + "@h",
         "redis://****@h", "redis://h"},
        {"empty", "", "", ""},
    };
    for (const row& r : rows) {
        INFO(r.what << ": " << r.url);
        CHECK(redact_url(r.url, credentials::mask) == r.masked);
        CHECK(redact_url(r.url, credentials::remove) == r.removed);
    }
}

TEST_CASE("node_list_redact redacts each URL and keeps empty ones", "[url][list]") {
    const std::string list =
        "redis://app:s3cr,etPW@h1,,redis-sentinel://:a,b@s1,s2/m,"
        "unix:///r@dis.sock,redis://x:p@y@h2,";
    CHECK(redact_list(list, credentials::mask) ==
          "redis://app:****@h1,,redis-sentinel://:****@s1,s2/m,unix:///r@dis.sock,"
          "redis://****@h2,");
    CHECK(redact_list(list, credentials::remove) ==
          "redis://h1,,redis-sentinel://s1,s2/m,unix:///r@dis.sock,redis://h2,");
    CHECK(redact_list("", credentials::mask).empty());
}

TEST_CASE("node_url_redact and node_list_redact write nothing into a buffer too small",
          "[url][list]") {
    const std::string url = "redis://app:s3cr,etPW@h";
    const std::string want = "redis://app:****@h";
    for (std::size_t capacity = 0; capacity <= want.size() + 1; ++capacity) {
        INFO("capacity " << capacity);
        std::string buf(want.size() + 8, '#');
        const redacted r = node_url_redact(view(url), credentials::mask, &buf[0], capacity);
        const redacted l = node_list_redact(view(url), credentials::mask, &buf[0], capacity);
        if (capacity < want.size()) {
            CHECK(r.error == redact_errc::buffer_too_small);
            CHECK(l.error == redact_errc::buffer_too_small);
            CHECK(buf == std::string(want.size() + 8, '#'));
        } else {
            CHECK(r.error == redact_errc::ok);
            CHECK(l.error == redact_errc::ok);
            CHECK(buf.substr(0, want.size()) == want);
            CHECK(buf.substr(want.size()) == std::string(8, '#'));  // no NUL, nothing past
        }
        CHECK(r.size == want.size());
        CHECK(l.size == want.size());
    }
    // No buffer at all: the size needed.
    const redacted none = node_list_redact(view(url), credentials::remove, nullptr, 0);
    CHECK(none.error == redact_errc::buffer_too_small);
    CHECK(none.size == std::strlen("redis://h"));
    CHECK(std::string(edgelock::describe(redact_errc::buffer_too_small)) ==
          "buffer too small for the redacted text");
    CHECK(std::string(edgelock::describe(redact_errc::ok)) == "ok");
}
