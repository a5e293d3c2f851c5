// The metrics file (metrics_file.hpp): the text, merged with what the file
// holds of other keys, and the write that a reader never sees half done.
#include "metrics_file.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "new_file.hpp"
#include "utf8.hpp"

namespace edgelock_cli {

namespace {

struct family {
    const char* name;
    const char* help;
};

// In the order they are written. Every one is a gauge: the last run's value.
constexpr family families[] = {
    {"edgelock_job_start_time_seconds", "Unix time the last run of the key started."},
    {"edgelock_job_end_time_seconds", "Unix time the last run of the key ended."},
    {"edgelock_job_wait_seconds",
     "Seconds the last run waited for the lock, until acquired or given up."},
    {"edgelock_job_hold_seconds",
     "Seconds the last run held the lock, until released or lost; 0 if never acquired."},
    {"edgelock_job_exit_status", "Exit status of the agent's last run of the key."},
    {"edgelock_job_acquired", "1 if the last run acquired the lock, else 0."},
    {"edgelock_job_lost", "1 if the last run lost the lock while its command ran, else 0."},
    {"edgelock_job_renewals_failed", "Renew rounds that missed their quorum in the last run."},
    {"edgelock_job_node_errors",
     "Errors met per node in the last run (connect, timeout, closed, protocol, TLS, refusal, "
     "error reply, I/O)."},
};
constexpr std::size_t family_count = sizeof families / sizeof families[0];

// A label value as the format wants it: valid UTF-8 (a byte that is not is
// U+FFFD), backslash, double quote and newline escaped, and no other control
// byte (a key name from SCAN can hold any): those read as the text \xNN.
std::string escaped(const std::string& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    std::string out;
    for (std::size_t i = 0; i < v.size();) {
        const std::size_t size = utf8_sequence(p + i, v.size() - i);
        const unsigned char ch = p[i];
        if (size == 0) {
            out += "\xef\xbf\xbd";
            ++i;
            continue;
        }
        if (size > 1) {
            out.append(v, i, size);
            i += size;
            continue;
        }
        if (ch == '\\') {
            out += "\\\\";
        } else if (ch == '"') {
            out += "\\\"";
        } else if (ch == '\n') {
            out += "\\n";
        } else if (ch < 0x20 || ch == 0x7f) {
            char e[8];
            std::snprintf(e, sizeof e, "\\\\x%02x", ch);
            out += e;
        } else {
            out += static_cast<char>(ch);
        }
        ++i;
    }
    return out;
}

bool name_char(char ch, bool first) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':' ||
           (!first && ch >= '0' && ch <= '9');
}

// A sample line of ours: its family (an index into families) and its key
// label's value, still escaped. False for anything else: a comment, another
// program's metric, a line cut short.
bool parse_sample(const std::string& line, std::size_t& fam, std::string& key) {
    std::size_t i = 0;
    while (i < line.size() && name_char(line[i], i == 0)) {
        ++i;
    }
    if (i == 0 || i >= line.size() || line[i] != '{') {
        return false;
    }
    const std::string name = line.substr(0, i);
    fam = family_count;
    for (std::size_t f = 0; f < family_count; ++f) {
        if (name == families[f].name) {
            fam = f;
        }
    }
    if (fam == family_count) {
        return false;
    }
    bool have_key = false;
    ++i;  // past '{'
    while (i < line.size() && line[i] != '}') {
        const std::size_t label = i;
        while (i < line.size() && name_char(line[i], i == label) && line[i] != ':') {
            ++i;
        }
        if (i == label || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
            return false;
        }
        const std::string label_name = line.substr(label, i - label);
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
            if (line[i] == '\\') {
                if (i + 1 >= line.size()) {
                    return false;
                }
                value += line[i];
                ++i;
            }
            value += line[i];
            ++i;
        }
        if (i >= line.size()) {
            return false;
        }
        ++i;  // past the closing quote
        if (label_name == "key") {
            key = value;
            have_key = true;
        }
        if (i < line.size() && line[i] == ',') {
            ++i;
        }
    }
    // A value must follow the labels: a line cut short is dropped.
    return have_key && i + 2 < line.size() && line[i + 1] == ' ';
}

std::string sample(const char* name, const std::string& labels, const char* value) {
    return std::string(name) + "{" + labels + "} " + value + "\n";
}

std::string number(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6f", v);  // microseconds, as measured
    return buf;
}

std::string number(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%" PRIu64, v);
    return buf;
}

// This key's lines, per family.
std::vector<std::string> own_lines(const job_metrics& m) {
    const std::string key = "key=\"" + escaped(m.key) + "\"";
    std::vector<std::string> lines(family_count);
    const std::string values[] = {
        number(m.start_time_s), number(m.end_time_s),          number(m.wait_s),
        number(m.hold_s),       std::to_string(m.exit_status), m.acquired ? "1" : "0",
        m.lost ? "1" : "0",     number(m.renewals_failed),
    };
    for (std::size_t f = 0; f + 1 < family_count; ++f) {
        lines[f] = sample(families[f].name, key, values[f].c_str());
    }
    for (const auto& n : m.node_errors) {
        lines[family_count - 1] +=
            sample(families[family_count - 1].name, key + ",node=\"" + escaped(n.first) + "\"",
                   number(n.second).c_str());
    }
    return lines;
}

