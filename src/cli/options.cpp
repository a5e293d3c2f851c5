#include "options.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <strings.h>

#include "edgelock/lock.hpp"
#include "edgelock/node_list.hpp"
#include "layers.hpp"
#include "session_cache.hpp"

namespace edgelock_cli {

// A label goes into the holder record and onto status lines: printable
// bytes (UTF-8 passes), no control characters.
bool label_ok(const std::string& v) {
    if (v.empty() || v.size() > max_label) {
        return false;
    }
    for (const char c : v) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            return false;
        }
    }
    return true;
}

bool parse_duration(const std::string& text, edgelock::duration& out) {
    std::size_t i = 0;
    std::uint64_t value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) {
            return false;
        }
        value = value * 10 + digit;
        ++i;
    }
    if (i == 0) {
        return false;
    }
    const std::string unit = text.substr(i);
    std::uint64_t ms_per_unit = 0;
    if (unit.empty() || unit == "s") {
        ms_per_unit = 1000;
    } else if (unit == "ms") {
        ms_per_unit = 1;
    } else if (unit == "m") {
        ms_per_unit = 60 * 1000;
    } else if (unit == "h") {
        ms_per_unit = 3600 * 1000;
    } else {
        return false;
    }
    // Far beyond any lock's ttl already: keeps the arithmetic exact.
    if (value > UINT64_MAX / 1000 / ms_per_unit / 1000) {
        return false;
    }
    out = edgelock::duration::millis(value * ms_per_unit);
    return true;
}

namespace {

// The library's redaction of a node list (node_list.hpp): it parses each
// URL, so a password is hidden whole whatever it holds.
std::string redact_list(const std::string& list, edgelock::credentials how) {
    const edgelock::str_view in(list.data(), list.size());
    const edgelock::redacted need = edgelock::node_list_redact(in, how, nullptr, 0);
    std::string out(need.size, '\0');
    const edgelock::redacted r = edgelock::node_list_redact(in, how, &out[0], out.size());
    if (r.error != edgelock::redact_errc::ok) {
        return edgelock::redacted_password;  // cannot happen: sized above
    }
    out.resize(r.size);
    return out;
}

}  // namespace

std::string without_credentials(const std::string& list) {
    return redact_list(list, edgelock::credentials::remove);
}

std::string mask_passwords(const std::string& list) {
    return redact_list(list, edgelock::credentials::mask);
}

