// Node URLs: every accepted form, every error code, the limits, escapes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "edgelock/node_url.hpp"

using edgelock::node_address;
using edgelock::node_url_decode;
using edgelock::node_url_max;
using edgelock::node_url_max_host;
using edgelock::node_url_max_secret;
using edgelock::node_url_max_unix_path;
using edgelock::parse_node_url;
using edgelock::str_view;
using edgelock::url_errc;

namespace Catch {
template <>
struct StringMaker<url_errc> {
    static std::string convert(url_errc e) {
        return std::to_string(static_cast<int>(e)) + " (" + edgelock::describe(e) + ")";
    }
};
}  // namespace Catch

namespace {

std::string str(str_view v) {
    return v.empty() ? std::string() : std::string(v.data, v.size);
}

str_view view(const std::string& s) {
    return {s.data(), s.size()};
}

// The URL as a log line: control bytes escaped, long ones shortened.
std::string printable(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < 100; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    if (s.size() > 100) {
        out += "... (" + std::to_string(s.size()) + " bytes)";
    }
    return out;
}

std::string repeat(const std::string& s, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += s;
    }
    return out;
}

struct url_case {
    std::string url;
    url_errc want;
    // The fields expected when want is ok.
    std::string host;
    std::uint16_t port;
    std::string unix_path;
    std::string user;      // as written, still escaped
    std::string password;  // as written, still escaped
    bool has_password;
    std::uint32_t db;
};

url_case tcp(std::string url, std::string host, std::uint16_t port = 6379, std::uint32_t db = 0) {
    return {std::move(url), url_errc::ok, std::move(host), port, "", "", "", false, db};
}

url_case auth(std::string url, std::string host, std::string user, std::string password,
              bool has_password, std::uint16_t port = 6379, std::uint32_t db = 0) {
    return {std::move(url),  url_errc::ok,        std::move(host), port, "",
            std::move(user), std::move(password), has_password,    db};
}

url_case sock(std::string url, std::string path, std::uint32_t db = 0) {
    return {std::move(url), url_errc::ok, "", 6379, std::move(path), "", "", false, db};
}

url_case bad(std::string url, url_errc want) {
    return {std::move(url), want, "", 0, "", "", "", false, 0};
}

// What out holds before each parse: an error must leave every byte of it.
const char sentinel_text[] = "sentinel";

node_address sentinel() {
    node_address a;
    a.host = str_view(sentinel_text, 8);
    a.port = 1;
    a.unix_path = str_view(sentinel_text, 3);
    a.user = str_view(sentinel_text + 1, 2);
    a.password = str_view(sentinel_text + 2, 4);
    a.has_password = true;
    a.db = 99;
    return a;
}

bool same_view(str_view a, str_view b) {
    return a.data == b.data && a.size == b.size;
}

void check_unchanged(const node_address& a, const node_address& before) {
    CHECK(same_view(a.host, before.host));
    CHECK(a.port == before.port);
    CHECK(same_view(a.unix_path, before.unix_path));
    CHECK(same_view(a.user, before.user));
    CHECK(same_view(a.password, before.password));
    CHECK(a.has_password == before.has_password);
    CHECK(a.db == before.db);
}

// A non-empty field must point into the URL: the parser never copies.
bool inside(str_view field, const std::string& url) {
    if (field.empty()) {
        return true;
    }
    const char* begin = url.data();
    const char* end = url.data() + url.size();
    return field.data >= begin && field.data + field.size <= end;
}

