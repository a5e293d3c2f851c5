// The driver: lock machines on real connections, one per Redis node.
//
// A client owns one connection per node, shared by every lock attached to it;
// requests of many locks are pipelined on it and matched to their replies in
// order. A redis-cluster:// node also uses the client's extra connections
// (client<N, M>), one per further master its locks' hash slots are on. A
// round goes out to all nodes before the client waits on any, so a Redlock
// acquisition costs the slowest reply of its quorum. Nothing here
// allocates or throws; sockets, time and randomness come from the port
// (include/edgelock/port.hpp), so link a port target such as edgelock::port_posix.
// This header includes what it is made of: client_lock.hpp (a lock on a
// client), client_errors.hpp (error codes, per-node reports), and, under
// detail/, the state a client<N, M> holds by value (the connections and
// their parts), internal and not to be used directly.
//
// Blocking use:
//
//   edgelock::client<3> c;                       // room for 3 nodes (~8 KB each)
//   edgelock::str_view urls[] = {"redis://10.0.0.1", "redis://10.0.0.2", "redis://10.0.0.3"};
//   if (c.configure(urls, 3, {}) != edgelock::client_errc::ok) ...
//   edgelock::client_lock job;
//   job.attach(c, "nightly-upload", options);    // the watchdog renews at ttl/3
//   edgelock::op_result r = job.try_acquire();   // or job.acquire(wait)
//   if (r.event.kind == edgelock::lock_event_kind::acquired) {
//       ... work, calling c.run_for(...) or any blocking call now and then
//           so the watchdog can renew; check job.held() before acting ...
//       job.release();
//   }
//
// Event-loop use (a daemon that owns its loop): register the fds from
// c.wanted() (up to c.fd_capacity(): size the array so), sleep until c.next_deadline(), then call
// c.on_ready(fd, events) or c.on_timeout(); start operations with job.start_acquire() and friends
// and learn their outcome from the lock's callback. A started operation goes out at the client's
// next call (next_deadline() is then now), so starting many locks in a row costs one pass over
// them, not one each. The set of fds changes when connections are made or dropped: ask wanted() and
// next_deadline() again after every call (and re-register: a closed fd's
// number can come back for a new connection).
//
// Nothing runs behind your back: the watchdog renews, reconnects happen and
// callbacks fire only inside the client's calls (blocking operations,
// run_for/run_until, on_ready/on_timeout). A lock whose validity deadline has
// passed is never reported as held, driven or not.
//
// Connections: set up on first use and after a failure, with an exponential
// backoff between attempts. Set-up pipelines HELLO [AUTH] [SETNAME], SELECT,
// CONFIG GET maxmemory*, and INFO where those are refused
// (detail/handshake.hpp); the first lock requests go in the same flight, on
// a standalone node, on the master a sentinel named and on a Cluster
// connection (not while a Sentinel node follows a switch). A RESP2 node with notify also
// gets a second connection, subscribed to the server's invalidations (see
// client_options::notify), so a client has up to two fds per node. A node whose set-up failed
// reports why through node(i): connection refused, wrong password, a replica (a lock needs a
// master), ... A master that may evict lock keys is used, with node(i).warning set. An error reply
// to a lock request (READONLY, OOM, NOPERM, ...) counts as that node's "no"
// and shows in node(i) with the server's text, the connection kept.
// Host names are looked up on every connect without blocking (the port's
// asynchronous lookup, within connect_timeout); numeric addresses never touch
// the resolver.
//
// Callbacks may start operations (start_acquire/renew/release) on any lock.
// They must not call blocking functions (those return `reentered`), and must
// not detach or destroy a lock: do that after the client's call returns.
// Not thread-safe: one thread drives a client and its locks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_config.hpp"
#include "edgelock/client_errors.hpp"
#include "edgelock/client_lock.hpp"
#include "edgelock/client_stats.hpp"
#include "edgelock/config.hpp"
#include "edgelock/detail/connection.hpp"
#include "edgelock/detail/handshake.hpp"
#include "edgelock/detail/reply_fifo.hpp"
#include "edgelock/detail/timer_table.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/resp_decoder.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"
#include "edgelock/transport.hpp"

