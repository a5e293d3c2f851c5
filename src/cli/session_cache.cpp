#include "session_cache.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "new_file.hpp"

namespace edgelock_cli {

namespace {

constexpr char magic[] = "edgelock-tls-sessions 1\n";
constexpr std::size_t magic_size = sizeof magic - 1;
// Far above session_cache_max entries of the largest session the transport
// keeps (EDGELOCK_TLS_SESSION_BYTES): a file past it is not one the agent wrote.
constexpr std::size_t max_file = 256 * 1024;

std::uint64_t fnv1a(const std::string& bytes, std::size_t size) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i < size; ++i) {
        h ^= static_cast<unsigned char>(bytes[i]);
        h *= 0x100000001b3ULL;
    }
    return h;
}

void put(std::string& out, std::uint64_t value, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) {
        out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    }
}

void put_text(std::string& out, const std::string& s, int size_bytes) {
    put(out, s.size(), size_bytes);
    out += s;
}

// Reads the file's fields in order; any read past the end sets `bad`.
struct reader {
    const std::string& bytes;
    std::size_t at;
    std::size_t end;
    bool bad = false;

    std::uint64_t number(int size) {
        if (end - at < static_cast<std::size_t>(size)) {
            bad = true;
            return 0;
        }
        std::uint64_t v = 0;
        for (int i = 0; i < size; ++i) {
            v = (v << 8) | static_cast<unsigned char>(bytes[at++]);
        }
        return v;
    }
    std::string text(int size_bytes) {
        const std::size_t n = static_cast<std::size_t>(number(size_bytes));
        if (bad || end - at < n) {
            bad = true;
            return std::string();
        }
        std::string s = bytes.substr(at, n);
        at += n;
        return s;
    }
};

// The entries of a file that starts with the magic line; false when it is
// cut short, altered or inconsistent.
bool decode(const std::string& bytes, std::vector<cached_session>& out, std::string& why) {
    if (bytes.size() < magic_size + 1 + 8) {
        why = "cut short";
        return false;
    }
    const std::size_t body = bytes.size() - 8;
    reader sum{bytes, body, bytes.size()};
    if (sum.number(8) != fnv1a(bytes, body)) {
        why = "its checksum does not match";
        return false;
    }
    reader r{bytes, magic_size, body};
    const std::size_t count = static_cast<std::size_t>(r.number(1));
    if (count > session_cache_max) {
        why = "too many entries";
        return false;
    }
    std::vector<cached_session> entries;
    for (std::size_t i = 0; i < count && !r.bad; ++i) {
        cached_session e;
        e.saved = r.number(8);
        e.port = static_cast<std::uint16_t>(r.number(2));
        e.host = r.text(1);
        e.server_name = r.text(1);
        e.data = r.text(2);
        if (!r.bad && (e.port == 0 || e.host.empty() || e.data.empty())) {
            r.bad = true;
        }
        entries.push_back(e);
    }
    if (r.bad || r.at != body) {
        why = "an entry does not parse";
        return false;
    }
    out = entries;
    return true;
}

std::string directory_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string octal_mode(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

int open_cache_dir(const std::string& path, bool own_dir, std::string& why) {
    const std::string dir = directory_of(path);
    // The default directory sits in $XDG_RUNTIME_DIR, which may be another
    // user's (su without -, sudo -E): a link there is not followed, and a
    // directory not ours is not used.
    const int fd =
        ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (own_dir ? O_NOFOLLOW : 0));
    if (fd < 0) {
        why = dir + ": " +
              (own_dir && (errno == ELOOP || errno == ENOTDIR) ? std::string("a symbolic link")
                                                               : std::strerror(errno));
        return -1;
    }
    struct stat st {};
    if (own_dir) {
        if (::fstat(fd, &st) != 0) {
            why = dir + ": " + std::strerror(errno);
        } else if (st.st_uid != ::geteuid()) {
            why = dir + ": owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
                  std::to_string(::geteuid()) + ")";
        } else if ((st.st_mode & 022) != 0) {
            why = dir + ": mode " + octal_mode(st.st_mode) + ": group or others can write it";
        } else {
            return fd;
        }
        ::close(fd);
        errno = EPERM;  // not ENOENT: an unsafe directory is not an absent cache
        return -1;
    }
    return fd;
}

}  // namespace

std::string encode_sessions(const std::vector<cached_session>& entries) {
    std::string out(magic, magic_size);
    const std::size_t count =
        entries.size() < session_cache_max ? entries.size() : session_cache_max;
    put(out, count, 1);
    for (std::size_t i = 0; i < count; ++i) {
        const cached_session& e = entries[i];
        put(out, e.saved, 8);
        put(out, e.port, 2);
        put_text(out, e.host.substr(0, 255), 1);
        put_text(out, e.server_name.substr(0, 255), 1);
        put_text(out, e.data.substr(0, 65535), 2);
    }
    put(out, fnv1a(out, out.size()), 8);
    return out;
}

