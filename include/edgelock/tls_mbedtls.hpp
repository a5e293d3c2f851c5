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
// default 16 KB records) when a session slot is first used and keeps them
// for later connections (per session slot); the handshake allocates too, and
// so does mbedTLS when a kept session (below) is offered or kept: a copy
// while it is serialized, the entries themselves being in the object. After
// the handshake, sending and receiving allocate nothing (with TLS 1.3, in
// mbedTLS 3, but for the tickets the server sends then, kept as they come).
// Written against the API common to mbedTLS 2.28 and 3.6. Configure it
// before the client connects, not while it is connected. Not thread-safe,
// like the client it serves.
//
// Sessions are resumed: after a handshake the transport keeps the session
// (the server's ticket or session id, with the secrets) for its peer, the
// host the connection named and the port its socket reached (getpeername()),
// in one of P entries in the object, and offers it on the next connection to
// the same peer; a server that still knows it answers with an abbreviated
// handshake (one round trip instead of two, no certificate sent). A session
// the server refuses is replaced by the new one; a handshake that fails (or
// is given up) with a session offered forgets it. A session is never offered
// to another peer, nor kept across configure(). saved_session() and
// import_session() carry them between processes (the agent keeps them in a
// file):
//
//   tls_saved_session k;
//   for (std::size_t i = 0; i < tls.saved_capacity(); ++i)
//       if (tls.saved_session(i, k)) store(k.host, k.port, k.server_name, k.data, k.size);
//   ... next run, after configure():
//   tls.import_session(host, port, server_name, data, size);
#pragma once

#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "edgelock/client_errors.hpp"
#include "edgelock/config.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/tls.hpp"
#include "edgelock/transport.hpp"

namespace edgelock {

namespace detail {

// Bytes kept of the TLS library's text about a failure.
constexpr std::size_t tls_failure_text = 120;

// No entry of the kept sessions.
constexpr std::uint16_t no_saved = 0xffff;

// One peer's kept session: mbedTLS's serialized session behind edgelock's
// own header (tls_saved_header bytes: a format tag and the fingerprint of
// the configuration it was made under).
constexpr std::size_t tls_saved_header = 20;
struct tls_saved {
    std::uint32_t made = 0;     // 0: empty; else which store this is (never reused)
    std::uint32_t touched = 0;  // stored or offered: the least recent goes first
    std::uint16_t port = 0;
    std::uint16_t size = 0;  // bytes of data
    std::uint8_t host_size = 0;
    bool used = false;  // made or offered since stored or imported
    char host[node_url_max_host];
    unsigned char data[EDGELOCK_TLS_SESSION_BYTES];
};

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
    // The peer as named (its kept session's key), NUL-terminated.
    char host[node_url_max_host + 1];
    std::uint16_t port = 0;            // the peer's port (0: not a TCP peer)
    bool keyed = false;                // host and port are known: a session may be kept
    bool cert_checked = false;         // this handshake verified a certificate
    std::uint16_t offered = no_saved;  // the kept session offered in this handshake
    std::uint32_t offered_made = 0;    // and which store of it
};

}  // namespace detail

// Handshakes a TLS transport completed, and how. Whether the server took
// the session is known from whether the handshake verified a certificate:
// with insecure_skip_verify nothing is verified, and resumed stays 0.
struct tls_handshake_counts {
    std::uint32_t done = 0;     // handshakes completed
    std::uint32_t offered = 0;  // of them, with a kept session offered
    std::uint32_t resumed = 0;  // of them, abbreviated: the server took it
};

// One peer's kept session, as saved_session() shows it: its key and bytes to
// hand to import_session() in another process (they hold the session's
// secrets: keep them as private as a key file).
struct tls_saved_session {
    str_view host;  // as the connection named it
    std::uint16_t port = 0;
    str_view server_name;  // the name sent and checked (tls_options::server_name, else host)
    const unsigned char* data = nullptr;
    std::size_t size = 0;
    bool used = false;  // made or offered since it was kept or imported
};

// Why import_session() refused a session.
enum class tls_import : std::uint8_t {
    ok = 0,
    not_configured,  // configure() first: sessions are kept per configuration
    bad_peer,        // an empty host, a host or name too long, port 0
    other_name,      // server_name is not the name sent to host
    not_a_session,   // not bytes saved_session() gave, or more than fit
    other_setup,     // made under another CA, client certificate or verification setting
    unusable,        // the TLS library cannot load it (another version or build, damaged)
    no_room,         // the transport keeps no sessions (P = 0)
};

