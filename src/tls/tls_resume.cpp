// The TLS transport's kept sessions: after a handshake the session (the
// server's ticket or session id, the secrets, the server's certificate) is
// serialized into a fixed entry for its peer, offered on the next connection
// to that peer, replaced when the server made a new one, forgotten when a
// handshake that offered it failed. Entries carry the fingerprint of the
// configuration they were verified under, so a session checked against one
// CA is never resumed, in this process or another, under another.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <mbedtls/md.h>

#include <cstring>

#include "edgelock/tls_mbedtls.hpp"

namespace edgelock {

using detail::no_saved;
using detail::tls_saved;
using detail::tls_saved_header;
using detail::tls_session;

namespace {

// The header's first bytes: which format follows (mbedTLS's own serialized
// session carries its version and build options itself).
constexpr unsigned char saved_tag[4] = {'e', 'l', 's', 1};
constexpr std::size_t tag_size = sizeof saved_tag;
constexpr std::size_t room = EDGELOCK_TLS_SESSION_BYTES - tls_saved_header;

static_assert(tls_saved_header > tag_size, "the fingerprint follows the tag");

// The port the socket is connected to: the other half of a peer's key. False
// for anything but TCP (a Unix socket, a socketpair in a test).
bool peer_port(int fd, std::uint16_t& port) {
    sockaddr_storage a;
    socklen_t len = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        return false;
    }
    if (a.ss_family == AF_INET) {
        port = ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
    } else if (a.ss_family == AF_INET6) {
        port = ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
    } else {
        return false;
    }
    return port != 0;
}

void clear(tls_saved& e) {
    e.made = 0;
    e.touched = 0;
    e.size = 0;
    e.host_size = 0;
    e.used = false;
}

bool hash_bytes(mbedtls_md_context_t& md, const unsigned char* data, std::size_t size) {
    // Length first: no two lists of certificates hash alike by regrouping.
    const unsigned char length[4] = {
        static_cast<unsigned char>(size >> 24), static_cast<unsigned char>(size >> 16),
        static_cast<unsigned char>(size >> 8), static_cast<unsigned char>(size)};
    return mbedtls_md_update(&md, length, sizeof length) == 0 &&
           (size == 0 || mbedtls_md_update(&md, data, size) == 0);
}

}  // namespace

const char* describe(tls_import code) noexcept {
    switch (code) {
    case tls_import::ok:
        return "ok";
    case tls_import::not_configured:
        return "the TLS transport is not configured";
    case tls_import::bad_peer:
        return "no host, a host or name too long, or port 0";
    case tls_import::other_name:
        return "kept for another server name";
    case tls_import::not_a_session:
        return "not a kept TLS session";
    case tls_import::other_setup:
        return "kept under other CA, client certificate or verification options";
    case tls_import::unusable:
        return "the TLS library cannot load it (another version or build, or damaged)";
    case tls_import::no_room:
        return "the TLS transport keeps no sessions";
    }
    return "unknown import error";
}

// The header every session kept under this configuration carries: the tag,
// then the start of a SHA-256 over what decides whether a server is trusted
// and who the client is (verification on or off, the CA chain, the own
// certificate). When it cannot be computed the fingerprint is random: such
// sessions resume within this configuration only.
void tls_mbedtls_base::set_fingerprint(const tls_options& options) noexcept {
    std::memcpy(fingerprint_, saved_tag, tag_size);
    unsigned char digest[32];
    bool ok = false;
    const mbedtls_md_info_t* sha256 = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    mbedtls_md_context_t md;
    mbedtls_md_init(&md);
    if (sha256 != nullptr && mbedtls_md_setup(&md, sha256, 0) == 0 && mbedtls_md_starts(&md) == 0) {
        const unsigned char verify = options.insecure_skip_verify ? 0 : 1;
        ok = hash_bytes(md, &verify, 1);
        for (const mbedtls_x509_crt* c = &ca_; ok && c != nullptr && c->raw.len != 0; c = c->next) {
            ok = hash_bytes(md, c->raw.p, c->raw.len);
        }
        ok = ok && hash_bytes(md, own_cert_.raw.p, own_cert_.raw.len) &&
             mbedtls_md_finish(&md, digest) == 0;
    }
    mbedtls_md_free(&md);
    if (!ok && !port::random_bytes(digest, sizeof digest)) {
        std::memset(digest, 0, sizeof digest);
        digest[0] = 1;  // nothing exported before matches it by chance
    }
    std::memcpy(fingerprint_ + tag_size, digest, tls_saved_header - tag_size);
}

