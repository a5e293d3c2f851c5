// The driver: lock machines on real connections, one per Redis node.
//
// A client owns one connection per node, shared by every lock attached to it;
// requests of many locks are pipelined on it and matched to their replies in
// order. A round goes out to all nodes before the client waits on any, so a
// Redlock acquisition costs the slowest reply of its quorum. Nothing here
// allocates or throws; sockets, time and randomness come from the port
// (include/edgelock/port.hpp), so link a port target such as edgelock::port_posix.
//
// Blocking use:
//
//   edgelock::client<3> c;                       // room for 3 nodes (~5 KB each)
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
// c.wanted(), sleep until c.next_deadline(), then call c.on_ready(fd, events)
// or c.on_timeout(); start operations with job.start_acquire() and friends and
// learn their outcome from the lock's callback. A started operation goes out
// at the client's next call (next_deadline() is then now), so starting many
// locks in a row costs one pass over them, not one each. The set of fds
// changes when connections are made or dropped: ask wanted() and
// next_deadline() again after every call (and re-register: a closed fd's
// number can come back for a new connection).
//
// Nothing runs behind your back: the watchdog renews, reconnects happen and
// callbacks fire only inside the client's calls (blocking operations,
// run_for/run_until, on_ready/on_timeout). A lock whose validity deadline has
// passed is never reported as held, driven or not.
//
// Connections: set up on first use and after a failure, with an exponential
// backoff between attempts. Set-up pipelines AUTH (or HELLO 3 AUTH), SELECT,
// CLIENT SETNAME, INFO replication, INFO memory and SCRIPT LOAD of the lock
// scripts. A node whose set-up failed reports why through node(i): connection
// refused, wrong password, a replica (a lock needs a master), ... A master
// that may evict lock keys is used, with node(i).warning set. An error reply
// to a lock request (READONLY, OOM, NOPERM, ...) counts as that node's "no"
// and shows in node(i) with the server's text, the connection kept.
// Host names are resolved on every connect, by the system resolver, which
// blocks; numeric addresses never touch it.
//
// Callbacks may start operations (start_acquire/renew/release) on any lock.
// They must not call blocking functions (those return `reentered`), and must
// not detach or destroy a lock: do that after the client's call returns.
// Not thread-safe: one thread drives a client and its locks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/config.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/reply_fifo.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/resp_decoder.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"

// Bytes of received data a connection buffers: the longest reply it accepts.
#ifndef EDGELOCK_CLIENT_RX_BUFFER
#define EDGELOCK_CLIENT_RX_BUFFER 2048
#endif

// Bytes of requests a connection buffers before the socket takes them. At
// least one request of the longest kind (lock_max_request).
#ifndef EDGELOCK_CLIENT_TX_BUFFER
#define EDGELOCK_CLIENT_TX_BUFFER 2048
#endif

// Requests in flight on one connection. Locks wait their turn when it is full.
#ifndef EDGELOCK_CLIENT_PIPELINE
#define EDGELOCK_CLIENT_PIPELINE 64
#endif

// Nodes of one decoded reply (the largest expected is HELLO's map).
#ifndef EDGELOCK_CLIENT_REPLY_NODES
#define EDGELOCK_CLIENT_REPLY_NODES 32
#endif

// Bytes of a server's error message kept per node for node(i).message.
#ifndef EDGELOCK_CLIENT_MESSAGE
#define EDGELOCK_CLIENT_MESSAGE 96
#endif

static_assert(EDGELOCK_CLIENT_TX_BUFFER >=
                  1024 + 2 * (EDGELOCK_LOCK_MAX_NAME + 16) + EDGELOCK_LOCK_MAX_OWNER,
              "EDGELOCK_CLIENT_TX_BUFFER must hold the longest request (lock_max_request)");
static_assert(EDGELOCK_CLIENT_RX_BUFFER >= 256, "EDGELOCK_CLIENT_RX_BUFFER must be >= 256");
static_assert(EDGELOCK_CLIENT_PIPELINE >= 16 && EDGELOCK_CLIENT_PIPELINE <= 65535,
              "EDGELOCK_CLIENT_PIPELINE must be in [16, 65535]");
