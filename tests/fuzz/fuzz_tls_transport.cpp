// libFuzzer target for the TLS transport's error paths (edgelock::tls_mbedtls
// over mbedTLS): whatever a server, a plaintext port or an attacker on the
// path sends in answer to the ClientHello, the handshake must end, named, in
// a bounded number of proceed() calls, without a crash or a leak.
//
// The transport reads and writes through port::send / port::recv; this
// program defines those itself (no socket, no syscall): what the client sends
// is dropped, and what it reads comes from the input, in chunks whose sizes
// the input chooses, with "would block" between chunks and the end of the
// stream after the last. The input:
//
//   byte 0     flags: bit 0 verify against a CA (else insecure), bit 1 an
//              explicit server name, bit 2 writes would block now and then
//   then       chunks: a length byte n, then n bytes (short at the end)
//
// Checks: open() and proceed() end (ok, or a failure) within 2 * chunks + 8
// calls; a failure that is not the socket's own has a node_error tls_* reason
// and a text within its bound; a handshake that succeeded (it cannot, without
// the server's key) would have to carry data. Any breach traps.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/tls_mbedtls.hpp"

namespace {

void check(bool ok) {
    if (!ok) {
        __builtin_trap();
    }
}

// The server's side of the one connection: the input's chunks.
struct wire {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    std::size_t at = 0;     // next byte
    std::size_t chunk = 0;  // bytes left in the current chunk
    bool blocked = false;   // one would_block before each new chunk
    bool slow_writes = false;
    unsigned writes = 0;
    unsigned chunks = 0;
} g_wire;

edgelock::port::net_result result(edgelock::port::net_status s, std::size_t n = 0) {
    edgelock::port::net_result r;
    r.status = s;
    r.size = n;
    return r;
}

}  // namespace

