// Node URLs: redis[s]://[user[:password]@]host[:port][/db], unix:///path[?db=N]
// and redis[s]-sentinel://[user[:password]@]host[:port][,...]/MASTER_NAME[/db].
//
// The parser never copies: every field of the result is a view into the URL.
// It is strict on purpose; a URL that is merely plausible is refused with the
// component at fault, so a typo in a configuration fails loudly at start-up
// instead of connecting somewhere unexpected.
#include "edgelock/node_url.hpp"

#include "node_url_internal.hpp"

namespace edgelock {

// The pieces a Sentinel URL is made of too (node_url_sentinel.cpp).
namespace url_detail {

constexpr std::uint32_t max_port = 65535;

bool is_control(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The value of a hex digit, or -1.
int hex_value(char c) {
    if (is_digit(c)) {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

bool is_hex(char c) {
    return hex_value(c) >= 0;
}

bool is_scheme_char(char c) {
    return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
}

// RFC 3986 unreserved and sub-delims: what user and password may hold unescaped.
bool is_secret_char(char c) {
    if (is_alpha(c) || is_digit(c)) {
        return true;
    }
    switch (c) {
    case '-':
    case '.':
    case '_':
    case '~':
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case '+':
    case ',':
    case ';':
    case '=':
        return true;
    default:
        return false;
    }
}

bool is_host_char(char c) {
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_';
}

str_view sub(str_view s, std::size_t from, std::size_t to) {
    return {s.data + from, to - from};
}

// Index of the first of a, b or c in s, or s.size.
std::size_t find_any(str_view s, char a, char b, char c) {
    std::size_t i = 0;
    while (i < s.size && s[i] != a && s[i] != b && s[i] != c) {
        ++i;
    }
    return i;
}

// Index of the first c in s, or s.size.
std::size_t find(str_view s, char c) {
    return find_any(s, c, c, c);
}

bool contains(str_view s, char c) {
    return find(s, c) < s.size;
}

// A non-empty run of decimal digits (leading zeros allowed) no greater than max.
bool parse_decimal(str_view s, std::uint32_t max, std::uint32_t& value) {
    if (s.empty()) {
        return false;
    }
    std::uint32_t v = 0;
    for (char c : s) {
        if (!is_digit(c)) {
            return false;
        }
        const auto d = static_cast<std::uint32_t>(c - '0');
        if (v > (max - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    value = v;
    return true;
}

// Decodes the escape "%XX" at s[i]; false when malformed or when it is %00.
bool decode_escape(str_view s, std::size_t i, char& byte) {
    if (s.size - i < 3) {
        return false;
    }
    const int hi = hex_value(s[i + 1]);
    const int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
        return false;
    }
    byte = static_cast<char>(hi * 16 + lo);
    return true;
}

// Checks a user (colon_ok false) or a password (colon_ok true) as written.
url_errc check_secret(str_view s, bool colon_ok) {
    std::size_t decoded = 0;
    for (std::size_t i = 0; i < s.size; ++decoded) {
        const char c = s[i];
        if (c == '%') {
            char byte = 0;
            if (!decode_escape(s, i, byte)) {
                return url_errc::bad_escape;
            }
            i += 3;
        } else if (is_secret_char(c) || (colon_ok && c == ':')) {
            ++i;
        } else {
            return url_errc::bad_userinfo;
        }
    }
    return decoded > node_url_max_secret ? url_errc::bad_userinfo : url_errc::ok;
}

// A dotted quad of decimals 0..255 without leading zeros (as inet_pton wants).
bool valid_ipv4(str_view s) {
    std::size_t i = 0;
    for (int part = 0; part < 4; ++part) {
        if (part > 0) {
            if (i == s.size || s[i] != '.') {
                return false;
            }
            ++i;
        }
        const std::size_t start = i;
        while (i < s.size && is_digit(s[i]) && i - start < 3) {
            ++i;
        }
        std::uint32_t v = 0;
        if (!parse_decimal(sub(s, start, i), 255, v) || (i - start > 1 && s[start] == '0')) {
            return false;
        }
    }
    return i == s.size;
}

// An IPv6 address as RFC 4291 writes it: eight groups of 1..4 hex digits, one
// "::" standing for one or more zero groups, the last two groups optionally an
// IPv4 dotted quad. No zone index.
bool valid_ipv6(str_view s) {
    std::size_t i = 0;
    unsigned groups = 0;
    bool compressed = false;
    if (s.size >= 2 && s[0] == ':' && s[1] == ':') {
        compressed = true;
        i = 2;
        if (i == s.size) {
            return true;
        }
    }
    for (;;) {
        const std::size_t start = i;
        while (i < s.size && is_hex(s[i])) {
            ++i;
        }
        if (i < s.size && s[i] == '.') {
            if (!valid_ipv4(sub(s, start, s.size))) {
                return false;
            }
            groups += 2;
            break;
        }
        const std::size_t len = i - start;
        if (len == 0 || len > 4) {
            return false;
        }
        ++groups;
        if (i == s.size) {
            break;
        }
        if (s[i] != ':') {
            return false;
        }
        ++i;
        if (i < s.size && s[i] == ':') {
            if (compressed) {
                return false;
            }
            compressed = true;
            ++i;
            if (i == s.size) {
                break;
            }
        } else if (i == s.size) {
            return false;
        }
    }
    return compressed ? groups <= 7 : groups == 8;
}

// host[:port] or [IPv6][:port].
url_errc parse_host_port(str_view hp, node_address& a) {
    str_view host;
    std::size_t port_at = hp.size;  // index of the ':' before the port, if any
    if (!hp.empty() && hp[0] == '[') {
        std::size_t close = 1;
        while (close < hp.size && hp[close] != ']') {
            ++close;
        }
        if (close == hp.size) {
            return url_errc::bad_host;
        }
        host = sub(hp, 1, close);
        if (!valid_ipv6(host)) {
            return url_errc::bad_host;
        }
        if (close + 1 < hp.size) {
            if (hp[close + 1] != ':') {
                return url_errc::bad_host;
            }
            port_at = close + 1;
        }
    } else {
        port_at = find(hp, ':');
        host = sub(hp, 0, port_at);
        if (host.empty() || host.size > node_url_max_host) {
            return url_errc::bad_host;
        }
        for (char c : host) {
            if (!is_host_char(c)) {
                return url_errc::bad_host;
            }
        }
    }
    if (port_at < hp.size) {
        std::uint32_t port = 0;
        if (!parse_decimal(sub(hp, port_at + 1, hp.size), max_port, port) || port == 0) {
            return url_errc::bad_port;
        }
        a.port = static_cast<std::uint16_t>(port);
    }
    a.host = host;
    return url_errc::ok;
}

// [user[:password]@]rest: the user and password into a, what follows the
// last '@' into rest.
url_errc parse_userinfo(str_view authority, node_address& a, str_view& rest) {
    rest = authority;
    std::size_t at = authority.size;
    while (at > 0 && authority[at - 1] != '@') {
        --at;
    }
    if (at == 0) {
        return url_errc::ok;
    }
    // authority[at - 1] is the last '@'.
    const str_view userinfo = sub(authority, 0, at - 1);
    rest = sub(authority, at, authority.size);
    const std::size_t colon = find(userinfo, ':');
    a.user = sub(userinfo, 0, colon);
    if (colon < userinfo.size) {
        a.password = sub(userinfo, colon + 1, userinfo.size);
        a.has_password = true;
    }
    const url_errc e = check_secret(a.user, false);
    return e != url_errc::ok ? e : check_secret(a.password, true);
}

// What follows "redis://".
url_errc parse_redis(str_view rest, node_address& a) {
    const std::size_t end = find_any(rest, '/', '?', '#');
    const str_view authority = sub(rest, 0, end);
    const str_view tail = sub(rest, end, rest.size);

    // An '@' past the authority is a user or password with a raw '/', '?' or
    // '#' in it: say so rather than complain about the path it seems to be.
    if (contains(tail, '@')) {
        return url_errc::bad_userinfo;
    }

    str_view host_port;
    url_errc e = parse_userinfo(authority, a, host_port);
    if (e != url_errc::ok) {
        return e;
    }
    e = parse_host_port(host_port, a);
    if (e != url_errc::ok) {
        return e;
    }

    // tail is empty or starts with '/', '?' or '#'.
    const std::size_t query = find_any(tail, '?', '#', '#');
    if (query > 1) {  // "/N"
        const str_view db = sub(tail, 1, query);
        if (contains(db, '/')) {
            return url_errc::bad_path;
        }
        if (!parse_decimal(db, max_db, a.db)) {
            return url_errc::bad_db;
        }
    }
    if (query < tail.size) {
        return url_errc::bad_query;
    }
    return url_errc::ok;
}

// What follows "unix://": an empty authority, then /path[?db=N].
url_errc parse_unix(str_view rest, node_address& a) {
    if (find_any(rest, '/', '?', '#') != 0) {
        return url_errc::bad_path;  // "unix://host/x" or "unix://relative"
    }
    const std::size_t query = find_any(rest, '?', '#', '#');
    const str_view path = sub(rest, 0, query);
    if (path.empty() || path.size > node_url_max_unix_path) {
        return url_errc::bad_path;
    }
    for (char c : path) {
        if (is_control(c)) {
            return url_errc::bad_path;
        }
    }
    a.unix_path = path;

    if (query < rest.size) {
        if (rest[query] == '#') {
            return url_errc::bad_query;
        }
        const str_view q = sub(rest, query + 1, rest.size);
        if (contains(q, '#') || !starts_with(q, "db=")) {
            return url_errc::bad_query;
        }
        const str_view value = sub(q, 3, q.size);
        if (contains(value, '&')) {
            return url_errc::bad_query;  // a second parameter
        }
        if (!parse_decimal(value, max_db, a.db)) {
            return url_errc::bad_db;
        }
    }
    return url_errc::ok;
}

}  // namespace url_detail

using namespace url_detail;

url_errc parse_node_url(str_view url, node_address& out) noexcept {
    if (url.empty()) {
        return url_errc::empty;
    }
    if (url.size > node_url_max) {
        return url_errc::too_long;
    }
    std::size_t i = 0;
    while (i < url.size && is_scheme_char(url[i])) {
        ++i;
    }
    if (i == 0 || !starts_with(sub(url, i, url.size), "://")) {
        return url_errc::missing_scheme;
    }
    const str_view scheme = sub(url, 0, i);
    const str_view rest = sub(url, i + 3, url.size);

    node_address a;
    url_errc e = url_errc::bad_scheme;
    if (equals_icase(scheme, "redis")) {
        e = parse_redis(rest, a);
    } else if (equals_icase(scheme, "rediss")) {
        e = parse_redis(rest, a);
        a.tls = true;
    } else if (equals_icase(scheme, "unix")) {
        e = parse_unix(rest, a);
    } else if (equals_icase(scheme, "redis-sentinel")) {
        e = url_detail::parse_sentinel(rest, a);
    } else if (equals_icase(scheme, "rediss-sentinel")) {
        e = url_detail::parse_sentinel(rest, a);
        a.tls = true;
    } else if (equals_icase(scheme, "redis-cluster")) {
        e = url_detail::parse_cluster(rest, a);
    }
    if (e == url_errc::ok) {
        out = a;
    }
    return e;
}

std::size_t node_url_decode(str_view escaped, char* out, std::size_t capacity) noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < escaped.size;) {
        char c = escaped[i];
        if (c == '%') {
            if (!decode_escape(escaped, i, c)) {
                return SIZE_MAX;
            }
            i += 3;
        } else {
            ++i;
        }
        if (n == capacity) {
            return SIZE_MAX;
        }
        out[n++] = c;
    }
    return n;
}

}  // namespace edgelock
