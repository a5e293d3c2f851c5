// libFuzzer target for the TLS transport after its handshake
// (edgelock::tls_mbedtls over mbedTLS): once a real server has completed the
// handshake, whatever comes down the wire (genuine records, records with
// bytes flipped or cut, bytes of the input's own, alerts, a renegotiation
// request) must end the session, named, or carry on, in a bounded number of
// recv() calls, without a crash or a leak, and no byte may reach the caller
// that the server did not send.
//
// The server is an mbedTLS server in this program, over two in-memory pipes;
// the transport's port::send / port::recv are defined here too (no socket, no
// syscall). Each input runs a full handshake (RSA key exchange with a
// 1024-bit key: the cheapest one the client offers), then its operations:
//
//   byte 0     flags: bits 0-1 the cipher suite (AES-GCM, AES-CBC-SHA256,
//              AES-CBC-SHA, AES-CCM), bit 2 encrypt-then-MAC, bit 3 the
//              client's writes would block now and then
//   then       operations, an opcode byte and its arguments:
//              0 n      the server sends a record of n+1 bytes of data
//              1 n ...  n bytes of the input go on the wire as they are
//              2 p v    of the bytes not yet read, the p-th from the end
//                       (modulo their count) is xored with v|1
//              3 n      the last n+1 of the bytes not yet read are dropped
//              4 l t    the server sends an alert (level l&1 ? fatal :
//                       warning, type t)
//              5        the server asks for a renegotiation (HelloRequest)
//              6 k      the client reads what is there, k+1 bytes per read
//              7 n      the client sends n+1 bytes
//   At the end the wire closes and the client reads until it ends.
//
// Checks: the handshake succeeds; every recv() ends (a byte, would_block, a
// closed stream or a failure) and there are at most wire bytes + 2 per
// operation + the client's writes + 8 of them; once the wire is closed every
// would_block comes with progress (a byte read or a write tried); what the
// client reads is a prefix of the data the server sent, all of it when nothing
// was tampered with, and up to the server's close or fatal alert when that
// came; a failure is tls_session_failed (or tls_handshake_failed: an alert
// before any data) with a text within its bound. Any breach traps.
//
// mbedTLS itself is the system's, not instrumented: coverage (cov:) counts
// the transport's code and this program's, so the fuzzer steers by the
// transport's outcomes, not by mbedTLS's parser.
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/tls_mbedtls.hpp"

namespace {

void check(bool ok) {
    if (!ok) {
        __builtin_trap();
    }
}

constexpr int client_fd = 3;

// Both directions of the one connection, and how the client's end behaves.
struct wire {
    std::string to_server;  // what the client wrote (the server reads it in the handshake)
    std::size_t server_at = 0;
    std::string to_client;  // what the server (or the input) put on the wire
    std::size_t client_at = 0;
    std::size_t read_limit = SIZE_MAX;  // bytes per port::recv
    bool ended = false;                 // nothing more comes: recv says closed
    bool slow_writes = false;
    unsigned writes = 0;
} g_wire;

edgelock::port::net_result result(edgelock::port::net_status s, std::size_t n = 0) {
    edgelock::port::net_result r;
    r.status = s;
    r.size = n;
    return r;
}

// The server's own bio callbacks.
int server_send(void*, const unsigned char* buf, std::size_t len) {
    g_wire.to_client.append(reinterpret_cast<const char*>(buf), len);
    return static_cast<int>(len < INT_MAX ? len : INT_MAX);
}

int server_recv(void*, unsigned char* buf, std::size_t len) {
    const std::size_t avail = g_wire.to_server.size() - g_wire.server_at;
    if (avail == 0) {
        return MBEDTLS_ERR_SSL_WANT_READ;
    }
    const std::size_t n = len < avail ? len : avail;
    std::memcpy(buf, g_wire.to_server.data() + g_wire.server_at, n);
    g_wire.server_at += n;
    return static_cast<int>(n);
}

int server_random(void*, unsigned char* out, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
        out[i] = static_cast<unsigned char>(i * 37 + 11);
    }
    return 0;
}

}  // namespace

