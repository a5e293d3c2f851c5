// The settings that a configuration file may hold, as well as the command
// line: each is a long option's name without "--" (ttl, nodes, cacert...).
// The agent's options are built in layers, lowest first: built-in defaults,
// the file (config_file.hpp), the environment ($EDGELOCK_NODES,
// $REDISCLI_AUTH), the command line. Each setting keeps the text of the
// layer that won and where that text came from, for `edgelock config`.
#pragma once

#include <string>

namespace edgelock_cli {

struct options;

enum class setting : unsigned {
    nodes,
    password_file,
    sentinel_password_file,
    password,
    tls,
    cacert,
    cacertdir,
    cert,
    key,
    sni,
    insecure,
    tls_session_cache,
    ttl,
    wait,
    renew_every,
    grace,
    max_hold,
    fencing,
    min_replicas,
    conflict_exit_code,
    label,
    metrics_file,
};
constexpr unsigned setting_count = 22;

const char* setting_name(setting s);
// The setting called `name` (no "--"); false for any other name.
bool setting_named(const std::string& name, setting& out);

// Where a setting's value came from: "" for the built-in default, else
// "FILE:LINE", "EDGELOCK_NODES", "REDISCLI_AUTH" or the option as given
// ("--ttl", "-t").
struct setting_origin {
    std::string text;  // the value as given
    std::string from;  // "" (default)
    bool command_line = false;
    bool ignored = false;  // overridden by another setting, or TLS with no TLS node
};

// What `edgelock config` shows: the file read and every setting's origin.
struct settings_shown {
    std::string config_file;  // "" when none is read
    std::string config_from;  // "default", "EDGELOCK_CONFIG" or "--config"
    bool config_found = false;
    setting_origin at[setting_count];
    setting_origin& operator[](setting s) { return at[static_cast<unsigned>(s)]; }
    const setting_origin& operator[](setting s) const { return at[static_cast<unsigned>(s)]; }
};

// Checks `text` as a value of `s` and stores it in `o` (a password file is
// only named here, and read once every layer is in). `name` is how the
// setting was given ("--ttl", "-t", "ttl"), for the message. On a bad value,
// false with `error` saying what is expected.
bool apply_setting(setting s, const std::string& name, const std::string& text, options& o,
                   std::string& error);

// yes/no/true/false/on/off/1/0 (any case); false on anything else.
bool parse_bool(const std::string& text, bool& out);

// A decimal in 0..255, nothing else.
bool parse_byte(const std::string& text, unsigned& out);

}  // namespace edgelock_cli
