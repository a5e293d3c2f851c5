// The lock state machine: acquire, renew and release one named lock across
// 1..lock_max_nodes Redis nodes with the Redlock quorum, without doing any I/O.
//
// The machine is fed replies, timeouts and disconnects, each with the current
// monotonic time, and asked what to send and when to be woken. A driver owns
// the connections (one per node, shared by many locks) and runs this loop:
//
//   edgelock::lock l;
//   l.configure("jobs", 3, options, random);     // once; errors change nothing
//   l.acquire(now);                              // starts the first round
//   loop:
//     for each node n: while ((t = l.poll_transmit(n, buf, sizeof buf)).size) {
//         send t.size bytes on n's connection; push (l, t.tag) on n's FIFO }
//     wait for I/O until l.next_deadline()
//     reply on n     -> pop (l, tag) from n's FIFO; l.on_reply(n, tag, nodes, count, now)
//     n dropped      -> clear n's FIFO; l.on_disconnected(n, now) for each lock on it
//     deadline hit   -> l.on_timeout(now)            (a spurious call is a no-op)
//     while (l.poll_event(ev)) handle ev            (after every input)
//
// Replies are matched in FIFO order per connection, so requests of many locks
// may be pipelined on one connection; the machine never assumes one request
// outstanding. Every request carries a tag that the driver hands back with its
// reply; a reply whose round has already been decided is "late" and ignored,
// except that a late successful acquire is undone on that node.
//
// Tokens: every acquire round has a token of its own, the acquisition's
// random 128 bits with the round's number folded in, and the hold keeps the
// token of the round that won it. A request acts only on a key holding its
// own round's token (a reentrant one: on its own hold's field), so a request
// that lands late (written to a connection since dropped, held by a slow link
// for seconds) cannot delete, extend or recreate a later round's key: a late
// acquire makes a key nobody owns, which its own cleanup or its ttl removes;
// a late cleanup, renew or release finds nothing of its own to act on.
//
// Keys: the lock for `name` lives at the key `name` itself, its value the
// owner's token, as node-redlock, redsync, redis-py's Lock and Redisson keep
// theirs: a plain lock of any of them and edgelock's exclude each other on the
// same name. The fencing counter shares the lock's Redis Cluster slot, as a
// script touching both must: `{name}:fence` when the name has no hash tag
// (the braces make the whole name the tag, so it hashes like `name`), and
// `name:fence` when it has one (`{fleet}:upload` -> `{fleet}:upload:fence`).
// A fenced lock's name may not hold a '}' outside a tag (`a}b`): no counter
// could share its slot (lock_errc::name_unslotted). Every mode uses the same
// key. Two marks tell waiters (src/core/renewal_mark.cpp), both in the
// name's slot: a renew writes the renewal mark, `name:r` and two bytes, with
// the key's ttl; a release deletes it and writes and deletes the release
// mark, the renewal mark and two more bytes. Waiters track the renewal mark
// as a prefix: a release is heard, a renew is told apart, a take (which
// writes only the key) is not heard at all. A lock with a holder record
// (lock_options::holder) keeps it in the renewal mark, written by the
// acquire that takes the key (which waiters hear as a renew), kept by
// renews (an existing mark only gets the ttl), deleted by the release.
//
// Modes (lock_options::mode):
//   plain     - SET NX PX with the round's token; compare-and-pexpire
//               renews, compare-and-delete releases. The acquire is one
//               `SET name token NX PX ttl GET` on a node the driver says
//               speaks it (set_node_caps: Redis >= 7), costing the server
//               what SET NX PX costs; elsewhere it is the acquire script. That
//               SET answers nil when it set the key. Any other answer sends
//               the acquire script to that node in the same round: the key
//               holds this round's token (a request of ours landed earlier; the script
//               re-arms its ttl), another owner's value or another type (the
//               script says the holder's ttl, or takes the key freed
//               meanwhile), or a syntax error (Redis < 7; that node gets only
//               scripts from then on). Once a round found the key taken, the
//               acquisition's later rounds send the script: it answers a busy
//               key in one request. A node that said "taken" and then timed
//               out counts as busy, not as unreachable.
//   reentrant - Redisson's hash `name -> {owner: holds}`: lock objects with
//               the same owner string (agent id + task id) nest; each releases
//               its own hold. One lock object holds at most once at a time.
//               The owner cannot change per round, so beside the owner's
//               count the hash keeps a field per hold, `#` and its round's
//               token: an acquire increments the count only together with
//               creating its hold's field (the same round twice counts once),
//               a release or cleanup decrements it only by deleting its own
//               hold's field (nothing where that is gone: -1), and a renew
//               extends the key only while its hold's field is there. So a
//               decrement that lands late, after the hold it was meant for
//               expired and a newer hold of the same owner took the key, finds
//               no field of its own and changes nothing, and an increment that
//               lands late makes a hold nobody has, which its cleanup (queued
//               like a plain lock's) or the ttl removes. Redisson's clients
//               see the key held by another owner, as before.
//   fenced    - every acquisition yields a fencing token strictly greater than
//               any issued before for the name. One node: INCR inside the
//               acquire script. Several: round 1 acquires and reads each
//               counter, token = max + 1, round 2 raises the counter to the token
//               on a quorum before the token is handed out (a node whose
//               counter is already at the token refuses: another's). Counters are
//               never below the server's TIME in microseconds: the acquire
//               script raises a counter behind the clock to it before INCR,
//               and round 1 reads max(counter, clock). So a counter lost with
//               a node restarted without persistence, or rolled back by an
//               old snapshot, still yields tokens above every earlier one,
//               as long as no server's wall clock steps back past them and,
//               with several nodes, their clocks agree to within the time a
//               node stays down (at least the ttl). Tokens are large (about
//               1.8e15 in 2026) but below 2^53; Redis >= 3.2 (the acquire
//               script calls redis.replicate_commands() where it exists).
//
// Semaphores (lock_options::permits = n): at most n holders at once on the
// name, each holding one permit, a key of its own with the lock's value and
// ttl: `{name}:permit:i` for i in [0, n) (`name:permit:i` for a name with a
// hash tag), beside the permits hash `{name}:permits` (`limit` -> n, and a
// field per permit with its holder record), all in the name's Cluster slot.
// The acquire script checks the limit (another one fails the acquisition
// with permits_differ, and no retry), then takes a permit: on one node the
// first free one from a random start, in one request; under Redlock every
// node of a round is asked for the same permit and only that one, so each
// permit is a Redlock lock of its own and no more than n can be held however
// the quorums fall (counting holders per node would not do: with n = 2 and
// three nodes, three holders could each win a different pair of nodes). A
// node that finds it taken names a free one, which the next round asks for
// at once, unless that round was itself such a try: permits held crosswise
// (each free on some node, none on a quorum) then cost the retry delay.
// Expiry is the server's (PX); a dead holder's permit is free within its
// ttl. Renews extend the permit held; a release (and a cleanup, which need
// not know which permit a lost reply took) deletes every permit holding the
// token, and writes the name's release mark, so waiters are told as a lock's
// are. A semaphore writes no renewal mark: a told waiter polls when the
// soonest permit expires (the busy reply's ttl), which finds a dead holder's
// permit free. Plain and fenced modes (a token per round, from the
// name's fencing counter: under Redlock two holders of different permits may
// read the same maximum, and round 2 raises a node's counter only from below
// the token, so each node lets one of them have it); no SET acquire.
//
// Outcomes arrive as events: acquired {validity deadline, fencing token},
// busy {holder's remaining ttl when a node said it}, failed {reason},
// renewed {validity deadline}, renew_failed (at risk, retrying), released, lost. The lock is yours
// only until the validity deadline (the ttl minus the time the round took minus drift), and
// renewing in time moves it; when renew cannot win a quorum before it, `lost` is reported at the
// deadline at the latest. After `lost` nothing is sent that could change a later hold of the same
// owner: every cleanup names the lost round's own token (see "Tokens") and still goes out.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/detail/timer_table.hpp"
#include "edgelock/detail/told_pace.hpp"
#include "edgelock/lock_types.hpp"
#include "edgelock/redlock.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"
#include "edgelock/token.hpp"