// The port functions the TLS transport uses, for this program only.
namespace edgelock {
namespace port {

net_result send(int fd, const void* data, std::size_t size) noexcept {
    check(fd == client_fd);
    ++g_wire.writes;
    if (g_wire.slow_writes && g_wire.writes % 3 == 0) {
        return result(net_status::would_block);
    }
    const std::size_t n = g_wire.slow_writes && size > 7 ? size / 2 : size;
    g_wire.to_server.append(static_cast<const char*>(data), n);
    return result(net_status::ok, n);
}

net_result recv(int fd, void* buf, std::size_t capacity) noexcept {
    check(fd == client_fd);
    const std::size_t avail = g_wire.to_client.size() - g_wire.client_at;
    if (avail == 0) {
        return result(g_wire.ended ? net_status::closed : net_status::would_block);
    }
    std::size_t n = capacity < avail ? capacity : avail;
    if (n > g_wire.read_limit) {
        n = g_wire.read_limit;
    }
    std::memcpy(buf, g_wire.to_client.data() + g_wire.client_at, n);
    g_wire.client_at += n;
    return result(net_status::ok, n);
}

bool random_bytes(void* buf, std::size_t size) noexcept {
    // Deterministic: the same input takes the same path.
    auto* p = static_cast<std::uint8_t*>(buf);
    for (std::size_t i = 0; i < size; ++i) {
        p[i] = static_cast<std::uint8_t>(i * 131 + 7);
    }
    return true;
}

}  // namespace port
}  // namespace edgelock

namespace {

// The server's certificate and key (RSA 1024, self-signed, made with openssl
// for this program only: the client does not verify it, and a small key keeps
// the handshake cheap). A test key, worthless outside this file.
const char server_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIICHDCCAYWgAwIBAgIUSZlHIFxJDlUrPyu+3a0Xf+w5CwswDQYJKoZIhvcNAQEL\n"
    "BQAwFDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNDEwNDAyM1oYDzIxMjYx\n"
    "MDMxMTA0MDIzWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwgZ8wDQYJKoZIhvcNAQEB\n"
    "BQADgY0AMIGJAoGBALqIXv/psQL09ca3l3ZAaiqtcAGF76z7s06pYalhwt9USegL\n"
    "UVPWHK+lYe876BGeeIR1YcXWJscEm3fwZk12/nE7MT4XZHPatAtd7o43SW8hIVxZ\n"
    "wfFawzW5bJxgB/m1/khHn6FUXjKL4fCnN63ZH99ayF6SljHfgek51F0J8Zm5AgMB\n"
    "AAGjaTBnMB0GA1UdDgQWBBRQbifeC+5t6UB1MAtO2lvkJ34OUTAfBgNVHSMEGDAW\n"
    "gBRQbifeC+5t6UB1MAtO2lvkJ34OUTAPBgNVHRMBAf8EBTADAQH/MBQGA1UdEQQN\n"
    "MAuCCWxvY2FsaG9zdDANBgkqhkiG9w0BAQsFAAOBgQCvP4DxCEF41O3ONldDnNRb\n"
    "VPj4wG4/5x55lWF9pjAqHHV+H5V42L481JWWqwAPVKFzl9147LHlLBX5Avl8B7A6\n"
    "uafswDzypuqpSwHKRQsSZWju79cfYWzYyYwStvOjFTm/4Hl4NJlwkZlUmW7lR4uA\n"
    "kdl+0mt7hGStFIXt02CxZg==\n"
    "-----END CERTIFICATE-----\n";

const char server_key_pem[] =
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIICXAIBAAKBgQC6iF7/6bEC9PXGt5d2QGoqrXABhe+s+7NOqWGpYcLfVEnoC1FT\n"
    "1hyvpWHvO+gRnniEdWHF1ibHBJt38GZNdv5xOzE+F2Rz2rQLXe6ON0lvISFcWcHx\n"
    "WsM1uWycYAf5tf5IR5+hVF4yi+Hwpzet2R/fWshekpYx34HpOdRdCfGZuQIDAQAB\n"
    "AoGAULxh0gaGFS+NiZtBNW+gBCTZi+860/aFn5B0sumbfSpwar0rUEwmUmgUwYV+\n"
    "ZtHefAaKcSTF1/JIkFs/DFxquD3ljB4m48sAA1ENwVLPf4Ej9i5rImp+2h9A59WW\n"
    "28GnaREDKeHqkrykbkQh2nm9KkcMghmHcqd14BYkcbqkA3kCQQDvGabv1o1txQDr\n"
    "Q3RuHjlKft0doMY4H8jhmK0RnWg8lI20OEt2XcgXYyV0sJcP6zIWusEU2dMI3VdL\n"
    "JXGQ4ZMbAkEAx7eMJZiIK6rhykpVHD6Xye66MzgaK/6pRdT9arGsF9NLo1bri1Rc\n"
    "BbaYb7KC48c9qYD/P5gyciMMhrrVdd6/uwJAcWLh1qURhrfA+tCPW1U76AcHhvBi\n"
    "b+Uq10kW8d6Kuwfbt1Zm+uf4ZpbfAVppGOR5aWwA+old2btVlU5Zb9J5dwJAUdpc\n"
    "ShxV0u/aUnpcn5LXyx9YmR1pPJbG8aP1qQDgs3MaEPvS1evhO0Y2+7CCDLDgCNSh\n"
    "yIKsSjMrMxzn18NPeQJBAKgmvCwp4ctShCbhL1VzqW2vF2rlMyvRPUxwg5FXeJf0\n"
    "koZjOWYO5kzHT0HayUJS2kZXSoAl6RUapSzqGmmfl7M=\n"
    "-----END RSA PRIVATE KEY-----\n";

// One suite per choice, each list ending in 0 as mbedTLS wants.
const int suites[4][2] = {
    {MBEDTLS_TLS_RSA_WITH_AES_128_GCM_SHA256, 0},
    {MBEDTLS_TLS_RSA_WITH_AES_128_CBC_SHA256, 0},
    {MBEDTLS_TLS_RSA_WITH_AES_128_CBC_SHA, 0},
    {MBEDTLS_TLS_RSA_WITH_AES_128_CCM, 0},
};

struct peers {
    edgelock::tls_mbedtls<1> client;
    mbedtls_ssl_config conf;
    mbedtls_x509_crt cert;
    mbedtls_pk_context key;
    mbedtls_ssl_context server;