namespace edgelock {

struct client_options {
    // Lookup of the host name, connect plus set-up (AUTH, SELECT, ...) of one
    // node; a redis-sentinel:// node's asking of its sentinels included.
    // Sized for a slow link (a satellite's 600 ms round trip, a SYN lost and
    // resent after 1 s and 2 s more). The connect's own round trip says
    // nothing of the set-up's: a link's proxy (a satellite's TCP accelerator,
    // a VPN or TLS endpoint) answers the connect at once and Redis seconds
    // later.
    duration connect_timeout = duration::seconds(5);
    // redis-sentinel:// nodes: how long one sentinel has to say where the
    // master is before the next is asked (the one that answers is asked
    // first next time), and a sentinel's own user and password when it has
    // them (the URL's are the master's). Two round trips of a slow link and
    // a resend.
    duration sentinel_timeout = duration::seconds(2);
    str_view sentinel_username;
    str_view sentinel_password;
    // Wait before reconnecting a node that failed: doubling from min to max,
    // with random jitter, reset by a successful set-up.
    duration reconnect_min = duration::millis(100);
    duration reconnect_max = duration::seconds(2);
    // A connection whose oldest request has waited this long is dropped and
    // made again (a node that stopped answering). Requests of a round time out
    // much sooner (lock_options::node_timeout); this only frees the connection.
    duration stall_timeout = duration::seconds(5);
    // Speak RESP3 (HELLO 3) where the server can (Redis >= 6): the server can
    // then push on the lock connection (see notify). A server without HELLO
    // is spoken to in RESP2 (node(i).resp2). false: RESP2 everywhere.
    bool resp3 = true;
    // Ask each node (Redis >= 6) to tell of changes to the keys this
    // connection read (CLIENT TRACKING ON), so a lock waiting for a busy key
    // (its acquire reads it) tries again the moment the key is deleted,
    // expires, is flushed or written, by anyone. Over RESP3 the server pushes
    // on the lock connection. Over RESP2 it cannot, so the client keeps a
    // second connection to the node, subscribed to __redis__:invalidate, and
    // redirects the tracking there; while that one is down (made again after
    // a backoff) the node's waiters poll, and once it is back they all try
    // once, for what was missed. Over TLS that connection needs a session of
    // its own (client<N, M>::max_sessions counts it). A node that refuses
    // tracking or the subscription is not failed: its waiters poll
    // (lock_options' retry delay). node(i).tracking says which.
    bool notify = true;
    // CLIENT SETNAME (or HELLO's SETNAME); empty sends none. Letters, digits
    // and "-_.:" only, at most 64.
    str_view client_name = "edgelock";
    // Override the URLs' credentials when not empty (e.g. from a password file).
    str_view username;
    str_view password;
    // How a connection's bytes travel once its socket is up; nullptr is
    // plain_transport(), the socket itself (transport.hpp).
    transport* via = nullptr;
    // The locks' tokens and the backoff's jitter; none given (fill nullptr):
    // the port's random_bytes. Set once here, handed to every lock attached.
    random_source random{};
};

class client_base;

// Sees the reply to command() while its bytes are valid (copy what you keep).
using reply_callback = void (*)(void* ctx, const resp_node* nodes, std::size_t count);

// The capacity-erased client; code that does not care about the node count
// takes a client_base&. Create a client<N>.
class client_base {
public:
    client_base(const client_base&) = delete;
    client_base& operator=(const client_base&) = delete;

    // Parses and checks every URL (kept as views: the strings must outlive the
    // client) and the options. Connects nothing yet. Not while locks are attached.
    client_errc configure(const str_view* urls, std::size_t count,
                          const client_options& options) noexcept;
    std::size_t bad_url_index() const noexcept { return bad_url_index_; }
    url_errc bad_url_error() const noexcept { return bad_url_error_; }

    std::uint8_t node_count() const noexcept { return node_count_; }
    node_info node(std::uint8_t index) const noexcept;
    // Node `index`'s counters (client_stats.hpp); all zero for an index
    // past node_count(). Copies a few integers: allocates nothing.
    edgelock::node_stats node_stats(std::uint8_t index) const noexcept;
    // Nodes whose connection is set up and usable now.
    std::uint8_t ready_count() const noexcept;