void check_case(const url_case& c) {
    INFO("url: " << printable(c.url));
    const node_address before = sentinel();
    node_address a = before;
    const url_errc got = parse_node_url(view(c.url), a);
    REQUIRE(got == c.want);
    if (got != url_errc::ok) {
        check_unchanged(a, before);
        return;
    }
    CHECK(str(a.host) == c.host);
    CHECK(a.port == c.port);
    CHECK(str(a.unix_path) == c.unix_path);
    CHECK(str(a.user) == c.user);
    CHECK(str(a.password) == c.password);
    CHECK(a.has_password == c.has_password);
    CHECK(a.db == c.db);
    // TLS exactly when the scheme says rediss, in any case.
    const std::string scheme = c.url.substr(0, c.url.find("://"));
    CHECK(a.tls == (scheme.size() == 6 && (scheme[5] == 's' || scheme[5] == 'S')));
    CHECK(inside(a.host, c.url));
    CHECK(inside(a.unix_path, c.url));
    CHECK(inside(a.user, c.url));
    CHECK(inside(a.password, c.url));
}

}  // namespace

TEST_CASE("parse_node_url accepts every documented form", "[url]") {
    const url_case cases[] = {
        // Names and IPv4.
        tcp("redis://localhost", "localhost"),
        tcp("redis://10.0.0.7", "10.0.0.7"),
        tcp("redis://10.0.0.7:6380/2", "10.0.0.7", 6380, 2),
        tcp("redis://redis-1.zone_a.example.com:7000/", "redis-1.zone_a.example.com", 7000),
        tcp("redis://h/0", "h"),
        tcp("redis://h/15", "h", 6379, 15),
        tcp("redis://h/007", "h", 6379, 7),
        tcp("redis://h:06380", "h", 6380),
        // IPv6, stored without brackets.
        tcp("redis://[::1]", "::1"),
        tcp("redis://[::1]:6380", "::1", 6380),
        tcp("redis://[::]", "::"),
        tcp("redis://[2001:db8::7]:7000/3", "2001:db8::7", 7000, 3),
        tcp("redis://[1:2:3:4:5:6:7:8]", "1:2:3:4:5:6:7:8"),
        tcp("redis://[fe80::ABCD:ef01]", "fe80::ABCD:ef01"),
        tcp("redis://[1::]/1", "1::", 6379, 1),
        tcp("redis://[::ffff:10.0.0.1]:1", "::ffff:10.0.0.1", 1),
        tcp("redis://[1:2:3:4:5:6:192.168.0.1]", "1:2:3:4:5:6:192.168.0.1"),
        // Schemes are case-insensitive.
        tcp("REDIS://H", "H"),
        tcp("Redis://h:1/1", "h", 1, 1),
        // TLS: the same authority and path as redis://.
        tcp("rediss://h", "h"),
        tcp("REDISS://h:6380/2", "h", 6380, 2),
        tcp("rediss://[::1]:6380", "::1", 6380),
        auth("rediss://u:p%40w@10.0.0.7:6390/1", "10.0.0.7", "u", "p%40w", true, 6390, 1),
        // User and password, as written.
        auth("redis://user@h", "h", "user", "", false),
        auth("redis://:secret@10.0.0.7:6380/2", "10.0.0.7", "", "secret", true, 6380, 2),
        auth("redis://user:@h", "h", "user", "", true),
        auth("redis://alice:s3cret@[::1]:6380/1", "::1", "alice", "s3cret", true, 6380, 1),
        auth("redis://u:p%40ss%3Aw%2Fd%25@h", "h", "u", "p%40ss%3Aw%2Fd%25", true),
        auth("redis://%41li%63e:pw@h", "h", "%41li%63e", "pw", true),
        auth("redis://u:a:b:c@h", "h", "u", "a:b:c", true),
        auth("redis://us:er:pw@h", "h", "us", "er:pw", true),
        auth("redis://u-s.e_r~!$&'()*+,;=:p-._~!$&'()*+,;=@h", "h",
             "u-s.e_r~!$&'()*+,;=", "p-._~!$&'()*+,;=", true),
        auth("redis://@h", "h", "", "", false),
        auth("redis://:@h", "h", "", "", true),
        // Unix sockets: the path is taken literally, never %-decoded.
        sock("unix:///var/run/redis.sock", "/var/run/redis.sock"),
        sock("unix:///var/run/redis.sock?db=3", "/var/run/redis.sock", 3),
        sock("UNIX:///tmp/r.sock?db=0", "/tmp/r.sock"),
        sock("unix:///tmp/r.sock?db=2147483647", "/tmp/r.sock", 2147483647),
        sock("unix:///tmp/with space%41.sock", "/tmp/with space%41.sock"),
        sock("unix:///", "/"),
    };
    for (const url_case& c : cases) {
        check_case(c);
    }
}

