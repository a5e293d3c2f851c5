#include "options.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <strings.h>

#include "edgelock/lock.hpp"
#include "node_list.hpp"
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

std::string without_credentials(const std::string& list) {
    std::string out;
    std::size_t start = 0;
    while (start <= list.size()) {
        std::size_t end = list.find(',', start);
        end = end == std::string::npos ? list.size() : end;
        std::string url = list.substr(start, end - start);
        // A valid URL has no '@' past its user information (node_url.cpp);
        // a unix:// path may, but it carries no credentials.
        const std::size_t scheme = url.find("://");
        const std::size_t at = url.rfind('@');
        if (scheme != std::string::npos && at != std::string::npos && at > scheme &&
            !(url.size() >= 5 && ::strncasecmp(url.c_str(), "unix:", 5) == 0)) {
            url.erase(scheme + 3, at - (scheme + 3) + 1);
        }
        out += (start == 0 ? "" : ",") + url;
        start = end + 1;
    }
    return out;
}

namespace {

// A decimal in 0..255, nothing else.
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

bool read_password_file(const std::string& path, std::string& out, std::string& error) {
    std::FILE* f = std::fopen(path.c_str(), "re");
    if (f == nullptr) {
        error = "cannot read password file '" + path + "': " + std::strerror(errno);
        return false;
    }
    char buf[1024];
    const std::size_t n = std::fread(buf, 1, sizeof buf, f);
    const bool more = std::fgetc(f) != EOF;
    const int read_error = std::ferror(f) != 0 ? errno : 0;
    std::fclose(f);
    if (read_error != 0) {  // a directory, say: not an empty password
        error = "cannot read password file '" + path + "': " + std::strerror(read_error);
        return false;
    }
    if (more) {
        error = "password file '" + path + "' is too long";
        return false;
    }
    std::string text(buf, n);
    // The first line; a trailing newline (or CRLF) is not part of it.
    const std::size_t eol = text.find_first_of("\r\n");
    if (eol != std::string::npos) {
        text.resize(eol);
    }
    out = text;
    return true;
}

}  // namespace