namespace edgelock {

namespace detail {
struct lock_reply;
struct permit_call;
}  // namespace detail

class lock {
public:
    lock() noexcept = default;

    // Checks everything up front; on error nothing changes. Only while idle.
    // The name's bytes are not copied: keep them alive as long as the lock.
    lock_errc configure(str_view name, std::uint8_t node_count, const lock_options& options,
                        random_source random) noexcept;

    // Operations. Each returns at once; the outcome comes as an event.
    lock_errc acquire(instant now) noexcept;  // from idle
    // Changes the retry policy of the next acquire (max_tries >= 1, and wait);
    // allowed whenever no acquisition is in progress.
    lock_errc set_retry(std::uint32_t max_tries, duration wait) noexcept;
    // Takes over an acquisition made elsewhere (another process; a command
    // line tool's acquire) by its token, so it can be renewed or released.
    // Nothing is sent: the lock counts as held, with the longest validity it
    // could have (ttl - drift from now), until a renew or release says
    // otherwise. Plain and fenced modes; only while idle.
    lock_errc resume(const owner_token& token, instant now) noexcept;
    lock_errc renew(instant now) noexcept;  // from held
    // From any state but idle: stops whatever is in flight and releases on
    // every node (also those that failed). Ends with `released`.
    lock_errc release(instant now) noexcept;