    // Connects every node that is down or whose backoff has ended, and returns
    // once each is ready or has failed (or is in backoff), or at `deadline`.
    // Returns how many nodes are ready. Optional: operations connect on demand,
    // but wait for a node's set-up only up to the lock's node_timeout; over a
    // slow link call connect() (or open(), below) once after configure().
    // With `enough` above 0, returns as soon as that many nodes are ready (a
    // quorum, say), leaving the rest to finish in the background.
    std::uint8_t connect(instant deadline, std::uint8_t enough = 0) noexcept;
    // As connect(), but a node counts once it can take lock requests: ready,
    // or with its set-up written, so that the first request goes in the same
    // flight (one round trip less; the set-up's checks still decide, see
    // README "Set-up"). Returns how many can; node(i) may still say
    // `handshake` for them, and set-up warnings come with the first replies.
    std::uint8_t open(instant deadline, std::uint8_t enough = 0) noexcept;

    // One command outside any lock (a status tool's PTTL, say), on node
    // `index`'s connection behind whatever is in flight there: connects if
    // needed, then drives the client (locks included) until the reply, which
    // goes to fn, or until `deadline`. The arguments must fit the send buffer.
    client_errc command(std::uint8_t index, const str_view* args, std::size_t argc,
                        instant deadline, reply_callback fn, void* ctx) noexcept;

    // Drops every connection (locks with requests in flight see a disconnect).
    void disconnect() noexcept;

    // Drives everything (watchdog, reconnects, callbacks) until `deadline`.
    client_errc run_until(instant deadline) noexcept;
    client_errc run_for(duration d) noexcept { return run_until(port::now() + d); }
    // Work a node still owes locks that are done: a Sentinel node going back
    // to the master it left at a failover, to delete there the key of a
    // lock then found lost (or released) on the new master; a connection
    // whose set-up is still to be answered with lock requests sent behind
    // it, or that refused a check (a replica) and takes back what those
    // requests took. It ends within connect_timeout plus
    // stall_timeout once due. A program about to disconnect (or detach its
    // locks) may settle() first.
    bool busy() const noexcept;
    // Drives everything until busy() is false (ok), or `deadline` (deadline).
    client_errc settle(instant deadline) noexcept;

    // --- event-loop API ---
    // Fills up to `capacity` entries with the fds to watch and the readiness
    // wanted (port::want_read / want_write); returns how many it wrote. Pass
    // fd_capacity() entries (or client<N, M>::max_fds) to be given them all.
    std::size_t wanted(port::wait_entry* out, std::size_t capacity) const noexcept;
    // The most fds wanted() gives at once for `nodes` nodes on `connections`
    // connections: two per connection (the lock connection, or the lookup of
    // its host name while it is being looked up; and, on a RESP2 node with
    // notify, its subscription) and one per node (a redis-sentinel:// node's
    // watch of +switch-master, or its lookup). A Cluster node's extra
    // connections count as connections.
    static constexpr std::size_t fd_capacity_for(std::size_t nodes,
                                                 std::size_t connections) noexcept {
        return 2 * connections + nodes;
    }
    std::size_t fd_capacity() const noexcept { return fd_capacity_for(node_count_, conn_count_); }
    // The transport sessions it may hold at once (a TLS transport's room,
    // tls_mbedtls<N>): one per lock connection, one per RESP2 node's
    // subscription, one per Sentinel node's watch.
    static constexpr std::size_t sessions_for(std::size_t nodes, std::size_t connections) noexcept {
        return 2 * connections + nodes;
    }
    // When the client must be called next: on_timeout() at this instant.
    instant next_deadline() const noexcept;
    // The fd is ready (port::want_read / want_write / ready_error bits). With
    // several ready fds from one wait, prefer the batch form: the single form
    // services the client after each fd, which may open a connection that
    // reuses the number of an fd still in your batch (harmless: a stale
    // report is recognised, but it costs a system call).
    void on_ready(int fd, std::uint8_t events) noexcept;
    // The batch form also does on_timeout()'s work: after a wait, whatever it
    // reported (no entry ready included), one call is enough.
    void on_ready(const port::wait_entry* entries, std::size_t count) noexcept;
    // Any time at or after next_deadline(); an early call does nothing harmful.
    void on_timeout() noexcept;