static_assert(EDGELOCK_CLIENT_REPLY_NODES >= 16, "EDGELOCK_CLIENT_REPLY_NODES must be >= 16");

namespace edgelock {

// Local misuse and set-up errors, returned by the call that made them. A call
// that returns one changed nothing, except where noted (deadline, wait_failed).
enum class client_errc : std::uint8_t {
    ok = 0,
    not_configured,         // configure() has not succeeded
    bad_node_count,         // 0 nodes, more than the client has room for, or above lock_max_nodes
    bad_url,                // a node URL did not parse; see bad_url_index / bad_url_error
    tls_not_built_in,       // a rediss:// URL: TLS is not built in
    secret_too_long,        // a user or password longer than node_url_max_secret once decoded
    user_without_password,  // a user name, but no password from the URL or the options
    bad_option,             // a timeout of zero, reconnect_min > reconnect_max, ...
    in_use,                 // configure() while locks are attached
    already_attached,       // attach() on a lock that is attached
    not_attached,           // an operation on a lock that is not attached
    lock_rejected,          // the lock machine refused; see op_result::lock_error
    busy,                   // another operation of this lock is in progress
    not_held,               // renew or release of a lock that is not held
    deadline,               // a blocking call's own bound passed (a bug guard; never expected)
    wait_failed,            // the port's wait() failed
    // (After deadline or wait_failed the operation is abandoned: one not yet
    // started is dropped, an acquisition under way is released.)
    reentered,         // a blocking call from inside a callback
    node_unavailable,  // command(): the node could not be connected
    timed_out,         // command(): no reply before the deadline
};

const char* describe(client_errc code) noexcept;

struct client_options {
    // Connect plus set-up (AUTH, SELECT, ...) of one node.
    duration connect_timeout = duration::seconds(1);
    // Wait before reconnecting a node that failed: doubling from min to max,
    // with random jitter, reset by a successful set-up.
    duration reconnect_min = duration::millis(100);
    duration reconnect_max = duration::seconds(2);
    // A connection whose oldest request has waited this long is dropped and
    // made again (a node that stopped answering). Requests of a round time out
    // much sooner (lock_options::node_timeout); this only frees the connection.
    duration stall_timeout = duration::seconds(5);
    // Speak RESP3 (HELLO 3); a server that cannot is an error for that node.
    bool resp3 = false;
    // CLIENT SETNAME (or HELLO's SETNAME); empty sends none. Letters, digits
    // and "-_.:" only, at most 64.
    str_view client_name = "edgelock";
    // Override the URLs' credentials when not empty (e.g. from a password file).
    str_view username;
    str_view password;
};

enum class node_state : std::uint8_t {
    down,        // no connection; a new one is made on the next operation
    backoff,     // the last attempt failed; no new one before the backoff ends
    connecting,  // TCP (or Unix socket) connect in progress
    handshake,   // AUTH / SELECT / HELLO / SETNAME / INFO / SCRIPT LOAD sent
    ready,
};

const char* describe(node_state state) noexcept;

// Why a node's connection failed or was dropped (the latest reason).
enum class node_error : std::uint8_t {
    none = 0,
    refused,           // connection refused (or the Unix socket does not exist)
    unreachable,       // no route to host
    resolve_failed,    // the host name did not resolve
    connect_timeout,   // connect or set-up took longer than connect_timeout
    auth_failed,       // AUTH / HELLO AUTH refused (see message)
    select_failed,     // SELECT refused (see message)
    setup_failed,      // another set-up refusal: LOADING, max clients... (see message)
    hello_failed,      // HELLO 3 refused: the server does not speak RESP3 (see message)
    protocol_error,    // a malformed reply
    reply_too_large,   // a reply longer than EDGELOCK_CLIENT_RX_BUFFER
    unexpected_reply,  // a reply nobody asked for, or of the wrong kind
    closed,            // the server closed the connection
    reset,             // the connection broke (reset, broken pipe)
    stalled,           // no reply for stall_timeout
    io_error,          // any other socket error (see code)
    replica,           // INFO replication says role:slave (message: its master, if given)
    server_error,      // the server refused a lock request: READONLY, OOM, NOPERM... (see
                       // message); the connection stays up
};

const char* describe(node_error error) noexcept;

// What a node's set-up found that does not stop a lock but weakens it.
enum class node_warning : std::uint8_t {
    none = 0,
    may_evict,  // maxmemory with an allkeys-* or volatile-* policy: a lock key may be evicted
};

const char* describe(node_warning warning) noexcept;

// Bytes of a node's maxmemory policy name kept for node(i) (Redis's longest
// has 15; a longer one is cut).
constexpr std::size_t node_policy_capacity = 24;

// A node as the client sees it now.
//
// error and message are the latest reason, whichever came last: a connection
// that failed or was dropped (error stays until a new connection's set-up
// succeeds, which resets it to none), or, on a ready connection, an error
// reply to a lock request (server_error, with the server's text; the
// connection is kept). The next lock reply that is not an error resets
// server_error to none: it tells the state of the latest request, not a
// history. A NOSCRIPT that the lock retries with EVAL may show until the
// retry's reply comes.
//
// warning and maxmemory_policy come from the set-up of the current (or last)
// connection: INFO memory, read again on every new connection. A node whose
// INFO is refused (an ACL without +info), or too long to buffer, is not
// failed for it: its policy is then empty and it has no warning.
struct node_info {
    node_state state = node_state::down;
    node_error error = node_error::none;
    int code = 0;      // the platform's error number behind the error, if any
    str_view message;  // the server's error text (truncated), or empty
    node_warning warning = node_warning::none;
    str_view maxmemory_policy;  // as INFO memory gave it (truncated), or empty: unknown
};

// The outcome of a blocking operation.
struct op_result {
    client_errc error = client_errc::ok;   // not ok: see client_errc
    lock_errc lock_error = lock_errc::ok;  // when error is lock_rejected
    lock_event event;                      // ok: the event that ended the operation
};

struct watchdog_options {
    bool enabled = true;
    // While held, renew this long after the last acquire or renew. Zero: ttl / 3.
    duration renew_every{};
};

class client_base;
class client_lock;

// Told of every event of a lock: acquired, busy, failed, renewed, released,
// lost, and renew_failed (a renew round missed its quorum; the lock is retried
// and kept, but at risk until the validity deadline). An acquisition the
// machine could not even start (no random bytes) is reported as failed.
using lock_callback = void (*)(void* ctx, client_lock& lock, const lock_event& event);

// Sees the reply to command() while its bytes are valid (copy what you keep).
using reply_callback = void (*)(void* ctx, const resp_node* nodes, std::size_t count);

namespace detail {

struct pending_reply {
    client_lock* lock = nullptr;  // nullptr: a set-up step, `tag` says which
    std::uint32_t tag = 0;
};

struct connection {
    node_address address;
    int fd = -1;
    node_state state = node_state::down;
    node_error error = node_error::none;
    int code = 0;
    std::uint8_t setup_step = 0;     // next set-up request to send
    std::uint8_t setup_pending = 0;  // set-up replies still expected
    std::uint8_t failures = 0;       // consecutive failed attempts, for the backoff
    unsigned attempt = 0;            // which resolved address to try
    bool want_write = false;
    instant deadline = instant::never();  // connect / set-up deadline, or end of backoff
    instant progress_at;                  // last reply, or when the pipeline was last empty
    std::size_t rx_size = 0;
    std::size_t tx_size = 0;
    std::size_t message_size = 0;
    // Bytes still to throw away of a set-up INFO reply too long for rx.
    std::size_t skip = 0;
    node_warning warning = node_warning::none;
    std::uint8_t policy_size = 0;
    reply_fifo<pending_reply, EDGELOCK_CLIENT_PIPELINE> fifo;  // requests in flight
    char rx[EDGELOCK_CLIENT_RX_BUFFER];
    char tx[EDGELOCK_CLIENT_TX_BUFFER];
    char message[EDGELOCK_CLIENT_MESSAGE];
    char policy[node_policy_capacity];
};

}  // namespace detail

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
    // Nodes whose connection is set up and usable now.
    std::uint8_t ready_count() const noexcept;

