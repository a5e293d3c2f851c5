// The lock's vocabulary: its limits (each a macro a build may set), the key
// layout's sizes, and the options, states, events and results the machine
// (lock.hpp) takes and gives. Apart so that the machine's header is the
// machine; include lock.hpp, which includes this.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/redlock.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"
#include "edgelock/token.hpp"

// Most nodes one lock can span. Each costs 5 bytes per lock object.
#ifndef EDGELOCK_LOCK_MAX_NODES
#define EDGELOCK_LOCK_MAX_NODES 9
#endif

// Longest lock name (the key is `name`, the counter `{name}:fence`). Requests
// are built on the stack of poll_transmit, which holds two copies of the name.
#ifndef EDGELOCK_LOCK_MAX_NAME
#define EDGELOCK_LOCK_MAX_NAME 128
#endif

// Longest owner string of a reentrant lock.
#ifndef EDGELOCK_LOCK_MAX_OWNER
#define EDGELOCK_LOCK_MAX_OWNER 64
#endif

// Longest ttl accepted, in ms. One day: a lock meant to outlive that is not a
// lease, and the bound keeps the drift arithmetic far from overflow.
#ifndef EDGELOCK_LOCK_MAX_TTL_MS
#define EDGELOCK_LOCK_MAX_TTL_MS 86400000UL
#endif

// Longest holder record text (lock_options::holder).
#ifndef EDGELOCK_LOCK_MAX_HOLDER
#define EDGELOCK_LOCK_MAX_HOLDER 160
#endif

// Most permits of one semaphore (lock_options::permits). An acquire and a
// release name every permit's key, so they grow with it; configure() refuses
// a name and a count whose requests would not fit lock_max_request.
#ifndef EDGELOCK_LOCK_MAX_PERMITS
#define EDGELOCK_LOCK_MAX_PERMITS 16
#endif

static_assert(EDGELOCK_LOCK_MAX_PERMITS >= 1 && EDGELOCK_LOCK_MAX_PERMITS <= 64,
              "EDGELOCK_LOCK_MAX_PERMITS must be in [1, 64]");
static_assert(EDGELOCK_LOCK_MAX_NODES >= 9 && EDGELOCK_LOCK_MAX_NODES <= 63,
              "EDGELOCK_LOCK_MAX_NODES must be in [9, 63]");
static_assert(EDGELOCK_LOCK_MAX_NAME >= 1 && EDGELOCK_LOCK_MAX_NAME <= 4096,
              "EDGELOCK_LOCK_MAX_NAME must be in [1, 4096]");
static_assert(EDGELOCK_LOCK_MAX_OWNER >= 1 && EDGELOCK_LOCK_MAX_OWNER <= 1024,
              "EDGELOCK_LOCK_MAX_OWNER must be in [1, 1024]");
static_assert(EDGELOCK_LOCK_MAX_HOLDER >= 1 && EDGELOCK_LOCK_MAX_HOLDER <= 1024,
              "EDGELOCK_LOCK_MAX_HOLDER must be in [1, 1024]");
static_assert(EDGELOCK_LOCK_MAX_TTL_MS >= 1000 && EDGELOCK_LOCK_MAX_TTL_MS <= 2147483647UL,
              "EDGELOCK_LOCK_MAX_TTL_MS must be in [1000, 2^31)");

