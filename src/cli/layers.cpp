#include "layers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "config_file.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/node_url.hpp"
#include "new_file.hpp"

namespace edgelock_cli {

namespace {

std::string octal(unsigned mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", mode & 07777u);
    return text;
}

// The first line of the file, through one fd: what is checked (a regular
// file, not open to group or others) is what is read. O_NONBLOCK: a FIFO in
// its place must not hang the agent before it is found not to be a file.
bool read_password_file(const std::string& path, std::string& out, std::string& error) {
    struct stat st {};
    const int fd = open_to_read(path, st);
    if (fd < 0) {
        error = "cannot read password file '" + path + "': " + std::strerror(errno);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        error = "password file '" + path + "' is not a regular file";
        ::close(fd);
        return false;
    }
    // As ssh refuses a private key others may read.
    if ((st.st_mode & 077) != 0) {
        error = "password file '" + path + "' has mode " +
                octal(static_cast<unsigned>(st.st_mode)) +
                ": group or others have access (chmod 600 " + path + ")";
        ::close(fd);
        return false;
    }
    char buf[1025];
    std::size_t n = 0;
    int read_error = 0;
    while (n < sizeof buf) {
        const ssize_t got = ::read(fd, buf + n, sizeof buf - n);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            read_error = errno;
            break;
        }
        if (got == 0) {
            break;
        }
        n += static_cast<std::size_t>(got);
    }
    ::close(fd);
    if (read_error != 0) {
        error = "cannot read password file '" + path + "': " + std::strerror(read_error);
        return false;
    }
    if (n > 1024) {
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

// A password and a password file set the one password: the lower layer's
// is marked as overridden, for `edgelock config`.
void mark_overridden(settings_shown& shown) {
    setting_origin& file = shown[setting::password_file];
    setting_origin& inline_pw = shown[setting::password];
    if (file.from.empty() || inline_pw.from.empty()) {
        return;
    }
    // One file holds at most one of the two (file_layer); the environment
    // gives only a password.
    const auto rank = [](const setting_origin& s) {
        return s.command_line ? 2 : s.from == "REDISCLI_AUTH" ? 1 : 0;
    };
    (rank(file) < rank(inline_pw) ? file : inline_pw).ignored = true;
}

// The password file `path` into `out`; `origin` names where it was set.
bool read_one(const setting_origin& origin, const std::string& path, std::string& out,
              std::string& error) {
    if (path.empty()) {
        return true;
    }
    if (!read_password_file(path, out, error)) {
        if (!origin.command_line && !origin.from.empty()) {
            error = origin.from + ": " + error;
        }
        return false;
    }
    return true;
}

}  // namespace

// The configuration file, if there is one to read.
bool file_layer(const command_line& cl, options& o, std::string& error) {
    settings_shown& shown = o.shown;
    const char* env = std::getenv("EDGELOCK_CONFIG");
    std::string path = EDGELOCK_DEFAULT_CONFIG;
    shown.config_from = "default";
    if (cl.config_given) {
        path = cl.config;
        shown.config_from = "--config";
    } else if (env != nullptr && *env != '\0') {
        path = env;
        shown.config_from = "EDGELOCK_CONFIG";
    }
    if (path == "none") {
        return true;
    }
    shown.config_file = path;
    config_file f;
    if (!read_config_file(path, shown.config_from == "default", f, error)) {
        return false;
    }
    shown.config_found = f.found;
    bool secret = false;
    for (const config_entry& e : f.entries) {
        const std::string where = path + ":" + std::to_string(e.line);
        setting which = setting::nodes;
        if (!setting_named(e.key, which)) {
            error = where + ": unknown key '" + e.key + "'";
            return false;
        }
        if (!apply_setting(which, e.key, e.value, o, error)) {
            error = where + ": " + error;
            return false;
        }
        if (which == setting::nodes) {
            if (o.nodes.size() > edgelock::lock_max_nodes) {
                error = where + ": at most " + std::to_string(edgelock::lock_max_nodes) + " nodes";
                return false;
            }
            // Checked now, for a message that names the line; a node list
            // given later is checked when the client takes it.
            for (const std::string& url : o.nodes) {
                edgelock::node_address a;
                const edgelock::url_errc ue =
                    edgelock::parse_node_url(edgelock::str_view(url.data(), url.size()), a);
                if (ue != edgelock::url_errc::ok) {
                    error = where + ": bad node URL '" + mask_passwords(url) +
                            "': " + edgelock::describe(ue);
                    return false;
                }
                secret = secret || a.has_password;
            }
        }
        secret = secret || which == setting::password;
        if ((which == setting::password && !shown[setting::password_file].from.empty()) ||
            (which == setting::password_file && !shown[setting::password].from.empty())) {
            error = where + ": password and password-file both set: keep one";
            return false;
        }
        shown[which] = setting_origin{e.value, where, false, false};
    }
    // As ssh refuses a private key others may read.
    if (secret && (f.mode & 044) != 0) {
        error = path + ": holds a password but is readable by others (chmod 600 " + path + ")";
        return false;
    }
    return true;
}

bool environment_layer(options& o, std::string& error) {
    if (const char* env = std::getenv("EDGELOCK_NODES")) {
        if (*env != '\0') {
            if (!apply_setting(setting::nodes, "EDGELOCK_NODES", env, o, error)) {
                return false;
            }
            o.shown[setting::nodes] = setting_origin{env, "EDGELOCK_NODES", false, false};
        }
    }
    if (const char* pw = std::getenv("REDISCLI_AUTH")) {
        // An empty one is a password too, as it always was.
        o.password = pw;
        o.have_password = true;
        o.password_file.clear();
        o.shown[setting::password] = setting_origin{pw, "REDISCLI_AUTH", false, false};
    }
    return true;
}

bool command_line_layer(const command_line& cl, options& o, std::string& error) {
    for (const given& g : cl.settings) {
        if (!apply_setting(g.which, g.name, g.value, o, error)) {
            return false;
        }
        o.shown[g.which] = setting_origin{g.value, g.name, true, false};
    }
    return true;
}

bool read_password_files(options& o, std::string& error) {
    mark_overridden(o.shown);
    if (!read_one(o.shown[setting::password_file], o.password_file, o.password, error)) {
        return false;
    }
    o.have_password = o.have_password || !o.password_file.empty();
    return read_one(o.shown[setting::sentinel_password_file], o.sentinel_password_file,
                    o.sentinel_password, error);
}

}  // namespace edgelock_cli