    // For the locks' random draws and the backoff jitter: port::random_bytes.
    static random_source system_random() noexcept;

protected:
    client_base(detail::connection* conns, std::uint8_t capacity, std::uint8_t extra) noexcept
        : conns_(conns),
          capacity_(capacity),
          conn_total_(static_cast<std::uint8_t>(capacity + extra)) {}
    ~client_base();
    // Closes every connection and detaches every lock; client<N> calls it
    // while its connections still exist.
    void shutdown() noexcept;

private:
    friend class client_lock;
    // The read loop's handler for a lock connection (pipeline.cpp).
    struct reply_reader;

    void link(client_lock& l) noexcept;
    void unlink(client_lock& l) noexcept;
    // The scheduler (scheduler.cpp): everything due at `now`.
    void service(instant now) noexcept;
    // One wait for I/O, at most until `until`, then service; `now` is the
    // time after the wait.
    client_errc wait_once(instant until, instant& now) noexcept;
    void handle_ready(int fd, std::uint8_t events, instant now) noexcept;
    // Connections (connection.cpp).
    // How old a name's answer may be for a connect to use it: one that came
    // after its attempt gave up serves the next one, after a backoff.
    duration lookup_max_age() const noexcept {
        return options_.connect_timeout + options_.reconnect_max;
    }
    // Where connection n goes now: its URL's host, a seed, the sentinel
    // being asked, or the master a sentinel or a Cluster map named.
    port::endpoint endpoint_of(std::uint8_t n) const noexcept;
    void start_connect(std::uint8_t n, instant now) noexcept;
    // Ends connection n and makes the next one (to a sentinel, or to the
    // master one named), to be set up by `deadline`.
    void reconnect(std::uint8_t n, instant now, instant deadline) noexcept;
    void resolve(std::uint8_t n, instant now) noexcept;
    void resolved(std::uint8_t n, instant now) noexcept;
    void try_addresses(std::uint8_t n, instant now) noexcept;
    void connect_ready(std::uint8_t n, instant now) noexcept;
    void open_session(std::uint8_t n, port::net_result r, instant now) noexcept;
    void connected(std::uint8_t n, instant now) noexcept;
    void drop(std::uint8_t n, instant now) noexcept;
    // `text`, when given, becomes the node's message (else only errors that
    // carry the server's words keep theirs).
    void fail(std::uint8_t n, node_error why, int code, instant now, str_view text = {}) noexcept;
    // A failed send, recv or open: the transport's own reason when it has one
    // (a certificate, an alert), else the socket's.
    void fail_io(std::uint8_t n, const port::net_result& r, instant now) noexcept;
    // The counters connection n counts into: its node's.
    edgelock::node_stats& stats_of(std::uint8_t n) noexcept;
    // Requests out and replies in (pipeline.cpp).
    bool push_in_flight(std::uint8_t n, const detail::in_flight& f, instant now) noexcept;
    void answered(std::uint8_t n, instant now) noexcept;
    void queue_setup(std::uint8_t n, instant now) noexcept;
    void queue_requests(std::uint8_t n, instant now) noexcept;
    // Lock requests may go behind connection n's set-up now; it refused a
    // check and waits for the lock replies and cleanups behind it.
    bool pipelines(std::uint8_t n) const noexcept;
    bool holds_setup(std::uint8_t n) const noexcept;
    bool undoing(std::uint8_t n) const noexcept;
    bool setup_owes(std::uint8_t n) const noexcept;
    bool follow_setup(std::uint8_t n, const detail::in_flight& f, const resp_node* nodes,
                      std::size_t count, instant now) noexcept;
    void transmit(std::uint8_t n, instant now) noexcept;
    void read(std::uint8_t n, instant now) noexcept;
    void setup_reply(std::uint8_t n, std::uint32_t request, const resp_node* nodes,
                     std::size_t count, instant now) noexcept;
    // A lock's reply (routing.cpp): to its machine, unless the node said
    // the request belongs elsewhere (MOVED, ASK) or that it was demoted.
    void lock_reply(std::uint8_t n, const detail::in_flight& f, const resp_node* nodes,
                    std::size_t count, instant now) noexcept;
    // A sentinel's answer to the node's question (sentinel.cpp).
    void master_answer(std::uint8_t n, std::uint32_t tag, const resp_node* nodes, std::size_t count,
                       instant now) noexcept;
    // The sentinel being asked failed: the next one; false when none is left.
    bool ask_next(std::uint8_t n, instant now) noexcept;
    // The client's side of a node's parts: whether it wants one, what the
    // part needs of it for a call, what it does with the part's events.
    // A RESP2 node's subscription (notify.cpp).
    struct tracking_side {
        static bool wanted(const client_base& c, std::uint8_t n) noexcept;
        static detail::sub_link link(client_base& c, std::uint8_t n) noexcept;
        static void apply(client_base& c, std::uint8_t n, std::uint8_t events,
                          instant now) noexcept;
    };
    // A Sentinel node's watch and the switches it hears (failover.cpp).
    struct failover_side {
        static bool wanted(const client_base& c, std::uint8_t n) noexcept;
        static detail::watch_link link(client_base& c, std::uint8_t n) noexcept;
        static void apply(client_base& c, std::uint8_t n, std::uint8_t events,
                          instant now) noexcept;
        // The set-up on the master a switch led to is done.
        static void arrived(client_base& c, std::uint8_t n, instant now) noexcept;

