// The Lua scripts the lock machine runs on Redis, with their SHA1 digests.
//
// Every script goes out as EVALSHA <sha1>; a server whose script cache is empty
// (after a restart or SCRIPT FLUSH) answers NOSCRIPT, and the machine then sends
// the same request once more as EVAL <text>. The digests are constants so that
// no SHA1 code is needed in the core; a unit test recomputes them from the text,
// so edit a script only together with its digest (`printf '%s' "$text" | sha1sum`).
//
// Key layout (see lock.hpp): the lock lives at `name`, the fencing counter at
// `{name}:fence` (or `name:fence` for a name with its own hash tag), in the
// lock's Redis Cluster slot, which a script touching both keys requires. The
// renewal mark and the release mark (renewal_mark.cpp) share that slot too;
// each is optional (KEYS[2], KEYS[3]): a script sent without them writes none.
// A renewal mark that exists only gets the ttl, and keeps what it holds: the
// holder record (lock_options::holder), which an acquire script given one
// (the mark as its last key, the text as ARGV[3]) writes there when it takes
// the key, as owner "\n" the server's TIME in seconds "\n" text, with the ttl.
//
// Replies, chosen so one parser serves every mode:
//   acquire scripts    -> {1, value} acquired (value: 0, the hold count, or the
//                         fencing counter), {0, pttl} held by someone else
//   renew scripts      -> 1 extended, 0 not ours (expired or taken)
//   release            -> 1 deleted, 0 not ours
//   reentrant_release  -> holds left (0: deleted), -1 no such hold (its field gone)
//   fence_raise        -> the token, raised to; -1 when the lock is not ours; -2
//                         when the counter is already at or past the token
//   permit_acquire     -> {1, value, permit} acquired (value: 0 or the fencing
//                         counter, as above), {0, pttl, free} every permit asked
//                         for taken (pttl: the soonest to expire; free: a permit
//                         not asked for that is free, or -1), {-1, limit, -1} the
//                         semaphore has another limit
//   permit_renew       -> as renew; permit_release -> as release
#pragma once

#include "edgelock/str_view.hpp"

namespace edgelock {

struct lock_script {
    str_view text;
    str_view sha1;  // 40 lowercase hex digits
};

// SET NX PX; a key already holding this round's token counts as ours (and is
// re-armed): a request of the same round that landed first.
// KEYS[1] lock, [KEYS[2] renewal mark, written on success: the record, or for
// a renew that resurrects], ARGV[1] token, ARGV[2] ttl in ms, [ARGV[3] record].
extern const lock_script script_acquire;
// Compare-and-delete; with the marks, deletes the renewal mark and writes
// and deletes the release mark (nothing is left, waiters are told).
// KEYS[1] lock, [KEYS[2] renewal mark, KEYS[3] release mark], ARGV[1] token.
extern const lock_script script_release;
// Compare-and-pexpire; never creates the key; writes the renewal mark with
// the same ttl. KEYS[1] lock, [KEYS[2] renewal mark], ARGV[1] token, ARGV[2] ttl ms.
extern const lock_script script_renew;
// Redisson's hash layout: lock -> {owner: holds}, and a field per hold
// (ARGV[3]: '#' and the round's token, see lock.hpp) created with its
// increment: the same hold twice counts once. KEYS[1] lock, [KEYS[2] renewal
// mark], ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] hold, [ARGV[4] record].
extern const lock_script script_reentrant_acquire;
// Drops one hold, only by deleting its field (a hold gone: -1, nothing
// changes): with holds left, re-arms the ttl (and the renewal mark); at zero,
// deletes the key, as the release does with its marks. KEYS[1] lock,
// [KEYS[2] renewal mark, KEYS[3] release mark], ARGV[1] owner, ARGV[2] ttl ms,
// ARGV[3] hold.
extern const lock_script script_reentrant_release;
// Extends the key while the hold's field is there. KEYS[1] lock, [KEYS[2]
// renewal mark], ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] hold.
extern const lock_script script_reentrant_renew;
// Single node fenced acquire: SET NX PX and INCR of the counter in one step.
// KEYS[1] lock, KEYS[2] counter, [KEYS[3] renewal mark], ARGV[1] token,
// ARGV[2] ttl ms, [ARGV[3] record].
extern const lock_script script_fenced_acquire;
// Redlock fenced round 1: SET NX PX and read the counter (no INCR: a per-node
// INCR is not monotonic across different majorities). Same keys and args.
extern const lock_script script_fenced_read;
// Redlock fenced round 2: raise the counter to the new fencing token, only
// where it is below the token and only on a node where the lock still holds
// our token: a contender can then read that node's counter only after our
// key is gone, that is after the raise. (A bare raise would let a contender
// read the node before it and hand out the same token.) A counter already at
// the token is another acquisition's, which read the same maximum: two
// holders of a semaphore's different permits can; each node lets one of
// them raise it. KEYS[1] lock, KEYS[2] counter, ARGV[1] token, ARGV[2] the
// new fencing token.
extern const lock_script script_fence_raise;

// A semaphore's (lock_options::permits; see "Semaphores" in lock.hpp). Its
// keys: the permits hash (KEYS[1]: `limit` and the holder records, a field
// per permit), then each permit's key, in order.
//
// Takes a permit: the one asked for (ARGV[4], from 0) or, scanning, the
// first free one after it; a permit already holding our token is ours (a
// resend). Refuses a limit other than the hash's. The hash lives as long as
// its longest permit. KEYS[1] permits hash, KEYS[2..n+1] permits, [KEYS[n+2]
// fencing counter], ARGV[1] token, ARGV[2] ttl ms, ARGV[3] n, ARGV[4] the
// permit asked for, ARGV[5] two bytes: 's' scan or 'o' only that permit, then
// '-' no fencing, 'i' INCR the counter (one node), 'r' read it (Redlock
// round 1; raised by script_fence_raise on the permit's key), [ARGV[6] record].
extern const lock_script script_permit_acquire;
// Compare-and-pexpire of one permit, then the hash made to last at least as
// long (in that order: each PEXPIRE reads the clock anew).
// KEYS[1] permit, KEYS[2] permits hash, ARGV[1] token, ARGV[2] ttl ms.
extern const lock_script script_permit_renew;
// Deletes every permit holding the token (a cleanup need not know which one
// a lost reply took) and its record; the hash too when no permit is left;
// writes and deletes the release mark when one went. KEYS[1] permits hash,
// KEYS[2..n+1] permits, [KEYS[n+2] release mark], ARGV[1] token, ARGV[2] n.
extern const lock_script script_permit_release;

// Every script above, for tests and for drivers that want them loaded up front.
extern const lock_script* const lock_scripts_all[];
constexpr unsigned lock_scripts_count = 12;

}  // namespace edgelock