    // What the driver learnt of a node's server at connection set-up (see
    // lock_node_caps); call it any time, for instance before each
    // poll_transmit. A node that answered the SET acquire with a syntax error
    // gets no other until configure() is called again, whatever it is told.
    lock_errc set_node_caps(std::uint8_t node, lock_node_caps caps) noexcept;
    // The next request to `node` in this round goes as EVAL, not EVALSHA: the
    // server's script cache is not known, and there will be no chance to send
    // the request again after a NOSCRIPT (a renew on a master the connection
    // is about to leave).
    lock_errc send_as_eval(std::uint8_t node) noexcept;

    // The lock's key changed on some node: a server said so (a tracking
    // invalidation of the release mark, or a flush). A waiting
    // acquisition tries again now rather than after its retry delay; one
    // whose round is still out tries again as soon as the round ends busy.
    // Any other state ignores it, so a notification that is late or
    // repeated costs at most one round. A server that tells more than a
    // key's holders change it has its pushes paced: see told_pace.hpp.
    // `node`: the node that said so (pushes are paced per node, see
    // told_pace.hpp); without it, from no node in particular (the driver
    // lost a node's word and asks again), not counted.
    lock_errc on_key_changed(std::uint8_t node, instant now) noexcept;
    lock_errc on_key_changed(instant now) noexcept { return on_key_changed(lock_max_nodes, now); }
    // A server said the renewal mark changed, and not the release mark: the
    // holder renewed the key, or the mark expired with it (see "Keys"). A
    // told waiter whose poll is due within a third of the holder's longest
    // ttl seen takes it as the expiry and tries now (on_key_changed); any
    // other moves that poll to the holder's longest ttl from now. Any other
    // state, or a try already due, ignores it.
    lock_errc on_key_renewed(std::uint8_t node, instant now) noexcept;
    // The driver has just asked `node` to tell of the key's changes, after a
    // try found it taken (the next try's request would have carried that
    // ask, but a script acquire leaves none in its round): the node counts
    // as telling (lock_node_caps::told), and a waiter between its tries
    // polls only as a told one does, just after the holder's ttl. Any other
    // state ignores it.
    lock_errc on_told(std::uint8_t node, instant now) noexcept;
    // Whether `key` is this lock's renewal mark, or its release mark.
    bool is_renewal_mark(str_view key) const noexcept;
    bool is_release_mark(str_view key) const noexcept;
    // Writes the renewal mark into out (lock_key_capacity bytes), the prefix
    // a waiter has the server track; its length, 0 when unconfigured.
    std::size_t renewal_mark(char* out) const noexcept;
    // This acquisition found the key taken: its next tries are a waiter's.
    bool contended() const noexcept { return contended_; }

