#include "config_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "new_file.hpp"

namespace edgelock_cli {

namespace {

bool blank(char c) {
    return c == ' ' || c == '\t';
}

std::string trimmed(const std::string& s, std::size_t from, std::size_t to) {
    while (from < to && blank(s[from])) {
        ++from;
    }
    while (to > from && blank(s[to - 1])) {
        --to;
    }
    return s.substr(from, to - from);
}

// The whole file, through one fd: what is checked (a regular file, its
// size, its mode) is what is read.
bool slurp(const std::string& path, bool missing_ok, config_file& out, std::string& text,
           std::string& error) {
    // O_NONBLOCK: a FIFO in its place must not hang the agent before it is
    // found not to be a regular file.
    struct stat st {};
    const int fd = open_to_read(path, st);
    if (fd < 0) {
        if (errno == ENOENT && missing_ok) {
            return true;
        }
        error = path + ": " + std::strerror(errno);
        return false;
    }
    bool ok = true;
    if (!S_ISREG(st.st_mode)) {
        error = path + ": not a regular file";
        ok = false;
    } else if ((st.st_mode & 022) != 0) {
        // Whatever it holds: who can write it chooses the nodes, the files
        // written and the password sent (sudo and ssh refuse the same).
        error = path + ": writable by group or others (chmod go-w " + path + ")";
        ok = false;
    } else if (static_cast<unsigned long long>(st.st_size) > config_max_size) {
        error = path + ": larger than " + std::to_string(config_max_size) + " bytes";
        ok = false;
    }
    char buf[4096];
    while (ok) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            error = path + ": " + std::strerror(errno);
            ok = false;
        } else if (n == 0) {
            break;
        } else if (text.size() + static_cast<std::size_t>(n) > config_max_size) {
            error = path + ": larger than " + std::to_string(config_max_size) + " bytes";
            ok = false;  // it grew since fstat
        } else {
            text.append(buf, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    out.found = ok;
    out.mode = static_cast<unsigned>(st.st_mode & 07777);
    return ok;
}

}  // namespace

bool read_config_file(const std::string& path, bool missing_ok, config_file& out,
                      std::string& error) {
    out = config_file{};
    out.path = path;
    std::string text;
    if (!slurp(path, missing_ok, out, text, error) || !out.found) {
        return out.found || error.empty();
    }
    unsigned line = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        ++line;
        std::size_t end = text.find('\n', start);
        end = end == std::string::npos ? text.size() : end;
        const std::string where = path + ":" + std::to_string(line) + ": ";
        std::size_t stop = end;
        if (stop > start && text[stop - 1] == '\r') {
            --stop;  // written on Windows
        }
        const std::size_t next = end + 1;
        if (stop - start > config_max_line) {
            error = where + "line longer than " + std::to_string(config_max_line) + " bytes";
            return false;
        }
        if (std::memchr(text.data() + start, '\0', stop - start) != nullptr) {
            error = where + "a NUL byte";
            return false;
        }
        const std::string all = trimmed(text, start, stop);
        start = next;
        if (all.empty() || all[0] == '#') {
            continue;
        }
        const std::size_t eq = all.find('=');
        if (eq == std::string::npos) {
            error = where + "expected key = value";
            return false;
        }
        config_entry e;
        e.key = trimmed(all, 0, eq);
        e.value = trimmed(all, eq + 1, all.size());
        e.line = line;
        if (e.key.empty()) {
            error = where + "no key before '='";
            return false;
        }
        if (out.entries.size() == config_max_entries) {
            error = where + "more than " + std::to_string(config_max_entries) + " settings";
            return false;
        }
        for (const config_entry& before : out.entries) {
            if (before.key == e.key) {
                error = where + e.key + " given twice (first at line " +
                        std::to_string(before.line) + ")";
                return false;
            }
        }
        out.entries.push_back(e);
    }
    return true;
}

}  // namespace edgelock_cli