    peers() {
        edgelock::tls_options o;
        o.insecure_skip_verify = true;
        check(client.configure(o) == edgelock::tls_errc::ok);

        mbedtls_ssl_config_init(&conf);
        mbedtls_x509_crt_init(&cert);
        mbedtls_pk_init(&key);
        mbedtls_ssl_init(&server);
        check(mbedtls_x509_crt_parse(&cert, reinterpret_cast<const unsigned char*>(server_pem),
                                     sizeof server_pem) == 0);
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
        check(mbedtls_pk_parse_key(&key, reinterpret_cast<const unsigned char*>(server_key_pem),
                                   sizeof server_key_pem, nullptr, 0, server_random, nullptr) == 0);
#else
        check(mbedtls_pk_parse_key(&key, reinterpret_cast<const unsigned char*>(server_key_pem),
                                   sizeof server_key_pem, nullptr, 0) == 0);
#endif
        check(mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_SERVER,
                                          MBEDTLS_SSL_TRANSPORT_STREAM,
                                          MBEDTLS_SSL_PRESET_DEFAULT) == 0);
        mbedtls_ssl_conf_rng(&conf, server_random, nullptr);
#if MBEDTLS_VERSION_NUMBER >= 0x03020000
        // The suites below are TLS 1.2's (3.x offers TLS 1.3 first).
        mbedtls_ssl_conf_max_tls_version(&conf, MBEDTLS_SSL_VERSION_TLS1_2);
#endif
        check(mbedtls_ssl_conf_own_cert(&conf, &cert, &key) == 0);
#if defined(MBEDTLS_SSL_RENEGOTIATION)
        mbedtls_ssl_conf_renegotiation(&conf, MBEDTLS_SSL_RENEGOTIATION_ENABLED);
#endif
        check(mbedtls_ssl_setup(&server, &conf) == 0);
        mbedtls_ssl_set_bio(&server, nullptr, server_send, server_recv, nullptr);
    }

    ~peers() {
        mbedtls_ssl_free(&server);
        mbedtls_ssl_config_free(&conf);
        mbedtls_x509_crt_free(&cert);
        mbedtls_pk_free(&key);
    }
};

// The input, read from the front; past its end every byte reads as 0.
struct reader {
    const std::uint8_t* data;
    std::size_t size;
    std::size_t at = 0;