TEST_CASE("parse_node_url rejects malformed URLs with the component at fault", "[url]") {
    const url_case cases[] = {
        bad("", url_errc::empty),
        bad(std::string(node_url_max + 1, 'x'), url_errc::too_long),
        // Scheme.
        bad("localhost", url_errc::missing_scheme),
        bad("localhost:6379", url_errc::missing_scheme),
        bad("10.0.0.7:6379/1", url_errc::missing_scheme),
        bad("redis:/h", url_errc::missing_scheme),
        bad("redis//h", url_errc::missing_scheme),
        bad("redis:h", url_errc::missing_scheme),
        bad("://h", url_errc::missing_scheme),
        bad("re dis://h", url_errc::missing_scheme),
        bad("http://h", url_errc::bad_scheme),
        bad("redi://h", url_errc::bad_scheme),
        bad("redis+tls://h", url_errc::bad_scheme),
        bad("unixs:///tmp/s", url_errc::bad_scheme),
        // rediss:// parses like redis:// (whether TLS can be had is the
        // client's question, at configure), so it fails in the same places.
        bad("rediss://", url_errc::bad_host),
        bad("rediss://h:0", url_errc::bad_port),
        bad("rediss://h/x", url_errc::bad_db),
        bad("rediss://h?tls=1", url_errc::bad_query),
        // User and password: raw characters that need escaping.
        bad("redis://a@b@h", url_errc::bad_userinfo),
        bad("redis://u:p@ss@h", url_errc::bad_userinfo),
        bad("redis://u:p/w@h", url_errc::bad_userinfo),
        bad("redis://u:p?w@h", url_errc::bad_userinfo),
        bad("redis://u:p#w@h", url_errc::bad_userinfo),
        bad("redis://u:p/w@h/1", url_errc::bad_userinfo),
        bad("redis://u:p w@h", url_errc::bad_userinfo),
        bad("redis://u[:p@h", url_errc::bad_userinfo),
        bad("redis://u:p]@h", url_errc::bad_userinfo),
        bad("redis://u\":p@h", url_errc::bad_userinfo),
        bad("redis://u\x01:p@h", url_errc::bad_userinfo),
        bad("redis://u:p\x7f@h", url_errc::bad_userinfo),
        bad("redis://u:p\t@h", url_errc::bad_userinfo),
        bad("redis://u:p\xc3\xa9@h", url_errc::bad_userinfo),
        // Escapes.
        bad("redis://u:p%@h", url_errc::bad_escape),
        bad("redis://u:p%4@h", url_errc::bad_escape),
        bad("redis://u:p%4g@h", url_errc::bad_escape),
        bad("redis://u:p%g4@h", url_errc::bad_escape),
        bad("redis://u:%00@h", url_errc::bad_escape),
        bad("redis://%zz@h", url_errc::bad_escape),
        bad("redis://u%0@h", url_errc::bad_escape),
        // Host.
        bad("redis://", url_errc::bad_host),
        bad("redis://:6379", url_errc::bad_host),
        bad("redis:///1", url_errc::bad_host),
        bad("redis://u:p@", url_errc::bad_host),
        bad("redis://u:p@:1", url_errc::bad_host),
        bad("redis://ho st", url_errc::bad_host),
        bad("redis://h%41", url_errc::bad_host),
        bad("redis://h\x01", url_errc::bad_host),
        bad(std::string("redis://h\0x", 11), url_errc::bad_host),
        bad("redis://h]", url_errc::bad_host),
        bad("redis://h[", url_errc::bad_host),
        bad("redis://::1", url_errc::bad_host),
        bad("redis://[::1", url_errc::bad_host),
        bad("redis://[::1]x", url_errc::bad_host),
        bad("redis://[::1]]", url_errc::bad_host),
        bad("redis://[]", url_errc::bad_host),
        bad("redis://[]:1", url_errc::bad_host),
        bad("redis://[h]", url_errc::bad_host),
        bad("redis://[::1%eth0]", url_errc::bad_host),
        bad("redis://[fe80::1%25eth0]:1", url_errc::bad_host),
        bad("redis://[1.2.3.4]", url_errc::bad_host),
        bad("redis://[1:2:3:4:5:6:7]", url_errc::bad_host),
        bad("redis://[1:2:3:4:5:6:7:8:9]", url_errc::bad_host),
        bad("redis://[1:2:3:4:5:6:7::8]", url_errc::bad_host),
        bad("redis://[1::2::3]", url_errc::bad_host),
        bad("redis://[:::]", url_errc::bad_host),
        bad("redis://[:1]", url_errc::bad_host),
        bad("redis://[1:]", url_errc::bad_host),
        bad("redis://[12345::]", url_errc::bad_host),
        bad("redis://[g::1]", url_errc::bad_host),
        bad("redis://[::1.2.3]", url_errc::bad_host),
        bad("redis://[::1.2.3.256]", url_errc::bad_host),
        bad("redis://[::01.2.3.4]", url_errc::bad_host),
        bad("redis://[::1.2.3.4:5]", url_errc::bad_host),
        // Port.
        bad("redis://h:", url_errc::bad_port),
        bad("redis://h:/1", url_errc::bad_port),
        bad("redis://h:0", url_errc::bad_port),
        bad("redis://h:00", url_errc::bad_port),
        bad("redis://h:65536", url_errc::bad_port),
        bad("redis://h:99999999999999999999", url_errc::bad_port),
        bad("redis://h:+1", url_errc::bad_port),
        bad("redis://h:-1", url_errc::bad_port),
        bad("redis://h: 1", url_errc::bad_port),
        bad("redis://h:63a", url_errc::bad_port),
        bad("redis://h:1:2", url_errc::bad_port),
        bad("redis://h:1\x01", url_errc::bad_port),
        bad("redis://[::1]:", url_errc::bad_port),
        bad("redis://[::1]:0", url_errc::bad_port),
        bad("redis://[::1]:x", url_errc::bad_port),
        // Database.
        bad("redis://h/x", url_errc::bad_db),
        bad("redis://h/+1", url_errc::bad_db),
        bad("redis://h/-1", url_errc::bad_db),
        bad("redis://h/ 1", url_errc::bad_db),
        bad("redis://h/1\x01", url_errc::bad_db),
        bad("redis://h/2147483648", url_errc::bad_db),
        bad("redis://h/4294967296", url_errc::bad_db),
        bad("redis://h/99999999999999999999", url_errc::bad_db),
        // Path.
        bad("redis://h/1/2", url_errc::bad_path),
        bad("redis://h/1/", url_errc::bad_path),
        bad("redis://h//", url_errc::bad_path),
        // Query and fragment.
        bad("redis://h?db=1", url_errc::bad_query),
        bad("redis://h/1?x", url_errc::bad_query),
        bad("redis://h/?", url_errc::bad_query),
        bad("redis://h#f", url_errc::bad_query),
        bad("redis://h/1#", url_errc::bad_query),
        // Unix sockets.
        bad("unix://", url_errc::bad_path),
        bad("unix://host/x", url_errc::bad_path),
        bad("unix://relative.sock", url_errc::bad_path),
        bad("unix://?db=1", url_errc::bad_path),
        bad("unix://#x", url_errc::bad_path),
        bad("unix:///tmp/a\x01"
            "b",
            url_errc::bad_path),
        bad(std::string("unix:///tmp/a\0b", 15), url_errc::bad_path),
        bad("unix:///tmp/r.sock?db=", url_errc::bad_db),
        bad("unix:///tmp/r.sock?db=x", url_errc::bad_db),
        bad("unix:///tmp/r.sock?db=-1", url_errc::bad_db),
        bad("unix:///tmp/r.sock?db=2147483648", url_errc::bad_db),
        bad("unix:///tmp/r.sock?db=1\x01", url_errc::bad_db),
        bad("unix:///tmp/r.sock?", url_errc::bad_query),
        bad("unix:///tmp/r.sock?db", url_errc::bad_query),
        bad("unix:///tmp/r.sock?x=1", url_errc::bad_query),
        bad("unix:///tmp/r.sock?DB=1", url_errc::bad_query),
        bad("unix:///tmp/r.sock?db=1&x=2", url_errc::bad_query),
        bad("unix:///tmp/r.sock?db=1&db=2", url_errc::bad_query),
        bad("unix:///tmp/r.sock?db=1#f", url_errc::bad_query),
        bad("unix:///tmp/r.sock#f", url_errc::bad_query),
    };
    bool seen[static_cast<int>(url_errc::bad_query) + 1] = {};
    for (const url_case& c : cases) {
        check_case(c);
        seen[static_cast<int>(c.want)] = true;
    }
    // Every error code is produced by at least one row, but tls_not_built_in:
    // the client's configure() reports it, the parser never does.
    for (int e = 1; e <= static_cast<int>(url_errc::bad_query); ++e) {
        CAPTURE(static_cast<url_errc>(e));
        CHECK(seen[e] == (static_cast<url_errc>(e) != url_errc::tls_not_built_in));
    }
}

