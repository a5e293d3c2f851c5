#include "bench/bench_common.hpp"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <sstream>

#include "integration/redis_server.hpp"
#include "tools/files.hpp"
#include "tools/hex.hpp"
#include "tools/net.hpp"

#ifndef EDGELOCK_FAULT_PROXY_PATH
#error "EDGELOCK_FAULT_PROXY_PATH must name the fault proxy"
#endif

namespace edgelock_bench {

void fail(const char* name, const std::string& message) {
    std::fprintf(stderr, "%s: %s\n", name, message.c_str());
    std::exit(1);
}

summary summarize(std::vector<std::int64_t> samples_ns) {
    summary s;
    if (samples_ns.empty()) {
        return s;
    }
    std::sort(samples_ns.begin(), samples_ns.end());
    const std::size_t n = samples_ns.size();
    // Nearest rank: the smallest sample with at least p% of samples at or below it.
    auto rank = [&](double p) {
        std::size_t r = static_cast<std::size_t>(p / 100.0 * static_cast<double>(n) + 0.999999);
        r = std::max<std::size_t>(r, 1);
        return static_cast<double>(samples_ns[std::min(r, n) - 1]) / 1e6;
    };
    double sum = 0;
    for (std::int64_t v : samples_ns) {
        sum += static_cast<double>(v);
    }
    s.count = n;
    s.min_ms = static_cast<double>(samples_ns.front()) / 1e6;
    s.p50_ms = rank(50);
    s.p90_ms = rank(90);
    s.p99_ms = rank(99);
    s.max_ms = static_cast<double>(samples_ns.back()) / 1e6;
    s.mean_ms = sum / static_cast<double>(n) / 1e6;
    return s;
}

long long info_field(std::uint16_t port, const std::string& field) {
    try {
        edgelock_test::redis_client c(port, 2.0);
        const edgelock_test::reply r = c.command({"INFO", "all"});
        const std::string key = field + ":";
        std::size_t at = 0;
        while ((at = r.text.find(key, at)) != std::string::npos) {
            if (at == 0 || r.text[at - 1] == '\n') {
                return std::atoll(r.text.c_str() + at + key.size());
            }
            at += key.size();
        }
    } catch (const std::exception&) {
    }
    return -1;
}

std::vector<std::int64_t> ping_round_trips(const char* program, std::uint16_t port, int count) {
    const int fd = edgelock_test::connect_loopback(port);
    if (fd < 0) {
        fail(program, "PING connection failed");
    }
    timeval tv{};
    tv.tv_sec = 2;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    static const char ping[] = "PING\r\n";
    static const char pong[] = "+PONG\r\n";
    std::vector<std::int64_t> samples;
    samples.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        const std::int64_t t0 = mono_ns();
        if (::write(fd, ping, sizeof ping - 1) != static_cast<ssize_t>(sizeof ping - 1)) {
            ::close(fd);
            fail(program, "PING write failed");
        }
        char buf[16];
        std::size_t got = 0;
        while (got < sizeof pong - 1) {
            const ssize_t n = ::read(fd, buf + got, sizeof buf - got);
            if (n <= 0) {
                ::close(fd);
                fail(program, "PING read failed");
            }
            got += static_cast<std::size_t>(n);
        }
        samples.push_back(mono_ns() - t0);
        if (std::string(buf, got) != pong) {
            ::close(fd);
            fail(program, "unexpected PING reply");
        }
    }
    ::close(fd);
    return samples;
}

void peer_token(const char* program, char (&hex)[33]) {
    unsigned char raw[16];
    if (::getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw)) {
        fail(program, format("getrandom: %s", std::strerror(errno)));
    }
    edgelock_test::hex_encode(raw, sizeof raw, hex);
    hex[32] = '\0';
}

double redis_benchmark_set(std::uint16_t port, int requests, const std::string& options) {
    const std::string cmd =
        format("redis-benchmark -h 127.0.0.1 -p %u %s -c 1 -P 1 -t set -n %d -q 2>/dev/null", port,
               options.c_str(), requests);
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) {
        return -1;
    }
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p) != nullptr) {
        out += buf;
    }
    ::pclose(p);
    // "SET: 23456.78 requests per second, p50=0.039 msec" (the last \r-separated part)
    const std::size_t at = out.rfind("SET: ");
    return at == std::string::npos ? -1 : std::atof(out.c_str() + at + 5);
}

double callgrind_total(const char* program, const std::string& toggle, const std::string& args) {
    std::unique_ptr<edgelock_test::temp_dir> dir;
    try {
        dir = std::make_unique<edgelock_test::temp_dir>("edgelock-bench");
    } catch (const std::exception& e) {
        fail(program, e.what());
    }
    const std::string out = *dir / "callgrind.out";
    const std::string cmd = format(
        "valgrind --tool=callgrind --collect-atstart=no '--toggle-collect=%s' "
        "--callgrind-out-file=%s '%s' %s >/dev/null 2>&1",
        toggle.c_str(), out.c_str(), edgelock_test::self_path().c_str(), args.c_str());
    const int rc = std::system(cmd.c_str());
    double total = -1;
    if (rc == 0) {
        std::istringstream in(edgelock_test::read_file(out));
        std::string line;
        while (std::getline(in, line)) {
            if (line.compare(0, 8, "totals: ") == 0 || line.compare(0, 9, "summary: ") == 0) {
                total = std::atof(line.c_str() + line.find(' ') + 1);
            }
        }
    }
    if (total <= 0) {
        fail(program, format("callgrind run '%s' failed (status %d)", args.c_str(), rc));
    }
    return total;
}

const char* fault_proxy_program() {
    return EDGELOCK_FAULT_PROXY_PATH;
}

std::string format(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

}  // namespace edgelock_bench
