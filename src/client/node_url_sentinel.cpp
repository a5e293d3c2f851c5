// URLs with a list of hosts: redis[s]-sentinel://[user[:password]@]host[:port]
// [,host[:port]...]/MASTER_NAME[/db] and redis-cluster://[user[:password]@]
// host[:port][,host[:port]...]. The sentinels (26379 by default) or seeds
// (6379) are checked one by one here and read again, one at a time, when the
// client connects to one; nothing is copied.
#include "edgelock/node_url.hpp"

#include "node_url_internal.hpp"

namespace edgelock {

using namespace url_detail;

namespace {

constexpr std::uint16_t sentinel_port = 26379;
constexpr std::uint16_t seed_port = 6379;

url_errc parse_listed_host(str_view hp, std::uint16_t default_port, node_address& a) {
    a.port = default_port;
    return parse_host_port(hp, a);
}

// [userinfo@]host[:port][,host[:port]...] up to the first '/', '?' or '#'
// of rest into a (the first host's there), the list into hosts and its
// length into count, and what follows into tail.
url_errc parse_host_list(str_view rest, std::uint16_t default_port, node_address& a,
                         str_view& hosts, std::uint8_t& count, str_view& tail) {
    const std::size_t end = find_any(rest, '/', '?', '#');
    tail = sub(rest, end, rest.size);
    if (contains(tail, '@')) {
        return url_errc::bad_userinfo;
    }
    url_errc e = parse_userinfo(sub(rest, 0, end), a, hosts);
    count = 0;
    for (std::size_t from = 0; e == url_errc::ok && from <= hosts.size; ++count) {
        const std::size_t comma = from + find(sub(hosts, from, hosts.size), ',');
        node_address one;
        if (count == node_url_max_sentinels) {
            return url_errc::bad_host;
        }
        e = parse_listed_host(sub(hosts, from, comma), default_port, count == 0 ? a : one);
        from = comma + 1;
    }
    return e;
}

// Host i of a list parse_host_list() accepted.
bool listed_host(str_view list, std::uint8_t count, std::uint8_t i, std::uint16_t default_port,
                 str_view& host, std::uint16_t& port) {
    std::size_t from = 0;
    for (std::uint8_t k = 0; k < i && from <= list.size; ++k) {
        from += find(sub(list, from, list.size), ',') + 1;
    }
    if (i >= count || from > list.size) {
        return false;
    }
    const str_view rest = sub(list, from, list.size);
    node_address one;
    if (parse_listed_host(sub(rest, 0, find(rest, ',')), default_port, one) != url_errc::ok) {
        return false;
    }
    host = one.host;
    port = one.port;
    return true;
}

}  // namespace

namespace url_detail {

// What follows "redis-sentinel://" or "rediss-sentinel://": [userinfo@]host[:port][,host[:port]...]
// then /MASTER_NAME[/db].
url_errc parse_sentinel(str_view rest, node_address& a) {
    str_view hosts;
    str_view tail;
    std::uint8_t count = 0;
    const url_errc e = parse_host_list(rest, sentinel_port, a, hosts, count, tail);
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

// What follows "redis-cluster://": [userinfo@]host[:port][,host[:port]...],
// then nothing (a cluster has database 0 only) or a lone '/'.
url_errc parse_cluster(str_view rest, node_address& a) {
    str_view hosts;
    str_view tail;
    std::uint8_t count = 0;
    const url_errc e = parse_host_list(rest, seed_port, a, hosts, count, tail);
    if (e != url_errc::ok) {
        return e;
    }
    if (find_any(tail, '?', '#', '#') < tail.size) {
        return url_errc::bad_query;
    }
    if (tail.size > 1) {
        return url_errc::bad_path;
    }
    a.seeds = hosts;
    a.seed_count = count;
    return url_errc::ok;
}

}  // namespace url_detail

bool node_url_sentinel(const node_address& a, std::uint8_t i, str_view& host,
                       std::uint16_t& port) noexcept {
    return listed_host(a.sentinels, a.sentinel_count, i, sentinel_port, host, port);
}

bool node_url_seed(const node_address& a, std::uint8_t i, str_view& host,
                   std::uint16_t& port) noexcept {
    return listed_host(a.seeds, a.seed_count, i, seed_port, host, port);
}

}  // namespace edgelock
