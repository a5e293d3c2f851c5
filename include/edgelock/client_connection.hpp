// The driver's per-connection state: what a client<N, M> holds for each of
// its connections (buffers, the requests in flight, the set-up, a RESP2
// node's subscription, a Sentinel node's asking and watch, a Cluster node's
// map state). Internal to the driver, in a header only because client<N, M>
// holds these by value; included by client.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_config.hpp"
#include "edgelock/client_errors.hpp"
#include "edgelock/handshake.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/reply_fifo.hpp"
#include "edgelock/resp_decoder.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"
#include "edgelock/timer_table.hpp"

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
};

// A connection's timers.
enum class connection_timer : std::uint8_t {
    connect,   // lookup, connect plus set-up must be done by then
    backoff,   // no new attempt before then
    stall,     // the oldest request in flight has waited stall_timeout by then
    sentinel,  // the sentinel being asked must have answered by then
};

// The host name lookup of a connection or a watch (host_lookup.cpp). At most
// one lookup of a name runs for it: one an attempt gave up on while it still
// ran is kept, and the next attempt for the same host waits for that answer
// rather than asking anew, so a name server that never answers costs one
// port lookup here, however long it hangs. Meanwhile a numeric host still
// connects (it needs no lookup) and another name waits its turn. An answer
// that came after its attempt gave up is used by the next attempt, if that
// comes within max_age of the question: a name server slower than the
// connect's allowance still gets a node connected.
class host_lookup {
public:
    host_lookup() noexcept = default;
    host_lookup(const host_lookup&) = delete;
    host_lookup& operator=(const host_lookup&) = delete;
    ~host_lookup() { abandon(); }

    // Begins an attempt's lookup of `host`: ok (the addresses are there),
    // in_progress (wait for fd(), then ask result()), would_block (a name,
    // while the lookup of another name, kept from an earlier attempt, still
    // runs), or why the port could not start one.
    port::net_result begin(str_view host, instant now, duration max_age) noexcept;
    // The fd an attempt waits on, readable once the lookup is done; -1 when
    // no attempt waits.
    int fd() const noexcept { return waiting_ ? fd_ : -1; }
    // What the attempt's lookup came to: in_progress while it runs.
    port::net_result result() const noexcept;
    // Whether the attempt's lookup is of `host`.
    bool is_for(str_view host) const noexcept;
    // The index-th address of the attempt's lookup, numeric and
    // NUL-terminated; 0 when there is none.
    std::size_t address(unsigned index, char* buf, std::size_t capacity) const noexcept;
    // The attempt is over (connected, failed, out of time): a lookup still
    // running is kept for the next attempt; an answered one is let go.
    void end() noexcept;
    // A kept lookup that answered more than max_age after its question (or
    // failed) is let go.
    void tidy(instant now, duration max_age) noexcept;
    // Let go whatever its state (the client goes away, or is configured anew).
    void abandon() noexcept;

private:
    int id_ = -1;    // this attempt's lookup
    int fd_ = -1;    // its fd; -1 for a host done at once
    int kept_ = -1;  // a name's lookup kept from an earlier attempt
    instant asked_;  // when id_ was begun
    instant kept_asked_;
    bool waiting_ = false;  // an attempt waits for id_
};

// A RESP2 node's second connection, subscribed to __redis__:invalidate, to
// which the lock connection's CLIENT TRACKING redirects (subscription.cpp). It
// goes to the address the lock connection reached (tracking redirects only
// within one server), so it looks nothing up.
enum class sub_phase : std::uint8_t {
    off,         // not wanted (RESP3, notify off, an old server) or not begun
    connecting,  // the socket, or the transport's handshake, is under way
    setup,       // [AUTH], CLIENT ID and SUBSCRIBE are out
    listening,   // subscribed: `id` is what the lock connection redirects to
    backoff,     // failed: again at `due`
    refused,     // the server said no: not again while the lock connection lasts
};

struct subscription {
    int fd = -1;
    sub_phase phase = sub_phase::off;
    bool opening = false;          // connecting: the transport's open() is not done
    bool subscribed = false;       // SUBSCRIBE confirmed
    std::uint8_t replies_due = 0;  // of the set-up
    std::uint8_t failures = 0;     // consecutive, for the backoff
    std::uint16_t sent = 0;        // bytes of the set-up sent
    std::uint16_t setup_size = 0;  // and its whole size (0: not written yet)
    std::int64_t id = 0;           // CLIENT ID; 0: not known yet
    instant due;                   // connecting, setup: the deadline; backoff: its end
    std::size_t rx_size = 0;
    char rx[EDGELOCK_CLIENT_SUB_BUFFER];
};

