// The lock cycle over TLS (rediss://, edgelock::tls_mbedtls) against the same
// cycle over plain TCP, and each against its floor. Prints one section:
//
//   - cycles per second, acquire + release on one connection, over TLS and
//     over plain TCP (two servers, one with --tls-port only), three runs of
//     each side alternating, the median counting; the floors are
//     `redis-benchmark [--tls] -c 1 -P 1 -t set` divided by two;
//   - the time connect() takes, TCP connect + TLS handshake + the driver's
//     set-up (HELLO, SCRIPT LOAD), over TLS and plain, 50 connections each;
//   - user-space instructions per cycle under valgrind --tool=callgrind, over
//     TLS and plain (as bench_cycle counts them);
//   - heap allocations per cycle over TLS (after the handshake: none).
//
// Certificates come from the tests' fixture (the openssl command, EC P-256).
// Every cycle must acquire and release, or the program fails.
#include <mbedtls/version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "edgelock/client.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "tools/alloc_count.hpp"
#include "tools/clock.hpp"
#include "tools/url.hpp"

namespace {

using namespace edgelock;
using edgelock_bench::fail;
using edgelock_bench::format;
using edgelock_bench::mono_ns;

const char* const program = "bench_tls";
const char* const lock_name = "bench-tls";
const int ttl_ms = 10000;

std::string tls_url(std::uint16_t port) {
    return "rediss://localhost:" + std::to_string(port);
}

// One connected client and lock; over TLS when a CA file is given.
class side {
public:
    side(std::uint16_t port, const std::string& ca_file) : ca_(ca_file) {
        client_options o;
        if (!ca_.empty()) {
            url_ = tls_url(port);
            tls_options t;
            t.ca_file = str_view(ca_.data(), ca_.size());
            if (tls_.configure(t) != tls_errc::ok) {
                fail(program, "tls: configure failed");
            }
            o.via = &tls_;
        } else {
            url_ = edgelock_test::redis_url(port);
        }
        const str_view urls[] = {str_view(url_.c_str())};
        if (client_.configure(urls, 1, o) != client_errc::ok) {
            fail(program, "configure failed");
        }
        lock_options lo;
        lo.ttl = duration::millis(ttl_ms);
        if (lock_.attach(client_, lock_name, lo) != client_errc::ok) {
            fail(program, "attach failed");
        }
        if (client_.connect(port::now() + duration::seconds(5)) != 1) {
            fail(program,
                 format("%s did not connect: %s", url_.c_str(), describe(client_.node(0).error)));
        }
    }
    side(const side&) = delete;
    side& operator=(const side&) = delete;

