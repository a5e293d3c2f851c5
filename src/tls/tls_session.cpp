// The TLS transport's per-session part: a session over a connection's socket, its
// non-blocking handshake driven by the client's poll loop, and the bytes
// through it afterwards.
#include <mbedtls/error.h>
#include <mbedtls/version.h>
#include <mbedtls/x509.h>

#include <climits>
#include <cstring>

#include "edgelock/tls_mbedtls.hpp"
#include "tls_internal.hpp"

namespace edgelock {

using detail::tls_session;

namespace detail {

int tls_random(void*, unsigned char* out, std::size_t size) {
    // Any negative value is an error to mbedTLS; this one names the RNG.
    return port::random_bytes(out, size) ? 0 : MBEDTLS_ERR_SSL_NO_RNG;
}

}  // namespace detail

namespace {

port::net_result status(port::net_status s, std::size_t size = 0, int code = 0) {
    port::net_result r;
    r.status = s;
    r.size = size;
    r.code = code;
    return r;
}

// A socket failure as mbedTLS's callbacks report it; the session keeps the
// port's own status, which is what the driver hears.
int io_error(tls_session& s, const port::net_result& r) {
    s.net = r.status;
    s.net_code = r.code;
    return MBEDTLS_ERR_SSL_INTERNAL_ERROR;
}

int bio_send(void* ctx, const unsigned char* buf, std::size_t len) {
    tls_session& s = *static_cast<tls_session*>(ctx);
    const port::net_result r = port::send(s.fd, buf, len < INT_MAX ? len : INT_MAX);
    if (r.status == port::net_status::ok) {
        return static_cast<int>(r.size);
    }
    if (r.status == port::net_status::would_block) {
        return MBEDTLS_ERR_SSL_WANT_WRITE;
    }
    return io_error(s, r);
}

int bio_recv(void* ctx, unsigned char* buf, std::size_t len) {
    tls_session& s = *static_cast<tls_session*>(ctx);
    const port::net_result r = port::recv(s.fd, buf, len < INT_MAX ? len : INT_MAX);
    if (r.status == port::net_status::ok) {
        // A TLS server's first byte is a record type (20..24); a Redis
        // server on a plaintext port answers with '-' or '+' instead.
        if (!s.established && !s.seen_input && r.size > 0) {
            s.seen_input = true;
            s.not_tls = buf[0] < 20 || buf[0] > 24;
        }
        return static_cast<int>(r.size);
    }
    if (r.status == port::net_status::would_block) {
        return MBEDTLS_ERR_SSL_WANT_READ;
    }
    if (r.status == port::net_status::closed) {
        s.net = r.status;
        return 0;  // end of stream
    }
    return io_error(s, r);
}

void set_text(tls_session& s, const char* text, std::size_t size) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < size && n < sizeof s.text; ++i) {
        // One line: the library separates its findings with newlines.
        if (text[i] == '\n') {
            if (i + 1 < size && n + 2 <= sizeof s.text) {
                s.text[n++] = ';';
                s.text[n++] = ' ';
            }
        } else if (text[i] == '\0') {
            break;
        } else {
            s.text[n++] = text[i];
        }
    }
    s.text_size = n;
}

void set_text(tls_session& s, str_view text) {
    set_text(s, text.data, text.size);
}

// Called by mbedTLS for each certificate of the server's chain it checks:
// only a full handshake has one to check (an abbreviated one trusts the
// resumed session's earlier verification). Changes nothing of the result.
int note_verify(void* ctx, mbedtls_x509_crt*, int, std::uint32_t*) {
    static_cast<tls_session*>(ctx)->cert_checked = true;
    return 0;
}

// The most telling of a failed verification's findings.
node_error classify(std::uint32_t flags) {
    if ((flags & (MBEDTLS_X509_BADCERT_NOT_TRUSTED | MBEDTLS_X509_BADCERT_MISSING)) != 0) {
        return node_error::tls_untrusted;
    }
    if ((flags & (MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE)) != 0) {
        return node_error::tls_expired;
    }
    if ((flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) != 0) {
        return node_error::tls_name_mismatch;
    }
    return node_error::tls_handshake_failed;
}

