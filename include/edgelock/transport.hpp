// The transport: how a connection's bytes travel once its socket is connected.
//
// The driver opens the socket through the port (port::connect), then hands it
// to a transport and from then on reads and writes only through it; nothing
// above (the set-up handshake, the pipeline, the scheduler) knows which one it
// talks to, as mbedTLS's I/O callbacks keep a TLS session apart from its
// socket. The plain transport (plain_transport(), the default) is the socket
// itself; a TLS transport wraps a session around it, keeping per-node state
// indexed by the node number the driver passes in.
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

// Every member is pure or defined here, so the class has no key function:
// code built with RTTI can derive from it while the library is built without.
class transport {
public:
    // The socket `fd` to node `node` (at `address`) is connected: begin the
    // session. ok: bytes may flow. in_progress: a session handshake is under
    // way; call proceed() when the socket is ready as wants() says. Anything
    // else: the connection failed (the driver closes the socket).
    virtual port::net_result open(std::uint8_t node, int fd,
                                  const node_address& address) noexcept = 0;
    // Carries an in_progress open() on; same outcomes.
    virtual port::net_result proceed(std::uint8_t node, int fd) noexcept = 0;
    // The readiness an in_progress open() waits for: port::want_read and/or
    // port::want_write.
    virtual std::uint8_t wants(std::uint8_t node) const noexcept = 0;

    // As port::send and port::recv, through the session.
    virtual port::net_result send(std::uint8_t node, int fd, const void* data,
                                  std::size_t size) noexcept = 0;
    virtual port::net_result recv(std::uint8_t node, int fd, void* buf,
                                  std::size_t capacity) noexcept = 0;
    // Bytes received and held by the transport that recv() returns without
    // reading the socket (a TLS record decrypted in part). The driver reads
    // again while this is above 0 instead of waiting for the socket.
    virtual std::size_t buffered(std::uint8_t node) const noexcept = 0;

    // The connection is being dropped: forget the session. The driver closes
    // the socket itself, after this.
    virtual void close(std::uint8_t node) noexcept = 0;

    // Why node's latest open(), proceed(), send() or recv() failed, when the
    // transport knows better than the net_result it returned (a certificate
    // that did not verify, an alert), with a short text for node(i).message;
    // none and empty otherwise. Valid until the node's next open(). While a handshake is in
    // progress the text may say what it waits for: it becomes the message of
    // a connect_timeout that ends it.
    virtual node_error failure(std::uint8_t) const noexcept { return node_error::none; }
    virtual str_view failure_text(std::uint8_t) const noexcept { return {}; }
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
