// TLS for rediss:// nodes: the options every TLS transport takes, its
// configuration errors, and the contract it keeps with the driver.
//
// TLS is not in the core nor in edgelock::edgelock: it is a transport
// (transport.hpp) handed to the client in client_options::via. The one built
// here is edgelock::tls_mbedtls<N> (tls_mbedtls.hpp, target
// edgelock::tls_mbedtls, CMake option EDGELOCK_TLS):
//
//   static edgelock::tls_mbedtls<edgelock::client<3>::max_sessions> tls;  // room for every session
//   edgelock::tls_options t;
//   t.ca_file = "/etc/redis/ca.crt";                // else the system store
//   if (tls.configure(t) != edgelock::tls_errc::ok) ...  // loads CA, cert, key once
//   edgelock::client_options o;
//   o.via = &tls;
//   client.configure(urls, 3, o);                   // rediss://... nodes
//
// A platform with its own TLS stack (a modem's, an RTOS's secure sockets)
// implements edgelock::transport the same way; what the driver expects of it:
//
// - open(fd, peer, out): the TCP socket is connected. Take a session and
//   hand its handle back in `out` (no_session and bad_argument when there is
//   no room: the driver then fails that connection, or, for a subscription,
//   lets its node's waiters poll). For a TLS peer (rediss://,
//   rediss-sentinel://; any TCP peer when the options say `always`) start the
//   handshake with the server name (tls_options::server_name, else
//   peer.host: the host the connection went to as named, a URL's, a
//   sentinel's, or the master a sentinel named) sent as SNI and checked
//   against the certificate. It returns ok when done at once, in_progress
//   while the handshake waits for the socket, anything else when it failed.
//   A plain peer passes through as plain TCP. Every other call names the
//   session by its handle; close(handle) gives it back.
// - wants(session): during an in_progress handshake, the readiness it waits for:
//   port::want_read when the TLS library wants to read (WANT_READ),
//   port::want_write when it wants to write (WANT_WRITE). The driver polls
//   the fd for exactly that, calls proceed(), and gives up at connect_timeout
//   (node_error::connect_timeout; the message is failure_text() if the
//   transport has one then, else "TLS handshake").
// - proceed(session, fd): carries the handshake on; the same outcomes as open().
//   Only open() and proceed() return in_progress.
// - failure(session) / failure_text(session): after a failed open() or proceed(),
//   why, as one of the node_error tls_* values (tls_untrusted, tls_expired,
//   tls_name_mismatch, tls_not_tls, tls_handshake_failed), and the TLS
//   library's text; after a failed send() or recv() of an established
//   session, tls_session_failed (a fatal alert, a record that is not TLS or
//   does not decrypt). Both end up in client.node(i). A socket that broke before
//   the server said anything is the driver's own reason (reset, closed):
//   failure() none, the net_result says it.
// - A plaintext server that answers is tls_not_tls at once. A plaintext Redis
//   does not answer a ClientHello at all (it waits for the end of an inline
//   command, which the hello's NUL bytes hide), so that case ends at
//   connect_timeout, with a message that says no answer came.
// - send/recv: application data; would_block when the session must wait for
//   the socket (a record half written or half read). A send() that returned
//   would_block is called again with at least the same bytes first.
// - buffered(session): bytes already decrypted (or records already read) that
//   recv() returns without the socket becoming readable again; the driver
//   reads while it is above 0, so none is stranded.
// - secure(): true. The client refuses rediss:// over a transport without it.
// - close(session): send close_notify (best effort, never waiting) and forget
//   the session; the driver closes the socket after.
// After the handshake a lock cycle must not allocate; the handshake may.
#pragma once

#include <cstdint>

#include "edgelock/str_view.hpp"

namespace edgelock {

// Paths are views: they are read during configure() only. Files are PEM (or
// DER).
struct tls_options {
    // Trusted CAs: a file of one or more certificates, or a directory of them
    // (every file in it, as c_rehash or `openssl rehash` leave them). Neither:
    // the system store, /etc/ssl/certs.
    str_view ca_file;
    str_view ca_dir;
    // A certificate and its private key, for servers that ask for one
    // (Redis's tls-auth-clients yes): mutual TLS. Both or neither.
    str_view cert_file;
    str_view key_file;
    // The name sent as SNI and checked against the server's certificate;
    // empty: each node URL's host. (mbedTLS before 3.5 matches DNS names
    // only, not IP address entries: for a node given by address, put the
    // certificate's DNS name here.)
    str_view server_name;
    // TLS for redis:// and redis-sentinel:// nodes too (their sentinels
    // included), not only rediss:// ones (unix:// nodes stay plain).
    bool always = false;
    // Skips every check of the server's certificate: anyone on the path can
    // read and change the traffic. For tests against a throw-away server.
    bool insecure_skip_verify = false;
};

enum class tls_errc : std::uint8_t {
    ok = 0,
    path_too_long,       // a path or server_name too long to pass on
    ca_file_unreadable,  // ca_file missing, unreadable or holding no certificate
    ca_dir_unreadable,   // ca_dir missing, unreadable or holding no certificate
    no_ca,               // neither given and the system store holds no certificate
    cert_unreadable,     // cert_file missing, unreadable or not a certificate
    key_unreadable,      // key_file missing, unreadable, not a key or encrypted
    key_mismatch,        // key_file is not the key of cert_file
    cert_without_key,    // only one of cert_file and key_file
    init_failed,         // the TLS library could not set itself up
};

const char* describe(tls_errc code) noexcept;

}  // namespace edgelock