    // Connects every node that is down or whose backoff has ended, and returns
    // once each is ready or has failed (or is in backoff), or at `deadline`.
    // Returns how many nodes are ready. Optional: operations connect on demand,
    // but wait for a node's set-up only up to the lock's node_timeout; over a
    // slow link call connect() once after configure().
    // With `enough` above 0, returns as soon as that many nodes are ready (a
    // quorum, say), leaving the rest to finish in the background.
    std::uint8_t connect(instant deadline, std::uint8_t enough = 0) noexcept;

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

    // --- event-loop API ---
    // Fills up to `capacity` entries with the fds to watch and the readiness
    // wanted (port::want_read / want_write); returns how many there are (may
    // exceed capacity: pass node_count() entries and it never does).
    std::size_t wanted(port::wait_entry* out, std::size_t capacity) const noexcept;
    // When the client must be called next: on_timeout() at this instant.
    instant next_deadline() const noexcept;
    // The fd is ready (port::want_read / want_write / ready_error bits). With
    // several ready fds from one wait, prefer the batch form: the single form
    // services the client after each fd, which may open a connection that
    // reuses the number of an fd still in your batch (harmless: a stale
    // report is recognised, but it costs a system call).
    void on_ready(int fd, std::uint8_t events) noexcept;
    void on_ready(const port::wait_entry* entries, std::size_t count) noexcept;
    // Any time at or after next_deadline(); an early call does nothing harmful.
    void on_timeout() noexcept;