// A session that broke after its handshake: an alert, a record that is not
// TLS or does not decrypt. Named, so the node's report says more than
// "socket error".
port::net_result broken(tls_session& s, int ret) {
    s.failure = node_error::tls_session_failed;
    if (ret == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE && !s.data_in) {
        // In TLS 1.3 the client's handshake ends before the server has
        // checked the client's certificate: a refusal comes as an alert
        // after it, before any data. Reported as the handshake's failure.
        s.failure = node_error::tls_handshake_failed;
        set_text(s,
                 "the server refused the session (alert before any data): a client "
                 "certificate missing or refused?");
    } else if (ret == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE) {
        set_text(s, "the server sent a fatal TLS alert");
    } else {
#if defined(MBEDTLS_ERROR_C)
        char text[detail::tls_failure_text];
        mbedtls_strerror(ret, text, sizeof text);
        set_text(s, text, std::strlen(text));
#else
        set_text(s, "a TLS record failed its checks");
#endif
    }
    return status(port::net_status::error);
}

}  // namespace

port::net_result tls_mbedtls_base::refuse(tls_session& s, node_error why, str_view text) noexcept {
    s.failure = why;
    set_text(s, text);
    s.wants = 0;
    if (s.net != port::net_status::ok) {
        return status(s.net, 0, s.net_code);
    }
    // node(i).code is the platform's error number: the TLS library's own
    // code stays out of it (the text says what it meant).
    return status(port::net_status::error);
}

port::net_result tls_mbedtls_base::open_session(int fd, const session_peer& peer,
                                                session_id& out) noexcept {
    out = no_session;
    session_id id = 0;
    while (id < capacity_ && sessions_[id].in_use) {
        ++id;
    }
    if (id >= capacity_) {
        return status(port::net_status::bad_argument);  // no room: a bigger tls_mbedtls<N>
    }
    out = id;
    tls_session& s = sessions_[id];
    s.in_use = true;
    s.fd = fd;
    // `always` is for TCP nodes: Redis speaks no TLS on a Unix socket.
    s.tls = !peer.unix_socket && (peer.tls || always_);
    s.established = false;
    s.seen_input = false;
    s.not_tls = false;
    s.data_in = false;
    s.wants = 0;
    s.net = port::net_status::ok;
    s.net_code = 0;
    s.pending = 0;
    s.failure = node_error::none;
    s.text_size = 0;
    s.host[0] = '\0';
    s.port = 0;
    s.keyed = false;
    s.cert_checked = false;
    s.offered = detail::no_saved;
    if (!s.tls) {
        return status(port::net_status::ok);
    }
    if (!configured_) {
        return refuse(s, node_error::tls_handshake_failed, "TLS transport not configured");
    }
    // The record buffers are made once per session slot and kept across
    // connections.
    if (!s.set_up) {
        mbedtls_ssl_init(&s.ssl);
        if (mbedtls_ssl_setup(&s.ssl, &conf_) != 0) {
            mbedtls_ssl_free(&s.ssl);
            return refuse(s, node_error::tls_handshake_failed, "TLS session set-up failed");
        }
        s.set_up = true;
    } else if (mbedtls_ssl_session_reset(&s.ssl) != 0) {
        return refuse(s, node_error::tls_handshake_failed, "TLS session reset failed");
    }
    // The peer as named: the key of its kept session, and the name sent as
    // SNI and checked against the certificate unless the options give one.
    if (peer.host.size <= node_url_max_host) {
        if (!peer.host.empty()) {
            std::memcpy(s.host, peer.host.data, peer.host.size);
        }
        s.host[peer.host.size] = '\0';
    } else if (server_name_size_ == 0) {
        return refuse(s, node_error::tls_handshake_failed, "server name too long");
    }
    const char* name = server_name_size_ > 0 ? server_name_ : s.host;
    if (mbedtls_ssl_set_hostname(&s.ssl, name) != 0) {
        return refuse(s, node_error::tls_handshake_failed, "server name refused");
    }
    mbedtls_ssl_set_bio(&s.ssl, &s, bio_send, bio_recv, nullptr);
    mbedtls_ssl_set_verify(&s.ssl, note_verify, &s);
    offer(s, fd);
    return handshake(s);
}

port::net_result tls_mbedtls_base::proceed_session(session_id id, int fd) noexcept {
    if (id >= capacity_ || !sessions_[id].tls) {
        return status(id < capacity_ ? port::net_status::ok : port::net_status::bad_argument);
    }
    tls_session& s = sessions_[id];
    s.fd = fd;
    return handshake(s);
}

