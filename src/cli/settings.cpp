#include "settings.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <strings.h>

#include "edgelock/lock.hpp"
#include "node_list.hpp"
#include "options.hpp"

namespace edgelock_cli {

namespace {

// In the order `edgelock config` shows them.
const char* const names[setting_count] = {
    "nodes",
    "password-file",
    "sentinel-password-file",
    "password",
    "tls",
    "cacert",
    "cacertdir",
    "cert",
    "key",
    "sni",
    "insecure",
    "tls-session-cache",
    "ttl",
    "wait",
    "renew-every",
    "grace",
    "max-hold",
    "fencing",
    "min-replicas",
    "conflict-exit-code",
    "label",
    "metrics-file",
};

bool duration_setting(setting s, const std::string& name, const std::string& v, options& o,
                      std::string& error) {
    edgelock::duration d;
    if (s == setting::wait && v == "forever") {
        d = wait_forever;
    } else if (!parse_duration(v, d)) {
        error = "bad duration '" + v + "' for " + name + " (250ms, 10s, 2m, 1h" +
                (s == setting::wait ? ", forever)" : ")");
        return false;
    }
    switch (s) {
    case setting::ttl:
        if (d.ms() == 0 || d.ms() > edgelock::lock_max_ttl_ms) {
            error = name + " must be between 1ms and 24h";
            return false;
        }
        o.ttl = d;
        return true;
    case setting::wait:
        o.wait = d;
        return true;
    case setting::renew_every:
    case setting::max_hold:
        if (d.us == 0) {
            error = name + " must be above 0";
            return false;
        }
        (s == setting::max_hold ? o.max_hold : o.renew_every) = d;
        return true;
    default:
        o.grace = d;
        o.grace_given = true;
        return true;
    }
}

}  // namespace

const char* setting_name(setting s) {
    return names[static_cast<unsigned>(s)];
}

bool setting_named(const std::string& name, setting& out) {
    for (unsigned i = 0; i < setting_count; ++i) {
        if (name == names[i]) {
            out = static_cast<setting>(i);
            return true;
        }
    }
    return false;
}

bool parse_bool(const std::string& text, bool& out) {
    for (const char* yes : {"yes", "true", "on", "1"}) {
        if (::strcasecmp(text.c_str(), yes) == 0) {
            out = true;
            return true;
        }
    }
    for (const char* no : {"no", "false", "off", "0"}) {
        if (::strcasecmp(text.c_str(), no) == 0) {
            out = false;
            return true;
        }
    }
    return false;
}

bool parse_byte(const std::string& v, unsigned& out) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || n < 0 || n > 255) {
        return false;
    }
    out = static_cast<unsigned>(n);
    return true;
}

bool apply_setting(setting s, const std::string& name, const std::string& v, options& o,
                   std::string& error) {
    switch (s) {
    case setting::tls:
    case setting::insecure:
    case setting::fencing: {
        bool b = false;
        if (!parse_bool(v, b)) {
            error = "bad value '" + v + "' for " + name + " (yes or no)";
            return false;
        }
        (s == setting::tls ? o.tls : s == setting::insecure ? o.insecure : o.fencing) = b;
        return true;
    }
    case setting::ttl:
    case setting::wait:
    case setting::renew_every:
    case setting::grace:
    case setting::max_hold:
        return duration_setting(s, name, v, o, error);
    case setting::min_replicas:
    case setting::conflict_exit_code: {
        unsigned n = 0;
        if (!parse_byte(v, n)) {
            error = name + " must be 0..255, not '" + v + "'";
            return false;
        }
        if (s == setting::min_replicas) {
            o.min_replicas = n;
        } else {
            o.conflict_exit = static_cast<int>(n);
        }
        return true;
    }
    case setting::label:
        if (!label_ok(v)) {
            error = name + " must be 1 to " + std::to_string(max_label) +
                    " bytes, without control characters";
            return false;
        }
        o.label = v;
        return true;
    case setting::nodes:
        if (!split_nodes(v, o.nodes)) {
            error = name + ": empty node in the list '" + mask_passwords(v) + "'";
            return false;
        }
        return true;
    default:
        break;
    }
    // The settings whose value is a name: a file, a directory, a host.
    if (v.empty()) {
        error = name + " needs a value" +
                (s == setting::tls_session_cache ? std::string(" (a file, or none)") : "");
        return false;
    }
    switch (s) {
    case setting::password_file:
        o.password_file = v;
        o.password.clear();
        o.have_password = false;
        break;
    case setting::password:
        o.password = v;
        o.have_password = true;
        o.password_file.clear();
        break;
    case setting::sentinel_password_file:
        o.sentinel_password_file = v;
        break;
    case setting::cacert:
        o.cacert = v;
        break;
    case setting::cacertdir:
        o.cacertdir = v;
        break;
    case setting::cert:
        o.cert = v;
        break;
    case setting::key:
        o.tls_key = v;
        break;
    case setting::sni:
        o.sni = v;
        break;
    case setting::tls_session_cache:
        o.tls_session_cache = v == "none" ? std::string() : v;
        break;
    default:  // setting::metrics_file
        o.metrics_file = v;
        break;
    }
    return true;
}

}  // namespace edgelock_cli