    void cycle() {
        const op_result a = lock_.try_acquire();
        if (a.error != client_errc::ok || a.event.kind != lock_event_kind::acquired) {
            fail(program, format("%s: acquire ended with %s / %s", url_.c_str(), describe(a.error),
                                 describe(a.event.kind)));
        }
        const op_result r = lock_.release();
        if (r.error != client_errc::ok || r.event.kind != lock_event_kind::released) {
            fail(program, format("%s: release ended with %s / %s", url_.c_str(), describe(r.error),
                                 describe(r.event.kind)));
        }
    }

private:
    std::string ca_;
    std::string url_;
    tls_mbedtls<1> tls_;
    client<1> client_;
    client_lock lock_;
};

// The loop valgrind counts (--toggle-collect names it): kept out of line.
__attribute__((noinline)) void measured_cycles(side& s, int cycles) {
    for (int i = 0; i < cycles; ++i) {
        s.cycle();
    }
}

double allocations_per_cycle(side& s, int cycles) {
    for (int i = 0; i < 100; ++i) {
        s.cycle();
    }
    edgelock_test::alloc_window w;
    measured_cycles(s, cycles);
    return static_cast<double>(w.count()) / cycles;
}

// connect() of a fresh one-node client, `count` times; each sample is the
// time from connect() to the node being ready. Over TLS the transport is
// configured once and reused, as a daemon reconnecting would.
std::vector<std::int64_t> connect_times(std::uint16_t port, const std::string& ca_file, int count) {
    std::unique_ptr<tls_mbedtls<1>> tls;
    std::string url = edgelock_test::redis_url(port);
    client_options o;
    if (!ca_file.empty()) {
        tls = std::make_unique<tls_mbedtls<1>>();
        tls_options t;
        t.ca_file = str_view(ca_file.data(), ca_file.size());
        if (tls->configure(t) != tls_errc::ok) {
            fail(program, "tls: configure failed");
        }
        o.via = tls.get();
        url = tls_url(port);
    }
    const str_view urls[] = {str_view(url.c_str())};
    std::vector<std::int64_t> samples;
    for (int i = 0; i < count; ++i) {
        auto c = std::make_unique<client<1>>();
        if (c->configure(urls, 1, o) != client_errc::ok) {
            fail(program, "configure failed");
        }
        const std::int64_t start = mono_ns();
        if (c->connect(port::now() + duration::seconds(5)) != 1) {
            fail(program, format("%s did not connect", url.c_str()));
        }
        samples.push_back(mono_ns() - start);
    }
    return samples;
}

// Instructions per cycle: this program under callgrind in --callgrind mode,
// collecting only inside measured_cycles().
double callgrind_per_cycle(std::uint16_t port, const std::string& ca_file, int cycles) {
    return edgelock_bench::callgrind_total(
               program, "*measured_cycles*",
               format("--callgrind %u %d '%s'", port, cycles, ca_file.c_str())) /
           cycles;
}

int callgrind_child(std::uint16_t port, int cycles, const std::string& ca_file) {
    side s(port, ca_file);
    for (int i = 0; i < 100; ++i) {
        s.cycle();
    }
    measured_cycles(s, cycles);
    return 0;
}

double median3(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[1];
}

const char* verdict(bool met) {
    return met ? "met" : "missed";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 4 && std::string(argv[1]) == "--callgrind") {
        return callgrind_child(static_cast<std::uint16_t>(std::atoi(argv[2])), std::atoi(argv[3]),
                               argc >= 5 ? argv[4] : "");
    }
    std::unique_ptr<edgelock_test::tls_certs> certs;
    try {
        certs = std::make_unique<edgelock_test::tls_certs>();
    } catch (const std::exception& e) {
        fail(program, std::string("certificates: ") + e.what());
    }
    const std::string ca = certs->ca_file();
    edgelock_test::redis_server tls_server(certs->server_files(), {});
    edgelock_test::redis_server plain_server;

    std::fprintf(stderr, "%s: throughput\n", program);
    std::vector<double> tls_rates;
    std::vector<double> plain_rates;
    double tls_allocs = 0;
    double plain_allocs = 0;
    {
        side tls(tls_server.port(), ca);
        side plain(plain_server.port(), "");
        for (int round = 0; round < 3; ++round) {
            tls_rates.push_back(edgelock_bench::cycles_per_second(tls, 1.5));
            plain_rates.push_back(edgelock_bench::cycles_per_second(plain, 1.5));
        }
        std::fprintf(stderr, "%s: allocations\n", program);
        tls_allocs = allocations_per_cycle(tls, 1000);
        plain_allocs = allocations_per_cycle(plain, 1000);
    }
    const double tls_rate = median3(tls_rates);
    const double plain_rate = median3(plain_rates);
    const double tls_set = edgelock_bench::redis_benchmark_set(
        tls_server.port(), 50000, format("--tls --cacert '%s'", ca.c_str()));
    const double plain_set = edgelock_bench::redis_benchmark_set(plain_server.port(), 50000);
    if (tls_set <= 0 || plain_set <= 0) {
        fail(program, "redis-benchmark did not report a SET rate");
    }

    std::fprintf(stderr, "%s: connections\n", program);
    const int connects = 50;
    const edgelock_bench::summary tls_connect =
        edgelock_bench::summarize(connect_times(tls_server.port(), ca, connects));
    const edgelock_bench::summary plain_connect =
        edgelock_bench::summarize(connect_times(plain_server.port(), "", connects));