namespace {

const char* const commands = "(run, acquire, renew, release, status, list, config)";

// The setting an option names: -N, -t, -w, -E, or a setting's name after
// "--" (but not --password: a password in argv is for ps to show).
bool option_setting(const std::string& name, setting& out) {
    if (name == "-N" || name == "-t" || name == "-w" || name == "-E") {
        out = name == "-N"   ? setting::nodes
              : name == "-t" ? setting::ttl
              : name == "-w" ? setting::wait
                             : setting::conflict_exit_code;
        return true;
    }
    return name.size() > 2 && name.compare(0, 2, "--") == 0 && name != "--password" &&
           setting_named(name.substr(2), out);
}

// argv, read without applying any setting: the subcommand, the operands,
// the command, the settings in order, and what is not a setting.
bool scan(int argc, char** argv, options& o, command_line& cl, std::string& error) {
    bool after_dashes = false;
    int i = 1;
    // The value of an option: "--ttl 5s", "--ttl=5s", "-t5s" or "-t 5s".
    auto value_of = [&](const std::string& arg, std::size_t name_len, std::string& v) {
        if (arg.size() > name_len) {
            v = arg.substr(arg[name_len] == '=' ? name_len + 1 : name_len);
            return true;
        }
        if (i + 1 >= argc) {
            error = "option " + arg + " needs a value";
            return false;
        }
        v = argv[++i];
        return true;
    };
    for (; i < argc; ++i) {
        const std::string arg = argv[i];
        if (after_dashes) {
            o.child.push_back(arg);
            continue;
        }
        if (arg == "--") {
            after_dashes = true;
            continue;
        }
        if (arg.size() < 2 || arg[0] != '-') {
            if (o.cmd != command::none) {
                cl.operands.push_back(arg);
                continue;
            }
            const char* const names[] = {"run",    "acquire", "renew", "release",
                                         "status", "list",    "config"};
            const command cmds[] = {command::run,     command::acquire, command::renew,
                                    command::release, command::status,  command::list,
                                    command::config};
            for (std::size_t c = 0; c < sizeof names / sizeof names[0]; ++c) {
                if (arg == names[c]) {
                    o.cmd = cmds[c];
                }
            }
            if (o.cmd == command::none) {
                error = "unknown command '" + arg + "' " + commands;
                return false;
            }
            continue;
        }
        const bool long_opt = arg[1] == '-';
        const std::string name = long_opt ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
        std::string v;
        // Options without a value take none: "--nonblock=no" or "-vq" are not
        // silently read as --nonblock or -v.
        const bool flag = name == "-h" || name == "--help" || name == "-V" || name == "--version" ||
                          name == "-n" || name == "--nonblock" || name == "--fencing" ||
                          name == "-v" || name == "--verbose" || name == "-q" ||
                          name == "--quiet" || name == "--tls" || name == "--insecure" ||
                          name == "--json";
        if (flag && arg != name) {
            error = "unknown option '" + arg + "'";
            return false;
        }
        setting which = setting::nodes;
        if (name == "-h" || name == "--help" || name == "-V" || name == "--version") {
            o.cmd = name == "-h" || name == "--help" ? command::help : command::version;
            return true;
        } else if (name == "--tls" || name == "--insecure" || name == "--fencing") {
            setting_named(name.substr(2), which);
            cl.settings.push_back(given{which, name, "yes"});
        } else if (option_setting(name, which)) {
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            // -E's messages name it in full, as they always have.
            cl.settings.push_back(given{which, name == "-E" ? "--conflict-exit-code" : name, v});
        } else if (name == "-n" || name == "--nonblock") {
            o.nonblock = true;
        } else if (name == "--config") {
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            if (v.empty()) {
                error = "--config needs a value (a file, or none)";
                return false;
            }
            cl.config = v;
            cl.config_given = true;
        } else if (name == "--permits") {
            unsigned n = 0;
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            if (!parse_byte(v, n) || n == 0 || n > edgelock::lock_max_permits) {
                error = "--permits must be 1.." + std::to_string(edgelock::lock_max_permits) +
                        ", not '" + v + "'";
                return false;
            }
            o.permits = n;
        } else if (name == "--json") {
            o.json = true;
        } else if (name == "-v" || name == "--verbose") {
            o.verbosity = 2;
        } else if (name == "-q" || name == "--quiet") {
            o.verbosity = 0;
        } else {
            error = "unknown option '" + arg + "'";
            return false;
        }
    }
    return true;
}

// Checks that tie an option to commands. They fire for the command line
// only: a file's label, metrics-file or max-hold serves the commands that
// use it and no others. `edgelock config` takes every option, to show it.
bool command_checks(options& o, std::string& error) {
    const bool config = o.cmd == command::config;
    const bool run = o.cmd == command::run;
    if (o.shown[setting::label].command_line && !config && !run && o.cmd != command::acquire) {
        error = "--label is for run and acquire, which record who holds the lock";
        return false;
    }
    if (o.permits != 0 && !run && !config) {
        // acquire would leave a permit whose renew needs to know which one.
        error = "--permits is for run";
        return false;
    }
    if (o.shown[setting::metrics_file].command_line && !run && !config) {
        error = "--metrics-file is for run, whose job it reports";
        return false;
    }
    if (o.json && o.cmd != command::status && o.cmd != command::list && !config) {
        error = "--json is for status, list and config";
        return false;
    }
    if (o.shown[setting::max_hold].command_line && !run && !config) {
        // Said rather than ignored: nothing of this agent stays to enforce it.
        error = "--max-hold is for run: acquire leaves the lock to its ttl and the next renew";
        return false;
    }
    if (!run && o.cmd != command::acquire) {
        o.label.clear();
    }
    if (!run) {
        o.metrics_file.clear();
        o.max_hold = edgelock::duration{};
    }
    return true;
}

// The TLS options need a node that speaks TLS. Given on the command line
// without one, they are an error (the user believes the traffic is
// protected); from the file, they are left unused: a fleet's file may carry
// them for its TLS nodes.
bool tls_checks(options& o, std::string& error) {
    const setting tls_settings[] = {
        setting::cacert,   setting::cacertdir,        setting::cert, setting::key, setting::sni,
        setting::insecure, setting::tls_session_cache};
    if (!wants_tls(o)) {
        for (const setting s : tls_settings) {
            setting_origin& from = o.shown[s];
            if (from.command_line) {
                error = "TLS options need --tls or a rediss:// or rediss-sentinel:// node";
                return false;
            }
            from.ignored = !from.from.empty();
        }
        o.cacert.clear();
        o.cacertdir.clear();
        o.cert.clear();
        o.tls_key.clear();
        o.sni.clear();
        o.insecure = false;
        o.tls_session_cache.clear();
        return true;
    }
    if (o.cert.empty() != o.tls_key.empty()) {
        const setting_origin& given = o.shown[o.cert.empty() ? setting::key : setting::cert];
        error = given.command_line ? "--cert and --key go together"
                                   : given.from + ": cert and key go together";
        return false;
    }
    if (o.shown[setting::tls_session_cache].from.empty()) {
        o.tls_session_cache = default_session_cache();
        o.tls_session_cache_default = !o.tls_session_cache.empty();
    }
    return true;
}

// The operands, the password files, and the checks across settings.
bool finish(const command_line& cl, options& o, std::string& error) {
    std::vector<std::string> operands = cl.operands;
    const std::size_t want = o.cmd == command::renew || o.cmd == command::release ? 2
                             : o.cmd == command::config                           ? 0
                                                                                  : 1;
    if (o.cmd == command::list && operands.empty()) {
        operands.push_back("*");
    }
    if (operands.size() < want) {
        error = want == 2 ? "KEY and TOKEN are required" : "KEY is required";
        return false;
    }
    if (operands.size() > want) {
        error = "unexpected argument '" + operands[want] + "'" +
                (o.cmd == command::run ? " (put the command after --)" : "");
        return false;
    }
    if (want > 0) {
        o.key = operands[0];
        if (o.key.empty()) {
            error = "KEY must not be empty";
            return false;
        }
        if (o.key.size() > edgelock::lock_max_name) {
            error = "KEY is longer than " + std::to_string(edgelock::lock_max_name) + " bytes";
            return false;
        }
    }
    if (want == 2) {
        o.token = operands[1];
        // Checked here, like every usage error, before any node is contacted.
        edgelock::owner_token t;
        if (!t.from_hex(o.token.data(), o.token.size())) {
            error =
                "TOKEN must be " + std::to_string(edgelock::owner_token::hex_size) + " hex digits";
            return false;
        }
    }
    if (o.cmd == command::run && o.child.empty()) {
        error = "run needs a command after --";
        return false;
    }
    if (o.cmd != command::run && !o.child.empty()) {
        error = "only run takes a command after --";
        return false;
    }
    if (!command_checks(o, error) || !read_password_files(o, error)) {
        return false;
    }
    if (o.nodes.empty()) {
        o.nodes.push_back("redis://127.0.0.1:6379");
    }
    if (o.nodes.size() > edgelock::lock_max_nodes) {
        error = "at most " + std::to_string(edgelock::lock_max_nodes) + " nodes";
        return false;
    }
    if (o.nonblock) {
        o.wait = edgelock::duration{};
        o.shown[setting::wait] = setting_origin{"0", "--nonblock", true, false};
    }
    return tls_checks(o, error);
}

}  // namespace

bool parse_command_line(int argc, char** argv, options& out, std::string& error) {
    options o;
    command_line cl;
    if (!scan(argc, argv, o, cl, error)) {
        return false;
    }
    if (o.cmd == command::help || o.cmd == command::version) {
        out = o;
        return true;
    }
    if (o.cmd == command::none) {
        error = std::string("no command given ") + commands;
        return false;
    }
    if (!file_layer(cl, o, error) || !environment_layer(o, error) ||
        !command_line_layer(cl, o, error)) {
        return false;
    }
    if (!finish(cl, o, error)) {
        return false;
    }
    out = o;
    return true;
}

bool wants_tls(const options& o) {
    if (o.tls) {
        return true;
    }
    for (const std::string& u : o.nodes) {
        if (strncasecmp(u.c_str(), "rediss://", 9) == 0 ||
            strncasecmp(u.c_str(), "rediss-sentinel://", 18) == 0) {
            return true;
        }
    }
    return false;
}

}  // namespace edgelock_cli