str_view tls_mbedtls_base::name_for(str_view host) const noexcept {
    return server_name_size_ > 0 ? str_view(server_name_, server_name_size_) : host;
}

std::uint16_t tls_mbedtls_base::find_saved(str_view host, std::uint16_t port) const noexcept {
    for (std::uint16_t i = 0; i < saved_capacity_; ++i) {
        const tls_saved& e = saved_[i];
        if (e.made != 0 && e.port == port && str_view(e.host, e.host_size) == host) {
            return i;
        }
    }
    return no_saved;
}

// The peer's entry, else an empty one, else the least recently used.
std::uint16_t tls_mbedtls_base::entry_for(str_view host, std::uint16_t port) const noexcept {
    const std::uint16_t own = find_saved(host, port);
    if (own != no_saved || saved_capacity_ == 0) {
        return own;
    }
    std::uint16_t oldest = 0;
    for (std::uint16_t i = 0; i < saved_capacity_; ++i) {
        if (saved_[i].made == 0) {
            return i;
        }
        if (saved_[i].touched < saved_[oldest].touched) {
            oldest = i;
        }
    }
    return oldest;
}

// Stores are numbered so that a handshake can tell whether the entry it
// offered is still the one it took (saturating: 2^32 stores is not a life).
std::uint32_t tls_mbedtls_base::next_store() noexcept {
    if (stores_ < UINT32_MAX) {
        ++stores_;
    }
    return stores_;
}

void tls_mbedtls_base::forget_all() noexcept {
    for (std::uint16_t i = 0; i < saved_capacity_; ++i) {
        clear(saved_[i]);
    }
}

// Before the handshake: the peer's kept session, if there is one, goes into
// the ClientHello. One that mbedTLS cannot take back is forgotten.
void tls_mbedtls_base::offer(tls_session& s, int fd) noexcept {
    s.offered = no_saved;
    s.keyed = s.host[0] != '\0' && peer_port(fd, s.port);
    if (!s.keyed || saved_capacity_ == 0) {
        return;
    }
    const std::uint16_t i = find_saved(str_view(s.host, std::strlen(s.host)), s.port);
    if (i == no_saved) {
        return;
    }
    tls_saved& e = saved_[i];
    mbedtls_ssl_session session;
    mbedtls_ssl_session_init(&session);
    const bool ok = e.size > tls_saved_header &&
                    mbedtls_ssl_session_load(&session, e.data + tls_saved_header,
                                             e.size - tls_saved_header) == 0 &&
                    mbedtls_ssl_set_session(&s.ssl, &session) == 0;
    mbedtls_ssl_session_free(&session);
    if (!ok) {
        clear(e);
        return;
    }
    s.offered = i;
    s.offered_made = e.made;
    e.touched = next_store();
    e.used = true;
}

