// The set-up of a new connection as a sans-I/O machine: which requests to
// send, what each reply means, and whether the node is ready or failed.
//
// The sequence, pipelined, each request skipped when it has nothing to do:
// HELLO 3 (or HELLO 2 with RESP2) [AUTH] [SETNAME], whose reply says the
// server's role (a replica fails the node; a Cluster's, which redirects every
// lock request to its master, does not) and version (Redis >= 7 takes the
// one-command acquire); SELECT; CONFIG GET maxmemory* (an evicting policy is
// a warning); CLIENT TRACKING ON (RESP3 only: key changes are pushed). INFO
// goes only where those were refused: INFO memory for a refused CONFIG GET,
// INFO replication and server for a server without HELLO. No script is
// loaded: the lock machine sends EVALSHA and falls back to EVAL on NOSCRIPT,
// so a server's script cache serves every run after the first.
//
// The lock requests may follow the set-up's in the same flight
// (sent_all()): their replies then come after the set-up's, and refused()
// says whether the node failed a check in between, so that what they took is
// undone (the driver's pipeline.cpp). The driver runs one per connection; a
// test runs one with no socket at all:
//
//   edgelock::handshake h;
//   h.start(address, options);
//   std::uint8_t request;
//   std::size_t n = h.poll_request(buf, sizeof buf, request);   // 0: nothing now
//   ... send buf, decode the reply to it ...
//   handshake_status s = h.on_reply(request, nodes, count, report);
//
// A failure's reason (and the server's text) goes into the node_report passed
// in, as does what the checks found; the report outlives the handshake.
//
// A server without HELLO (Redis before 6, or a proxy that speaks RESP2 only)
// is spoken to in RESP2: its "unknown command" (or NOPROTO) to HELLO is not a
// failure; AUTH and CLIENT SETNAME go as RESP2 commands, INFO says its role
// and version, and report.resp2 is set when RESP3 was asked for. When the
// HELLO carried a password, what followed it was answered NOAUTH: those
// replies are passed over and the requests sent again after the AUTH (lock
// requests too: the driver sends them again). On such a server the role is
// known only after the first lock request's reply: a writable replica there
// is found one reply late (its key, if one was taken, expires with the ttl).
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_config.hpp"
#include "edgelock/client_errors.hpp"
#include "edgelock/detail/server_info.hpp"
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
    std::uint8_t server_size = 0;
    bool set_nx_get = false;   // the server and version: the node takes SET NX PX GET
    bool tracking = false;     // waiters can be told (RESP3, or a RESP2 subscription is up)
    bool resp2 = false;        // RESP3 was asked for, the server has no HELLO
    bool tracks_keys = false;  // Redis 6 or later, or Valkey: CLIENT TRACKING is there
    std::size_t message_size = 0;
    char message[EDGELOCK_CLIENT_MESSAGE];
    char policy[node_policy_capacity];
    char version[node_version_capacity];
    char server[node_server_capacity];

    // The server's text behind an error, control bytes made visible.
    void set_message(str_view text) noexcept;
    void append_message(str_view text) noexcept;
    // The server and its own version, as HELLO or INFO gave them (cut to fit).
    void keep_server(const server_info& info) noexcept;
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
        auth = 0,  // HELLO 3|2 [AUTH] [SETNAME], or AUTH after HELLO was refused
        select,
        setname,           // CLIENT SETNAME: a server without HELLO
        config_memory,     // CONFIG GET maxmemory*
        info_memory,       // a server that refused CONFIG GET
        info_replication,  // a server without HELLO, or a replica's master
        info_server,       // a server without HELLO
        request_count,
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
    // Every request due so far is written, and none of the replies in has
    // asked for another: lock requests may follow (after a failure, only
    // the cleanups of what went before).
    bool sent_all() const noexcept {
        return status_ == handshake_status::failed || (todo_ == 0 && stale_ == 0);
    }
    // The node failed a check, or will once its last reply is in (a replica,
    // whose master INFO is being asked): a lock request that followed must
    // not count, and what it took is undone.
    bool refused() const noexcept { return status_ == handshake_status::failed || doomed_; }
    // What a lock request sent now may take for granted: HELLO was not
    // refused (so SET NX PX GET is worth a try: an older server's syntax error
    // sends the script instead).
    bool hello_refused() const noexcept { return resp2_ || hello_refused_; }
    // True when the reply to `request` may be skipped unread (INFO).
    static bool reply_optional(std::uint8_t request) noexcept {
        return request == info_replication || request == info_memory || request == info_server;
    }

private:
    handshake_status fail(node_error why, const resp_node* nodes, std::size_t count,
                          detail::node_report& report) noexcept;
    void read_info(std::uint8_t request, const resp_node* nodes, std::size_t count,
                   detail::node_report& report) noexcept;
    void read_hello(const resp_node* nodes, std::size_t count,
                    detail::node_report& report) noexcept;
    void fall_back(bool had_password) noexcept;

    bool speaks_resp3() const noexcept;

    const node_address* address_ = nullptr;
    const client_options* options_ = nullptr;
    std::uint16_t todo_ = 0;        // requests still to send, one bit each
    std::uint8_t replies_due_ = 0;  // sent, reply not yet in
    std::uint8_t stale_ = 0;        // replies to pass over: NOAUTH to what followed HELLO
    handshake_status status_ = handshake_status::pending;
    bool resp2_ = false;          // RESP3 was asked, HELLO is unknown here: RESP2 from now on
    bool hello_refused_ = false;  // HELLO is unknown here (RESP2 asked)
    bool doomed_ = false;         // a replica: fails once INFO says whose
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
