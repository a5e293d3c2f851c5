// The set-up of a new connection as a sans-I/O machine: which requests to
// send, what each reply means, and whether the node is ready or failed.
//
// The sequence, pipelined (each request skipped when it has nothing to do):
// HELLO 3 [AUTH] [SETNAME] (or AUTH), SELECT, CLIENT SETNAME, INFO
// replication (a replica fails the node; a Cluster's, which redirects every
// lock request to its master, does not), INFO memory (an evicting policy is
// a warning), INFO server (the version: Redis >= 7 takes the one-command
// acquire), CLIENT TRACKING ON (RESP3 only: key changes are pushed),
// SCRIPT LOAD of each lock script. The driver runs one per
// connection; a test runs one with no socket at all:
//
//   edgelock::handshake h;
//   h.start(address, options);
//   std::uint8_t request;
//   std::size_t n = h.poll_request(buf, sizeof buf, request);   // 0: nothing now
//   ... send buf, decode the reply to it ...
//   handshake_status s = h.on_reply(request, nodes, count, report);
//
// A failure's reason (and the server's text) goes into the node_report passed
// in, as does what INFO memory found; the report outlives the handshake.
//
// With client_options::resp3, a server without HELLO (Redis before 6, or a
// proxy that speaks RESP2 only) is spoken to in RESP2 instead: its "unknown
// command" (or NOPROTO) to HELLO is not a failure, the AUTH and CLIENT
// SETNAME that HELLO carried go as RESP2 commands, and report.resp2 is set.
// When HELLO carries a password, the requests after it wait for its answer
// (one round trip), since such a server answers them NOAUTH.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_config.hpp"
#include "edgelock/client_errors.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/resp.hpp"

namespace edgelock {

struct client_options;

namespace detail {

// How the client sees one node: the latest reason it failed, what its set-up
// warned of. node(i) shows it.
struct node_report {
    node_error error = node_error::none;
    int code = 0;  // the platform's error number behind error, if any
    node_warning warning = node_warning::none;
    std::uint8_t policy_size = 0;
    std::uint8_t version_size = 0;
    bool set_nx_get = false;   // INFO server: the node takes SET NX PX GET
    bool tracking = false;     // tracking accepted (RESP3, or redirected): waiters are told
    bool resp2 = false;        // RESP3 was asked for, the server has no HELLO
    bool tracks_keys = false;  // INFO server: Redis 6 or later, CLIENT TRACKING is there
    std::size_t message_size = 0;
    char message[EDGELOCK_CLIENT_MESSAGE];
    char policy[node_policy_capacity];
    char version[node_version_capacity];

    // The server's text behind an error, control bytes made visible.
    void set_message(str_view text) noexcept;
    void append_message(str_view text) noexcept;
};

enum class handshake_status : std::uint8_t {
    pending,  // requests still to send or replies still due
    ready,    // every reply in: the connection may carry lock requests
    failed,   // see the report's error (and message)
};

class handshake {
public:
    // The set-up requests, in the order they go out; `request` names them.
    enum : std::uint8_t {
        auth = 0,  // HELLO 3 [AUTH] [SETNAME], or AUTH
        select,
        setname,
        info_replication,
        info_memory,
        info_server,
        tracking,  // CLIENT TRACKING ON (RESP3 with client_options::notify)
        script,    // + i for lock_scripts_all[i]
    };

    // Begins the sequence for a node at `address` with the client's options
    // (credentials, client name, RESP3). Both must outlive the handshake.
    void start(const node_address& address, const client_options& options) noexcept;

    // Writes the next request into buf and names it in `request`; returns its
    // size, or 0 when none is due now: all were sent, or the next does not fit
    // (call again once the buffer has drained).
    std::size_t poll_request(char* buf, std::size_t capacity, std::uint8_t& request) noexcept;

    // The reply to `request` (nodes == nullptr, count 0: a reply that was not
    // kept, such as an INFO too long to buffer: nothing is learnt from it).
    handshake_status on_reply(std::uint8_t request, const resp_node* nodes, std::size_t count,
                              detail::node_report& report) noexcept;

    handshake_status status() const noexcept { return status_; }
    // True when the reply to `request` may be skipped unread (INFO).
    static bool reply_optional(std::uint8_t request) noexcept {
        return request == info_replication || request == info_memory || request == info_server;
    }

private:
    handshake_status fail(node_error why, const resp_node* nodes, std::size_t count,
                          detail::node_report& report) noexcept;

    bool speaks_resp3() const noexcept;

    const node_address* address_ = nullptr;
    const client_options* options_ = nullptr;
    std::uint8_t next_ = 0;         // the next request to send
    std::uint8_t replies_due_ = 0;  // sent, reply not yet in
    handshake_status status_ = handshake_status::pending;
    // HELLO 3 carrying AUTH is out: nothing more goes until it is answered,
    // since a server without HELLO would answer the rest NOAUTH.
    bool hello_hold_ = false;
    bool resp2_ = false;         // HELLO is unknown here: RESP2 from now on
    bool setname_late_ = false;  // RESP2 after HELLO: CLIENT SETNAME still to send
};

// The set-up of a node's subscription connection, which tells RESP2 waiters
// (see src/client/subscription.cpp): [AUTH], CLIENT ID and SUBSCRIBE
// __redis__:invalidate, written into buf together. Returns their size (0: no
// room) and, in `replies`, how many replies are due.
std::size_t subscription_setup(char* buf, std::size_t capacity, const node_address& address,
                               const client_options& options, std::uint8_t& replies) noexcept;

// The channel the server publishes invalidations on for a RESP2 connection
// that others' tracking redirects to.
constexpr str_view invalidation_channel() noexcept {
    return str_view("__redis__:invalidate", 20);
}

}  // namespace detail
}  // namespace edgelock