    // For the locks' random draws and the backoff jitter: port::random_bytes.
    static random_source system_random() noexcept;

protected:
    client_base(detail::connection* conns, std::uint8_t capacity) noexcept
        : conns_(conns), capacity_(capacity) {}
    ~client_base();
    // Closes every connection and detaches every lock; client<N> calls it
    // while its connections still exist.
    void shutdown() noexcept;

private:
    friend class client_lock;

    void link(client_lock& l) noexcept;
    void unlink(client_lock& l) noexcept;
    void service(instant now) noexcept;
    client_errc step(instant until) noexcept;
    void handle_ready(int fd, std::uint8_t events, instant now) noexcept;
    void start_connect(std::uint8_t n, instant now) noexcept;
    void try_addresses(std::uint8_t n, instant now) noexcept;
    void connect_ready(std::uint8_t n, instant now) noexcept;
    void connected(std::uint8_t n, instant now) noexcept;
    void drop(std::uint8_t n, instant now) noexcept;
    void fail(std::uint8_t n, node_error why, int code, instant now) noexcept;
    void fail_message(std::uint8_t n, node_error why, const resp_node* nodes, std::size_t count,
                      instant now) noexcept;
    void fill_setup(std::uint8_t n, instant now) noexcept;
    void setup_reply(std::uint8_t n, std::uint32_t step, const resp_node* nodes, std::size_t count,
                     instant now) noexcept;
    void fill(std::uint8_t n, instant now) noexcept;
    void transmit(std::uint8_t n, instant now) noexcept;
    void read(std::uint8_t n, instant now) noexcept;
    void process_replies(std::uint8_t n, instant now) noexcept;
    bool skip_info(std::uint8_t n, std::size_t pos, instant now) noexcept;
    void pump_events(client_lock& l, instant now) noexcept;
    void notify(client_lock& l, const lock_event& ev) noexcept;
    void begin(client_lock& l, instant now) noexcept;
    bool push_pending(std::uint8_t n, client_lock* l, std::uint32_t tag, instant now) noexcept;
    bool node_settled(std::uint8_t n) const noexcept;
    bool all_settled() const noexcept;
    bool node_wanted(std::uint8_t n) const noexcept;
    bool lock_active(const client_lock& l) const noexcept;

    detail::connection* conns_;
    std::uint8_t capacity_;
    std::uint8_t node_count_ = 0;
    bool in_callback_ = false;
    bool connect_wanted_ = false;
    client_options options_;
    client_lock* locks_ = nullptr;  // intrusive list of attached locks
    std::size_t bad_url_index_ = 0;
    url_errc bad_url_error_ = url_errc::ok;
    resp_node nodes_[EDGELOCK_CLIENT_REPLY_NODES];  // the reply being handled
    reply_callback command_fn_ = nullptr;           // command() waiting for its reply
    void* command_ctx_ = nullptr;
};

