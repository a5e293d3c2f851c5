// Sentinel URLs: redis-sentinel://[user[:password]@]host[:port][,host[:port]...]
// /MASTER_NAME[/db]. The sentinels (26379 by default) are checked one by one
// here and read again, one at a time, when the client asks them where the
// master is; nothing is copied.
#include "edgelock/node_url.hpp"

#include "node_url_internal.hpp"

namespace edgelock {

using namespace url_detail;

namespace {

url_errc parse_sentinel_host(str_view hp, node_address& a) {
    a.port = 26379;
    return parse_host_port(hp, a);
}

}  // namespace

namespace url_detail {

// What follows "redis-sentinel://": [userinfo@]host[:port][,host[:port]...]
// then /MASTER_NAME[/db].
url_errc parse_sentinel(str_view rest, node_address& a) {
    const std::size_t end = find_any(rest, '/', '?', '#');
    const str_view authority = sub(rest, 0, end);
    const str_view tail = sub(rest, end, rest.size);
    if (contains(tail, '@')) {
        return url_errc::bad_userinfo;
    }
    str_view hosts;
    url_errc e = parse_userinfo(authority, a, hosts);
    std::uint8_t count = 0;
    for (std::size_t from = 0; e == url_errc::ok && from <= hosts.size; ++count) {
        const std::size_t comma = from + find(sub(hosts, from, hosts.size), ',');
        node_address one;
        if (count == node_url_max_sentinels) {
            return url_errc::bad_host;
        }
        e = parse_sentinel_host(sub(hosts, from, comma), count == 0 ? a : one);
        from = comma + 1;
    }
    if (e != url_errc::ok) {
        return e;
    }
    // tail: /MASTER_NAME[/db], no query.
    const std::size_t query = find_any(tail, '?', '#', '#');
    if (query < tail.size) {
        return url_errc::bad_query;
    }
    const str_view path = sub(tail, tail.empty() ? 0 : 1, tail.size);
    const std::size_t slash = find(path, '/');
    const str_view name = sub(path, 0, slash);
    if (name.empty() || name.size > node_url_max_master_name) {
        return url_errc::bad_path;
    }
    for (char c : name) {
        if (!is_host_char(c) && c != ':') {
            return url_errc::bad_path;
        }
    }
    if (slash < path.size && !parse_decimal(sub(path, slash + 1, path.size), max_db, a.db)) {
        return url_errc::bad_db;
    }
    a.sentinels = hosts;
    a.sentinel_count = count;
    a.master_name = name;
    return url_errc::ok;
}

}  // namespace url_detail

bool node_url_sentinel(const node_address& a, std::uint8_t i, str_view& host,
                       std::uint16_t& port) noexcept {
    std::size_t from = 0;
    for (std::uint8_t k = 0; k < i && from <= a.sentinels.size; ++k) {
        from += find(sub(a.sentinels, from, a.sentinels.size), ',') + 1;
    }
    if (i >= a.sentinel_count || from > a.sentinels.size) {
        return false;
    }
    const str_view rest = sub(a.sentinels, from, a.sentinels.size);
    node_address one;
    if (parse_sentinel_host(sub(rest, 0, find(rest, ',')), one) != url_errc::ok) {
        return false;
    }
    host = one.host;
    port = one.port;
    return true;
}

}  // namespace edgelock