// Reads up to metrics_max_read bytes of an open file, cut after its last
// whole line.
std::string read_some(int fd) {
    std::string text;
    char buf[8192];
    while (text.size() < metrics_max_read) {
        const ssize_t got = ::read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            break;
        }
        text.append(buf, static_cast<std::size_t>(got));
    }
    if (text.size() > metrics_max_read) {
        text.resize(metrics_max_read);
    }
    const std::size_t last = text.rfind('\n');
    text.resize(last == std::string::npos ? 0 : last + 1);
    return text;
}

bool write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t put = ::write(fd, text.data() + done, text.size() - done);
        if (put < 0 && errno == EINTR) {
            continue;
        }
        if (put <= 0) {
            return false;
        }
        done += static_cast<std::size_t>(put);
    }
    return true;
}

}  // namespace

std::string merge_metrics(const std::string& old, const job_metrics& m) {
    const std::string own = escaped(m.key);
    // Other keys' lines per family, and the keys in the order they come.
    std::vector<std::vector<std::pair<std::string, std::string>>> kept(family_count);
    std::vector<std::string> keys;
    std::size_t at = 0;
    while (at < old.size()) {
        std::size_t end = old.find('\n', at);
        if (end == std::string::npos) {
            end = old.size();
        }
        const std::string line = old.substr(at, end - at);
        at = end + 1;
        std::size_t fam = 0;
        std::string key;
        if (!parse_sample(line, fam, key) || key == own) {
            continue;
        }
        bool known = false;
        for (const std::string& k : keys) {
            known = known || k == key;
        }
        if (!known) {
            keys.push_back(key);
        }
        kept[fam].emplace_back(key, line);
    }
    // The earliest written go first when there are too many.
    std::size_t drop = keys.size() + 1 > metrics_max_keys ? keys.size() + 1 - metrics_max_keys : 0;
    const std::vector<std::string> dropped(keys.begin(),
                                           keys.begin() + static_cast<std::ptrdiff_t>(drop));
    const std::vector<std::string> mine = own_lines(m);
    std::string text;
    for (std::size_t f = 0; f < family_count; ++f) {
        text += std::string("# HELP ") + families[f].name + " " + families[f].help + "\n";
        text += std::string("# TYPE ") + families[f].name + " gauge\n";
        for (const auto& kl : kept[f]) {
            bool gone = false;
            for (const std::string& d : dropped) {
                gone = gone || d == kl.first;
            }
            if (!gone) {
                text += kl.second + "\n";
            }
        }
        text += mine[f];
    }
    return text;
}

namespace {

// Opens `path` for `flags` without following a symbolic link at its last
// component and without blocking (a FIFO there must not hang the agent), then
// checks on the same fd that it is a regular file. -1 with `error` set
// otherwise; ENOENT is left in errno, error empty, for the caller to decide.
int open_regular(const std::string& path, int flags, std::string& error) {
    const int fd =
        ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == ELOOP) {
            error = path + ": a symbolic link: not followed";
        } else if (errno != ENOENT) {
            error = path + ": " + std::strerror(errno);
        }
        return -1;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        error = path + ": not a regular file";
        ::close(fd);
        errno = EINVAL;
        return -1;
    }
    // Reads and writes go on blocking: a regular file never waits for a peer.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

}  // namespace

bool write_metrics_file(const std::string& path, const job_metrics& m, std::string& error,
                        bool& waited_out) {
    waited_out = false;
    error.clear();
    // What is there, if anything, must be a regular file: a FIFO, a device or
    // a directory is refused before anything is written.
    const int probe = open_regular(path, O_RDONLY, error);
    if (probe < 0 && !error.empty()) {
        return false;
    }
    if (probe >= 0) {
        ::close(probe);
    }
    // Our turn: other agents' read-merge-rename must not interleave with ours.
    // Its lock file is created (never through a link) but never written.
    const std::string lock_path = path + ".lock";
    const int lock_fd = open_regular(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW, error);
    if (lock_fd < 0) {
        if (error.empty()) {
            error = "cannot create " + lock_path + ": " + std::strerror(errno);
        }
        return false;
    }
    bool had = false;
    for (int i = 0; i < 200 && !had; ++i) {  // 2 s
        had = ::flock(lock_fd, LOCK_EX | LOCK_NB) == 0;
        if (!had) {
            ::usleep(10000);
        }
    }
    waited_out = !had;
    std::string old;
    const int in = open_regular(path, O_RDONLY, error);
    if (in < 0 && !error.empty()) {
        ::close(lock_fd);
        return false;
    }
    if (in >= 0) {
        old = read_some(in);
        ::close(in);
    }
    const std::string text = merge_metrics(old, m);
    std::string tmp;
    const int out = create_unguessable(AT_FDCWD, path + ".tmp.", 0644, tmp);
    bool ok = out >= 0;
    if (!ok) {
        error = "cannot create a temporary for " + path + ": " + std::strerror(errno);
    }
    const char* step = "cannot write ";
    if (ok) {
        // On disk before the rename: a power cut then leaves the old file or
        // the new one, not an empty one.
        const bool written = write_all(out, text) && ::fsync(out) == 0;
        const int saved = errno;
        const bool closed = ::close(out) == 0;
        if (!written) {
            errno = saved;
        }
        ok = written && closed;
        if (ok) {
            ok = ::rename(tmp.c_str(), path.c_str()) == 0;
            step = "cannot rename over ";
        }
        if (!ok) {
            const int failed = errno;
            ::unlink(tmp.c_str());
            error = std::string(step) + path + ": " + std::strerror(failed);
        }
    }
    ::close(lock_fd);  // lets the turn go
    return ok;
}

}  // namespace edgelock_cli
