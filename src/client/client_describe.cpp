// The driver's describe() tables: a short English text for every code.
#include "edgelock/client.hpp"

namespace edgelock {

const char* describe(client_errc code) noexcept {
    switch (code) {
    case client_errc::ok:
        return "ok";
    case client_errc::not_configured:
        return "client not configured";
    case client_errc::bad_node_count:
        return "bad node count";
    case client_errc::bad_url:
        return "bad node URL";
    case client_errc::tls_not_built_in:
        return "TLS (rediss://) is not built in: no TLS transport given";
    case client_errc::secret_too_long:
        return "user name or password too long";
    case client_errc::user_without_password:
        return "a user name needs a password";
    case client_errc::bad_option:
        return "bad client option";
    case client_errc::in_use:
        return "locks are attached";
    case client_errc::already_attached:
        return "lock already attached";
    case client_errc::not_attached:
        return "lock not attached";
    case client_errc::lock_rejected:
        return "the lock refused the operation";
    case client_errc::busy:
        return "another operation of the lock is in progress";
    case client_errc::not_held:
        return "lock not held";
    case client_errc::deadline:
        return "operation exceeded its deadline";
    case client_errc::wait_failed:
        return "waiting for sockets failed";
    case client_errc::reentered:
        return "blocking call from inside a callback";
    case client_errc::node_unavailable:
        return "node unavailable";
    case client_errc::timed_out:
        return "no reply in time";
    }
    return "unknown client error";
}

const char* describe(node_state state) noexcept {
    switch (state) {
    case node_state::down:
        return "down";
    case node_state::backoff:
        return "waiting to reconnect";
    case node_state::resolving:
        return "looking up the host name";
    case node_state::connecting:
        return "connecting";
    case node_state::handshake:
        return "setting up";
    case node_state::ready:
        return "ready";
    }
    return "unknown node state";
}

const char* describe(node_error error) noexcept {
    switch (error) {
    case node_error::none:
        return "no error";
    case node_error::refused:
        return "connection refused";
    case node_error::unreachable:
        return "host unreachable";
    case node_error::resolve_failed:
        return "host name did not resolve";
    case node_error::resolve_timeout:
        return "host name did not resolve in time";
    case node_error::connect_timeout:
        return "connect timed out";
    case node_error::auth_failed:
        return "authentication failed";
    case node_error::select_failed:
        return "SELECT failed";
    case node_error::setup_failed:
        return "server refused the connection set-up";
    case node_error::protocol_error:
        return "malformed reply";
    case node_error::reply_too_large:
        return "reply too large";
    case node_error::unexpected_reply:
        return "unexpected reply";
    case node_error::closed:
        return "connection closed by server";
    case node_error::reset:
        return "connection reset";
    case node_error::stalled:
        return "server stopped answering";
    case node_error::io_error:
        return "socket error";
    case node_error::replica:
        return "a replica (read-only): a lock needs a master";
    case node_error::server_error:
        return "the server refused the request";
    case node_error::tls_handshake_failed:
        return "TLS handshake failed";
    case node_error::tls_untrusted:
        return "TLS: server certificate not trusted (unknown CA)";
    case node_error::tls_expired:
        return "TLS: server certificate expired or not yet valid";
    case node_error::tls_name_mismatch:
        return "TLS: server certificate is for another name";
    case node_error::tls_session_failed:
        return "TLS session failed after the handshake (an alert or a bad record)";
    case node_error::sentinel_failed:
        return "no sentinel said where the master is";
    case node_error::tls_not_tls:
        return "TLS: the server does not speak TLS (a plaintext port?)";
    }
    return "unknown node error";
}

const char* describe(node_warning warning) noexcept {
    switch (warning) {
    case node_warning::none:
        return "no warning";
    case node_warning::may_evict:
        return "the server may evict lock keys (maxmemory with an evicting policy)";
    }
    return "unknown node warning";
}

}  // namespace edgelock
