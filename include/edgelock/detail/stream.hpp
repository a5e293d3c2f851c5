// One stream endpoint of the driver: a socket, the transport session over it,
// its receive buffer and the decoder that resumes a reply split across reads.
// The lock connection, a RESP2 node's subscription and a Sentinel node's
// watch are each one; the read loop that turns bytes into whole messages
// (src/client/stream_read.hpp) is written once, for all three. What each
// connection sends and what it makes of a message stays with its owner.
// Internal to the driver, in a header only because client<N, M> holds these
// by value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_errors.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/resp_decoder.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/transport.hpp"

namespace edgelock {
namespace detail {

enum class stream_phase : std::uint8_t {
    closed,      // no socket
    connecting,  // the socket's connect is under way
    opening,     // the transport's open() is under way (a TLS handshake)
    open,        // bytes flow
};

// A whole message the read loop took off the stream. nodes is nullptr when
// it has more nodes than the array holds (its bytes are still there).
struct stream_message {
    const char* data = nullptr;
    std::size_t size = 0;
    const resp_node* nodes = nullptr;
    std::size_t count = 0;
    bool push = false;  // a RESP3 push, not a reply
};

// How a read ended: everything there was got read (drained), the owner
// closed or replaced the stream from a message (stopped), or the stream
// failed (the owner closes it, with the reason this says).
enum class read_end : std::uint8_t { drained, stopped, io_failed, too_large, malformed };

class stream {
public:
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;

    int fd() const noexcept { return fd_; }
    stream_phase phase() const noexcept { return phase_; }
    bool is_open() const noexcept { return phase_ == stream_phase::open; }
    // Counts close(): a loop over messages stops when it changed.
    std::uint32_t generation() const noexcept { return generation_; }
    // A byte came in since the socket was opened.
    bool heard() const noexcept { return heard_; }
    // Bytes held that no message has taken yet.
    std::size_t held() const noexcept { return rx_size_; }

    // A socket from port::connect(): `connected` when it is up already (then
    // open() follows at once), else connecting until connect_ready().
    void attach(int fd, bool connected) noexcept;
    // The socket said it is ready for what wants() asked while connecting:
    // the connect's outcome (in_progress for a stale report).
    port::net_result finish_connect() noexcept;
    // Begins the transport's session: ok (open), in_progress (opening:
    // proceed() when wants() is met), or the failure.
    port::net_result open(transport& t, const session_peer& peer) noexcept;
    port::net_result proceed(transport& t) noexcept;
    // What to wait for: while connecting, writable; while opening, what the
    // transport says; once open, readable, and writable when `write`.
    std::uint8_t wants(const transport& t, bool write) const noexcept;
    // Whether `events` answer what wants() asked during connecting or opening.
    bool answers(const transport& t, std::uint8_t events) const noexcept;

    port::net_result send(transport& t, const void* data, std::size_t size) noexcept;

    // Why the transport failed the session (none when it has no better
    // reason than the socket's), and its text.
    node_error failure(const transport& t) const noexcept;
    str_view failure_text(const transport& t) const noexcept;

    // Closes the session and the socket, forgets what was buffered.
    void close(transport& t) noexcept;

    // The read loop (stream_read.hpp): reads what the transport has, hands
    // each whole message to the handler, keeps a message's first part for
    // the next read, and stops when the socket has nothing more.
    template <class Handler>
    read_end read(transport& t, resp_node* nodes, std::size_t node_capacity, Handler& h,
                  port::net_result& io) noexcept;

protected:
    stream(char* rx, std::size_t capacity) noexcept : rx_(rx), capacity_(capacity) {}
    ~stream() = default;

private:
    // The messages in rx_ from the start; how many bytes they took.
    resp_limits decoder_limits() const noexcept;
    template <class Handler>
    read_end decode(resp_node* nodes, std::size_t node_capacity, Handler& h,
                    std::size_t& used) noexcept;

    char* rx_;
    std::size_t capacity_;
    std::size_t rx_size_ = 0;
    std::size_t skip_ = 0;  // bytes still to throw away of a message too long to keep
    int fd_ = -1;
    session_id session_ = no_session;
    stream_phase phase_ = stream_phase::closed;
    bool heard_ = false;
    std::uint32_t generation_ = 0;
    resp_decoder decoder_;
};

// A stream with its receive buffer.
template <std::size_t Capacity>
class buffered_stream : public stream {
public:
    buffered_stream() noexcept : stream(rx_, Capacity) {}

private:
    char rx_[Capacity];
};

}  // namespace detail
}  // namespace edgelock
