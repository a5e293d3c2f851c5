// POSIX port: random bytes from the kernel's CSPRNG.
//
// getrandom(2) where the C library has it (glibc >= 2.25, musl >= 1.1.20), else
// /dev/urandom. No user-space generator and no weak fallback: when neither
// works the caller is told and must fail.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#if defined(__linux__) && defined(__has_include)
#if __has_include(<sys/random.h>)
#include <sys/random.h>
#define EDGELOCK_HAVE_GETRANDOM 1
#endif
#endif

#include <cstdint>

#include "edgelock/port.hpp"

namespace edgelock {
namespace port {
namespace {

bool from_urandom(unsigned char* p, std::size_t size) noexcept {
    int fd = -1;
    do {
        fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        return false;
    }
    while (size > 0) {
        const ssize_t n = ::read(fd, p, size);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            ::close(fd);
            return false;
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    ::close(fd);
    return true;
}

}  // namespace

bool random_bytes(void* buf, std::size_t size) noexcept {
    auto* p = static_cast<unsigned char*>(buf);
#ifdef EDGELOCK_HAVE_GETRANDOM
    while (size > 0) {
        const ssize_t n = ::getrandom(p, size, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            // ENOSYS: a kernel older than 3.17; use the device instead.
            return errno == ENOSYS && from_urandom(p, size);
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
#else
    return from_urandom(p, size);
#endif
}

}  // namespace port
}  // namespace edgelock
