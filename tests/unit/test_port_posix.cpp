// The POSIX port: monotonic clock and CSPRNG.
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "edgelock/port.hpp"
#include "tools/skip.hpp"

using namespace edgelock;

TEST_CASE("port posix: the clock is monotonic and moves", "[port]") {
    const instant a = port::now();
    instant b = a;
    // Spin until it changes; a microsecond clock must move within a few
    // million reads, and must never go back meanwhile.
    for (int i = 0; i < 10000000 && b == a; ++i) {
        const instant c = port::now();
        REQUIRE(c >= b);
        b = c;
    }
    REQUIRE(b > a);
}

namespace {

std::uint64_t clock_us(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

#if defined(__linux__) && defined(CLONE_NEWTIME)
// In a new time namespace whose CLOCK_BOOTTIME is 1000 s ahead of its
// CLOCK_MONOTONIC (as after 1000 s of suspend), how far port::now() is ahead
// of CLOCK_MONOTONIC, in seconds; -1 when no such namespace can be made here.
long long seconds_ahead_after_a_simulated_suspend() {
    int p[2];
    if (pipe(p) != 0) {
        return -1;
    }
    const pid_t outer = fork();
    if (outer == 0) {
        // Only children made after the offsets are written live in the namespace.
        const int fd =
            unshare(CLONE_NEWTIME) == 0 ? open("/proc/self/timens_offsets", O_WRONLY) : -1;
        const char offsets[] = "boottime 1000 0\n";
        if (fd < 0 || write(fd, offsets, sizeof offsets - 1) != sizeof offsets - 1) {
            _exit(2);
        }
        close(fd);
        const pid_t inner = fork();
        if (inner == 0) {
            const std::uint64_t now = port::now().us;
            const std::uint64_t mono = clock_us(CLOCK_MONOTONIC);
            const long long ahead = static_cast<long long>(now - mono) / 1000000;
            _exit(write(p[1], &ahead, sizeof ahead) == sizeof ahead ? 0 : 3);
        }
        int st = 0;
        waitpid(inner, &st, 0);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 4);
    }
    close(p[1]);
    int st = 0;
    waitpid(outer, &st, 0);
    long long ahead = -1;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
        read(p[0], &ahead, sizeof ahead) != sizeof ahead) {
        ahead = -1;
    }
    close(p[0]);
    return ahead;
}
#else
long long seconds_ahead_after_a_simulated_suspend() {
    return -1;
}
#endif

}  // namespace

TEST_CASE("port posix: the clock counts time spent suspended", "[port]") {
#ifdef CLOCK_BOOTTIME
    const std::uint64_t before = clock_us(CLOCK_BOOTTIME);
    const std::uint64_t now = port::now().us;
    const std::uint64_t after = clock_us(CLOCK_BOOTTIME);
    CHECK(now >= before);
    CHECK(now <= after);
    // On a machine that never slept CLOCK_BOOTTIME equals CLOCK_MONOTONIC:
    // only a simulated suspend tells them apart.
    const long long ahead = seconds_ahead_after_a_simulated_suspend();
    if (ahead < 0) {
        edgelock_test::skip("no time namespace here (needs Linux 5.6 and CAP_SYS_ADMIN)");
        return;
    }
    CHECK(ahead >= 999);  // CLOCK_MONOTONIC would be 0 s ahead of itself
    CHECK(ahead <= 1001 + static_cast<long long>(
                              (clock_us(CLOCK_BOOTTIME) - clock_us(CLOCK_MONOTONIC)) / 1000000));
#else
    edgelock_test::skip("no CLOCK_BOOTTIME on this platform: the port uses CLOCK_MONOTONIC");
#endif
}

TEST_CASE("port posix: random bytes fill the buffer and differ between calls", "[port]") {
    unsigned char x[64];
    unsigned char y[64];
    std::memset(x, 0, sizeof x);
    std::memset(y, 0, sizeof y);
    REQUIRE(port::random_bytes(x, sizeof x));
    REQUIRE(port::random_bytes(y, sizeof y));
    // 512 random bits colliding, or staying all zero, has odds of 2^-512.
    REQUIRE(std::memcmp(x, y, sizeof x) != 0);
    const unsigned char zero[64] = {};
    REQUIRE(std::memcmp(x, zero, sizeof x) != 0);
    REQUIRE(port::random_bytes(x, 0));
}
