// The C API's codes and words: the C++ error enums mapped to its ints, the
// events to its struct, and every code, state and event named.
#include <cstring>

#include "capi_internal.hpp"

using namespace edgelock;

namespace edgelock {
namespace capi {

int status_of(lock_errc e) noexcept {
    switch (e) {
    case lock_errc::ok:
        return EDGELOCK_OK;
    case lock_errc::not_configured:
        return EDGELOCK_ERR_NOT_CONFIGURED;
    case lock_errc::bad_node_count:
        return EDGELOCK_ERR_NODE_COUNT;
    case lock_errc::bad_quorum:
        return EDGELOCK_ERR_LOCK_QUORUM;
    case lock_errc::empty_name:
    case lock_errc::name_too_long:
        return EDGELOCK_ERR_LOCK_NAME;
    case lock_errc::name_unslotted:
        return EDGELOCK_ERR_LOCK_NAME_SLOT;
    case lock_errc::owner_too_long:
        return EDGELOCK_ERR_LOCK_OWNER;
    case lock_errc::holder_too_long:
        return EDGELOCK_ERR_LOCK_HOLDER;
    case lock_errc::bad_ttl:
        return EDGELOCK_ERR_LOCK_TTL;
    case lock_errc::bad_node_timeout:
        return EDGELOCK_ERR_LOCK_NODE_TIMEOUT;
    case lock_errc::bad_drift:
        return EDGELOCK_ERR_LOCK_DRIFT;
    case lock_errc::bad_retry:
        return EDGELOCK_ERR_LOCK_RETRY;
    case lock_errc::bad_mode_option:
        return EDGELOCK_ERR_LOCK_MODE;
    case lock_errc::no_random_source:
    case lock_errc::random_failed:
        return EDGELOCK_ERR_LOCK_RANDOM;
    case lock_errc::busy:
        return EDGELOCK_ERR_BUSY;
    case lock_errc::not_held:
        return EDGELOCK_ERR_NOT_HELD;
    case lock_errc::bad_node:
        return EDGELOCK_ERR_ARG;
    case lock_errc::buffer_too_small:
        return EDGELOCK_ERR_MEMORY;
    case lock_errc::bad_replicas:
        return EDGELOCK_ERR_LOCK_REPLICAS;
    case lock_errc::bad_permits:
        return EDGELOCK_ERR_LOCK_PERMITS;
    }
    return EDGELOCK_ERR_ARG;
}

int status_of(client_errc e, lock_errc lock_error) noexcept {
    switch (e) {
    case client_errc::ok:
        return EDGELOCK_OK;
    case client_errc::not_configured:
        return EDGELOCK_ERR_NOT_CONFIGURED;
    case client_errc::bad_node_count:
        return EDGELOCK_ERR_NODE_COUNT;
    case client_errc::bad_url:
        return EDGELOCK_ERR_URL;
    case client_errc::tls_not_built_in:
        return EDGELOCK_ERR_TLS_NOT_BUILT_IN;
    case client_errc::secret_too_long:
        return EDGELOCK_ERR_SECRET_TOO_LONG;
    case client_errc::user_without_password:
        return EDGELOCK_ERR_USER_WITHOUT_PASSWORD;
    case client_errc::bad_option:
        return EDGELOCK_ERR_OPTION;
    // Not reached from C: init configures a new client once, and the C API
    // has no command().
    case client_errc::in_use:
    case client_errc::node_unavailable:
    case client_errc::timed_out:
        return EDGELOCK_ERR_ARG;
    case client_errc::already_attached:
        return EDGELOCK_ERR_ARG;  // init makes a new lock
    case client_errc::not_attached:
        return EDGELOCK_ERR_NOT_ATTACHED;
    case client_errc::lock_rejected:
        // Never ok: a refusal whose reason was not kept is still one.
        return lock_error == lock_errc::ok ? EDGELOCK_ERR_ARG : status_of(lock_error);
    case client_errc::busy:
        return EDGELOCK_ERR_BUSY;
    case client_errc::not_held:
        return EDGELOCK_ERR_NOT_HELD;
    case client_errc::deadline:
        return EDGELOCK_ERR_DEADLINE;
    case client_errc::wait_failed:
        return EDGELOCK_ERR_WAIT_FAILED;
    case client_errc::reentered:
        return EDGELOCK_ERR_REENTERED;
    }
    return EDGELOCK_ERR_ARG;
}

int status_of(const op_result& r) noexcept {
    if (r.error != client_errc::ok) {
        return status_of(r.error, r.lock_error);
    }
    switch (r.event.kind) {
    case lock_event_kind::acquired:
    case lock_event_kind::renewed:
    case lock_event_kind::released:
        return EDGELOCK_OK;
    case lock_event_kind::busy:
        return EDGELOCK_ERR_HELD;
    case lock_event_kind::lost:
        return EDGELOCK_ERR_LOST;
    case lock_event_kind::failed:
    case lock_event_kind::renew_failed:
        return EDGELOCK_ERR_FAILED;
    }
    return EDGELOCK_ERR_FAILED;
}

edgelock_event event_of(const lock_event& e) noexcept {
    edgelock_event out{};
    out.kind = static_cast<int>(e.kind);
    out.reason = static_cast<int>(e.reason);
    out.holds = e.holds;
    out.validity_deadline_us = e.validity_deadline.us;
    out.fence = e.fence;
    out.holder_ttl_ms = e.holder_ttl_ms;
    out.nodes = e.nodes;
    out.absent = e.absent;
    out.permit = e.permit;
    out.permits_found = e.permits_found;
    return out;
}

}  // namespace capi
}  // namespace edgelock

