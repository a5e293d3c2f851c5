// Human-readable names of URL errors, apart from the parser so that a program
// that never calls them does not carry their strings (as lock_describe.cpp).
#include "edgelock/node_url.hpp"

namespace edgelock {

const char* describe(url_errc code) noexcept {
    switch (code) {
    case url_errc::ok:
        return "ok";
    case url_errc::empty:
        return "empty URL";
    case url_errc::too_long:
        return "URL too long";
    case url_errc::missing_scheme:
        return "missing scheme (expected redis://, rediss://, unix://, redis-sentinel:// or "
               "redis-cluster://)";
    case url_errc::bad_scheme:
        return "unsupported scheme (expected redis://, rediss://, unix://, redis-sentinel:// or "
               "redis-cluster://)";
    case url_errc::tls_not_built_in:
        return "TLS (rediss://) is not built in";
    case url_errc::bad_userinfo:
        return "bad user or password (too long, or a character that needs %-escaping)";
    case url_errc::bad_escape:
        return "malformed %XX escape or escaped NUL";
    case url_errc::bad_host:
        return "bad host (empty, too long, bad character, or bad [IPv6])";
    case url_errc::bad_port:
        return "port not a decimal in 1..65535";
    case url_errc::bad_db:
        return "database not a decimal in [0, 2^31)";
    case url_errc::bad_path:
        return "bad path (unix: absolute and short enough; redis: only /db; sentinel: "
               "/MASTER_NAME[/db]; cluster: none)";
    case url_errc::bad_query:
        return "unsupported query or fragment (only ?db=N on unix://)";
    }
    return "unknown URL error";
}

}  // namespace edgelock
