#include "new_file.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstddef>

namespace edgelock_cli {

namespace {

// 64 bits from the kernel: whoever owns the directory cannot plant a link
// at the name before it is made.
bool random_hex(std::string& out) {
    unsigned char bytes[8];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        got += static_cast<std::size_t>(n);
    }
    static const char hex[] = "0123456789abcdef";
    out.clear();
    for (const unsigned char b : bytes) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return true;
}

}  // namespace

int create_unguessable(int dir_fd, const std::string& prefix, mode_t mode, std::string& name) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        std::string suffix;
        if (!random_hex(suffix)) {
            return -1;
        }
        name = prefix + suffix;
        const int fd = ::openat(dir_fd, name.c_str(),
                                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST) {
            return fd;
        }
    }
    return -1;  // errno EEXIST: someone holds every name tried
}

int open_to_read(const std::string& path, struct stat& st) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd >= 0 && ::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

bool is_regular_file(const std::string& path, std::string& why) {
    struct stat st {};
    const int fd = open_to_read(path, st);
    if (fd < 0) {
        return true;
    }
    ::close(fd);
    if (!S_ISREG(st.st_mode)) {
        why = "not a regular file";
        return false;
    }
    return true;
}

}  // namespace edgelock_cli