    // Inputs.
    lock_errc on_reply(std::uint8_t node, std::uint32_t tag, const resp_node* nodes,
                       std::size_t count, instant now) noexcept;
    void on_timeout(instant now) noexcept;
    // Everything in flight on the node's connection is gone.
    lock_errc on_disconnected(std::uint8_t node, instant now) noexcept;
    // The node cannot be reached now (down, backing off): the round's
    // request for it, not yet sent, counts as a "no" without being sent (so
    // nothing of it is to be undone), even behind a cleanup, which stays
    // queued for when the node is back.
    lock_errc on_unreachable(std::uint8_t node, instant now) noexcept;
    // The request with this tag did not run (a Cluster's MOVED or ASK): it
    // goes out again from poll_transmit(node), in the same round and before
    // the same deadline, for the driver to send where the node said. Left
    // alone: a request not of the current round; a cleanup no longer out, or
    // one for its connection only (undo). A cleanup names its own round's
    // key alone, so one sent again behind a newer request changes nothing of
    // it. The driver drops the reply of a WAIT that followed it.
    lock_errc redirected(std::uint8_t node, std::uint32_t tag) noexcept;
    // The reply to a request that ran on a node found unfit after it went (a
    // check of the connection's set-up, answered before it, failed: a
    // writable replica, a database the server does not have): it counts as a
    // disconnect would, and what it took there (a key, a hold) gets a cleanup
    // on that node, which the driver sends on the same connection. A renew's
    // (the live hold's key) goes on that connection only: dropped if it
    // breaks first, never redirected, and none unless the lock still holds.
    lock_errc undo(std::uint8_t node, std::uint32_t tag, const resp_node* nodes, std::size_t count,
                   instant now) noexcept;

    // Outputs.
    lock_transmit poll_transmit(std::uint8_t node, char* buf, std::size_t capacity) noexcept;
    instant next_deadline() const noexcept;  // instant::never() when nothing is pending
    // What poll_transmit(node) would hand out next, without taking it: a
    // driver uses it to connect a node on demand (and fails a round's
    // request at once on a node it knows is down with on_unreachable).
    enum class outgoing : std::uint8_t { none, request, cleanup };
    // A compare-and-delete of the current acquisition's key (a semaphore:
    // whichever permit holds its token) as EVAL, without the marks, written
    // into buf for a driver that deletes it on a node it is leaving (a
    // Sentinel's old master); the machine does not change, and the reply says
    // nothing it needs. Its size, or 0 (nothing usable written) when
    // unconfigured or when it does not fit capacity.
    std::size_t encode_delete(char* buf, std::size_t capacity) const noexcept;
    outgoing next_send(std::uint8_t node) const noexcept;
    bool poll_event(lock_event& out) noexcept;

    lock_state state() const noexcept { return state_; }
    // Held at `now`: acquired (or renewing) and the validity deadline ahead.
    // The same question client_lock::held() answers at the port's clock.
    bool held(instant now) const noexcept { return holding() && now < validity_; }
    instant validity_deadline() const noexcept { return validity_; }
    // When the round that set the validity deadline began: the deadline is
    // this plus the ttl less the drift. A renew schedule counts from it, so a
    // slow round's time comes out of the wait for the next renew, not out of
    // the time that renew has for its reply.
    instant validity_base() const noexcept { return validity_base_; }
    std::uint64_t fence() const noexcept { return fence_; }
    std::uint8_t node_count() const noexcept { return node_count_; }
    std::uint8_t quorum() const noexcept { return quorum_; }
    // As configured (max_tries and wait as the last set_retry left them).
    const lock_options& options() const noexcept { return options_; }
    // How long an acquire, fence or release round waits for its nodes:
    // node_timeout, or without one half of what the ttl leaves after the
    // drift allowance (lock_options::node_timeout). A renew round without
    // node_timeout waits until the validity deadline.
    duration round_allowance() const noexcept;
    // The current round's token: the lock's value in plain, fenced and
    // semaphore modes (a reentrant hold's field), and once held the hold's.
    // Every acquire round has its own (see "Tokens" above).
    owner_token token() const noexcept { return round_token(token_round_); }
    // A semaphore's permit held (from 0), while holding; else -1.
    int permit() const noexcept { return options_.permits != 0 && holding() ? permit_ : -1; }
    // As configured: the lock's name, which is also its key.
    str_view name() const noexcept { return name_; }

private:
    // What one request asks; also the low bits of its tag.
    enum class req : std::uint8_t { none, acquire, fence_raise, renew, release, cleanup };
    // How one node answered the current round. refused: it said no because of
    // the key (another's, a fence already past ours, no longer ours); no: no
    // usable answer (a timeout, an error reply, a disconnect).
    enum class vote : std::uint8_t { waiting, yes, no, refused };