namespace edgelock {

constexpr std::uint8_t lock_max_nodes = EDGELOCK_LOCK_MAX_NODES;
constexpr std::size_t lock_max_name = EDGELOCK_LOCK_MAX_NAME;
constexpr std::size_t lock_max_owner = EDGELOCK_LOCK_MAX_OWNER;
constexpr std::size_t lock_max_holder = EDGELOCK_LOCK_MAX_HOLDER;
constexpr std::uint64_t lock_max_ttl_ms = EDGELOCK_LOCK_MAX_TTL_MS;
constexpr std::uint8_t lock_max_permits = EDGELOCK_LOCK_MAX_PERMITS;
constexpr std::uint32_t lock_max_drift_ppm = 500000;  // half the ttl

// The Redis keys of the lock named `name` (see "Keys" in lock.hpp): the
// lock's own key, its fencing counter, the mark its renews write (`name:r`
// and two bytes that put it in the name's Cluster slot), or the mark its
// releases write and delete (the renewal mark and two more such bytes; see
// src/core/renewal_mark.cpp).
// A semaphore's (lock_options::permits) adds the hash of its permits (its
// limit and holder records), and each permit's key (permit_key). Tools that
// inspect Redis (the agent's status) take them from here rather than
// rebuilding the layout.
enum class lock_key_kind : std::uint8_t {
    lock,
    fence_counter,
    renewal_mark,
    release_mark,
    permits
};
constexpr std::size_t lock_key_capacity = lock_max_name + 12;
// Writes the key into out (capacity bytes) and returns its length; 0, writing
// nothing, when name is empty or longer than lock_max_name, out too small, or
// (for the counter) the name holds a '}' outside a hash tag.
std::size_t lock_key(str_view name, lock_key_kind kind, char* out, std::size_t capacity) noexcept;
// The key of a semaphore's permit `index` (from 0): `{name}:permit:index`,
// or `name:permit:index` for a name with a hash tag. 0 as lock_key does, and
// for an index of lock_max_permits or more.
std::size_t permit_key(str_view name, std::uint8_t index, char* out, std::size_t capacity) noexcept;

// A buffer of this many bytes holds any request the machine emits (the longest
// is an EVAL carrying script text, up to three keys and four arguments (the
// owner or token, the ttl, a reentrant hold's field of 33 bytes, a holder
// record), and the PTTL that may go ahead of an acquire, or the WAIT that may
// follow an acquire or a renew: lock_options::min_replicas).
constexpr std::size_t lock_max_request =
    1024 + 3 * (lock_max_name + 16) + lock_max_owner + 32 + 48 + lock_max_holder + 16 + 64;
// And any renew: the renew scripts (or, with renew_resurrects, the acquire
// script) as EVAL, with two keys and three arguments, and its WAIT. A driver
// that must follow a request with a renew keeps this much room for it.
constexpr std::size_t lock_max_renew_request =
    640 + 2 * (lock_max_name + 16) + lock_max_owner + 32 + 48 + 64;

// Local misuse: the caller's fault, reported by the call, never as an event.
enum class lock_errc : std::uint8_t {
    ok = 0,
    not_configured,    // configure() has not succeeded
    bad_node_count,    // 0 nodes or more than lock_max_nodes
    bad_quorum,        // below nodes / 2 + 1 or above nodes
    empty_name,        // the lock needs a name
    name_too_long,     // longer than lock_max_name
    name_unslotted,    // a key of the lock could not share the name's slot (fenced: a '}'
                       // outside a hash tag; any mode: no renewal mark, 1 name in 10^8)
    owner_too_long,    // longer than lock_max_owner
    holder_too_long,   // lock_options::holder longer than lock_max_holder
    bad_ttl,           // under 1 ms, above lock_max_ttl_ms, or eaten by drift
    bad_node_timeout,  // not shorter than the ttl
    bad_drift,         // drift_ppm above lock_max_drift_ppm
    bad_retry,         // max_tries 0, or retry_min > retry_max
    bad_mode_option,   // renew_resurrects outside plain mode
    no_random_source,  // the random source has no fill function
    random_failed,     // the random source could not deliver
    busy,              // another operation of this lock is in progress
    not_held,          // renew or release of a lock that is not held
    bad_node,          // node index not below the configured node count
    buffer_too_small,  // poll_transmit: nothing written, size says how much is needed
    bad_replicas,      // min_replicas with a replica_timeout of 0 or not below the round's
                       // allowance (node_timeout, or half the ttl)
    bad_permits,       // permits above lock_max_permits, with the reentrant mode or
                       // renew_resurrects, or more than a request can name for a name this
                       // long (see lock_max_request)
};

const char* describe(lock_errc code) noexcept;

enum class lock_mode : std::uint8_t { plain, reentrant, fenced };

struct lock_options {
    lock_mode mode = lock_mode::plain;
    // 0: a lock. 1..lock_max_permits: a semaphore of that many leased permits
    // on the name (see "Semaphores" in lock.hpp): each acquisition holds one
    // permit, with everything a lock's hold has (ttl, renewals, validity,
    // fencing token, holder record, release, waiters told). Plain and fenced
    // modes.
    std::uint8_t permits = 0;
    duration ttl = duration::seconds(10);
    // How long a round waits for its nodes' replies. 0 (the default): as
    // long as the lock can use them, whatever the link: an acquire, fence or
    // release round half of what the ttl leaves after the drift allowance (a
    // lock granted then still has half its ttl), a renew round until the
    // hold's validity ends (a late renew is not a failed one: a lost packet
    // is resent by TCP, and a round still counts once decided). An acquire
    // or renew round still ends once its quorum is won or out of reach; a
    // release round waits for every node's answer. Nonzero: that
    // fixed bound per round, below the ttl (the Redlock spec suggests 5-50 ms
    // for 10 s on a LAN); a NOSCRIPT retry, or the script after a SET that
    // found the key taken, must fit in it.
    duration node_timeout{};
    // Clock drift allowance: ttl * drift_ppm / 10^6 + drift_fixed (Redlock: 1% + 2 ms).
    std::uint32_t drift_ppm = 10000;
    duration drift_fixed = duration::millis(2);
    // 0 picks nodes / 2 + 1; a larger value is allowed, a smaller one is not.
    std::uint8_t quorum = 0;
    // Plain mode only: a renew that finds the key gone sets it again (redsync's
    // SetNXOnExtend). Off: a lock that expired stays lost. A renew that lands
    // late, after the release, then sets a key nobody holds (the hold's own
    // token, which no later round has), left to its ttl.
    bool renew_resurrects = false;
    // Acquire rounds before giving up (1 = try once), all begun within `wait`
    // of the acquire() call (the last one may end up to its round's
    // allowance later, lock::round_allowance), separated by a random delay in [retry_min,
    // retry_max]; a waiter a server tells of the key's changes tries again when told. A round split
    // between contenders (some nodes ours, others busy), and a semaphore's try on a node's hint
    // that did not win, wait the random delay unless a node that said busy tells of a change after
    // it did, so contenders fall out of step. The same delay spaces renew rounds that failed for
    // want of replies.
    std::uint32_t max_tries = 1;
    duration wait = duration::seconds(10);
    duration retry_min = duration::millis(50);
    duration retry_max = duration::millis(200);
    // Reentrant mode: the identity that nests (agent id + task id). Empty: the
    // acquisition's own random base, so this lock object nests with nobody. The
    // bytes are not copied; keep them alive as long as the lock.
    str_view owner;
    // Replicas that must have the key before a node counts (0: off). Each
    // acquire and renew request is followed by WAIT min_replicas
    // replica_timeout on its node, and a node whose key too few replicas
    // acknowledged in that time counts as "no" (its key is taken back like
    // any failed round's). WAIT narrows the window in which a failover loses
    // a lock; it does not close it (see README, "Replicas"): fencing does.
    // The one-command SET acquire is not used with it, and its scripts go as
    // EVAL (a NOSCRIPT would hold the connection for a WAIT that says
    // nothing). replica_timeout must be below the round's allowance, which bounds the
    // whole request.
    std::uint8_t min_replicas = 0;
    duration replica_timeout = duration::millis(25);
    // Who holds it, for people and tools that look (a host, a pid, a label:
    // any text up to lock_max_holder bytes; empty: nothing recorded). Every
    // acquire then goes as a script that, when it takes the key, writes the
    // holder record into the renewal mark in the same request, with the key's
    // ttl: the owner (the token, or the reentrant owner), the server's TIME
    // in seconds and this text (read it with read_holder_record). Renewals
    // keep it, releases delete it; the lock's key is unchanged, so other
    // clients still exclude edgelock on it. The bytes are not copied.
    str_view holder;
};

// How long an acquire, fence or release round of a lock so configured waits
// for its nodes: node_timeout, or without one half of what the ttl leaves
// after the drift allowance (see node_timeout). lock::round_allowance() of a
// configured lock; a tool that sizes its own waits to the lock's (the
// agent's connect) asks here.
duration lock_round_allowance(const lock_options& options) noexcept;

// A holder record as stored (see lock_options::holder): "owner\nsince\ntext".
struct holder_record {
    str_view owner;             // the token in hex, or the reentrant owner
    std::uint64_t since_s = 0;  // the server's clock when it was taken, in Unix seconds
    str_view text;              // lock_options::holder
};
// Reads the value of a renewal mark; false when it holds no record (a mark
// written by a renew of a lock without one is empty) or is not one. The
// views point into value.
bool read_holder_record(str_view value, holder_record& out) noexcept;

enum class lock_state : std::uint8_t {
    unconfigured,
    idle,        // nothing held, nothing in flight (but maybe cleanup to send)
    acquiring,   // an acquire round (fenced: round 1) is out
    fencing,     // fenced Redlock round 2 is out
    retry_wait,  // between acquire rounds
    held,        // ours until validity_deadline()
    renewing,    // held; a renew round is out or waiting to be retried
    releasing,   // release requests are out
};

const char* describe(lock_state state) noexcept;

// renew_failed: a renew round missed its quorum for want of replies; the lock
// stays held and is renewed again after a retry delay, but it is at risk: lost
// follows at the validity deadline unless a later round succeeds.
enum class lock_event_kind : std::uint8_t {
    acquired,
    busy,
    failed,
    renewed,
    released,
    lost,
    renew_failed,
};

const char* describe(lock_event_kind kind) noexcept;

// Why an acquisition failed or a held lock was lost.
enum class lock_failure : std::uint8_t {
    none = 0,
    no_quorum,       // too few nodes agreed (errors, timeouts, refusals)
    expired,         // quorum reached, but the round took longer than ttl - drift
    random_failed,   // no random bytes for the retry delay
    fence_conflict,  // round 2 found a counter above the token (a racing holder)
    not_ours,        // renew: a quorum said the key is no longer ours
    validity_ended,  // held or renewing, and the validity deadline passed
    not_replicated,  // min_replicas: nodes took the key, too few replicas acknowledged it
    held_too_long,   // lost: held for the watchdog's max_hold, and let go (client_lock)
    permits_differ,  // a semaphore's node holds another limit (lock_options::permits)
};

const char* describe(lock_failure reason) noexcept;

struct lock_event {
    lock_event_kind kind = lock_event_kind::failed;
    lock_failure reason = lock_failure::none;  // failed, lost
    std::uint32_t holds = 0;                   // acquired, reentrant: holds of the owner
    instant validity_deadline;                 // acquired, renewed
    std::uint64_t fence = 0;                   // acquired, fenced mode
    std::int64_t holder_ttl_ms = -1;           // busy: shortest ttl a node reported; -1 unknown
    std::uint8_t nodes = 0;  // released: nodes where the key was still ours and is now gone
    // released: nodes that answered that the key was not ours any more (expired,
    // evicted, deleted, taken). Nodes that did not answer are in neither count.
    std::uint8_t absent = 0;
    std::int16_t permit = -1;  // acquired, a semaphore: the permit it holds (from 0)
    // failed, permits_differ: the limit a node holds (up to 32767; 0 when not a number)
    std::int16_t permits_found = -1;
};

// What a node's server can do for a lock, as the driver learnt it at set-up.
struct lock_node_caps {
    // Takes SET's NX and GET options together (Redis >= 7): a plain acquire
    // goes as one SET (see "plain" above). False: the acquire script.
    bool set_nx_get = false;
    // Tells of changes to the key (the driver tracks the name as a prefix on
    // that connection, or has it registered ahead of this request): a busy
    // acquisition's next try then waits for the word (on_key_changed, and
    // on_key_renewed for a renew) and polls only as a fallback, just after
    // the holder's remaining ttl (its PTTL; retry_min at least), and once
    // more a retry_max before the wait ends. False: it polls at the retry
    // delay.
    bool told = false;
    // The slot is migrating and the request goes by ASK to the node taking
    // it in, which may not hold the marks yet (it would say TRYAGAIN): the
    // rest of this round's requests there, and a cleanup, carry none.
    bool migrating = false;
    // The server's script cache is not known to hold the lock's scripts (a
    // NOSCRIPT came on this connection, or the link is so slow that the
    // NOSCRIPT's extra round trip would cost the round too much): a script
    // the node has not run for this lock since its last disconnect goes as
    // EVAL, with its text, not as EVALSHA first. False: EVALSHA first.
    bool scripts_unknown = false;
};

struct lock_transmit {
    lock_errc error = lock_errc::ok;
    std::size_t size = 0;   // ok: bytes written (0: nothing to send); buffer_too_small: needed
    std::uint32_t tag = 0;  // hand back with the reply to this request
    // Commands written ahead of the request whose replies come first: 1 for
    // the PTTL of the key ahead of a told waiter's SET acquire (it says the
    // holder's ttl), else 0. Hand its reply to on_reply with preceding_tag.
    std::uint8_t preceding = 0;
    std::uint32_t preceding_tag = 0;
    // Commands written after the request, whose replies come after its own:
    // 1 for the WAIT of lock_options::min_replicas, else 0. Hand its reply to
    // on_reply with following_tag.
    std::uint8_t following = 0;
    std::uint32_t following_tag = 0;
};

}  // namespace edgelock