    private:
        static void heard(client_base& c, std::uint8_t n, instant now) noexcept;
        static void leave(client_base& c, std::uint8_t n, detail::failover_next next,
                          instant now) noexcept;
        static void move(client_base& c, std::uint8_t n, instant now) noexcept;
        static bool clean(client_base& c, std::uint8_t n, instant now) noexcept;
        static void write_renew(client_base& c, std::uint8_t n, client_lock& l,
                                instant now) noexcept;
        static void renew_held(client_base& c, std::uint8_t n, instant now) noexcept;
        static instant backoff(client_base& c, std::uint8_t n, instant now) noexcept;
        static bool write_delete(client_base& c, std::uint8_t n, const client_lock& l,
                                 std::size_t room, instant now) noexcept;
        // The trip back to the master left, for kept locks found lost.
        static void check(client_base& c, std::uint8_t n, instant now) noexcept;
        static bool done(const client_lock& l) noexcept;
        static void trip(client_base& c, std::uint8_t n, instant now) noexcept;
        static void home(client_base& c, std::uint8_t n, instant now) noexcept;

    public:
        // A trip back is due or under way (busy()).
        static bool owes(const client_base& c, std::uint8_t n) noexcept;
        // The locks' list changed: a lock linked in front or unlinked at `at`.
        static void renumber(client_base& c, std::size_t at, bool added) noexcept;
    };
    // Redis Cluster nodes (cluster.cpp). A lock's requests to node `node`
    // go out on served_by(l, node); connection n serves node node_of(n).
    std::uint8_t node_of(std::uint8_t n) const noexcept { return conns_[n].node; }
    static std::uint8_t served_by(const client_lock& l, std::uint8_t node) noexcept;
    bool serves(std::uint8_t n, const client_lock& l) const noexcept;
    // A request of l is in flight on another connection of n's node.
    bool in_flight_elsewhere(std::uint8_t n, const client_lock& l) const noexcept;
    // A lock's slot, and its routes before any map: each node's own connection.
    void route_lock(client_lock& l) noexcept;
    // A MOVED or ASK answer to a lock's request on connection n: true when
    // the request goes out again where the node said.
    bool follow_redirect(std::uint8_t n, client_lock& l, std::uint32_t tag, const resp_node* nodes,
                         std::size_t count, instant now) noexcept;
    // The connection of cluster node `node` to host:port, taken or made;
    // no_connection when every extra connection is in use.
    std::uint8_t connection_to(std::uint8_t node, str_view host, std::uint16_t port,
                               instant now) noexcept;
    void slot_map_reply(std::uint8_t n, const char* data, std::size_t size, instant now) noexcept;
    // The requests a connection's parts add ahead of the locks' (tracking
    // off when a new subscription replaces the one it redirected to, the slot
    // map); false when one waits for room.
    bool queue_extras(std::uint8_t n, instant now) noexcept;
    // Notification (notify.cpp). A RESP3 push or a published message: a
    // tracking invalidation wakes the locks waiting for its keys; anything
    // else is ignored. nodes == nullptr: one too large to read, taken as
    // "every key changed".
    void on_push(std::uint8_t node, const resp_node* nodes, std::size_t count,
                 instant now) noexcept;
    static void push_to(void* ctx, std::uint8_t node, const resp_node* nodes, std::size_t count,
                        instant now) noexcept;
    // How a lock's request on connection n is told (may: the connection is
    // ready and the request may have a command ahead of it): where its name
    // is tracked, or asked for by a waiter's CLIENT TRACKING ahead of it.
    enum class waiter_tracking : std::uint8_t { polls, told, asks };
    waiter_tracking tracking_for(std::uint8_t n, const client_lock& l, bool may) const noexcept;
    // Writes that CLIENT TRACKING; false when the buffer has no room.
    bool ask_tracking(std::uint8_t n, const client_lock& l, instant now) noexcept;
    void tracking_answer(std::uint8_t n, std::uint32_t tag, const resp_node* nodes,
                         std::size_t count) noexcept;
    // Tells every waiting lock its key may have changed (notifications may
    // have been lost).
    void wake_all(instant now) noexcept;
    // `by` deleted its key: the locks of this client waiting for the same
    // name are told here, as the server does not tell us of our own writes.
    void released_here(const client_lock& by, instant now) noexcept;
    // Tells one lock its key changed, if it is waiting for it.
    void wake(client_lock& l, std::uint8_t node, instant now) noexcept;
    // Locks (scheduler.cpp).
    void pump_events(client_lock& l, instant now) noexcept;
    void notify(client_lock& l, const lock_event& ev) noexcept;
    void let_go(client_lock& l, instant now) noexcept;
    void begin(client_lock& l, instant now) noexcept;
    void connection_deadlines(std::uint8_t n, instant now) noexcept;
    bool node_settled(std::uint8_t n) const noexcept;
    bool all_settled() const noexcept;
    bool all_startable() const noexcept;
    bool startable(std::uint8_t n) const noexcept;
    std::uint8_t startable_count() const noexcept;
    std::uint8_t connect_until(instant deadline, std::uint8_t enough, bool early) noexcept;
    bool node_wanted(std::uint8_t n) const noexcept;
    bool lock_active(const client_lock& l) const noexcept;

