// Internal to the URL parser: the pieces node_url.cpp parses a redis:// URL
// with, which node_url_sentinel.cpp parses a Sentinel URL with too, and
// node_list.cpp finds where a URL of a list begins with.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/node_url.hpp"

namespace edgelock {
namespace url_detail {

constexpr std::uint32_t max_db = 0x7fffffff;  // db < 2^31

bool is_alpha(char c);
bool is_scheme_char(char c);
bool is_host_char(char c);
str_view sub(str_view s, std::size_t from, std::size_t to);
// Index of the first of a, b or c in s, or s.size.
std::size_t find_any(str_view s, char a, char b, char c);
// Index of the first c in s, or s.size.
std::size_t find(str_view s, char c);
bool contains(str_view s, char c);
// A non-empty run of decimal digits (leading zeros allowed) no greater than max.
bool parse_decimal(str_view s, std::uint32_t max, std::uint32_t& value);
// host[:port] or [IPv6][:port]; the port is left as it was when not given.
url_errc parse_host_port(str_view hp, node_address& a);
// [user[:password]@]rest: the user and password into a, what follows the
// last '@' into rest.
url_errc parse_userinfo(str_view authority, node_address& a, str_view& rest);
// What follows "redis[s]-sentinel://" (node_url_sentinel.cpp).
url_errc parse_sentinel(str_view rest, node_address& a);
// What follows "redis-cluster://" (node_url_sentinel.cpp).
url_errc parse_cluster(str_view rest, node_address& a);

}  // namespace url_detail
}  // namespace edgelock