const char* describe(tls_import code) noexcept;

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

    // Handshakes completed since configure(), and how.
    tls_handshake_counts handshake_counts() const noexcept { return counts_; }

    // The kept sessions, entry by entry (0 .. saved_capacity() - 1): false
    // for an empty entry. The views stay valid until the next call that
    // opens, proceeds, configures or imports.
    std::size_t saved_capacity() const noexcept { return saved_capacity_; }
    bool saved_session(std::size_t i, tls_saved_session& out) const noexcept;
    // Keeps a session saved_session() gave (in this process or another) for
    // the peer host:port, as if a connection had just made it; server_name
    // must be the name this transport sends to that host (tls_options::
    // server_name, else the host). Refused (and nothing changed) when the
    // bytes are not such a session, were made under another CA, client
    // certificate or verification setting, or the TLS library cannot load
    // them. When every entry is taken, the least recently used goes.
    // mbedTLS allocates while it checks them: call it at set-up.
    tls_import import_session(str_view host, std::uint16_t port, str_view server_name,
                              const void* data, std::size_t size) noexcept;

protected:
    tls_mbedtls_base(detail::tls_session* sessions, std::uint16_t capacity) noexcept;
    // Where the kept sessions go; tls_mbedtls<N, P> calls it once its
    // entries exist.
    void keep_sessions_in(detail::tls_saved* saved, std::uint16_t capacity) noexcept {
        saved_ = saved;
        saved_capacity_ = capacity;
    }
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
    port::net_result step(detail::tls_session& s) noexcept;
    port::net_result refuse(detail::tls_session& s, node_error why, str_view text) noexcept;
    // The kept sessions (tls_resume.cpp).
    void set_fingerprint(const tls_options& options) noexcept;
    void offer(detail::tls_session& s, int fd) noexcept;
    void keep(detail::tls_session& s) noexcept;
    void forget_offered(detail::tls_session& s) noexcept;
    void established(detail::tls_session& s) noexcept;
    void forget_all() noexcept;
    std::uint32_t next_store() noexcept;
    std::uint16_t find_saved(str_view host, std::uint16_t port) const noexcept;
    std::uint16_t entry_for(str_view host, std::uint16_t port) const noexcept;
    str_view name_for(str_view host) const noexcept;

    detail::tls_session* sessions_;
    std::uint16_t capacity_;
    detail::tls_saved* saved_ = nullptr;
    std::uint16_t saved_capacity_ = 0;
    std::uint32_t stores_ = 0;  // the last tls_saved::made / touched handed out
    tls_handshake_counts counts_;
    unsigned char fingerprint_[detail::tls_saved_header];  // the header kept sessions carry
    bool configured_ = false;
    bool always_ = false;
    bool verify_ = false;  // certificates are verified (not insecure_skip_verify)
    std::size_t server_name_size_ = 0;
    char server_name_[node_url_max_host + 1];
    mbedtls_ssl_config conf_;
    mbedtls_x509_crt ca_;
    mbedtls_x509_crt own_cert_;
    mbedtls_pk_context own_key_;
};

// Room for N sessions at once (client<N, M>::max_sessions serves a client)
// and for the kept sessions of P peers (EDGELOCK_TLS_SESSION_BYTES and
// about 270 bytes each; 0: nothing is resumed). A client talks to one peer
// per node, plus a Sentinel node's sentinels and a Cluster node's masters.
template <std::size_t N, std::size_t P = (N < 8 ? N : 8)>
class tls_mbedtls : public tls_mbedtls_base {
    static_assert(N >= 1 && N < no_session, "room for 1 session at least");
    static_assert(P < detail::no_saved, "too many kept sessions");

public:
    tls_mbedtls() noexcept : tls_mbedtls_base(storage_, static_cast<std::uint16_t>(N)) {
        keep_sessions_in(saved_.data(), static_cast<std::uint16_t>(P));
    }
    ~tls_mbedtls() { shutdown(); }

private:
    detail::tls_session storage_[N];
    std::array<detail::tls_saved, P> saved_;
};

}  // namespace edgelock
