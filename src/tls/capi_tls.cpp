// The C API's TLS transport (include/edgelock/edgelock.h): a tls_mbedtls
// whose sessions live in the caller's memory, counted at run time.
#include <new>

#include "../capi/capi_internal.hpp"
#include "edgelock/tls_mbedtls.hpp"

using namespace edgelock;

namespace {

constexpr unsigned max_kept = 8;  // tls_mbedtls<N>'s default: min(N, 8)

class sized_tls final : public tls_mbedtls_base {
public:
    sized_tls(detail::tls_session* sessions, std::uint16_t count, detail::tls_saved* saved,
              std::uint16_t kept) noexcept
        : tls_mbedtls_base(sessions, count) {
        keep_sessions_in(saved, kept);
    }
    ~sized_tls() { shutdown(); }
};

// The memory: the C handle, then this, then the sessions and kept sessions.
struct tls_object {
    sized_tls transport;
    detail::tls_session* sessions;
    detail::tls_saved* saved;
    unsigned session_count;
    unsigned kept_count;
};

constexpr std::size_t object_at = capi::align_up(sizeof(edgelock_tls), alignof(tls_object));
constexpr std::size_t sessions_at =
    capi::align_up(object_at + sizeof(tls_object), alignof(detail::tls_session));

unsigned kept_for(unsigned sessions) noexcept {
    return sessions < max_kept ? sessions : max_kept;
}

std::size_t saved_at(unsigned sessions) noexcept {
    return capi::align_up(sessions_at + sessions * sizeof(detail::tls_session),
                          alignof(detail::tls_saved));
}

int status_of(tls_errc e) noexcept {
    switch (e) {
    case tls_errc::ok:
        return EDGELOCK_OK;
    case tls_errc::path_too_long:
        return EDGELOCK_ERR_TLS_PATH;
    case tls_errc::ca_file_unreadable:
        return EDGELOCK_ERR_TLS_CA_FILE;
    case tls_errc::ca_dir_unreadable:
        return EDGELOCK_ERR_TLS_CA_DIR;
    case tls_errc::no_ca:
        return EDGELOCK_ERR_TLS_NO_CA;
    case tls_errc::cert_unreadable:
        return EDGELOCK_ERR_TLS_CERT;
    case tls_errc::key_unreadable:
        return EDGELOCK_ERR_TLS_KEY;
    case tls_errc::key_mismatch:
        return EDGELOCK_ERR_TLS_KEY_MISMATCH;
    case tls_errc::cert_without_key:
        return EDGELOCK_ERR_TLS_CERT_WITHOUT_KEY;
    case tls_errc::init_failed:
        return EDGELOCK_ERR_TLS_INIT;
    }
    return EDGELOCK_ERR_TLS_INIT;
}

}  // namespace

extern "C" {

void edgelock_tls_options_init(struct edgelock_tls_options* o) {
    if (o == nullptr) {
        return;
    }
    *o = edgelock_tls_options{};
}

unsigned edgelock_tls_sessions_for(unsigned nodes, unsigned extra) {
    return static_cast<unsigned>(client_base::sessions_for(nodes, nodes + extra));
}

size_t edgelock_tls_size(unsigned sessions) {
    if (sessions == 0 || sessions >= no_session) {
        return 0;
    }
    return saved_at(sessions) + kept_for(sessions) * sizeof(detail::tls_saved);
}

int edgelock_tls_init(void* mem, size_t size, unsigned sessions,
                      const struct edgelock_tls_options* options, edgelock_tls** out) {
    if (out == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    *out = nullptr;
    if (mem == nullptr || sessions == 0 || sessions >= no_session) {
        return EDGELOCK_ERR_ARG;
    }
    auto* base = static_cast<char*>(mem);
    if (size < edgelock_tls_size(sessions) || !capi::aligned_for<edgelock_tls>(mem) ||
        !capi::aligned_for<tls_object>(base + object_at) ||
        !capi::aligned_for<detail::tls_session>(base + sessions_at) ||
        !capi::aligned_for<detail::tls_saved>(base + saved_at(sessions))) {
        return EDGELOCK_ERR_MEMORY;
    }
    edgelock_tls_options defaults;
    if (options == nullptr) {
        edgelock_tls_options_init(&defaults);
        options = &defaults;
    }
    const unsigned kept = kept_for(sessions);
    auto* s = reinterpret_cast<detail::tls_session*>(base + sessions_at);
    auto* k = reinterpret_cast<detail::tls_saved*>(base + saved_at(sessions));
    for (unsigned i = 0; i < sessions; ++i) {
        new (s + i) detail::tls_session();
    }
    for (unsigned i = 0; i < kept; ++i) {
        new (k + i) detail::tls_saved();
    }
    auto* t = new (base + object_at) tls_object{
        sized_tls(s, static_cast<std::uint16_t>(sessions), k, static_cast<std::uint16_t>(kept)), s,
        k, sessions, kept};
    auto* handle = new (mem) edgelock_tls();
    handle->via = &t->transport;
    handle->object = t;
    tls_options to;
    to.ca_file = str_view(options->ca_file);
    to.ca_dir = str_view(options->ca_dir);
    to.cert_file = str_view(options->cert_file);
    to.key_file = str_view(options->key_file);
    to.server_name = str_view(options->server_name);
    to.always = options->always != 0;
    to.insecure_skip_verify = options->insecure_skip_verify != 0;
    const int status = status_of(t->transport.configure(to));
    if (status != EDGELOCK_OK) {
        edgelock_tls_deinit(handle);
        return status;
    }
    *out = handle;
    return EDGELOCK_OK;
}

void edgelock_tls_deinit(edgelock_tls* tls) {
    if (tls == nullptr) {
        return;
    }
    auto* t = static_cast<tls_object*>(tls->object);
    detail::tls_session* s = t->sessions;
    detail::tls_saved* k = t->saved;
    const unsigned sessions = t->session_count;
    const unsigned kept = t->kept_count;
    t->~tls_object();
    tls->~edgelock_tls();
    for (unsigned i = kept; i > 0; --i) {
        k[i - 1].~tls_saved();
    }
    for (unsigned i = sessions; i > 0; --i) {
        s[i - 1].~tls_session();
    }
}

}  // extern "C"