// A handshake step, then what its end means for the peer's kept session.
port::net_result tls_mbedtls_base::handshake(tls_session& s) noexcept {
    const port::net_result r = step(s);
    if (r.status == port::net_status::ok) {
        established(s);
    } else if (r.status != port::net_status::in_progress) {
        forget_offered(s);
    }
    return r;
}

port::net_result tls_mbedtls_base::step(tls_session& s) noexcept {
    const int ret = mbedtls_ssl_handshake(&s.ssl);
    if (ret == 0) {
        s.established = true;
        s.wants = 0;
        return status(port::net_status::ok);
    }
    if (ret == MBEDTLS_ERR_SSL_WANT_READ) {
        s.wants = port::want_read;
        return status(port::net_status::in_progress);
    }
    if (ret == MBEDTLS_ERR_SSL_WANT_WRITE) {
        s.wants = port::want_write;
        return status(port::net_status::in_progress);
    }
    char text[detail::tls_failure_text];
    if (s.not_tls) {
        s.net = port::net_status::ok;  // what it said matters, not how it hung up
        return refuse(s, node_error::tls_not_tls,
                      "the server answered in plaintext: not a TLS port");
    }
    if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
        const std::uint32_t flags = mbedtls_ssl_get_verify_result(&s.ssl);
        const int n = mbedtls_x509_crt_verify_info(text, sizeof text, "", flags);
        s.net = port::net_status::ok;
        return refuse(s, classify(flags), str_view(text, n > 0 ? std::strlen(text) : 0));
    }
    if (ret == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE) {
        s.net = port::net_status::ok;
        return refuse(s, node_error::tls_handshake_failed,
                      "the server refused the handshake (alert): a client certificate "
                      "missing or refused, or no common version or cipher");
    }
    if (s.net != port::net_status::ok || ret == MBEDTLS_ERR_SSL_CONN_EOF) {
        if (s.seen_input) {
            // It spoke TLS, then hung up on us instead of finishing: a TLS
            // server that wants a client certificate does this in TLS 1.2
            // (its alert lost to the reset of our next flight).
            return refuse(s, node_error::tls_handshake_failed,
                          "the server hung up during the TLS handshake (a client certificate "
                          "missing or refused?)");
        }
        // The socket broke before any answer: the driver's own reason
        // (reset, closed, ...) says it best.
        set_text(s, "during the TLS handshake");
        s.wants = 0;
        return status(s.net != port::net_status::ok ? s.net : port::net_status::closed, 0,
                      s.net_code);
    }
#if defined(MBEDTLS_ERROR_C)
    mbedtls_strerror(ret, text, sizeof text);
#else
    std::strcpy(text, "TLS handshake failed");
#endif
    return refuse(s, node_error::tls_handshake_failed, str_view(text, std::strlen(text)));
}

std::uint8_t tls_mbedtls_base::session_wants(session_id id) const noexcept {
    return id < capacity_ ? sessions_[id].wants : 0;
}

port::net_result tls_mbedtls_base::send_data(session_id id, int fd, const void* data,
                                             std::size_t size) noexcept {
    if (id >= capacity_) {
        return status(port::net_status::bad_argument);
    }
    tls_session& s = sessions_[id];
    if (!s.tls) {
        return port::send(fd, data, size);
    }
    if (!s.established) {
        return status(port::net_status::error);  // the session was dropped under it
    }
    s.fd = fd;
    // A record written in part must be finished with the same bytes: mbedTLS
    // then reports that many as sent.
    std::size_t len = s.pending > 0 ? s.pending : size;
    if (s.pending == 0) {
        const int most = mbedtls_ssl_get_max_out_record_payload(&s.ssl);
        if (most > 0 && len > static_cast<std::size_t>(most)) {
            len = static_cast<std::size_t>(most);
        }
    }
    const int ret = mbedtls_ssl_write(&s.ssl, static_cast<const unsigned char*>(data), len);
    if (ret > 0) {
        s.pending = 0;
        return status(port::net_status::ok, static_cast<std::size_t>(ret));
    }
    if (ret == MBEDTLS_ERR_SSL_WANT_WRITE || ret == MBEDTLS_ERR_SSL_WANT_READ) {
        s.pending = len;
        return status(port::net_status::would_block);
    }
    if (s.net != port::net_status::ok) {
#if defined(MBEDTLS_SSL_PROTO_TLS1_3)
        // In TLS 1.3 the client's handshake ends before the server has
        // checked the client's certificate; a server that refuses it sends an
        // alert and hangs up, and the client's first write can then fail
        // (EPIPE, reset) before any read has heard the alert. What is already
        // in the socket names the refusal (see broken()).
        if (!s.data_in) {
            const port::net_result io = status(s.net, 0, s.net_code);
            unsigned char byte;
            const int heard = mbedtls_ssl_read(&s.ssl, &byte, 1);
            if (heard == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE) {
                return broken(s, heard);
            }
            s.net = io.status;
            s.net_code = io.code;
            return io;
        }
#endif
        return status(s.net, 0, s.net_code);
    }
    return broken(s, ret);
}