TEST_CASE("parse_node_url limits: port, db, host, unix path, secrets, URL length", "[url]") {
    const std::string max_host(node_url_max_host, 'a');
    const std::string max_path = "/" + std::string(node_url_max_unix_path - 1, 's');
    // A valid URL of exactly node_url_max bytes: a user of node_url_max_secret
    // escaped bytes, then a password filling the rest.
    const std::string head = "redis://" + repeat("%41", node_url_max_secret) + ":";
    const std::string tail = "@h";
    const std::string max_password(node_url_max - head.size() - tail.size(), 'p');
    REQUIRE(max_password.size() <= node_url_max_secret);
    const std::string max_url = head + max_password + tail;
    REQUIRE(max_url.size() == node_url_max);

    const std::vector<url_case> cases = {
        tcp("redis://h:65535", "h", 65535),
        tcp("redis://h:1", "h", 1),
        bad("redis://h:65536", url_errc::bad_port),
        bad("redis://h:0", url_errc::bad_port),
        tcp("redis://h/2147483647", "h", 6379, 2147483647),
        bad("redis://h/2147483648", url_errc::bad_db),
        tcp("redis://" + max_host, max_host),
        tcp("redis://" + max_host + ":6380/1", max_host, 6380, 1),
        bad("redis://" + max_host + "a", url_errc::bad_host),
        sock("unix://" + max_path, max_path),
        sock("unix://" + max_path + "?db=4", max_path, 4),
        bad("unix://" + max_path + "s", url_errc::bad_path),
        // Secrets count once decoded.
        auth("redis://" + std::string(node_url_max_secret, 'u') + "@h", "h",
             std::string(node_url_max_secret, 'u'), "", false),
        bad("redis://" + std::string(node_url_max_secret + 1, 'u') + "@h", url_errc::bad_userinfo),
        auth("redis://:" + repeat("%41", node_url_max_secret) + "@h", "h", "",
             repeat("%41", node_url_max_secret), true),
        bad("redis://:" + repeat("%41", node_url_max_secret + 1) + "@h", url_errc::bad_userinfo),
        auth("redis://:" + std::string(node_url_max_secret - 1, 'p') + ":@h", "h", "",
             std::string(node_url_max_secret - 1, 'p') + ":", true),
        bad("redis://:" + std::string(node_url_max_secret, 'p') + ":@h", url_errc::bad_userinfo),
        // The whole URL.
        auth(max_url, "h", repeat("%41", node_url_max_secret), max_password, true),
        bad(head + max_password + "p" + tail, url_errc::too_long),
        bad("redis://h/" + std::string(node_url_max - 10, '1'), url_errc::bad_db),
        bad("redis://h/" + std::string(node_url_max - 9, '1'), url_errc::too_long),
    };
    for (const url_case& c : cases) {
        check_case(c);
    }
}