bool parse_command_line(int argc, char** argv, options& out, std::string& error) {
    options o;
    if (const char* env = std::getenv("EDGELOCK_NODES")) {
        if (*env != '\0' && !split_nodes(env, o.nodes)) {
            error = "EDGELOCK_NODES: empty node in the list";
            return false;
        }
    }
    if (const char* pw = std::getenv("REDISCLI_AUTH")) {
        o.password = pw;
        o.have_password = true;
    }
    std::vector<std::string> operands;
    bool after_dashes = false;
    bool session_cache_given = false;
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
            if (o.cmd == command::none) {
                if (arg == "run") {
                    o.cmd = command::run;
                } else if (arg == "acquire") {
                    o.cmd = command::acquire;
                } else if (arg == "renew") {
                    o.cmd = command::renew;
                } else if (arg == "release") {
                    o.cmd = command::release;
                } else if (arg == "status") {
                    o.cmd = command::status;
                } else if (arg == "list") {
                    o.cmd = command::list;
                } else {
                    error = "unknown command '" + arg +
                            "' (run, acquire, renew, release, status, list)";
                    return false;
                }
            } else {
                operands.push_back(arg);
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
        if (name == "-h" || name == "--help") {
            o.cmd = command::help;
            out = o;
            return true;
        } else if (name == "-V" || name == "--version") {
            o.cmd = command::version;
            out = o;
            return true;
        } else if (name == "-N" || name == "--nodes") {
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            if (!split_nodes(v, o.nodes)) {
                error = "--nodes: empty node in the list '" + v + "'";
                return false;
            }
        } else if (name == "-t" || name == "--ttl" || name == "-w" || name == "--wait" ||
                   name == "--renew-every" || name == "--grace" || name == "--max-hold") {
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            edgelock::duration d;
            const bool forever = (name == "-w" || name == "--wait") && v == "forever";
            if (forever) {
                d = wait_forever;
            } else if (!parse_duration(v, d)) {
                error = "bad duration '" + v + "' for " + name + " (250ms, 10s, 2m, 1h)";
                return false;
            }
            if (name == "-t" || name == "--ttl") {
                if (d.ms() == 0 || d.ms() > edgelock::lock_max_ttl_ms) {
                    error = "--ttl must be between 1ms and 24h";
                    return false;
                }
                o.ttl = d;
            } else if (name == "-w" || name == "--wait") {
                o.wait = d;
            } else if (name == "--renew-every" || name == "--max-hold") {
                if (d.us == 0) {
                    error = name + " must be above 0";
                    return false;
                }
                (name == "--max-hold" ? o.max_hold : o.renew_every) = d;
            } else {
                o.grace = d;
            }
        } else if (name == "-n" || name == "--nonblock") {
            o.nonblock = true;
        } else if (name == "-E" || name == "--conflict-exit-code" || name == "--min-replicas") {
            unsigned n = 0;
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            if (!parse_byte(v, n)) {
                error = (name == "-E" ? std::string("--conflict-exit-code") : name) +
                        " must be 0..255, not '" + v + "'";
                return false;
            }
            if (name == "--min-replicas") {
                o.min_replicas = n;
            } else {
                o.conflict_exit = static_cast<int>(n);
            }
        } else if (arg == "--fencing") {
            o.fencing = true;
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
        } else if (name == "--password-file") {
            if (!value_of(arg, name.size(), v) || !read_password_file(v, o.password, error)) {
                return false;
            }
            o.have_password = true;
        } else if (name == "--sentinel-password-file") {
            if (!value_of(arg, name.size(), v) ||
                !read_password_file(v, o.sentinel_password, error)) {
                return false;
            }
        } else if (name == "--tls") {
            o.tls = true;
        } else if (name == "--insecure") {
            o.insecure = true;
        } else if (name == "--cacert" || name == "--cacertdir" || name == "--cert" ||
                   name == "--key" || name == "--sni") {
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            if (v.empty()) {
                error = name + " needs a value";
                return false;
            }
            std::string& field = name == "--cacert"      ? o.cacert
                                 : name == "--cacertdir" ? o.cacertdir
                                 : name == "--cert"      ? o.cert
                                 : name == "--key"       ? o.tls_key
                                                         : o.sni;
            field = v;
        } else if (name == "--tls-session-cache") {
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            if (v.empty()) {
                error = name + " needs a value (a file, or none)";
                return false;
            }
            o.tls_session_cache = v == "none" ? std::string() : v;
            session_cache_given = true;
        } else if (name == "--json") {
            o.json = true;
        } else if (name == "--metrics-file") {
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            if (v.empty()) {
                error = name + " needs a value";
                return false;
            }
            o.metrics_file = v;
        } else if (name == "--label") {
            if (!value_of(arg, name.size(), v)) {
                return false;
            }
            if (!label_ok(v)) {
                error = "--label must be 1 to " + std::to_string(max_label) +
                        " bytes, without control characters";
                return false;
            }
            o.label = v;
        } else if (name == "-v" || name == "--verbose") {
            o.verbosity = 2;
        } else if (name == "-q" || name == "--quiet") {
            o.verbosity = 0;
        } else {
            error = "unknown option '" + arg + "'";
            return false;
        }
    }
    if (o.cmd == command::none) {
        error = "no command given (run, acquire, renew, release, status, list)";
        return false;
    }
    const std::size_t want = o.cmd == command::renew || o.cmd == command::release ? 2 : 1;
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
    o.key = operands[0];
    if (o.key.empty()) {
        error = "KEY must not be empty";
        return false;
    }
    if (o.key.size() > edgelock::lock_max_name) {
        error = "KEY is longer than " + std::to_string(edgelock::lock_max_name) + " bytes";
        return false;
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
    if (!o.label.empty() && o.cmd != command::run && o.cmd != command::acquire) {
        error = "--label is for run and acquire, which record who holds the lock";
        return false;
    }
    if (o.permits != 0 && o.cmd != command::run) {
        // acquire would leave a permit whose renew needs to know which one.
        error = "--permits is for run";
        return false;
    }
    if (!o.metrics_file.empty() && o.cmd != command::run) {
        error = "--metrics-file is for run, whose job it reports";
        return false;
    }
    if (o.json && o.cmd != command::status && o.cmd != command::list) {
        error = "--json is for status and list";
        return false;
    }
    if (o.cmd != command::run && o.max_hold.us != 0) {
        // Said rather than ignored: nothing of this agent stays to enforce it.
        error = "--max-hold is for run: acquire leaves the lock to its ttl and the next renew";
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
    }
    if (o.cert.empty() != o.tls_key.empty()) {
        error = "--cert and --key go together";
        return false;
    }
    const bool tls_option = !o.cacert.empty() || !o.cacertdir.empty() || !o.cert.empty() ||
                            !o.sni.empty() || o.insecure || session_cache_given;
    if (tls_option && !wants_tls(o)) {
        // Said rather than ignored: the user believes the traffic is protected.
        error = "TLS options need --tls or a rediss:// or rediss-sentinel:// node";
        return false;
    }
    if (!session_cache_given) {
        o.tls_session_cache = default_session_cache();
        o.tls_session_cache_default = !o.tls_session_cache.empty();
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