// The port functions the TLS transport uses, for this program only.
namespace edgelock {
namespace port {

net_result send(int, const void*, std::size_t size) noexcept {
    ++g_wire.writes;
    if (g_wire.slow_writes && g_wire.writes % 3 == 0) {
        return result(net_status::would_block);
    }
    return result(net_status::ok, g_wire.slow_writes && size > 7 ? size / 2 : size);
}

net_result recv(int, void* buf, std::size_t capacity) noexcept {
    if (g_wire.chunk == 0) {
        if (g_wire.at >= g_wire.size) {
            return result(net_status::closed);
        }
        if (!g_wire.blocked) {
            g_wire.blocked = true;
            return result(net_status::would_block);
        }
        g_wire.blocked = false;
        g_wire.chunk = g_wire.data[g_wire.at++];
        ++g_wire.chunks;
        if (g_wire.chunk == 0 || g_wire.at >= g_wire.size) {
            g_wire.chunk = 0;
            return result(net_status::would_block);
        }
    }
    std::size_t n = g_wire.chunk < capacity ? g_wire.chunk : capacity;
    if (n > g_wire.size - g_wire.at) {
        n = g_wire.size - g_wire.at;
    }
    std::memcpy(buf, g_wire.data + g_wire.at, n);
    g_wire.at += n;
    g_wire.chunk = g_wire.at >= g_wire.size ? 0 : g_wire.chunk - n;
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

// A CA certificate for the verifying transport (EC P-256, self-signed, made
// with openssl for this program, valid until 2126; its key was thrown away,
// so nothing a fuzzed server sends can chain to it: verification fails,
// through its real code).
const char ca_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBjDCCATOgAwIBAgIUEb6mGhUosRjns1mctTRwBj6FZlgwCgYIKoZIzj0EAwIw\n"
    "GzEZMBcGA1UEAwwQZWRnZWxvY2sgZnV6eiBDQTAgFw0yNjExMjQwOTUwNDFaGA8y\n"
    "MTI2MTAzMTA5NTA0MVowGzEZMBcGA1UEAwwQZWRnZWxvY2sgZnV6eiBDQTBZMBMG\n"
    "ByqGSM49AgEGCCqGSM49AwEHA0IABD0QCWi9jVgKw+KVLrFe+x6Zf1erZojyWIp7\n"
    "8ILyFTA/6GcuG4e+5d/AKO2+KmiSybmX+iypnSy60AZDIpL0bsOjUzBRMB0GA1Ud\n"
    "DgQWBBQbL0ee2Nr/3A4oyE5Y97EgBAsgIDAfBgNVHSMEGDAWgBQbL0ee2Nr/3A4o\n"
    "yE5Y97EgBAsgIDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIGsy\n"
    "AL2ZQBjSVl5ZWkei/IkIZC5fazV68USWxIM9jRNOAiBTjMJ5ZbSFLQjYb96f0oRh\n"
    "z4v038fOw31dEIWcMutQMA==\n"
    "-----END CERTIFICATE-----\n";

struct transports {
    edgelock::tls_mbedtls<1> verify;
    edgelock::tls_mbedtls<1> insecure;

    transports() {
        edgelock::tls_options o;
        o.insecure_skip_verify = true;
        check(insecure.configure(o) == edgelock::tls_errc::ok);
        // The CA goes through a file, as configure() takes it.
        char path[] = "/tmp/edgelock-fuzz-ca-XXXXXX";
        const int fd = ::mkstemp(path);
        check(fd >= 0);
        const bool wrote =
            ::write(fd, ca_pem, sizeof ca_pem - 1) == static_cast<ssize_t>(sizeof ca_pem - 1);
        ::close(fd);
        edgelock::tls_options v;
        v.ca_file = edgelock::str_view(path);
        const bool loaded = wrote && verify.configure(v) == edgelock::tls_errc::ok;
        ::unlink(path);
        check(loaded);
    }
};

bool tls_reason(edgelock::node_error e) {
    using edgelock::node_error;
    return e == node_error::tls_handshake_failed || e == node_error::tls_untrusted ||
           e == node_error::tls_expired || e == node_error::tls_name_mismatch ||
           e == node_error::tls_not_tls;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static transports t;
    if (size == 0) {
        return 0;
    }
    const std::uint8_t flags = data[0];
    g_wire = wire{};
    g_wire.data = data + 1;
    g_wire.size = size - 1;
    g_wire.slow_writes = (flags & 4) != 0;
    edgelock::tls_mbedtls_base& tls =
        (flags & 1) != 0 ? static_cast<edgelock::tls_mbedtls_base&>(t.verify) : t.insecure;

    edgelock::node_address address;
    address.host = (flags & 2) != 0 ? edgelock::str_view("redis.example") : "localhost";
    address.port = 6380;
    address.tls = true;

    const int fd = 3;
    edgelock::session_peer peer;
    peer.host = address.host;
    peer.tls = address.tls;
    edgelock::session_id id = edgelock::no_session;
    edgelock::port::net_result r = tls.open(fd, peer, id);
    check(id == 0);  // the one session: handle 0, the one the calls below use
    std::size_t calls = 1;
    // Each proceed() either consumes input, meets a would_block (at most one
    // per chunk, and a few for writes) or ends.
    const std::size_t bound = 2 * g_wire.size + 64;
    while (r.status == edgelock::port::net_status::in_progress) {
        check(calls <= bound);
        check(tls.wants(0) != 0);
        r = tls.proceed(0, fd);
        ++calls;
    }
    if (r.status == edgelock::port::net_status::ok) {
        // Only a server holding a key the CA or the insecure mode accepts,
        // with a valid Finished, gets here; then data must flow.
        char buf[64];
        const edgelock::port::net_result in = tls.recv(0, fd, buf, sizeof buf);
        check(in.status != edgelock::port::net_status::in_progress);
    } else {
        const edgelock::node_error why = tls.failure(0);
        check(why == edgelock::node_error::none || tls_reason(why));
        check(tls.failure_text(0).size <= edgelock::detail::tls_failure_text);
        if (why == edgelock::node_error::none) {
            // The socket's own ending: the input ran out (closed).
            check(r.status == edgelock::port::net_status::closed ||
                  r.status == edgelock::port::net_status::error);
        }
    }
    tls.close(0);
    check(tls.buffered(0) == 0);
    return 0;
}