TEST_CASE("parse_node_url writes out only on success, and then every field", "[url]") {
    const std::string first = "redis://alice:pw@[::1]:6380/3";
    node_address a;
    REQUIRE(parse_node_url(view(first), a) == url_errc::ok);
    const node_address kept = a;

    // Errors found late (after host, port and db were parsed) leave it alone.
    for (const char* url : {"redis://bob:x@h:1/2?q", "redis://h:7/1/2", "unix:///s?db=1&x",
                            "redis://h:7/x", "redis://h:0", "rediss://h:7/x", ""}) {
        CAPTURE(url);
        CHECK(parse_node_url(url, a) != url_errc::ok);
        check_unchanged(a, kept);
    }

    // A success replaces everything, including fields the new URL lacks.
    const std::string second = "unix:///tmp/r.sock";
    REQUIRE(parse_node_url(view(second), a) == url_errc::ok);
    CHECK(str(a.unix_path) == "/tmp/r.sock");
    CHECK(a.host.empty());
    CHECK(a.port == 6379);
    CHECK(a.user.empty());
    CHECK(a.password.empty());
    CHECK_FALSE(a.has_password);
    CHECK(a.db == 0);

    REQUIRE(parse_node_url("redis://h", a) == url_errc::ok);
    CHECK(a.unix_path.empty());
    CHECK(str(a.host) == "h");
}

