// The driver's error codes and reports: what a call returns (client_errc,
// op_result), and how the client sees each node (node_info: its state, the
// latest reason it failed, what its set-up warned of). Part of client.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/lock.hpp"
#include "edgelock/str_view.hpp"

namespace edgelock {

// Local misuse and set-up errors, returned by the call that made them. A call
// that returns one changed nothing, except where noted (deadline, wait_failed).
enum class client_errc : std::uint8_t {
    ok = 0,
    not_configured,         // configure() has not succeeded
    bad_node_count,         // 0 nodes, more than the client has room for, or above lock_max_nodes
    bad_url,                // a node URL did not parse; see bad_url_index / bad_url_error
    tls_not_built_in,       // a rediss:// URL, but options.via cannot do TLS (see bad_url_index)
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

enum class node_state : std::uint8_t {
    down,        // no connection; a new one is made on the next operation
    backoff,     // the last attempt failed; no new one before the backoff ends
    resolving,   // the host name is being looked up
    connecting,  // TCP (or Unix socket) connect in progress
    handshake,   // HELLO / AUTH / SELECT / CONFIG GET / INFO / CLIENT TRACKING sent
    ready,
};

const char* describe(node_state state) noexcept;

// Why a node's connection failed or was dropped (the latest reason).
enum class node_error : std::uint8_t {
    none = 0,
    refused,           // connection refused (or the Unix socket does not exist)
    unreachable,       // no route to host
    resolve_failed,    // the host name did not resolve (or no lookup could be started)
    resolve_timeout,   // the host name did not resolve within connect_timeout (or an
                       // earlier lookup of this connection's is still unanswered)
    connect_timeout,   // connect or set-up took longer than connect_timeout
    auth_failed,       // AUTH / HELLO AUTH refused (see message)
    select_failed,     // SELECT refused (see message)
    setup_failed,      // another set-up refusal: LOADING, max clients... (see message)
    protocol_error,    // a malformed reply
    reply_too_large,   // a reply longer than EDGELOCK_CLIENT_RX_BUFFER
    unexpected_reply,  // a reply nobody asked for, or of the wrong kind
    closed,            // the server closed the connection
    reset,             // the connection broke (reset, broken pipe)
    stalled,           // no reply for stall_timeout
    io_error,          // any other socket error (see code)
    replica,           // HELLO or INFO says replica (message: its master, once INFO says)
    server_error,      // the server refused a lock request: READONLY, OOM, NOPERM... (see
                       // message); the connection stays up
    // TLS (a transport whose secure() is true; message: the TLS library's text).
    // A TLS handshake that outlasts connect_timeout is connect_timeout with a
    // message that starts "TLS handshake" (and says what it waited for).
    tls_handshake_failed,  // the handshake failed otherwise: no common cipher or version,
                           // the server refused our certificate (or wanted one), an alert
    tls_untrusted,         // the server's certificate chain leads to no trusted CA
    tls_expired,           // the server's certificate (or one of its chain) has expired
                           // or is not valid yet
    tls_name_mismatch,     // the certificate is not for the host (or server_name) we asked
    tls_not_tls,           // the server does not speak TLS: a plaintext port
    tls_session_failed,    // after the handshake: a fatal alert, or a record that is not
                           // TLS or does not decrypt (a broken or meddled-with stream)
    // redis-sentinel://: no sentinel said where the master is (message: the
    // last one's reason: unreachable, an unknown master name, a refusal).
    sentinel_failed,
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
constexpr std::size_t node_version_capacity = 24;
// Bytes of a server's name kept for node(i) ("redis", "valkey"; a longer one is cut).
constexpr std::size_t node_server_capacity = 16;

// A node as the client sees it now.
//
// error and message are the latest reason, whichever came last: a connection
// that failed or was dropped (error stays until a new connection's set-up
// succeeds, which resets it to none), or, on a ready connection, an error
// reply to a lock request (server_error, with the server's text; the
// connection is kept). The next lock reply that is not an error resets
// server_error to none: it tells the state of the latest request, not a
// history. A NOSCRIPT that the lock retries with EVAL is no reason: the
// retry's reply is.
//
// warning and maxmemory_policy come from the set-up of the current (or last)
// connection: CONFIG GET maxmemory* (or INFO memory where CONFIG is
// refused), read again on every new connection. A node that refuses both (an
// ACL), or whose INFO is too long to buffer, is not failed for it: its policy
// is then empty and it has no warning.
struct node_info {
    node_state state = node_state::down;
    node_error error = node_error::none;
    int code = 0;      // the platform's error number behind the error, if any
                       // (resolve_failed: the resolver's own, EAI_* on POSIX;
                       // errno when the message says no lookup could start)
    str_view message;  // the server's error text (truncated), or empty
    node_warning warning = node_warning::none;
    str_view maxmemory_policy;  // as CONFIG GET or INFO gave it (truncated), or empty
    // What the server is ("redis", "valkey": HELLO's server, INFO's
    // server_name) and its own version (HELLO's version; INFO's
    // valkey_version on Valkey, redis_version on Redis), as given (cut to
    // fit); empty: unknown.
    str_view server;
    str_view version;
    // The node tells of changes to the keys its waiters wait for
    // (client_options::notify, CLIENT TRACKING accepted): pushed on the lock
    // connection over RESP3, published to the node's subscription over RESP2.
    // false: they poll (notify off, Redis before 6, refused, or a RESP2
    // subscription down and being made again).
    bool tracking = false;
    // client_options::resp3 was asked for, but the server has no HELLO: RESP2.
    bool resp2 = false;
};

// The outcome of a blocking operation.
struct op_result {
    client_errc error = client_errc::ok;   // not ok: see client_errc
    lock_errc lock_error = lock_errc::ok;  // when error is lock_rejected
    lock_event event;                      // ok: the event that ended the operation
};

}  // namespace edgelock