cache_read read_session_cache(const std::string& path, bool own_dir,
                              std::vector<cached_session>& entries, std::string& raw,
                              std::string& why) {
    entries.clear();
    raw.clear();
    const int dir_fd = open_cache_dir(path, own_dir, why);
    if (dir_fd < 0) {
        if (errno == ENOENT) {
            why.clear();
            return cache_read::absent;
        }
        return cache_read::unsafe;
    }
    const std::size_t slash = path.rfind('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    // O_NONBLOCK: a FIFO put there must not hold the agent up.
    const int fd =
        ::openat(dir_fd, base.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    const int open_errno = errno;
    ::close(dir_fd);
    errno = open_errno;
    if (fd < 0) {
        if (errno == ENOENT) {
            return cache_read::absent;
        }
        if (errno == ELOOP) {
            why = "a symbolic link";
            return cache_read::unsafe;
        }
        why = std::strerror(errno);
        return cache_read::unreadable;
    }
    struct stat st;
    cache_read state = cache_read::loaded;
    if (::fstat(fd, &st) != 0) {
        why = std::strerror(errno);
        state = cache_read::unreadable;
    } else if (!S_ISREG(st.st_mode)) {
        why = "not a regular file";
        state = cache_read::unsafe;
    } else if (st.st_uid != ::geteuid()) {
        why = "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
              std::to_string(::geteuid()) + ")";
        state = cache_read::unsafe;
    } else if ((st.st_mode & 077) != 0) {
        why = "mode " + octal_mode(st.st_mode) + ": group or others have access (chmod 600 it)";
        state = cache_read::unsafe;
    }
    if (state == cache_read::loaded) {
        char buf[8192];
        for (;;) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0) {
                raw.append(buf, static_cast<std::size_t>(n));
                if (raw.size() > max_file) {
                    break;
                }
            } else if (n == 0) {
                break;
            } else if (errno != EINTR) {
                why = std::strerror(errno);
                state = cache_read::unreadable;
                break;
            }
        }
    }
    ::close(fd);
    if (state != cache_read::loaded) {
        raw.clear();
        return state;
    }
    if (raw.empty()) {
        return cache_read::loaded;  // made empty on purpose, or cut at creation
    }
    if (raw.compare(0, magic_size, magic, raw.size() < magic_size ? raw.size() : magic_size) != 0) {
        why = "not an edgelock TLS session cache";
        return cache_read::foreign;
    }
    if (raw.size() > max_file) {
        why = "larger than any the agent writes";
        return cache_read::damaged;
    }
    if (!decode(raw, entries, why)) {
        entries.clear();
        return cache_read::damaged;
    }
    return cache_read::loaded;
}

bool write_session_cache(const std::string& path, const std::string& bytes, bool make_dir,
                         std::string& why) {
    const std::string dir = directory_of(path);
    if (make_dir && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        why = "cannot make " + dir + ": " + std::strerror(errno);
        return false;
    }
    // Everything below goes through the directory's fd: it stays the one
    // checked, whatever is renamed around it.
    const int dir_fd = open_cache_dir(path, make_dir, why);
    if (dir_fd < 0) {
        return false;
    }
    const std::size_t slash = path.rfind('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    std::string temp;
    const int fd = create_unguessable(dir_fd, "." + base + ".", 0600, temp);
    if (fd < 0) {
        why = "cannot write in " + dir + ": " + std::strerror(errno);
        ::close(dir_fd);
        return false;
    }
    // 0600 whatever the umask, which can only narrow it.
    bool ok = true;
    std::size_t done = 0;
    while (ok && done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            why = std::string("cannot write it: ") + std::strerror(n < 0 ? errno : EIO);
            ok = false;
        } else {
            done += static_cast<std::size_t>(n);
        }
    }
    // No fsync: it is a cache. A file cut short by a power loss is damaged,
    // which costs one full handshake, not a crash.
    if (::close(fd) != 0 && ok) {
        why = std::string("cannot write it: ") + std::strerror(errno);
        ok = false;
    }
    if (ok && ::renameat(dir_fd, temp.c_str(), dir_fd, base.c_str()) != 0) {
        why = std::string("cannot replace it: ") + std::strerror(errno);
        ok = false;
    }
    if (!ok) {
        ::unlinkat(dir_fd, temp.c_str(), 0);
    }
    ::close(dir_fd);
    return ok;
}

std::string default_session_cache() {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime == nullptr || runtime[0] != '/') {
        return std::string();
    }
    std::string dir = runtime;
    while (dir.size() > 1 && dir.back() == '/') {
        dir.pop_back();
    }
    return (dir == "/" ? "" : dir) + "/edgelock/tls-sessions";
}

}  // namespace edgelock_cli