TEST_CASE("parse_node_url reads url.size bytes and views into them", "[url]") {
    const std::string buffer = "redis://[::1]:6380/1/garbage that is not part of the URL";
    node_address a;
    REQUIRE(parse_node_url(str_view(buffer.data(), 20), a) == url_errc::ok);
    CHECK(str(a.host) == "::1");
    CHECK(a.host.data == buffer.data() + 9);  // inside the brackets
    CHECK(a.port == 6380);
    CHECK(a.db == 1);
    CHECK(parse_node_url(str_view(buffer.data(), 21), a) == url_errc::bad_path);
    CHECK(parse_node_url(str_view(buffer.data(), 0), a) == url_errc::empty);
    CHECK(parse_node_url(str_view(nullptr, 0), a) == url_errc::empty);
}

TEST_CASE("node_url_decode turns escapes into bytes", "[url]") {
    struct decode_case {
        const char* escaped;
        std::string want;
    };
    const decode_case cases[] = {
        {"", ""},
        {"abc", "abc"},
        {"p%40ss%3Aw%2Fd%25", "p@ss:w/d%"},
        {"%4a%4A%4b", "JJK"},
        {"%ff%80", "\xff\x80"},
        {"%2541", "%41"},  // decoded once only
        {"a+b~!$&'()*,;=", "a+b~!$&'()*,;="},
        {"%01%1f%7F", "\x01\x1f\x7f"},
        {"raw:@/ kept", "raw:@/ kept"},
    };
    for (const decode_case& c : cases) {
        CAPTURE(c.escaped);
        char out[64];
        const std::size_t n = node_url_decode(c.escaped, out, sizeof out);
        REQUIRE(n == c.want.size());
        CHECK(std::string(out, n) == c.want);
    }

    for (const char* escaped :
         {"%", "%4", "ab%", "ab%4", "%4g", "%g4", "%%41", "%00", "a%00b", "%x0", "% 41", "%-1"}) {
        CAPTURE(escaped);
        char out[64];
        CHECK(node_url_decode(escaped, out, sizeof out) == SIZE_MAX);
    }
}