// Where a connection goes when it is not where its URL says: the master a
// sentinel named, or the Cluster master an extra connection serves.
struct peer {
    std::uint8_t host_size = 0;
    std::uint16_t port = 0;  // 0: not known
    char host[node_url_max_host + 1] = {};
    str_view host_view() const noexcept { return str_view(host, host_size); }
};

// A redis-sentinel:// node's asking (sentinel.cpp).
struct sentinel_state {
    bool asking = false;     // the connection is to a sentinel, asking
    std::uint8_t tried = 0;  // sentinels asked in this round of asking
    std::uint8_t front = 0;  // the one that answered last: asked first
};

// A redis-sentinel:// node's connection to a sentinel, subscribed to
// +switch-master (sentinel_watch.cpp).
enum class watch_phase : std::uint8_t {
    off,         // not wanted, or not begun
    resolving,   // the sentinel's host name is being looked up, until `due`
    connecting,  // the socket is under way, until `due`
    listening,   // SUBSCRIBE sent (or being sent)
    backoff,     // failed: again at `due`, with the next sentinel
};

struct sentinel_watch {
    int fd = -1;
    watch_phase phase = watch_phase::off;
    std::uint8_t tried = 0;     // sentinels after the front one
    std::uint8_t failures = 0;  // consecutive, for the backoff
    std::uint16_t sent = 0;     // bytes of the set-up sent
    std::uint16_t setup_size = 0;
    instant due;
    host_lookup lookup;  // of the sentinel's host
    std::size_t rx_size = 0;
    char rx[2 * node_url_max_host + node_url_max_master_name + 64];
};

// A redis-cluster:// node (cluster.cpp): its own connection goes to a seed,
// its extra connections to the masters its locks' slots are on.
struct cluster_state {
    std::uint8_t seed = 0;    // the seed the node's own connection tries
    bool map_due = false;     // CLUSTER SLOTS is to be asked
    bool map_out = false;     // and its reply is awaited
    bool map_unread = false;  // it did not fit the receive buffer: not asked again
};

struct connection {
    node_address address;
    int fd = -1;
    node_state state = node_state::down;
    bool opening = false;       // connecting: the socket is up, the transport's open() is not
    bool want_write = false;    // bytes wait for the socket to take them
    bool heard = false;         // this connection has received a byte
    std::uint8_t failures = 0;  // consecutive failed attempts, for the backoff
    unsigned attempt = 0;       // which address of the lookup to try
    timer_table<connection_timer, 4> timers;
    host_lookup lookup;  // of the host this attempt goes to
    // The numeric address the socket reached (empty: a Unix socket), where
    // the subscription goes too.
    std::uint8_t connected_size = 0;
    char connected_to[port::address_text_capacity];
    std::size_t rx_size = 0;
    std::size_t tx_size = 0;
    // Bytes still to throw away of a set-up INFO reply too long for rx.
    std::size_t skip = 0;
    handshake setup;
    resp_decoder decoder;  // resumes a reply split across reads
    node_report report;
    reply_fifo<in_flight, EDGELOCK_CLIENT_PIPELINE> fifo;  // requests in flight
    subscription sub;                                      // RESP2 waiters are told through it
    sentinel_state sentinel;                               // redis-sentinel:// nodes
    sentinel_watch watch;                                  // and their +switch-master
    cluster_state cluster;                                 // redis-cluster:// nodes
    peer target;                        // a master named by a sentinel or a Cluster's map
    std::uint8_t node = no_connection;  // the node it serves (its own index, for the first N)
    bool redirect_due = false;          // CLIENT TRACKING ... REDIRECT sub.id is still to send
    std::uint32_t generation = 0;       // counts drops: a reply loop stops when its connection went
    char rx[EDGELOCK_CLIENT_RX_BUFFER];
    char tx[EDGELOCK_CLIENT_TX_BUFFER];
};

}  // namespace detail

}  // namespace edgelock