    bool more() const { return at < size; }
    std::uint8_t byte() { return at < size ? data[at++] : 0; }
};

// What the client has read, against what the server sent.
struct tally {
    std::string sent;       // data the server sent, in order
    std::size_t whole = 0;  // of it, what comes before the server's close or fatal alert
    bool closing = false;   // the server sent close_notify or a fatal alert
    bool tampered = false;  // bytes on the wire are not all the server's
    std::string read;
};

enum class outcome { open, closed, failed };

// Reads until the wire has nothing more now (or the session ends).
outcome read_all(edgelock::tls_mbedtls_base& tls, tally& t, std::size_t capacity,
                 std::size_t& calls, std::size_t bound) {
    char buf[256];
    for (;;) {
        ++calls;
        check(calls <= bound);
        const edgelock::port::net_result r = tls.recv(0, client_fd, buf, capacity);
        switch (r.status) {
        case edgelock::port::net_status::ok:
            check(r.size > 0 && r.size <= capacity);
            t.read.append(buf, r.size);
            // Nothing but what the server sent, in its order.
            check(t.read.size() <= t.sent.size() &&
                  std::memcmp(t.read.data(), t.sent.data(), t.read.size()) == 0);
            break;
        case edgelock::port::net_status::would_block:
            return outcome::open;
        case edgelock::port::net_status::closed:
            return outcome::closed;
        default:
            return outcome::failed;
        }
    }
}