port::net_result tls_mbedtls_base::recv_data(session_id id, int fd, void* buf,
                                             std::size_t capacity) noexcept {
    if (id >= capacity_) {
        return status(port::net_status::bad_argument);
    }
    tls_session& s = sessions_[id];
    if (!s.tls) {
        return port::recv(fd, buf, capacity);
    }
    if (!s.established) {
        return status(port::net_status::error);  // the session was dropped under it
    }
    s.fd = fd;
    // A TLS 1.3 server may send tickets between records; they carry no data.
    for (int tries = 0; tries < 4; ++tries) {
        const int ret = mbedtls_ssl_read(&s.ssl, static_cast<unsigned char*>(buf), capacity);
        if (ret > 0) {
            s.data_in = true;
            return status(port::net_status::ok, static_cast<std::size_t>(ret));
        }
        if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) {
            return status(port::net_status::would_block);
        }
#if defined(MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
        if (ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) {
            keep(s);  // what the next connection offers
            continue;
        }
#endif
        if (ret == 0 || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ||
            ret == MBEDTLS_ERR_SSL_CONN_EOF || s.net == port::net_status::closed) {
            return status(port::net_status::closed);
        }
        if (s.net != port::net_status::ok) {
            return status(s.net, 0, s.net_code);
        }
        return broken(s, ret);
    }
    return status(port::net_status::would_block);
}

std::size_t tls_mbedtls_base::held(session_id id) const noexcept {
    if (id >= capacity_ || !sessions_[id].tls || !sessions_[id].established) {
        return 0;
    }
    const tls_session& s = sessions_[id];
    const std::size_t ready = mbedtls_ssl_get_bytes_avail(&s.ssl);
    // Records already read from the socket but not yet decrypted count too:
    // no readiness report would find them.
    return ready > 0 ? ready : (mbedtls_ssl_check_pending(&s.ssl) != 0 ? 1 : 0);
}

void tls_mbedtls_base::close_session(session_id id) noexcept {
    if (id >= capacity_) {
        return;
    }
    tls_session& s = sessions_[id];
    if (s.tls && s.established) {
        // Best effort, never waiting: the socket closes right after.
        (void)mbedtls_ssl_close_notify(&s.ssl);
    } else if (s.tls) {
        forget_offered(s);  // a handshake given up (connect_timeout) with it
    }
    s.tls = false;
    s.established = false;
    s.wants = 0;
    s.pending = 0;
    s.fd = -1;
    s.in_use = false;  // the slot (and its record buffers) serves the next open()
}

node_error tls_mbedtls_base::why(session_id id) const noexcept {
    return id < capacity_ ? sessions_[id].failure : node_error::none;
}

str_view tls_mbedtls_base::why_text(session_id id) const noexcept {
    if (id >= capacity_) {
        return {};
    }
    const tls_session& s = sessions_[id];
    if (s.tls && !s.established && s.failure == node_error::none && s.wants != 0) {
        // Still under way (the driver asks when connect_timeout ends it). A
        // plaintext Redis never answers a ClientHello: it waits for the end
        // of an inline command that never comes.
        return s.seen_input ? "TLS handshake: the server stopped answering"
                            : "TLS handshake: no answer to the TLS hello (a plaintext port?)";
    }
    return str_view(s.text, s.text_size);
}

}  // namespace edgelock