    // Every instant the machine must be woken at; next_deadline() is the
    // earliest one armed. Each is armed only in the states that wait for it.
    enum class timer : std::uint8_t {
        round,     // the open round gives up on silent nodes (fenced round 2: by
                   // the validity round 1 would give)
        retry,     // retry_wait: the next acquire round; renewing with no round
                   // out: the next renew round
        validity,  // held or renewing: the hold ends, lost even if no reply comes
        count_
    };

    struct slot {
        req send = req::none;  // the current round's request, not yet transmitted
        vote answer = vote::waiting;
        std::uint16_t flags = 0;  // slot_* bits in lock_slots.hpp
        // The round whose token this node's cleanup names (with cleanup_base_).
        std::uint32_t cleanup_round = 0;
    };

    void start_round(req kind, instant now) noexcept;
    void start_acquire_round(instant now) noexcept;
    void decide(instant now) noexcept;
    void finish_acquire_round(instant now) noexcept;
    void finish_fence_round(instant now) noexcept;
    // The round `won_round` won: held until the validity deadline, or failed
    // as expired when the round took all of it.
    void become_held(std::uint32_t won_round, instant now) noexcept;
    void finish_renew_round(instant now) noexcept;
    void fail_acquisition(lock_failure reason, instant now) noexcept;
    void start_renew_round(instant now) noexcept;
    void renew_round_failed(instant now) noexcept;
    void become_lost(lock_failure reason) noexcept;
    // Held until v, counted from the round that began at `base`: what
    // validity_deadline() and validity_base() say, and the validity timer.
    void hold_until(instant v, instant base) noexcept {
        validity_ = v;
        validity_base_ = base;
        timers_.set(timer::validity, v);
    }
    void queue_cleanup_all() noexcept;
    // A cleanup on one node of the current acquisition's round `round`.
    void queue_cleanup(slot& s, std::uint32_t round) noexcept;
    // Round `round`'s token of the acquisition with this base (see "Tokens"),
    // and of the current acquisition.
    static owner_token fold(const owner_token& base, std::uint32_t round) noexcept;
    owner_token round_token(std::uint32_t round) const noexcept { return fold(base_, round); }
    void close_round() noexcept;
    void count_vote(slot& s, vote v) noexcept;
    void handle_late(slot& s, req kind, std::uint32_t round, bool success) noexcept;
    // The reply to the WAIT that followed a request of this round.
    void answer_wait(slot& s, std::uint32_t round, const detail::lock_reply& r,
                     instant now) noexcept;
    // A semaphore's request of this kind (not fence_raise) to a node with these flags.
    detail::permit_call permit_request(req kind, bool eval, std::uint16_t flags, str_view token,
                                       str_view ttl) const noexcept;
    // A semaphore's acquire reply of this round: its permit, hint or limit.
    void answer_permit(const detail::lock_reply& r, vote& v) noexcept;
    // A reply to the SET acquire that sends the script instead: true when it did.
    bool answer_set_acquire(slot& s, const detail::lock_reply& r) noexcept;
    bool taken_by_another(const detail::lock_reply& r) const noexcept;
    // How a node that stopped answering counts: busy if it said so already.
    static vote silent_vote(const slot& s) noexcept;
    std::uint32_t tag_for(req kind) const noexcept;
    void push_event(const lock_event& ev) noexcept;
    bool fenced_redlock() const noexcept {
        return options_.mode == lock_mode::fenced && node_count_ > 1;
    }
    bool round_open() const noexcept { return round_kind_ != req::none; }
    bool told() const noexcept;
    // When a waiter polls: told, for a key that lasts ttl_ms (>= 0) more
    // from `now`, just after it (or as the wait ends); else (ttl_ms < 0)
    // after a random retry delay. False when random fails.
    bool poll_at(instant now, std::int64_t ttl_ms, instant& at) noexcept;
    // In a state that holds the keys, whatever the time.
    bool holding() const noexcept {
        return state_ == lock_state::held || state_ == lock_state::renewing;
    }

