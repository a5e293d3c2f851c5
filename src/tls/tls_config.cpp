// The TLS transport's shared part: the configuration every session uses
// (rules, CA chain, own certificate and key), loaded once by configure().

// Directories are read through the large-file interface (readdir64, stat64)
// even in a 32-bit build: see parse_dir().
#define _FILE_OFFSET_BITS 64

#include <dirent.h>
#include <sys/stat.h>

#include <mbedtls/version.h>

#include <cstring>

#include "edgelock/tls_mbedtls.hpp"
#include "tls_internal.hpp"

#if MBEDTLS_VERSION_NUMBER >= 0x03000000 && defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif

namespace edgelock {

namespace {

// Where the system keeps its trusted CAs when the options name none.
constexpr const char system_ca_dir[] = "/etc/ssl/certs";

// A path long enough for any real one; the options hold views, mbedTLS wants
// NUL-terminated strings.
constexpr std::size_t max_path = 1024;

bool copy_path(str_view from, char (&to)[max_path]) {
    if (from.size >= sizeof to) {
        return false;
    }
    std::memcpy(to, from.data, from.size);
    to[from.size] = '\0';
    return true;
}

// parse_file / parse_path return how many certificates failed to parse (a
// directory holds other files too); only a negative result or nothing loaded
// at all is a failure.
bool loaded_some(int ret, const mbedtls_x509_crt& chain) {
    return ret >= 0 && chain.raw.len != 0;
}

// Every certificate file of a directory (c_rehash's <hash>.0 links, a
// system store's bundles), as mbedtls_x509_crt_parse_path reads one, with the
// same result: how many files failed to parse, or negative when the directory
// cannot be read. Done here because mbedTLS's own walk uses the plain
// readdir(), which in a 32-bit program fails with EOVERFLOW at the first entry
// whenever the file system hands out 64-bit directory offsets (ext4 does to a
// 32-bit program under qemu-user on a 64-bit kernel): the store then reads as
// empty.
int parse_dir(mbedtls_x509_crt& chain, const char* dir) {
    DIR* d = ::opendir(dir);
    if (d == nullptr) {
        return -1;
    }
    int failed = 0;
    char path[max_path];
    const std::size_t n = std::strlen(dir);
    while (const dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') {
            continue;  // ".", "..", hidden files
        }
        const std::size_t m = std::strlen(e->d_name);
        if (n + 1 + m >= sizeof path) {
            ++failed;
            continue;
        }
        std::memcpy(path, dir, n);
        path[n] = '/';
        std::memcpy(path + n + 1, e->d_name, m + 1);
        struct stat st;
        if (::stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;  // a dangling link, a subdirectory
        }
        if (mbedtls_x509_crt_parse_file(&chain, path) != 0) {
            ++failed;
        }
    }
    ::closedir(d);
    return failed;
}

}  // namespace

const char* describe(tls_errc code) noexcept {
    switch (code) {
    case tls_errc::ok:
        return "ok";
    case tls_errc::path_too_long:
        return "TLS: a path or server name is too long";
    case tls_errc::ca_file_unreadable:
        return "TLS: CA file missing, unreadable or without a certificate";
    case tls_errc::ca_dir_unreadable:
        return "TLS: CA directory missing, unreadable or without a certificate";
    case tls_errc::no_ca:
        return "TLS: no trusted CA (none given and no system store)";
    case tls_errc::cert_unreadable:
        return "TLS: certificate file missing, unreadable or not a certificate";
    case tls_errc::key_unreadable:
        return "TLS: key file missing, unreadable, encrypted or not a key";
    case tls_errc::key_mismatch:
        return "TLS: the key does not belong to the certificate";
    case tls_errc::cert_without_key:
        return "TLS: a certificate needs its key, and a key its certificate";
    case tls_errc::init_failed:
        return "TLS: the TLS library failed to initialise";
    }
    return "unknown TLS error";
}

tls_mbedtls_base::tls_mbedtls_base(detail::tls_session* sessions, std::uint16_t capacity) noexcept
    : sessions_(sessions), capacity_(capacity) {
    server_name_[0] = '\0';
    std::memset(fingerprint_, 0, sizeof fingerprint_);
    mbedtls_ssl_config_init(&conf_);
    mbedtls_x509_crt_init(&ca_);
    mbedtls_x509_crt_init(&own_cert_);
    mbedtls_pk_init(&own_key_);
}

tls_mbedtls_base::~tls_mbedtls_base() {
    release_config();
}

void tls_mbedtls_base::shutdown() noexcept {
    free_sessions();
    release_config();
}

void tls_mbedtls_base::free_sessions() noexcept {
    for (std::uint16_t n = 0; n < capacity_; ++n) {
        detail::tls_session& s = sessions_[n];
        if (s.set_up) {
            mbedtls_ssl_free(&s.ssl);
        }
        // A TLS connection still open (a configure() while connected) must
        // not carry on in clear: it stays TLS without a session, and fails.
        // Its handle stays taken until the driver closes it.
        const bool tls = s.tls;
        const bool in_use = s.in_use;
        s = detail::tls_session{};
        s.tls = tls;
        s.in_use = in_use;
    }
}