bool send_all(edgelock::tls_mbedtls_base& tls, std::size_t n) {
    char buf[256];
    std::memset(buf, 'c', sizeof buf);
    std::size_t done = 0;
    // Each try moves bytes, or blocks on one write in three.
    for (int tries = 0; done < n && tries < 64; ++tries) {
        const edgelock::port::net_result r = tls.send(0, client_fd, buf, n - done);
        if (r.status == edgelock::port::net_status::ok) {
            check(r.size > 0 && r.size <= n - done);
            done += r.size;
        } else if (r.status != edgelock::port::net_status::would_block) {
            return false;
        }
    }
    check(done == n);
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static peers p;
    if (size == 0) {
        return 0;
    }
    reader in{data, size};
    const std::uint8_t flags = in.byte();
    g_wire = wire{};

    mbedtls_ssl_conf_ciphersuites(&p.conf, suites[flags & 3]);
#if defined(MBEDTLS_SSL_ENCRYPT_THEN_MAC)
    mbedtls_ssl_conf_encrypt_then_mac(
        &p.conf, (flags & 4) != 0 ? MBEDTLS_SSL_ETM_ENABLED : MBEDTLS_SSL_ETM_DISABLED);
#endif
    check(mbedtls_ssl_session_reset(&p.server) == 0);

    // The handshake, both sides in turn; a real server must get through.
    edgelock::tls_mbedtls_base& tls = p.client;
    edgelock::node_address address;
    address.host = "localhost";
    address.port = 6380;
    address.tls = true;
    edgelock::session_peer peer;
    peer.host = address.host;
    peer.tls = address.tls;
    edgelock::session_id id = edgelock::no_session;
    edgelock::port::net_result r = tls.open(client_fd, peer, id);
    check(id == 0);  // the one session: handle 0, the one the calls below use
    int server = MBEDTLS_ERR_SSL_WANT_READ;
    for (int step = 0;
         step < 64 && (r.status == edgelock::port::net_status::in_progress || server != 0);
         ++step) {
        if (server != 0) {
            server = mbedtls_ssl_handshake(&p.server);
            check(server == 0 || server == MBEDTLS_ERR_SSL_WANT_READ);
        }
        if (r.status == edgelock::port::net_status::in_progress) {
            r = tls.proceed(0, client_fd);
        }
    }
    check(r.status == edgelock::port::net_status::ok && server == 0);
    check(g_wire.client_at == g_wire.to_client.size());
    g_wire.slow_writes = (flags & 8) != 0;

    tally t;
    outcome end = outcome::open;
    std::size_t calls = 0;
    std::size_t ops = 0;
    // Bound on recv() calls: one per byte, and a would_block or an end per
    // read or per write that blocked.
    auto bound = [&] { return g_wire.to_client.size() + 2 * ops + g_wire.writes + 8; };
    unsigned char payload[256];
    while (in.more() && end == outcome::open) {
        ++ops;
        const std::uint8_t op = in.byte();
        switch (op & 7) {
        case 0: {
            const std::size_t n = static_cast<std::size_t>(in.byte()) + 1;
            for (std::size_t i = 0; i < n; ++i) {
                payload[i] = static_cast<unsigned char>('a' + (t.sent.size() + i) % 26);
            }
            const int w = mbedtls_ssl_write(&p.server, payload, n);
            if (w > 0) {
                t.sent.append(reinterpret_cast<const char*>(payload), static_cast<std::size_t>(w));
                if (!t.closing) {
                    t.whole = t.sent.size();
                }
            }
            break;
        }
        case 1: {
            const std::size_t n = in.byte();
            for (std::size_t i = 0; i < n && in.more(); ++i) {
                g_wire.to_client.push_back(static_cast<char>(in.byte()));
            }
            t.tampered = t.tampered || n > 0;
            break;
        }
        case 2: {
            const std::size_t back = in.byte();
            const auto x = static_cast<std::uint8_t>(in.byte() | 1);
            const std::size_t unread = g_wire.to_client.size() - g_wire.client_at;
            if (unread > 0) {
                g_wire.to_client[g_wire.to_client.size() - 1 - back % unread] ^=
                    static_cast<char>(x);
                t.tampered = true;
            }
            break;
        }
        case 3: {
            const std::size_t n = static_cast<std::size_t>(in.byte()) + 1;
            const std::size_t unread = g_wire.to_client.size() - g_wire.client_at;
            g_wire.to_client.resize(g_wire.to_client.size() - (n < unread ? n : unread));
            t.tampered = t.tampered || unread > 0;
            break;
        }
        case 4: {
            const bool fatal = (in.byte() & 1) != 0;
            const std::uint8_t type = in.byte();
            const int level =
                fatal ? MBEDTLS_SSL_ALERT_LEVEL_FATAL : MBEDTLS_SSL_ALERT_LEVEL_WARNING;
            if (mbedtls_ssl_send_alert_message(&p.server, static_cast<unsigned char>(level),
                                               type) == 0 &&
                (fatal || type == MBEDTLS_SSL_ALERT_MSG_CLOSE_NOTIFY)) {
                t.closing = true;
            }
            break;
        }
        case 5:
#if defined(MBEDTLS_SSL_RENEGOTIATION)
            // A HelloRequest the client declines (renegotiation is off);
            // the server never reads the answer.
            (void)mbedtls_ssl_renegotiate(&p.server);
#endif
            break;
        case 6:
            g_wire.read_limit = static_cast<std::size_t>(in.byte()) + 1;
            end = read_all(tls, t, sizeof payload, calls, bound());
            break;
        case 7:
            if (!send_all(tls, static_cast<std::size_t>(in.byte()) + 1)) {
                end = outcome::failed;
            }
            break;
        }
    }
    if (end == outcome::open) {
        g_wire.ended = true;
        g_wire.read_limit = SIZE_MAX;
        // A would_block now can only be a write of the client's own that
        // blocked (the alert that declines a renegotiation): the client
        // reads one record per call then. Each try must move something.
        for (;;) {
            const std::size_t at = g_wire.client_at;
            const unsigned writes = g_wire.writes;
            end = read_all(tls, t, sizeof payload, calls, bound());
            if (end != outcome::open) {
                break;
            }
            check(g_wire.client_at != at || g_wire.writes != writes);
        }
    }
    if (!t.tampered && !t.closing) {
        // Untouched records all come through, and then the plain end.
        check(end == outcome::closed && t.read == t.sent);
    } else if (!t.tampered && t.closing) {
        // Everything up to the server's close or fatal alert, nothing after.
        check(t.read.size() == t.whole);
    }
    if (end == outcome::failed) {
        const edgelock::node_error why = tls.failure(0);
        check(why == edgelock::node_error::tls_session_failed ||
              why == edgelock::node_error::tls_handshake_failed);
        check(tls.failure_text(0).size > 0 &&
              tls.failure_text(0).size <= edgelock::detail::tls_failure_text);
    }
    tls.close(0);
    check(tls.buffered(0) == 0);
    return 0;
}