// After a handshake (or a TLS 1.3 ticket): the session as it is now becomes
// the peer's kept one, replacing what was there. One that cannot be saved
// (mbedTLS refuses, or it does not fit) leaves the peer without any: the old
// one was refused or is the same.
void tls_mbedtls_base::keep(tls_session& s) noexcept {
    if (!s.keyed || saved_capacity_ == 0) {
        return;
    }
    const str_view host(s.host, std::strlen(s.host));
    mbedtls_ssl_session session;
    mbedtls_ssl_session_init(&session);
    std::size_t need = 0;
    bool ok = mbedtls_ssl_get_session(&s.ssl, &session) == 0;
    if (ok) {
        (void)mbedtls_ssl_session_save(&session, nullptr, 0, &need);
        ok = need > 0 && need <= room;
    }
    // Another peer's entry is taken only for a session that will fit.
    const std::uint16_t i = ok ? entry_for(host, s.port) : find_saved(host, s.port);
    if (i != no_saved) {
        tls_saved& e = saved_[i];
        std::size_t size = 0;
        if (ok && mbedtls_ssl_session_save(&session, e.data + tls_saved_header, room, &size) == 0 &&
            size <= room) {
            std::memcpy(e.data, fingerprint_, tls_saved_header);
            e.size = static_cast<std::uint16_t>(tls_saved_header + size);
            std::memcpy(e.host, host.data, host.size);
            e.host_size = static_cast<std::uint8_t>(host.size);
            e.port = s.port;
            e.made = next_store();
            e.touched = e.made;
            e.used = true;
        } else {
            clear(e);
        }
    }
    mbedtls_ssl_session_free(&session);
}

// A handshake that offered a kept session failed (or was given up): the
// session goes, unless its entry was meanwhile made anew by another
// connection.
void tls_mbedtls_base::forget_offered(tls_session& s) noexcept {
    if (s.offered != no_saved && s.offered < saved_capacity_ &&
        saved_[s.offered].made == s.offered_made) {
        clear(saved_[s.offered]);
    }
    s.offered = no_saved;
}

void tls_mbedtls_base::established(tls_session& s) noexcept {
    ++counts_.done;
    if (s.offered != no_saved) {
        ++counts_.offered;
        // No certificate to check: the server took the session.
        if (verify_ && !s.cert_checked) {
            ++counts_.resumed;
        }
    }
    keep(s);
    s.offered = no_saved;
}

bool tls_mbedtls_base::saved_session(std::size_t i, tls_saved_session& out) const noexcept {
    if (i >= saved_capacity_ || saved_[i].made == 0) {
        return false;
    }
    const tls_saved& e = saved_[i];
    out.host = str_view(e.host, e.host_size);
    out.port = e.port;
    out.server_name = name_for(out.host);
    out.data = e.data;
    out.size = e.size;
    out.used = e.used;
    return true;
}

tls_import tls_mbedtls_base::import_session(str_view host, std::uint16_t port, str_view server_name,
                                            const void* data, std::size_t size) noexcept {
    if (!configured_) {
        return tls_import::not_configured;
    }
    if (saved_capacity_ == 0) {
        return tls_import::no_room;
    }
    if (host.empty() || host.size > node_url_max_host || port == 0) {
        return tls_import::bad_peer;
    }
    if (!(server_name == name_for(host))) {
        return tls_import::other_name;
    }
    const unsigned char* bytes = static_cast<const unsigned char*>(data);
    if (bytes == nullptr || size <= tls_saved_header || size > EDGELOCK_TLS_SESSION_BYTES ||
        std::memcmp(bytes, fingerprint_, tag_size) != 0) {
        return tls_import::not_a_session;
    }
    if (std::memcmp(bytes + tag_size, fingerprint_ + tag_size, tls_saved_header - tag_size) != 0) {
        return tls_import::other_setup;
    }
    mbedtls_ssl_session session;
    mbedtls_ssl_session_init(&session);
    const bool loads =
        mbedtls_ssl_session_load(&session, bytes + tls_saved_header, size - tls_saved_header) == 0;
    mbedtls_ssl_session_free(&session);
    if (!loads) {
        return tls_import::unusable;
    }
    tls_saved& e = saved_[entry_for(host, port)];
    std::memcpy(e.data, bytes, size);
    e.size = static_cast<std::uint16_t>(size);
    std::memcpy(e.host, host.data, host.size);
    e.host_size = static_cast<std::uint8_t>(host.size);
    e.port = port;
    e.made = next_store();
    e.touched = e.made;
    e.used = false;
    return tls_import::ok;
}

}  // namespace edgelock
