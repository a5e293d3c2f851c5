// Counters a program can export (to Prometheus, say): per node
// (client_base::node_stats(i)) and per lock (client_lock::stats()). They are
// plain integers the client bumps in place as things happen; reading one
// copies a small struct and allocates nothing. Every count only grows: a
// node's from configure() (which starts the nodes it names at zero), a lock's
// for the life of the client_lock object (attach and detach keep them). Rates
// and deltas are the reader's to take. Part of client.hpp.
#pragma once

#include <cstdint>

namespace edgelock {

// One node, over all of its lock connections (a redis-cluster:// node's
// extra connections included; its RESP2 subscription and a
// redis-sentinel:// node's watch are not counted).
//
// Errors are counted by kind, once each time the client meets one: a
// connection attempt that fails (once, with the reason node(i) then shows,
// whichever address it tried last), a connection dropped for a reason, an
// error reply. So a node down for a minute adds one connect error per
// reconnect attempt, not one per lock request.
struct node_stats {
    // Commands written to the node: set-up (HELLO, AUTH, SELECT, CONFIG GET,
    // INFO, ...), lock requests (and their WAIT or PTTL), CLIENT TRACKING,
    // CLUSTER SLOTS, command(), a sentinel's questions. A command counts when
    // it enters the send buffer, once, even if its connection is dropped
    // before it reaches the node.
    std::uint64_t requests = 0;
    // Connection attempts made, and those of them that were not the node's
    // first: each follows a failure, a drop (closed, stalled, a failover)
    // or a disconnect().
    std::uint64_t connects = 0;
    std::uint64_t reconnects = 0;
    // Errors by kind (node_error in parentheses).
    std::uint64_t connect_errors = 0;   // no connection made (refused, unreachable,
                                        // resolve_failed)
    std::uint64_t timeouts = 0;         // took too long (resolve_timeout,
                                        // connect_timeout, stalled)
    std::uint64_t closed = 0;           // the peer hung up or reset it (closed, reset)
    std::uint64_t protocol_errors = 0;  // a malformed or hostile reply (protocol_error,
                                        // reply_too_large, unexpected_reply)
    std::uint64_t tls_errors = 0;       // the TLS layer failed (tls_*)
    std::uint64_t refusals = 0;         // the set-up was refused (auth_failed,
                                        // select_failed, setup_failed, replica,
                                        // sentinel_failed)
    std::uint64_t server_errors = 0;    // error replies to lock requests (READONLY,
                                        // OOM, NOPERM, ...; not NOSCRIPT, which the
                                        // lock retries, nor a Cluster's MOVED or ASK)
    std::uint64_t io_errors = 0;        // any other socket error (io_error)
    // Round trips: a command written to an idle connection (nothing else in
    // flight, not a WAIT), until its reply is read; so at most one sample per
    // round trip, and none inflated by a queue. Microseconds of the client's
    // clock; min and last are 0 until the first sample. sum / count is the
    // mean.
    std::uint64_t rtt_count = 0;
    std::uint64_t rtt_sum_us = 0;
    std::uint64_t rtt_last_us = 0;
    std::uint64_t rtt_min_us = 0;
    std::uint64_t rtt_max_us = 0;
    // The round trip smoothed as TCP smooths it for its resend timer (RFC
    // 6298: the first sample as it is, then an eighth of each new one, and a
    // quarter of its distance for the variation), from the samples above;
    // until the first of them, the latest plain TCP connect's (its SYN to
    // the answer; not a TLS handshake, not a sentinel's). 0 until either.
    // A slow link makes the locks send their scripts' text at once, not
    // their digest first (README, "Deadlines").
    std::uint64_t rtt_smoothed_us = 0;
    std::uint64_t rtt_variation_us = 0;

    // Every error kind above, summed.
    std::uint64_t errors() const noexcept {
        return connect_errors + timeouts + closed + protocol_errors + tls_errors + refusals +
               server_errors + io_errors;
    }
};

// One lock, counted from the events its callback is told (lock_event_kind).
struct lock_stats {
    // Acquisitions that ended acquired (a reentrant lock: each hold).
    std::uint64_t acquisitions = 0;
    // Acquisitions (however they ended) of which a round found the key held
    // by another owner: they waited, retried, or gave up busy.
    std::uint64_t contended = 0;
    // Acquisitions that ended busy (held by another when they gave up), and
    // failed (no quorum for other reasons: nodes down, too slow, ...).
    std::uint64_t busy = 0;
    std::uint64_t acquire_failures = 0;
    // Renew rounds that succeeded (the watchdog's and renew()'s), and those
    // that missed their quorum (renew_failed: retried, at risk).
    std::uint64_t renewals = 0;
    std::uint64_t renewals_failed = 0;
    // Holds that ended lost (not ours any more, validity ended, max_hold).
    std::uint64_t losses = 0;
    // Releases that ended (released: whether the key was still ours or had
    // gone already).
    std::uint64_t releases = 0;
};

}  // namespace edgelock