void tls_mbedtls_base::release_config() noexcept {
    configured_ = false;
    mbedtls_ssl_config_free(&conf_);
    mbedtls_x509_crt_free(&ca_);
    mbedtls_x509_crt_free(&own_cert_);
    mbedtls_pk_free(&own_key_);
    mbedtls_ssl_config_init(&conf_);
    mbedtls_x509_crt_init(&ca_);
    mbedtls_x509_crt_init(&own_cert_);
    mbedtls_pk_init(&own_key_);
}

tls_errc tls_mbedtls_base::configure(const tls_options& options) noexcept {
    // Sessions point at the configuration: they go first. Kept ones were
    // verified under the old one: they go too.
    free_sessions();
    release_config();
    forget_all();
    counts_ = tls_handshake_counts{};

    if (options.server_name.size > node_url_max_host) {
        return tls_errc::path_too_long;
    }
    if (options.cert_file.empty() != options.key_file.empty()) {
        return tls_errc::cert_without_key;
    }
#if MBEDTLS_VERSION_NUMBER >= 0x03000000 && defined(MBEDTLS_PSA_CRYPTO_C)
    // 3.x does its crypto through PSA, which must be started first.
    if (psa_crypto_init() != PSA_SUCCESS) {
        return tls_errc::init_failed;
    }
#endif

    char path[max_path];
    if (!options.ca_file.empty()) {
        if (!copy_path(options.ca_file, path)) {
            return tls_errc::path_too_long;
        }
        if (!loaded_some(mbedtls_x509_crt_parse_file(&ca_, path), ca_)) {
            release_config();
            return tls_errc::ca_file_unreadable;
        }
    }
    if (!options.ca_dir.empty()) {
        if (!copy_path(options.ca_dir, path)) {
            release_config();
            return tls_errc::path_too_long;
        }
        if (!loaded_some(parse_dir(ca_, path), ca_)) {
            release_config();
            return tls_errc::ca_dir_unreadable;
        }
    }
    if (options.ca_file.empty() && options.ca_dir.empty()) {
        // The system store: required unless nothing is verified anyway.
        const int ret = parse_dir(ca_, system_ca_dir);
        if (!loaded_some(ret, ca_) && !options.insecure_skip_verify) {
            release_config();
            return tls_errc::no_ca;
        }
    }

    if (!options.cert_file.empty()) {
        if (!copy_path(options.cert_file, path)) {
            release_config();
            return tls_errc::path_too_long;
        }
        if (mbedtls_x509_crt_parse_file(&own_cert_, path) != 0) {
            release_config();
            return tls_errc::cert_unreadable;
        }
        if (!copy_path(options.key_file, path)) {
            release_config();
            return tls_errc::path_too_long;
        }
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
        const int key =
            mbedtls_pk_parse_keyfile(&own_key_, path, nullptr, detail::tls_random, nullptr);
#else
        const int key = mbedtls_pk_parse_keyfile(&own_key_, path, nullptr);
#endif
        if (key != 0) {
            release_config();
            return tls_errc::key_unreadable;
        }
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
        const int pair =
            mbedtls_pk_check_pair(&own_cert_.pk, &own_key_, detail::tls_random, nullptr);
#else
        const int pair = mbedtls_pk_check_pair(&own_cert_.pk, &own_key_);
#endif
        if (pair != 0) {
            release_config();
            return tls_errc::key_mismatch;
        }
    }

    if (mbedtls_ssl_config_defaults(&conf_, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                    MBEDTLS_SSL_PRESET_DEFAULT) != 0) {
        release_config();
        return tls_errc::init_failed;
    }
    mbedtls_ssl_conf_rng(&conf_, detail::tls_random, nullptr);
    mbedtls_ssl_conf_authmode(&conf_, options.insecure_skip_verify ? MBEDTLS_SSL_VERIFY_NONE
                                                                   : MBEDTLS_SSL_VERIFY_REQUIRED);
    mbedtls_ssl_conf_ca_chain(&conf_, &ca_, nullptr);
#if MBEDTLS_VERSION_NUMBER >= 0x03020000
    mbedtls_ssl_conf_min_tls_version(&conf_, MBEDTLS_SSL_VERSION_TLS1_2);
#else
    mbedtls_ssl_conf_min_version(&conf_, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
#endif
#if defined(MBEDTLS_SSL_RENEGOTIATION)
    mbedtls_ssl_conf_renegotiation(&conf_, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
#endif
#if MBEDTLS_VERSION_NUMBER >= 0x03060100 && defined(MBEDTLS_SSL_PROTO_TLS1_3) && \
    defined(MBEDTLS_SSL_SESSION_TICKETS) && defined(MBEDTLS_SSL_CLI_C)
    // A TLS 1.3 server sends its tickets after the handshake; recv() keeps
    // them as they come (without this they are dropped unseen).
    mbedtls_ssl_conf_tls13_enable_signal_new_session_tickets(
        &conf_, MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_ENABLED);
#endif
    if (!options.cert_file.empty() &&
        mbedtls_ssl_conf_own_cert(&conf_, &own_cert_, &own_key_) != 0) {
        release_config();
        return tls_errc::init_failed;
    }

    if (!options.server_name.empty()) {
        std::memcpy(server_name_, options.server_name.data, options.server_name.size);
    }
    server_name_[options.server_name.size] = '\0';
    server_name_size_ = options.server_name.size;
    always_ = options.always;
    verify_ = !options.insecure_skip_verify;
    set_fingerprint(options);
    configured_ = true;
    return tls_errc::ok;
}

}  // namespace edgelock
