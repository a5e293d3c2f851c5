// The driver's per-connection state: what a client<N, M> holds for each of
// its connections. The lock connection's own part (address, state, timers,
// the requests in flight, the set-up, its stream) is plain data the client's
// files work on; the parts with a life of their own (a RESP2 node's
// subscription, a Sentinel node's asking and watch, a Cluster node's router)
// are types that own their state. Internal to the driver, in a header only
// because client<N, M> holds these by value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_config.hpp"
#include "edgelock/client_errors.hpp"
#include "edgelock/client_stats.hpp"
#include "edgelock/detail/cluster_router.hpp"
#include "edgelock/detail/handshake.hpp"
#include "edgelock/detail/host_lookup.hpp"
#include "edgelock/detail/peer.hpp"
#include "edgelock/detail/reply_fifo.hpp"
#include "edgelock/detail/sentinel_resolver.hpp"
#include "edgelock/detail/sentinel_watch.hpp"
#include "edgelock/detail/stream.hpp"
#include "edgelock/detail/subscription.hpp"
#include "edgelock/detail/timer_table.hpp"
#include "edgelock/detail/tracked_names.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"

namespace edgelock {

class client_lock;

namespace detail {

// Whom a reply in flight answers.
enum class reply_to : std::uint8_t {
    lock,      // a lock's request: `lock` and its `tag`
    setup,     // a set-up request: `tag` is the handshake's request
    command,   // the reply to command()
    discard,   // a reply whose lock was detached, or a command given up
    tracking,  // CLIENT TRACKING ON REDIRECT to the node's subscription
    sentinel,  // a sentinel's answer: `tag` is 0 for AUTH, 1 for the master's address
    cluster,   // CLUSTER SLOTS, the map of a redis-cluster:// node
};

// No connection: a route not known, an extra connection no node has taken.
constexpr std::uint8_t no_connection = 0xff;

struct in_flight {
    client_lock* lock = nullptr;
    std::uint32_t tag = 0;
    reply_to to = reply_to::discard;
    bool follows = false;  // a lock's WAIT, behind its request
    bool cleanup = false;  // a lock's cleanup (compare-and-delete)
};

// A connection's timers.
enum class connection_timer : std::uint8_t {
    connect,  // lookup, connect plus set-up must be done by then
    backoff,  // no new attempt before then
    stall,    // the oldest request in flight has waited stall_timeout by then
};

// Where a Sentinel node goes once its old master's clean-ups are done.
enum class failover_next : std::uint8_t {
    none,
    announced,  // the master the watch's latest +switch-master named
    ask,        // the sentinels are asked again (the watch may have missed one)
};

// How far a Sentinel node is in leaving the master it is set up on.
enum class failover_leave : std::uint8_t {
    no,        // not leaving
    draining,  // nothing more goes out; the replies of what is in flight come in
    cleaning,  // the clean-ups (and the held locks' renews) are out; their replies come in
};

// A Sentinel node's trip back to the master it left at a failover, for the
// keys its kept locks left there (failover.cpp).
enum class failover_trip : std::uint8_t {
    none,
    armed,     // the kept locks are being checked on the new master
    draining,  // some were found lost or released: nothing more goes out; replies come in
    out,       // connecting to the old master, and setting up there
    cleaning,  // their deletes are out there; the replies come in
};

// A Sentinel node's following of a switch (failover.cpp): the switches'
// backoff, the clean-ups left on the master it leaves, and what it owes the
// new one.
struct failover {
    instant last;             // the latest switch heard
    std::uint8_t streak = 0;  // switches followed, each heard within reconnect_max of the last
    failover_next next = failover_next::none;
    failover_leave leaving = failover_leave::no;
    // Locks held when a first switch (after a quiet spell) was heard, by
    // their place in the client's list: their keys stay on the old master.
    std::uint32_t kept = 0;
    // Where their keys are: the master left (one; a later switch with kept
    // locks replaces it), to go back to once if one is found lost.
    peer back;
    failover_trip trip = failover_trip::none;
    bool due = false;    // the target is the announced master: the next connect goes there
    bool renew = false;  // its held locks renew once the new master's set-up is done
};

struct connection {
    node_address address;
    node_state state = node_state::down;
    bool want_write = false;  // bytes wait for the socket to take them
    // Lock requests wait for this connection's set-up to be done, rather than
    // follow it in its flight (decided at the connect: pipeline.cpp).
    bool setup_first = false;
    std::uint8_t failures = 0;  // consecutive failed attempts, for the backoff
    unsigned attempt = 0;       // which address of the lookup to try
    timer_table<connection_timer, 3> timers;
    host_lookup lookup;  // of the host this attempt goes to
    // The numeric address the socket reached (empty: a Unix socket), where
    // the subscription goes too.
    std::uint8_t connected_size = 0;
    char connected_to[port::address_text_capacity];
    std::size_t tx_size = 0;
    handshake setup;
    node_report report;
    // The node's counters (kept in the node's own connection: an extra
    // connection counts into its node's), from configure() on.
    node_stats stats;
    bool attempted = false;  // a connection attempt was made since configure()
    // When this attempt's socket connect began, and when its set-up began:
    // a hang-up right on the set-up's first bytes is what a TLS server does
    // to plaintext (connection.cpp).
    instant dialed;
    instant opened;
    // A round trip being timed: the request in front of the FIFO, written
    // at probe_sent to an idle connection (stats.rtt_*).
    bool probing = false;
    instant probe_sent;
    // A NOSCRIPT came on this connection: the server's script cache is
    // empty, and the locks' scripts go as EVAL (their text) from then on.
    bool scripts_cold = false;
    reply_fifo<in_flight, EDGELOCK_CLIENT_PIPELINE> fifo;  // requests in flight
    tracked_names names;                // what the server tracks for this connection's waiters
    subscription sub;                   // RESP2 waiters are told through it
    sentinel_resolver where;            // redis-sentinel:// nodes
    sentinel_watch watch;               // and their +switch-master
    failover moving;                    // and the switches it heard
    cluster_router cluster;             // redis-cluster:// nodes
    peer target;                        // a master named by a sentinel or a Cluster's map
    std::uint8_t node = no_connection;  // the node it serves (its own index, for the first N)
    bool redirect_due = false;          // CLIENT TRACKING ... REDIRECT sub.id() is still to send
    buffered_stream<EDGELOCK_CLIENT_RX_BUFFER> io;
    char tx[EDGELOCK_CLIENT_TX_BUFFER];
};

}  // namespace detail

}  // namespace edgelock