    str_view name_;
    lock_options options_;
    // The ttl in ms, WAIT's replicas (a uint8_t: 3 digits) and timeout as
    // requests carry them (configure()), at number_at[i] in numbers_. The
    // ttl is below 2^31 ms (lock_max_ttl_ms) and the timeout below the ttl:
    // 10 digits each.
    static constexpr std::uint8_t number_at[3] = {0, 10, 13};
    char numbers_[23] = {};
    std::uint8_t number_sizes_[3] = {};
    random_source random_;
    owner_token base_;               // the current acquisition's, its rounds' tokens made from it
    owner_token cleanup_base_;       // the acquisition whose keys cleanups delete
    std::uint32_t token_round_ = 0;  // the round whose token is current (the hold's, once held)
    instant t0_;                     // start of the acquisition attempt (fenced: round 1)
    instant round_t0_;
    detail::timer_table<timer, static_cast<std::size_t>(timer::count_)> timers_;
    instant validity_;       // the last hold's, still told once its timer is stopped
    instant validity_base_;  // the start of the round validity_ counts from
    instant key_gone_at_;    // retry_wait, polling: when the holder's key can be gone
    // retry_wait: a waiter backing off (lock_rounds.cpp) until backoff_until_,
    // woken by a push from a node that said busy (delay) or by none (deaf).
    enum class backoff : std::uint8_t { none, delay, deaf };
    instant backoff_until_;
    backoff backoff_ = backoff::none;
    // No retry round begins at or after it. Not a timer: nothing happens when it
    // passes (a round out then runs to its own end); it bounds the retries.
    instant wait_deadline_ = instant::never();
    std::uint64_t fence_ = 0;      // fenced: the token handed out / being raised
    std::uint64_t round_max_ = 0;  // fenced round 1: highest counter read
    std::int64_t busy_ttl_ms_ = -1;
    std::uint32_t round_ = 0;              // sequence number of the current round
    std::uint32_t acquisition_round_ = 0;  // first round of the current acquisition
    std::uint32_t held_round_ = 0;         // the round that won the lock
    std::uint32_t tries_left_ = 0;
    std::uint32_t holds_ = 0;
    std::int32_t longest_busy_ttl_ms_ = -1;  // of this acquisition: the holder's ttl at least
    lock_event events_[2];
    std::uint8_t event_head_ = 0;
    std::uint8_t event_count_ = 0;
    std::uint8_t node_count_ = 0;
    std::uint8_t quorum_ = 0;
    redlock_tally tally_;
    req round_kind_ = req::none;
    lock_state state_ = lock_state::unconfigured;
    std::uint8_t refused_ = 0;         // nodes that said busy (acquire) or not ours (renew)
    std::uint8_t released_ = 0;        // release: nodes that deleted our key
    std::uint8_t absent_ = 0;          // release: nodes that answered our key was not there
    std::uint8_t unreplicated_ = 0;    // this round: nodes whose WAIT counted too few replicas
    bool lost_ = false;                // the current acquisition ended in lost
    bool contended_ = false;           // a round of this acquisition found the key taken
    bool woken_ = false;               // the key changed while this acquire round was out
    bool woken_after_busy_ = false;    // ... told by a node after it said busy this round
    bool polling_ = false;             // retry_wait: the retry is the told waiter's poll
    bool hint_try_ = false;            // this round: tried at once on a node's hint
    bool collided_before_ = false;     // the last round collided with contenders (lock_rounds.cpp)
    std::uint8_t permit_ = 0;          // a semaphore: the permit this round asks for, or held
    std::int8_t hint_ = -1;            // a semaphore: a free permit a node named this round
    std::int16_t permits_found_ = -1;  // a semaphore: another limit a node holds
    char marks_[4] = {};               // the marks' last two bytes each (renewal_mark.cpp)
    // Per node: request kinds (bit 1 << req) whose script the node has run
    // since its last disconnect, so its cache holds it; and scripts_text
    // (lock_node_caps::scripts_unknown): a script not among them goes as EVAL.
    static constexpr std::uint8_t scripts_text = 0x80;
    std::uint8_t scripts_[lock_max_nodes] = {};
    detail::told_pace<lock_max_nodes> pace_;  // how soon a push may start a round
    slot slots_[lock_max_nodes];
};

}  // namespace edgelock