    std::fprintf(stderr, "%s: callgrind\n", program);
    if (std::system("valgrind --version >/dev/null 2>&1") != 0) {
        fail(program, "valgrind is not installed (make deps installs it for make bench)");
    }
    const int cg_cycles = 1000;
    const double tls_ir = callgrind_per_cycle(tls_server.port(), ca, cg_cycles);
    const double plain_ir = callgrind_per_cycle(plain_server.port(), "", cg_cycles);

    std::printf("## 9. TLS: the lock cycle over rediss://\n\n");
    std::printf(
        "Two redis-servers on loopback: one with `--tls-port` only (a certificate for "
        "localhost signed by a test CA, EC P-256, made with openssl), one plain. edgelock "
        "over TLS is `edgelock::tls_mbedtls<1>` (mbedTLS %s, TLS 1.2, the server's "
        "certificate verified against the CA file) handed to the client in "
        "`client_options::via`; plain is the same client without it. The cycle is "
        "`try_acquire()` then `release()` on one connection, as in section 2; each side ran "
        "three times for 1.5 s, alternating; the median counts. The floors are "
        "`redis-benchmark -c 1 -P 1 -t set` (with `--tls --cacert`, over OpenSSL, for TLS) "
        "divided by two.\n\n",
        MBEDTLS_VERSION_STRING);
    std::printf(
        "| | cycles/s | runs | vs its floor | floor (SET/s / 2) |\n"
        "|---|---:|---|---:|---:|\n");
    std::printf("| edgelock over TLS | %.0f | %.0f, %.0f, %.0f | %.2fx | %.0f |\n", tls_rate,
                tls_rates[0], tls_rates[1], tls_rates[2], tls_rate / (tls_set / 2), tls_set / 2);
    std::printf("| edgelock plain | %.0f | %.0f, %.0f, %.0f | %.2fx | %.0f |\n\n", plain_rate,
                plain_rates[0], plain_rates[1], plain_rates[2], plain_rate / (plain_set / 2),
                plain_set / 2);
    std::printf("TLS costs %.0f%% of the plain cycle rate.\n\n",
                100.0 * (1.0 - tls_rate / plain_rate));
    std::printf("Target: at least 1.0x the TLS floor: **%s** (%.2fx).\n\n",
                verdict(tls_rate >= tls_set / 2), tls_rate / (tls_set / 2));

    std::printf(
        "Connection set-up: `connect()` of a fresh one-node client until the node is ready "
        "(TCP connect, the TLS handshake with certificate verification, then the driver's "
        "HELLO and script loading), %d times each; over TLS the transport is configured once "
        "(CA loaded) and reused, as a reconnecting daemon does.\n\n",
        connects);
    std::printf("| | p50 | p90 | max |\n|---|---:|---:|---:|\n");
    std::printf("| over TLS | %.2f ms | %.2f ms | %.2f ms |\n", tls_connect.p50_ms,
                tls_connect.p90_ms, tls_connect.max_ms);
    std::printf("| plain | %.2f ms | %.2f ms | %.2f ms |\n\n", plain_connect.p50_ms,
                plain_connect.p90_ms, plain_connect.max_ms);
    std::printf("The handshake adds %.2f ms at p50.\n\n",
                tls_connect.p50_ms - plain_connect.p50_ms);

    std::printf(
        "Client instructions per cycle (user space, under `valgrind --tool=callgrind`, only "
        "inside a loop of %d cycles after 100 uncounted ones; the C library and mbedTLS "
        "included), and heap allocations per cycle (malloc and friends interposed, 1,000 "
        "cycles after the handshake):\n\n",
        cg_cycles);
    std::printf("| | instructions/cycle | allocations/cycle |\n|---|---:|---:|\n");
    std::printf("| over TLS | %.0f (%.2fx plain) | %.2f |\n", tls_ir, tls_ir / plain_ir,
                tls_allocs);
    std::printf("| plain | %.0f | %.2f |\n\n", plain_ir, plain_allocs);
    std::printf("Target (allocations): 0 per cycle over TLS: **%s** (%.2f).\n\n",
                verdict(tls_allocs == 0), tls_allocs);
    return 0;
}
