// What a Redis server says about itself that matters to a lock: its role (a
// replica cannot hold a lock), whether it may evict keys, and its version
// (Redis >= 7 takes the one-command acquire, SET NX PX GET).
//
// The client reads HELLO's reply (role and version) and `CONFIG GET
// maxmemory*` at set-up, and INFO's sections only where those were refused;
// it reports through node(i). These functions are the pure part, usable on
// any such reply:
//
//   const edgelock::str_view text = edgelock::server_info_text(nodes, count);
//   const edgelock::server_info info = edgelock::parse_server_info(text);
//   if (info.role == edgelock::server_role::replica) ...
//   if (edgelock::server_may_evict(info)) ...
//
// Everything from the wire is untrusted: a field that is missing, malformed or
// cut off is unknown, never guessed. The views point into the text.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/resp.hpp"
#include "edgelock/str_view.hpp"

namespace edgelock {
namespace detail {

enum class server_role : std::uint8_t {
    unknown,  // no role field (or one this library does not know)
    master,   // role:master
    replica,  // role:slave (or role:replica)
};

struct server_info {
    server_role role = server_role::unknown;
    // A replica's master, as INFO gives them; empty when absent.
    str_view master_host;
    str_view master_port;
    // maxmemory in bytes; 0 is "no limit". Unknown unless has_maxmemory.
    bool has_maxmemory = false;
    std::uint64_t maxmemory = 0;
    // maxmemory_policy's value ("noeviction", "allkeys-lru", ...); empty: unknown.
    str_view maxmemory_policy;
    // What the server is: HELLO's "server", INFO's "server_name" ("redis",
    // "valkey"); "redis" for an INFO with redis_version and no server_name
    // (Redis has none); empty: unknown.
    str_view server;
    // The server's own version: HELLO's "version", INFO's valkey_version on
    // Valkey, else its redis_version ("7.0.15", "8.0.1"); empty: unknown.
    str_view version;
    // INFO's redis_version, the Redis version the server is compatible with:
    // Valkey pins it at 7.2.4 whatever its own version. From HELLO: the
    // version of a server that is not Valkey. Empty: unknown.
    str_view redis_version;
};

// Reads role, master_host, master_port, maxmemory, maxmemory_policy,
// server_name, valkey_version and redis_version from
// INFO's text, whatever sections it holds and in any order. Lines end in CRLF
// (a bare LF is accepted); "# Section" headers, empty lines and other fields
// are skipped. A field given twice keeps its last value. A last line without
// a line end is ignored (it may be cut), as is a line without ':' and a
// maxmemory that is not a plain decimal number within 64 bits.
server_info parse_server_info(str_view text) noexcept;

// True when keys with a TTL (every lock key) may be evicted before they
// expire: maxmemory above 0 with an allkeys-* or volatile-* policy.
bool server_may_evict(const server_info& info) noexcept;

// The gates below read what the server is, not only redis_version: any
// Valkey (forked from Redis 7.2.4) has what they ask; another server is
// judged by its Redis version.
//
// True when SET takes NX and GET together (Redis 7 or later, any Valkey).
// False when older, or the version is missing or not a version.
bool server_takes_set_nx_get(const server_info& info) noexcept;

// True when CLIENT TRACKING (with REDIRECT for a RESP2 connection) is there
// (Redis 6 or later, any Valkey). False when older, missing or not a version.
bool server_tracks_keys(const server_info& info) noexcept;

// The role, server and version in a decoded HELLO reply: a RESP3 map or a
// RESP2 array of name/value pairs ("server" "redis"|"valkey", "role"
// "master"|"replica", "version" "7.0.15").
// The views point into the reply; a pair that is not two strings is skipped.
server_info parse_hello_reply(const resp_node* nodes, std::size_t count) noexcept;

// maxmemory and maxmemory_policy from a decoded `CONFIG GET maxmemory*`
// reply (a map, or an array of name/value pairs; other names skipped).
server_info parse_config_reply(const resp_node* nodes, std::size_t count) noexcept;

// The text of a decoded INFO reply: a bulk string, or a RESP3 verbatim string
// (whose text the decoder gives without its "txt:" prefix). Empty for any
// other reply, errors included.
str_view server_info_text(const resp_node* nodes, std::size_t count) noexcept;

}  // namespace detail
}  // namespace edgelock
