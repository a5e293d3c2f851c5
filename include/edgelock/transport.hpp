// The transport: how a connection's bytes travel once its socket is connected.
//
// The driver opens the socket through the port (port::connect), then hands it
// to a transport and from then on reads and writes only through it; nothing
// above (the set-up handshake, the pipeline, the scheduler) knows which one it
// talks to, as mbedTLS's I/O callbacks keep a TLS session apart from its
// socket. The plain transport (plain_transport(), the default) is the socket
// itself; a TLS transport wraps a session around it, and hands the driver a
// handle to it (session_id) that the driver passes back on every call.
//
// Every call returns at once: partial transfers and would_block are normal, as
// with port::send and port::recv. A transport allocates nothing after its own
// set-up and throws nothing. include/edgelock/tls.hpp says what a TLS
// transport (edgelock::tls_mbedtls, or a platform's own stack) does with each
// call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_errors.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/str_view.hpp"

namespace edgelock {

// A session a transport opened over one connection's socket: a handle,
// valid from open() until close(). The driver keeps it beside the socket and
// passes it back on every call; nothing else about a session is the driver's
// business (mbedTLS's set_bio, turned around).
using session_id = std::uint16_t;
constexpr session_id no_session = 0xffff;

// What a session is opened to.
struct session_peer {
    // The host the socket went to, as named (the URL's, a sentinel's, or the
    // master a sentinel or a Cluster map named): the server name a TLS
    // session sends and checks the certificate against, unless the
    // transport's options set one.
    str_view host;
    bool tls = false;          // the node speaks TLS (rediss://, rediss-sentinel://)
    bool unix_socket = false;  // a Unix socket (never TLS)
};

// Every member is pure or defined here, so the class has no key function:
// code built with RTTI can derive from it while the library is built without.
class transport {
public:
    // The socket `fd` to `peer` is connected: begin a session. `out` is set
    // to the session's handle, which the caller closes (close()) when it is
    // done with the socket, whatever open() returned; it stays no_session
    // when the transport has no room for another session (bad_argument).
    // ok: bytes may flow. in_progress: a session handshake is under way;
    // call proceed() when the socket is ready as wants() says. Anything else:
    // the connection failed (failure() may say why; the driver closes both).
    virtual port::net_result open(int fd, const session_peer& peer, session_id& out) noexcept = 0;
    // Carries an in_progress open() on; same outcomes.
    virtual port::net_result proceed(session_id session, int fd) noexcept = 0;
    // The readiness an in_progress open() waits for: port::want_read and/or
    // port::want_write.
    virtual std::uint8_t wants(session_id session) const noexcept = 0;

    // As port::send and port::recv, through the session.
    virtual port::net_result send(session_id session, int fd, const void* data,
                                  std::size_t size) noexcept = 0;
    virtual port::net_result recv(session_id session, int fd, void* buf,
                                  std::size_t capacity) noexcept = 0;
    // Bytes received and held by the transport that recv() returns without
    // reading the socket (a TLS record decrypted in part). The driver reads
    // again while this is above 0 instead of waiting for the socket.
    virtual std::size_t buffered(session_id session) const noexcept = 0;

    // The connection is being dropped: forget the session, whose handle may
    // then be given to another. The driver closes the socket itself, after
    // this.
    virtual void close(session_id session) noexcept = 0;

    // Why the session's latest open(), proceed(), send() or recv() failed,
    // when the transport knows better than the net_result it returned (a
    // certificate that did not verify, an alert), with a short text for
    // node(i).message; none and empty otherwise. Valid until close(). While
    // a handshake is in progress the text may say what it waits for: it
    // becomes the message of a connect_timeout that ends it.
    virtual node_error failure(session_id) const noexcept { return node_error::none; }
    virtual str_view failure_text(session_id) const noexcept { return {}; }
    // Whether it can carry rediss:// nodes (TLS). The client refuses a
    // rediss:// URL over a transport that cannot.
    virtual bool secure() const noexcept { return false; }

protected:
    transport() noexcept = default;
    ~transport() = default;
    transport(const transport&) = default;
    transport& operator=(const transport&) = default;
};

// The socket itself: port::send and port::recv, no session. Stateless; one
// instance serves every client.
transport& plain_transport() noexcept;

}  // namespace edgelock
