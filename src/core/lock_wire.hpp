// Internal to the lock machine: building its requests and reading its replies.
// Kept apart from lock.cpp so the state machine reads as decisions only, and so
// the fuzz target can hit the reply reader directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/resp_encoder.hpp"
#include "edgelock/str_view.hpp"

namespace edgelock {
namespace detail {

// Redis Cluster's rule: a key has a hash tag when it holds a '{' and, after
// the first one, a '}' with at least one byte between them; only the bytes
// between are hashed then.
bool has_hash_tag(str_view key) noexcept;

// Whether a fencing counter key can hash to the name's slot: the name has a
// tag (the counter reuses it), or no '}' at all (the counter tags the whole
// name). A name like `a}b` has neither.
bool counter_shares_slot(str_view name) noexcept;

// Writes the lock's key (the name itself) or its counter's (`name:fence` for
// a tagged name, else `{name}:fence`) into out, which holds
// lock_key_capacity bytes, and returns its length. name.size must be at most
// lock_max_name; for the counter, counter_shares_slot(name) must hold.
std::size_t make_lock_key(char* out, str_view name, bool fence_counter) noexcept;

// The marks (renewal_mark.cpp): the renewal mark `name:r` and two bytes, and
// the release mark, the renewal mark and two more, each pair chosen so the
// mark hashes to the name's Cluster slot. suffixes_out gets the four bytes;
// false (never in practice) when no pair does.
bool mark_suffixes(str_view name, char* suffixes_out) noexcept;
// Write a mark into out (name.size + 4 or + 6 bytes) and return its length.
std::size_t make_renewal_mark(char* out, str_view name, const char* suffixes) noexcept;
std::size_t make_release_mark(char* out, str_view name, const char* suffixes) noexcept;
// Whether key is the renewal mark (release false) or the release mark,
// compared where it lies.
bool is_mark(str_view key, str_view name, const char* suffixes, bool release) noexcept;

// A semaphore's keys (permit_request.cpp): permit `index`, or for index -1
// the permits hash, written into out (lock_key_capacity bytes); name as for
// the counter (counter_shares_slot).
std::size_t make_permit_key(char* out, str_view name, int index) noexcept;

enum class permit_req : std::uint8_t { acquire, renew, release };
// One semaphore request (see the permit scripts in lock_scripts.hpp).
struct permit_call {
    permit_req kind = permit_req::acquire;
    str_view name;
    std::uint8_t permits = 1;
    std::uint8_t permit = 0;  // acquire: the one asked for; renew: the one held
    bool eval = false;
    bool only = false;  // acquire: that permit only (Redlock), else the first free from it
    char fence = '-';   // acquire: '-' none, 'i' INCR (one node), 'r' read (Redlock round 1)
    str_view token;
    str_view ttl;
    str_view record;              // acquire: the holder record's text; empty: none
    const char* marks = nullptr;  // release: the name's mark suffixes; null: no release mark
};
// Writes the request into out while it fits and returns its whole size:
// nothing usable was written when that is above capacity.
std::size_t encode_permit_call(const permit_call& call, char* out, std::size_t capacity) noexcept;
// The longest request a semaphore of this name and these options can send.
std::size_t longest_permit_request(str_view name, const lock_options& options) noexcept;

// SET key token NX PX ttl GET: the plain acquire in one command (Redis >= 7).
resp_encoded encode_set_acquire(str_view key, str_view token, str_view ttl, char* out,
                                std::size_t capacity) noexcept;

// EVALSHA sha numkeys keys... args... (or EVAL text ... when eval is set).
resp_encoded encode_script_call(const lock_script& script, bool eval, const str_view* keys,
                                std::size_t key_count, const str_view* args, std::size_t arg_count,
                                char* out, std::size_t capacity) noexcept;

enum class reply_shape : std::uint8_t {
    integer,    // first = the value
    pair,       // a two- or three-integer array: first, second (, third)
    nil,        // a null (RESP2's $-1 or *-1, RESP3's _)
    status,     // a simple string (+OK): text
    text,       // a bulk or verbatim string: text
    noscript,   // -NOSCRIPT: the server's script cache lacks the script
    tryagain,   // -TRYAGAIN: a Cluster slot migrating with some of the keys moved
    wrongtype,  // -WRONGTYPE: the key holds another type
    syntax,     // -ERR syntax error: options the server does not take
    error,      // any other error reply
    other,      // anything else, including malformed or empty input
};

struct lock_reply {
    reply_shape shape = reply_shape::other;
    std::int64_t first = 0;
    std::int64_t second = 0;
    std::int64_t third = -1;  // pair of three: the third integer
    bool three = false;       // pair: three integers (a semaphore's acquire), not two
    str_view text;            // status, text: the string; points into the reply
};

// Never reads outside nodes[0, count); tolerates RESP3 attributes.
lock_reply read_lock_reply(const resp_node* nodes, std::size_t count) noexcept;

}  // namespace detail
}  // namespace edgelock