// A client with room for N nodes.
template <std::uint8_t N>
class client : public client_base {
    static_assert(N >= 1 && N <= lock_max_nodes, "a client has 1..lock_max_nodes nodes");

public:
    client() noexcept : client_base(storage_, N) {}
    ~client() { shutdown(); }

private:
    detail::connection storage_[N];
};

// A lock on a client: the lock machine, its watchdog, and its callback. Attach
// once; the lock is detached (and its requests forgotten) by detach() or its
// destructor, which do not release it: release first.
class client_lock {
public:
    client_lock() noexcept = default;
    ~client_lock() { detach(); }
    client_lock(const client_lock&) = delete;
    client_lock& operator=(const client_lock&) = delete;

    // Configures the machine for every node of the client. The name's bytes
    // (and options.owner's) are not copied: keep them alive while attached.
    // lock_rejected: see lock_error().
    client_errc attach(client_base& c, str_view name, const lock_options& options = {},
                       const watchdog_options& watchdog = {}) noexcept;
    void detach() noexcept;
    bool attached() const noexcept { return client_ != nullptr; }
    lock_errc lock_error() const noexcept { return lock_error_; }

    void set_callback(lock_callback fn, void* ctx) noexcept {
        callback_ = fn;
        callback_ctx_ = ctx;
    }

    // --- blocking API: drives the client until the operation ends ---
    op_result try_acquire() noexcept;           // one round
    op_result acquire(duration wait) noexcept;  // rounds until acquired or `wait` passed
    op_result renew() noexcept;                 // renewed, or lost
    op_result release() noexcept;               // released; not_held when it was lost meanwhile

    // Takes over an acquisition made elsewhere by its token (see lock::resume),
    // to renew or release it. Plain and fenced modes.
    client_errc resume(const owner_token& token) noexcept;

    // --- event-loop API: starts the operation; the callback tells the outcome ---
    // The request goes out at the client's next call (on_timeout() at
    // next_deadline(), which is now, or on_ready()).
    client_errc start_acquire(std::uint32_t max_tries, duration wait) noexcept;
    client_errc start_renew() noexcept;
    // Also cancels an acquisition that is waiting for its nodes to connect.
    client_errc start_release() noexcept;

    // Held now: the machine says held and the validity deadline is ahead.
    bool held() const noexcept;
    lock_state state() const noexcept { return machine_.state(); }
    instant validity_deadline() const noexcept { return machine_.validity_deadline(); }
    std::uint64_t fence() const noexcept { return machine_.fence(); }
    const owner_token& token() const noexcept { return machine_.token(); }
    const lock& machine() const noexcept { return machine_; }
    // The last event of the lock (lost, renew_failed...) and when it came.
    const lock_event& last_event() const noexcept { return last_event_; }

private:
    friend class client_base;

    enum class op : std::uint8_t { none, acquire, renew, release };

    // max_tries and wait: the retry policy of an acquire, kept only if it starts.
    client_errc start(op kind, std::uint32_t max_tries = 1, duration wait = duration{}) noexcept;
    op_result run(op kind, std::uint32_t max_tries = 1, duration wait = duration{}) noexcept;
    void abandon() noexcept;

    lock machine_;
    client_base* client_ = nullptr;
    client_lock* next_ = nullptr;
    lock_callback callback_ = nullptr;
    void* callback_ctx_ = nullptr;
    watchdog_options watchdog_;
    instant renew_at_ = instant::never();
    lock_event last_event_;
    lock_errc lock_error_ = lock_errc::ok;
    op pending_ = op::none;        // started by the user, waiting for connections
    op running_ = op::none;        // handed to the machine, outcome not yet known
    op_result* waiter_ = nullptr;  // a blocking call waiting for the running operation
    duration ttl_{};
    duration node_timeout_{};
    instant pending_since_;  // when pending_ was set
    std::uint32_t max_tries_ = 1;
    duration wait_{};
};

}  // namespace edgelock
