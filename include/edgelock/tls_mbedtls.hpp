// TLS over mbedTLS: a transport (transport.hpp) that speaks TLS to rediss://
// nodes, with room for N sessions at once, as tls.hpp describes. A
// client<N, M> needs client<N, M>::max_sessions of them at most (its lock
// connections, a RESP2 node's subscription, a Sentinel node's watch); a
// connection that finds no room fails to open (a subscription: its node's
// waiters poll).
//
//   static edgelock::tls_mbedtls<edgelock::client<3>::max_sessions> tls;
//   tls.configure(tls_options);           // CA chain, own cert and key: loaded once
//   client_options o; o.via = &tls;
//
// The object holds the shared configuration and every node's session state;
// code that does not care about the node count takes a tls_mbedtls_base&.
// mbedTLS allocates its record buffers (about 33 KB per session with the
// default 16 KB records) when a session slot is first used and keeps them for later
// connections (per session slot); the handshake allocates too. After the handshake, sending and
// receiving allocate nothing. Written against the API common to mbedTLS 2.28
// and 3.6. Configure it before the client connects, not while it is connected.
// Not thread-safe, like the client it serves.
#pragma once

#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include <cstddef>
#include <cstdint>

#include "edgelock/client_errors.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/tls.hpp"
#include "edgelock/transport.hpp"

namespace edgelock {

namespace detail {

// Bytes kept of the TLS library's text about a failure.
constexpr std::size_t tls_failure_text = 120;

// One connection's session as the TLS transport sees it.
struct tls_session {
    mbedtls_ssl_context ssl;
    int fd = -1;
    bool set_up = false;       // ssl is bound to the shared configuration
    bool in_use = false;       // opened and not closed yet
    bool tls = false;          // this connection runs TLS (else plain TCP)
    bool established = false;  // the handshake is done
    bool seen_input = false;   // the handshake has read a byte
    bool not_tls = false;      // and that byte cannot start a TLS record
    bool data_in = false;      // application data came in since the handshake
    std::uint8_t wants = 0;    // port::want_read / want_write during the handshake
    port::net_status net = port::net_status::ok;  // the socket's last failure
    int net_code = 0;
    std::size_t pending = 0;  // bytes of a record written in part by send()
    node_error failure = node_error::none;
    std::size_t text_size = 0;
    char text[tls_failure_text];
    char host[node_url_max_host + 1];
};

}  // namespace detail

// The capacity-erased part; create a tls_mbedtls<N>.
class tls_mbedtls_base : public transport {
public:
    tls_mbedtls_base(const tls_mbedtls_base&) = delete;
    tls_mbedtls_base& operator=(const tls_mbedtls_base&) = delete;

    // Loads the CA chain (ca_file, ca_dir, else the system store), the own
    // certificate and key, and sets the session rules: TLS 1.2 at least, the
    // server's certificate verified (unless insecure_skip_verify), no
    // renegotiation. Again later: replaces everything (connections closed
    // first). On error the transport is left unconfigured: a rediss:// node
    // then fails its handshake with tls_handshake_failed.
    tls_errc configure(const tls_options& options) noexcept;
    bool configured() const noexcept { return configured_; }

    // The transport (tls.hpp says what each does). Defined here, forwarding,
    // so the class has no key function: code built with RTTI may use it.
    port::net_result open(int fd, const session_peer& peer, session_id& out) noexcept override {
        return open_session(fd, peer, out);
    }
    port::net_result proceed(session_id id, int fd) noexcept override {
        return proceed_session(id, fd);
    }
    std::uint8_t wants(session_id id) const noexcept override { return session_wants(id); }
    port::net_result send(session_id id, int fd, const void* data,
                          std::size_t size) noexcept override {
        return send_data(id, fd, data, size);
    }
    port::net_result recv(session_id id, int fd, void* buf,
                          std::size_t capacity) noexcept override {
        return recv_data(id, fd, buf, capacity);
    }
    std::size_t buffered(session_id id) const noexcept override { return held(id); }
    void close(session_id id) noexcept override { close_session(id); }
    node_error failure(session_id id) const noexcept override { return why(id); }
    str_view failure_text(session_id id) const noexcept override { return why_text(id); }
    bool secure() const noexcept override { return true; }

protected:
    tls_mbedtls_base(detail::tls_session* sessions, std::uint16_t capacity) noexcept;
    ~tls_mbedtls_base();
    // Frees every session and the configuration; tls_mbedtls<N> calls it
    // while its sessions still exist.
    void shutdown() noexcept;

private:
    port::net_result open_session(int fd, const session_peer& peer, session_id& out) noexcept;
    port::net_result proceed_session(session_id id, int fd) noexcept;
    std::uint8_t session_wants(session_id id) const noexcept;
    port::net_result send_data(session_id id, int fd, const void* data, std::size_t size) noexcept;
    port::net_result recv_data(session_id id, int fd, void* buf, std::size_t capacity) noexcept;
    std::size_t held(session_id id) const noexcept;
    void close_session(session_id id) noexcept;
    node_error why(session_id id) const noexcept;
    str_view why_text(session_id id) const noexcept;
    void release_config() noexcept;
    void free_sessions() noexcept;
    port::net_result handshake(detail::tls_session& s) noexcept;
    port::net_result refuse(detail::tls_session& s, node_error why, str_view text) noexcept;

    detail::tls_session* sessions_;
    std::uint16_t capacity_;
    bool configured_ = false;
    bool always_ = false;
    std::size_t server_name_size_ = 0;
    char server_name_[node_url_max_host + 1];
    mbedtls_ssl_config conf_;
    mbedtls_x509_crt ca_;
    mbedtls_x509_crt own_cert_;
    mbedtls_pk_context own_key_;
};

// Room for N sessions at once (client<N, M>::max_sessions serves a client).
template <std::size_t N>
class tls_mbedtls : public tls_mbedtls_base {
    static_assert(N >= 1 && N < no_session, "room for 1 session at least");

public:
    tls_mbedtls() noexcept : tls_mbedtls_base(storage_, static_cast<std::uint16_t>(N)) {}
    ~tls_mbedtls() { shutdown(); }

private:
    detail::tls_session storage_[N];
};

}  // namespace edgelock
