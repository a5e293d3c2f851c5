// A RESP2 node's second connection, subscribed to __redis__:invalidate, to
// which the lock connection's CLIENT TRACKING redirects: the part of the
// driver that makes it, keeps it and hears it (src/client/subscription.cpp).
// It goes to the address the lock connection reached (tracking redirects
// only within one server), so it looks nothing up.
//
// Its owner drives it with service() on every pass and on_ready() when its
// fd is ready, and reads what happened from the sub_events they return; each
// call gets what it needs of the client in a sub_link. Invalidations go to
// the link's push sink as they are read. Tested alone in
// tests/unit/test_subscription.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_config.hpp"
#include "edgelock/detail/stream.hpp"
#include "edgelock/detail/timer_table.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/time.hpp"
#include "edgelock/token.hpp"
#include "edgelock/transport.hpp"

namespace edgelock {

struct client_options;

namespace detail {

enum class sub_phase : std::uint8_t {
    off,         // not wanted (RESP3, notify off, an old server) or not begun
    connecting,  // the socket, or the transport's handshake, is under way
    setup,       // [AUTH], CLIENT ID and SUBSCRIBE are out
    listening,   // subscribed: id() is what the lock connection redirects to
    backoff,     // failed: again once its timer ends
    refused,     // the server said no: not again while the lock connection lasts
};

// What a call changed, as bits of a std::uint8_t.
constexpr std::uint8_t sub_none = 0;
constexpr std::uint8_t sub_listening =
    1;  // subscribed: the lock connection redirects its tracking to id()
constexpr std::uint8_t sub_lost = 2;    // closed: the node's waiters poll until it is back
constexpr std::uint8_t sub_missed = 4;  // what the server said was lost: every waiter tries again

// Where a published message goes: the client wakes the locks it names, as
// told by `node`.
struct push_sink {
    void (*fn)(void* ctx, std::uint8_t node, const resp_node* nodes, std::size_t count,
               instant now) = nullptr;
    void* ctx = nullptr;
    std::uint8_t node = 0;
};

// What the subscription needs of its client for one call.
struct sub_link {
    transport* via = nullptr;
    const client_options* options = nullptr;
    const node_address* address = nullptr;  // the node's (credentials, TLS)
    port::endpoint where;                   // the numeric address the lock connection reached
    str_view named;                         // the host as its URL names it (a TLS server name)
    random_source* random = nullptr;        // the backoff's jitter
    resp_node* nodes = nullptr;             // where messages are decoded
    std::size_t node_capacity = 0;
    push_sink push;
};

class subscription {
public:
    subscription() noexcept = default;
    subscription(const subscription&) = delete;
    subscription& operator=(const subscription&) = delete;

    sub_phase phase() const noexcept { return phase_; }
    // CLIENT ID of the subscribed connection; 0 until known.
    std::int64_t id() const noexcept { return id_; }
    int fd() const noexcept { return io_.fd(); }
    std::uint8_t wants(const transport& t) const noexcept;
    // When service() has work: instant::never() when it has none. `wanted`:
    // the node wants one (a ready RESP2 node that tracks keys, notify on).
    instant next_deadline(bool wanted, instant now) const noexcept;

    // Made, timed out, made again after a backoff.
    std::uint8_t service(bool wanted, const sub_link& link, instant now) noexcept;
    std::uint8_t on_ready(std::uint8_t events, const sub_link& link, instant now) noexcept;
    // The lock connection is gone: so is what it redirected here. Off, to
    // be made anew without a backoff once the node is ready again.
    void shut(transport& t) noexcept;

    // The read loop's handler (stream_read.hpp).
    void on_message(const stream_message& m) noexcept;
    std::size_t oversize(const char*, std::size_t) noexcept { return 0; }
    void skipped() noexcept {}

private:
    enum class timer : std::uint8_t { due };  // connecting, setup: deadline; backoff: its end

    std::uint8_t connect(const sub_link& link, instant now) noexcept;
    std::uint8_t opened(port::net_result r, const sub_link& link, instant now) noexcept;
    std::uint8_t send_setup(const sub_link& link, instant now) noexcept;
    std::uint8_t read(const sub_link& link, instant now) noexcept;
    // Closes it; `refused`: for good (until shut()), else again after a backoff.
    std::uint8_t close(bool refused, const sub_link& link, instant now) noexcept;
    void close_io(transport& t) noexcept;

    buffered_stream<EDGELOCK_CLIENT_SUB_BUFFER> io_;
    timer_table<timer, 1> timers_;
    sub_phase phase_ = sub_phase::off;
    bool subscribed_ = false;       // SUBSCRIBE confirmed
    std::uint8_t replies_due_ = 0;  // of the set-up
    std::uint8_t failures_ = 0;     // consecutive, for the backoff
    std::uint16_t sent_ = 0;        // bytes of the set-up sent
    std::uint16_t setup_size_ = 0;  // and its whole size (0: not written yet)
    std::int64_t id_ = 0;
    // Set by on_message() during a read, for read() to act on.
    std::uint8_t events_ = sub_none;
    bool refused_ = false;
    const sub_link* link_ = nullptr;
    instant now_;
};

}  // namespace detail
}  // namespace edgelock