TEST_CASE("node_url_decode never writes past capacity", "[url]") {
    char out[8];
    const auto fill = [&out] {
        for (char& c : out) {
            c = '#';
        }
    };

    fill();
    CHECK(node_url_decode("abc", out, 3) == 3);  // exact fit
    CHECK(std::string(out, 3) == "abc");
    CHECK(out[3] == '#');

    fill();
    CHECK(node_url_decode("abcd", out, 3) == SIZE_MAX);  // one too many
    CHECK(out[3] == '#');

    fill();
    CHECK(node_url_decode("%41%42", out, 2) == 2);  // fits once decoded
    CHECK(std::string(out, 2) == "AB");
    CHECK(out[2] == '#');

    fill();
    CHECK(node_url_decode("%41%42%43", out, 2) == SIZE_MAX);
    CHECK(out[2] == '#');

    CHECK(node_url_decode("", nullptr, 0) == 0);
    fill();
    CHECK(node_url_decode("a", out, 0) == SIZE_MAX);
    CHECK(out[0] == '#');

    // The limit the parser enforces is one a node_url_max_secret buffer holds.
    const std::string secret = repeat("%7e", node_url_max_secret);
    std::vector<char> buf(node_url_max_secret);
    CHECK(node_url_decode(view(secret), buf.data(), buf.size()) == node_url_max_secret);
    CHECK(std::string(buf.data(), buf.size()) == std::string(node_url_max_secret, '~'));
    CHECK(node_url_decode(view(secret + "a"), buf.data(), buf.size()) == SIZE_MAX);
}

TEST_CASE("a parsed password decodes to the secret that was escaped", "[url]") {
    const std::string url = "redis://app%2Fuser:p%40ss%3Aw%2Fd%25%23%3F@10.0.0.7:6380/2";
    node_address a;
    REQUIRE(parse_node_url(view(url), a) == url_errc::ok);
    REQUIRE(a.has_password);
    char user[node_url_max_secret];
    char password[node_url_max_secret];
    const std::size_t nu = node_url_decode(a.user, user, sizeof user);
    const std::size_t np = node_url_decode(a.password, password, sizeof password);
    REQUIRE(nu != SIZE_MAX);
    REQUIRE(np != SIZE_MAX);
    CHECK(std::string(user, nu) == "app/user");
    CHECK(std::string(password, np) == "p@ss:w/d%#?");
    CHECK(str(a.host) == "10.0.0.7");
    CHECK(a.port == 6380);
    CHECK(a.db == 2);
}

TEST_CASE("describe(url_errc) names every code", "[url]") {
    std::vector<std::string> seen;
    for (int e = 0; e <= static_cast<int>(url_errc::bad_query); ++e) {
        const auto code = static_cast<url_errc>(e);
        CAPTURE(e);
        const char* text = edgelock::describe(code);
        REQUIRE(text != nullptr);
        const std::string s = text;
        CHECK_FALSE(s.empty());
        CHECK(s != "unknown URL error");
        for (const std::string& other : seen) {
            CHECK(s != other);
        }
        seen.push_back(s);
    }
    CHECK(std::string(edgelock::describe(url_errc::ok)) == "ok");
    CHECK(std::string(edgelock::describe(url_errc::tls_not_built_in)) ==
          "TLS (rediss://) is not built in");
    const char* unknown = edgelock::describe(static_cast<url_errc>(200));
    REQUIRE(unknown != nullptr);
    CHECK(std::string(unknown) == "unknown URL error");
}