static_assert(EDGELOCK_EVENT_RENEW_FAILED == static_cast<int>(lock_event_kind::renew_failed),
              "the C header's event kinds");
static_assert(EDGELOCK_REASON_PERMITS_DIFFER == static_cast<int>(lock_failure::permits_differ),
              "the C header's reasons");
static_assert(EDGELOCK_NODE_READY == static_cast<int>(node_state::ready),
              "the C header's node states");

extern "C" {

const char* edgelock_strerror(int code) {
    switch (code) {
    case EDGELOCK_OK:
        return "ok";
    case EDGELOCK_ERR_ARG:
        return "a null pointer, an unknown value or an index out of range";
    case EDGELOCK_ERR_MEMORY:
        return "the memory given is too small or not aligned";
    case EDGELOCK_ERR_HELD:
        return "held by another owner";
    case EDGELOCK_ERR_FAILED:
        return "the lock operation failed (see the event's reason)";
    case EDGELOCK_ERR_LOST:
        return "the lock is lost (see the event's reason)";
    case EDGELOCK_ERR_NOT_CONFIGURED:
        return describe(client_errc::not_configured);
    case EDGELOCK_ERR_NODE_COUNT:
        return describe(client_errc::bad_node_count);
    case EDGELOCK_ERR_URL:
        return describe(client_errc::bad_url);
    case EDGELOCK_ERR_TLS_NOT_BUILT_IN:
        return describe(client_errc::tls_not_built_in);
    case EDGELOCK_ERR_SECRET_TOO_LONG:
        return describe(client_errc::secret_too_long);
    case EDGELOCK_ERR_USER_WITHOUT_PASSWORD:
        return describe(client_errc::user_without_password);
    case EDGELOCK_ERR_OPTION:
        return describe(client_errc::bad_option);
    case EDGELOCK_ERR_NOT_ATTACHED:
        return describe(client_errc::not_attached);
    case EDGELOCK_ERR_BUSY:
        return describe(client_errc::busy);
    case EDGELOCK_ERR_NOT_HELD:
        return describe(client_errc::not_held);
    case EDGELOCK_ERR_DEADLINE:
        return describe(client_errc::deadline);
    case EDGELOCK_ERR_WAIT_FAILED:
        return describe(client_errc::wait_failed);
    case EDGELOCK_ERR_REENTERED:
        return describe(client_errc::reentered);
    case EDGELOCK_ERR_LOCK_QUORUM:
        return describe(lock_errc::bad_quorum);
    case EDGELOCK_ERR_LOCK_NAME:
        return "the lock's name is empty or too long";
    case EDGELOCK_ERR_LOCK_NAME_SLOT:
        return describe(lock_errc::name_unslotted);
    case EDGELOCK_ERR_LOCK_OWNER:
        return describe(lock_errc::owner_too_long);
    case EDGELOCK_ERR_LOCK_HOLDER:
        return describe(lock_errc::holder_too_long);
    case EDGELOCK_ERR_LOCK_TTL:
        return describe(lock_errc::bad_ttl);
    case EDGELOCK_ERR_LOCK_NODE_TIMEOUT:
        return describe(lock_errc::bad_node_timeout);
    case EDGELOCK_ERR_LOCK_DRIFT:
        return describe(lock_errc::bad_drift);
    case EDGELOCK_ERR_LOCK_RETRY:
        return describe(lock_errc::bad_retry);
    case EDGELOCK_ERR_LOCK_MODE:
        return "not in this lock's mode: renew_resurrects outside plain mode, or a resume of "
               "a reentrant lock or a semaphore";
    case EDGELOCK_ERR_LOCK_RANDOM:
        return describe(lock_errc::random_failed);
    case EDGELOCK_ERR_LOCK_REPLICAS:
        return describe(lock_errc::bad_replicas);
    case EDGELOCK_ERR_LOCK_PERMITS:
        return describe(lock_errc::bad_permits);
    case EDGELOCK_ERR_LOCK_TOKEN:
        return "a token is not 32 hex digits";
    case EDGELOCK_ERR_TLS_PATH:
        return "a TLS path or server name is too long";
    case EDGELOCK_ERR_TLS_CA_FILE:
        return "the CA file is missing, unreadable or holds no certificate";
    case EDGELOCK_ERR_TLS_CA_DIR:
        return "the CA folder is missing, unreadable or holds no certificate";
    case EDGELOCK_ERR_TLS_NO_CA:
        return "no CA given and the system store holds none";
    case EDGELOCK_ERR_TLS_CERT:
        return "the certificate file is missing, unreadable or not a certificate";
    case EDGELOCK_ERR_TLS_KEY:
        return "the key file is missing, unreadable, not a key or encrypted";
    case EDGELOCK_ERR_TLS_KEY_MISMATCH:
        return "the key is not the certificate's";
    case EDGELOCK_ERR_TLS_CERT_WITHOUT_KEY:
        return "a certificate without a key, or a key without one";
    case EDGELOCK_ERR_TLS_INIT:
        return "the TLS library could not set itself up";
    default:
        return "unknown status";
    }
}

const char* edgelock_node_state_name(int state) {
    return state >= 0 && state <= EDGELOCK_NODE_READY ? describe(static_cast<node_state>(state))
                                                      : "unknown";
}

const char* edgelock_event_name(int kind) {
    return kind >= 0 && kind <= EDGELOCK_EVENT_RENEW_FAILED
               ? describe(static_cast<lock_event_kind>(kind))
               : "unknown";
}

const char* edgelock_reason_name(int reason) {
    return reason >= 0 && reason <= EDGELOCK_REASON_PERMITS_DIFFER
               ? describe(static_cast<lock_failure>(reason))
               : "unknown";
}

}  // extern "C"
