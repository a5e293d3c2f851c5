// Node addresses as URLs, parsed without copying.
//
//   redis://[user[:password]@]host[:port][/db]
//   rediss://[user[:password]@]host[:port][/db]   TLS (node_address::tls)
//   unix:///path/to/redis.sock[?db=N]
//   redis-sentinel://[user[:password]@]host[:port][,host[:port]...]/MASTER_NAME[/db]
//   rediss-sentinel://...                          the same, over TLS (node_address::tls)
//   redis-cluster://[user[:password]@]host[:port][,host[:port]...]
//
// A Sentinel URL names the sentinels (26379 by default, up to
// node_url_max_sentinels) that know where the master called MASTER_NAME is;
// user and password are the master's (a sentinel's own come from
// client_options). host and port are then the first sentinel's.
// rediss-sentinel:// is the same URL for a deployment that speaks TLS only:
// the sentinels and the master they name (Sentinel with tls-port and
// tls-replication yes), each verified as a rediss:// node is.
// A Cluster URL names seed nodes of one Redis Cluster (6379 by default, up to
// node_url_max_sentinels), any of which tells where the slots are; host and
// port are the first seed's. A cluster has database 0 only: no path.
//
// host is a name, a dotted IPv4 address, or an IPv6 address in brackets
// (`redis://[::1]:6380`); port defaults to 6379 and must be 1..65535; db is a
// decimal in [0, 2^31). user and password may carry %XX escapes (a password
// with '@', ':' or '/' in it must); node_url_decode() turns them into bytes.
// Every view points into the parsed string, which must outlive the result.
//
//   edgelock::node_address a;
//   if (edgelock::parse_node_url("redis://:secret@10.0.0.7:6380/2", a) != url_errc::ok) ...
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/str_view.hpp"

namespace edgelock {

// Longest URL accepted, and longest host, user, password and path within it.
constexpr std::size_t node_url_max = 1024;
constexpr std::size_t node_url_max_host = 253;       // a DNS name
constexpr std::size_t node_url_max_secret = 256;     // user or password, once decoded
constexpr std::size_t node_url_max_unix_path = 107;  // sun_path less its NUL on Linux
constexpr std::size_t node_url_max_sentinels = 8;
constexpr std::size_t node_url_max_master_name = 128;  // letters, digits, "-._:"

enum class url_errc : std::uint8_t {
    ok = 0,
    empty,             // nothing given
    too_long,          // longer than node_url_max
    missing_scheme,    // no "scheme://" in front
    bad_scheme,        // a scheme other than redis, rediss, unix, redis-sentinel,
                       // rediss-sentinel, redis-cluster
    tls_not_built_in,  // never from parse_node_url: the client's configure() names
                       // a rediss:// (or rediss-sentinel://) node it cannot serve
                       // with it (bad_url_error)
    bad_userinfo,      // user/password too long, or a raw character that needs escaping
    bad_escape,        // a '%' not followed by two hex digits, or an escaped NUL
    bad_host,          // empty, too long, a character not allowed, or a bad [IPv6]
    bad_port,          // not a decimal in 1..65535
    bad_db,            // not a decimal in [0, 2^31)
    bad_path,          // unix: empty, relative, or too long; redis: anything but /db;
                       // sentinel: no master name, or a bad one; cluster: any path
    bad_query,         // a query other than db=N (unix) or any query (redis)
};

const char* describe(url_errc code) noexcept;

struct node_address {
    // TCP when unix_path is empty.
    str_view host;  // without brackets for IPv6
    std::uint16_t port = 6379;
    str_view unix_path;
    // Still %-escaped, as written in the URL; empty when absent.
    str_view user;
    str_view password;
    bool has_password = false;  // "redis://user:@h" gives an empty password that is present
    std::uint32_t db = 0;
    bool tls = false;  // rediss://: the node speaks TLS; rediss-sentinel://: its
                       // sentinels and its master do
    // redis[s]-sentinel://: the sentinels' "host:port,host:port..." as written,
    // how many, and the master's name. sentinel_count 0: not Sentinel.
    str_view sentinels;
    std::uint8_t sentinel_count = 0;
    str_view master_name;
    // redis-cluster://: the seeds' "host:port,host:port..." as written and
    // how many. seed_count 0: not a Cluster.
    str_view seeds;
    std::uint8_t seed_count = 0;
};

// Parses url into out; on error out is left unchanged.
url_errc parse_node_url(str_view url, node_address& out) noexcept;

// Sentinel i (0-based) of a redis[s]-sentinel:// address; false when there is
// no such sentinel.
bool node_url_sentinel(const node_address& a, std::uint8_t i, str_view& host,
                       std::uint16_t& port) noexcept;

// Seed i (0-based) of a redis-cluster:// address; false when there is none.
bool node_url_seed(const node_address& a, std::uint8_t i, str_view& host,
                   std::uint16_t& port) noexcept;

// Decodes %XX escapes of a user or password into out. Returns the decoded size,
// or SIZE_MAX when an escape is malformed or the result does not fit.
std::size_t node_url_decode(str_view escaped, char* out, std::size_t capacity) noexcept;

}  // namespace edgelock