    detail::connection* conns_;
    std::uint8_t capacity_;    // nodes at most (N)
    std::uint8_t conn_total_;  // connections in all (N + M)
    std::uint8_t node_count_ = 0;
    // Connections in use: node_count_, or conn_total_ with a Cluster node
    // (every connection past the nodes' own is an extra one).
    std::uint8_t conn_count_ = 0;
    bool in_callback_ = false;
    // Counts what may make work for a service pass already under way:
    // callbacks, dropped connections, rounds failed on a down node.
    std::uint32_t churn_ = 0;
    bool connect_wanted_ = false;
    client_options options_;
    transport* transport_ = &plain_transport();
    random_source random_ = system_random();
    client_lock* locks_ = nullptr;  // intrusive list of attached locks
    std::size_t bad_url_index_ = 0;
    url_errc bad_url_error_ = url_errc::ok;
    resp_node nodes_[EDGELOCK_CLIENT_REPLY_NODES];  // the reply being handled
    reply_callback command_fn_ = nullptr;           // command() waiting for its reply
    void* command_ctx_ = nullptr;
};

// A client with room for N nodes, and M extra connections its
// redis-cluster:// nodes share for the masters beyond the one each node's
// own connection reaches (the masters their locks' slots are on). A client
// without a Cluster node needs none.
template <std::uint8_t N, std::uint8_t M = 0>
class client : public client_base {
    static_assert(N >= 1 && N <= lock_max_nodes, "a client has 1..lock_max_nodes nodes");
    static_assert(N + M <= 64, "a client has at most 64 connections");

public:
    // The wait entries the client may want at once (fd_capacity() at most).
    static constexpr std::size_t max_fds = fd_capacity_for(N, N + M);
    // The transport sessions it may hold at once: a tls_mbedtls<max_sessions>
    // never refuses it one.
    static constexpr std::size_t max_sessions = sessions_for(N, N + M);

    client() noexcept : client_base(storage_, N, M) {}
    ~client() { shutdown(); }

private:
    detail::connection storage_[N + M];
};

}  // namespace edgelock
