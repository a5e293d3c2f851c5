// One job through the agent on a slow link: what `edgelock run KEY -- true`
// costs in round trips, bytes and requests when Redis is 50 or 300 ms away
// (a cellular or satellite link), over plain TCP and TLS, next to a peer
// (redis-cli doing the same lock by hand) and the floor; then what a held
// lock's renewals cost while agents wait for it (slow_link_renewals.hpp).
//
// Two redis-servers on loopback (one plain, one with --tls-port only,
// certificates from the tests' fixture), a fault proxy in front of each.
// The proxy's `delay both D` holds every chunk D ms in each direction, so a
// request and its reply take one RTT = 2D; it does not delay TCP's own
// handshake (the connect is answered by the proxy's kernel at once). So:
//
//   round trips after the connect = (wall at D - wall at no delay) / 2D
//
// where wall is from spawning the program to its exit, and the run at no
// delay (same proxy) holds everything that is not waiting on the link:
// process start, the job, TLS computations. Medians of 5 runs at each delay,
// the kinds of run alternating. Bytes are the proxy's counters (bytes
// delivered each way) over a run, read once its connections are closed;
// requests are what the server was asked (slow_link_tools.hpp).
//
// The TLS resumed row needs the agent's --tls-session-cache FILE: the first
// run fills the file, the measured ones resume from it. An agent without the
// option (exit 64, "unknown option") gets the row "not available".
//
//   bench_slow_link [--agent PATH]   (default: the agent built with it)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "bench/slow_link_renewals.hpp"
#include "bench/slow_link_tools.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"
#include "tools/url.hpp"

#ifndef EDGELOCK_BENCH_AGENT
#error "EDGELOCK_BENCH_AGENT must name the edgelock agent"
#endif

namespace {

using edgelock_bench::fail;
using edgelock_bench::format;
using namespace edgelock_slow_link;

const char* const program = "bench_slow_link";
const char* const lock_name = "slow-link";
const char* const renew_lock_name = "slow-link-renew";
const int delays_ms[] = {0, 25, 150};  // one way; index 0 is the reference
constexpr int delay_count = 3;
constexpr int runs_per_delay = 5;
constexpr double run_timeout_s = 60;
// The peer's compare-and-delete.
const char* const peer_release =
    "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 "
    "end";

enum kind { agent_plain, agent_tls, agent_resumed, peer_plain, peer_tls, kind_count };

const char* const kind_labels[kind_count] = {
    "agent, plain (`redis://`)",
    "agent, TLS (`rediss://`), full handshake",
    "agent, TLS resumed (`--tls-session-cache`)",
    "peer: `redis-cli`, SET NX PX then EVAL compare-and-delete, plain",
    "peer: the same, `redis-cli --tls`",
};

struct sample {
    double wall_ms = 0;
    long long up = 0;
    long long down = 0;
    requests asked;
};

// Everything the runs go through.
struct bench {
    std::string agent = EDGELOCK_BENCH_AGENT;
    std::unique_ptr<edgelock_test::tls_certs> certs;
    std::unique_ptr<edgelock_test::redis_server> plain;
    std::unique_ptr<edgelock_test::redis_server> tls;
    edgelock_test::fault_proxy plain_proxy;
    edgelock_test::fault_proxy tls_proxy;
    std::unique_ptr<server_tally> plain_tally;
    std::unique_ptr<server_tally> tls_tally;
    std::unique_ptr<edgelock_test::temp_dir> dir;
    std::string key = edgelock_test::key_of(lock_name);
    bool resumable = false;

    std::string cache_file() const { return *dir / "tls-session"; }
    bool is_tls(kind k) const { return k == agent_tls || k == agent_resumed || k == peer_tls; }

    std::vector<std::string> agent_argv(kind k) const {
        std::vector<std::string> a = {agent, "run", "-q", "-N"};
        if (k == agent_plain) {
            a.push_back(edgelock_test::redis_url(plain_proxy.port()));
        } else {
            a.push_back("rediss://localhost:" + std::to_string(tls_proxy.port()));
            a.insert(a.end(), {"--cacert", certs->ca_file()});
        }
        if (k == agent_resumed) {
            a.insert(a.end(), {"--tls-session-cache", cache_file()});
        }
        a.insert(a.end(), {lock_name, "--", "true"});
        return a;
    }

    std::vector<std::string> peer_argv(bool over_tls, const std::vector<std::string>& cmd) const {
        std::vector<std::string> a = {"redis-cli"};
        if (over_tls) {
            a.insert(a.end(), {"--tls", "--cacert", certs->ca_file(), "-h", "localhost", "-p",
                               std::to_string(tls_proxy.port())});
        } else {
            a.insert(a.end(), {"-h", "127.0.0.1", "-p", std::to_string(plain_proxy.port())});
        }
        a.insert(a.end(), cmd.begin(), cmd.end());
        return a;
    }
};

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) {
        s.pop_back();
    }
    return s;
}

// One run of kind k through its proxy, with what it cost.
sample run_once(bench& b, kind k) {
    edgelock_test::fault_proxy& proxy = b.is_tls(k) ? b.tls_proxy : b.plain_proxy;
    server_tally& tally = b.is_tls(k) ? *b.tls_tally : *b.plain_tally;
    tally.mark();
    const wire before = wire_of(proxy);
    sample s;
    if (k == peer_plain || k == peer_tls) {
        // Two invocations: the job runs between the acquire and the release.
        char token[33];
        edgelock_bench::peer_token(program, token);
        const timed_run set = run_timed(
            b.peer_argv(k == peer_tls, {"SET", b.key, token, "NX", "PX", "30000"}), run_timeout_s);
        if (set.status != 0 || trimmed(set.out) != "OK") {
            fail(program, format("redis-cli SET: status %d, '%s' '%s'", set.status,
                                 trimmed(set.out).c_str(), trimmed(set.err).c_str()));
        }
        const timed_run del = run_timed(
            b.peer_argv(k == peer_tls, {"EVAL", peer_release, "1", b.key, token}), run_timeout_s);
        if (del.status != 0 || trimmed(del.out) != "1") {
            fail(program, format("redis-cli EVAL: status %d, '%s' '%s'", del.status,
                                 trimmed(del.out).c_str(), trimmed(del.err).c_str()));
        }
        s.wall_ms = static_cast<double>(set.wall_ns + del.wall_ns) / 1e6;
    } else {
        const timed_run r = run_timed(b.agent_argv(k), run_timeout_s);
        if (r.status != 0) {
            fail(program, format("%s: the agent exited %d: %s", kind_labels[k], r.status,
                                 trimmed(r.err).c_str()));
        }
        s.wall_ms = static_cast<double>(r.wall_ns) / 1e6;
    }
    if (!wait_idle(proxy, 10.0)) {
        fail(program, "a connection stayed open after its run");
    }
    const wire after = wire_of(proxy);
    s.up = after.up - before.up;
    s.down = after.down - before.down;
    s.asked = tally.take();
    return s;
}

// Whether the agent knows --tls-session-cache; if it does, this first run
// (no delay) fills the cache.
bool try_resumption(bench& b) {
    const timed_run r = run_timed(b.agent_argv(agent_resumed), run_timeout_s);
    if (r.status == 64 && r.err.find("unknown option") != std::string::npos) {
        return false;
    }
    if (r.status != 0) {
        fail(program, format("the agent with --tls-session-cache exited %d: %s", r.status,
                             trimmed(r.err).c_str()));
    }
    if (!wait_idle(b.tls_proxy, 10.0)) {
        fail(program, "a connection stayed open after its run");
    }
    return true;
}

struct figures {
    bool measured = false;
    double wall_ms[delay_count] = {};
    double round_trips[delay_count] = {};  // [0] unused
    double up = 0;
    double down = 0;
    double asked = 0;
    std::string breakdown;
    std::vector<std::vector<std::string>> commands;  // one run's requests, in order
};

figures summarize_kind(const std::vector<sample> (&at)[delay_count]) {
    figures f;
    if (at[0].empty()) {
        return f;
    }
    f.measured = true;
    for (int d = 0; d < delay_count; ++d) {
        std::vector<double> w;
        for (const sample& s : at[d]) {
            w.push_back(s.wall_ms);
        }
        f.wall_ms[d] = median(w);
        if (d > 0) {
            f.round_trips[d] = (f.wall_ms[d] - f.wall_ms[0]) / (2.0 * delays_ms[d]);
        }
    }
    // Bytes and requests do not depend on the delay: all the delayed runs count.
    std::vector<double> up;
    std::vector<double> down;
    std::vector<double> asked;
    for (int d = 1; d < delay_count; ++d) {
        for (const sample& s : at[d]) {
            up.push_back(static_cast<double>(s.up));
            down.push_back(static_cast<double>(s.down));
            asked.push_back(static_cast<double>(s.asked.total()));
        }
    }
    f.up = median(up);
    f.down = median(down);
    f.asked = median(asked);
    f.breakdown = at[delay_count - 1].back().asked.describe();
    f.commands = at[delay_count - 1].back().asked.commands;
    return f;
}

const char* verdict(bool met) {
    return met ? "met" : "missed";
}

// Milliseconds of a bare TCP connect through the proxy (at its current delay).
double connect_ms(std::uint16_t port) {
    const std::int64_t start = edgelock_bench::mono_ns();
    const int fd = edgelock_test::connect_loopback(port);
    const std::int64_t end = edgelock_bench::mono_ns();
    if (fd < 0) {
        fail(program, "connect to the proxy failed");
    }
    ::close(fd);
    return static_cast<double>(end - start) / 1e6;
}

void print_runs(const figures (&f)[kind_count], const bench& b) {
    const std::vector<std::string> set = {"SET", b.key, std::string(32, '0'), "NX", "PX", "30000"};
    const std::vector<std::string> evalsha = {"EVALSHA", std::string(40, '0'), "1", b.key,
                                              std::string(32, '0')};
    const std::size_t floor_up = resp_request_size(set) + resp_request_size(evalsha);
    const std::size_t floor_down = 5 + 4;  // +OK\r\n  :1\r\n
    std::printf(
        "| one uncontended run | round trips, RTT %d ms | round trips, RTT %d ms | wall, RTT "
        "%d ms | wall, no delay | client→server bytes | server→client bytes | requests |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|\n",
        2 * delays_ms[1], 2 * delays_ms[2], 2 * delays_ms[2]);
    for (int k = 0; k < kind_count; ++k) {
        if (!f[k].measured) {
            std::printf("| %s | not available in this build | | | | | | |\n", kind_labels[k]);
            continue;
        }
        std::printf("| %s | %.2f | %.2f | %.0f ms | %.1f ms | %.0f | %.0f | %.0f |\n",
                    kind_labels[k], f[k].round_trips[1], f[k].round_trips[2], f[k].wall_ms[2],
                    f[k].wall_ms[0], f[k].up, f[k].down, f[k].asked);
    }
    std::printf(
        "| floor: SET NX PX, then EVALSHA compare-and-delete, plain | 2 | 2 | | | %zu | %zu | 2 "
        "|\n\n",
        floor_up, floor_down);
    std::printf("Requests per run, by command (INFO commandstats less what scripts ran):\n\n");
    for (int k = 0; k < kind_count; ++k) {
        if (f[k].measured) {
            std::printf("- %s: %s.\n", kind_labels[k], f[k].breakdown.c_str());
        }
    }
    if (f[agent_plain].measured) {
        const std::vector<byte_account> account =
            account_bytes(b.plain->port(), f[agent_plain].commands);
        std::size_t up = 0;
        std::size_t down = 0;
        std::printf(
            "\nWhere a plain run's bytes go (its requests as MONITOR showed them, each sized as "
            "RESP; each reply measured by sending the same requests again, in order, on one "
            "connection, so HELLO's may differ by the digits of the connection's id):");
        for (const byte_account& a : account) {
            std::printf(" %s %zu up, %zu down;", a.what.c_str(), a.up, a.down);
            up += a.up;
            down += a.down;
        }
        // MONITOR leaves out admin commands (CONFIG GET): what the proxy
        // carried beyond the rest is theirs.
        std::printf(
            " and what MONITOR does not show (admin commands: the set-up's CONFIG GET), the "
            "rest of what the proxy carried: %.0f up, %.0f down. Together %.0f up and %.0f "
            "down.\n",
            f[agent_plain].up - static_cast<double>(up),
            f[agent_plain].down - static_cast<double>(down), f[agent_plain].up,
            f[agent_plain].down);
    }
    const double bytes = f[agent_plain].up + f[agent_plain].down;
    std::printf(
        "\nThe plain agent against the floor: %.2f round trips more at RTT %d ms, %.1fx the bytes "
        "(%.0f against %zu). Against the peer: %.2f round trips more, %.1fx the bytes.\n\n",
        f[agent_plain].round_trips[2] - 2, 2 * delays_ms[2],
        bytes / static_cast<double>(floor_up + floor_down), bytes, floor_up + floor_down,
        f[agent_plain].round_trips[2] - f[peer_plain].round_trips[2],
        bytes / (f[peer_plain].up + f[peer_plain].down));

    std::printf(
        "Target: plain run: 2 round trips after the connect: **%s** (%.2f at RTT %d ms, "
        "%.2f at RTT %d ms).\n\n",
        verdict(f[agent_plain].round_trips[2] < 2.5), f[agent_plain].round_trips[2],
        2 * delays_ms[2], f[agent_plain].round_trips[1], 2 * delays_ms[1]);
    std::printf("Target: plain run under 1 KB on the wire: **%s** (%.0f bytes, both ways).\n\n",
                verdict(bytes < 1024), bytes);
    const double full_above = f[agent_tls].round_trips[2] - f[agent_plain].round_trips[2];
    if (f[agent_resumed].measured) {
        const double above = f[agent_resumed].round_trips[2] - f[agent_plain].round_trips[2];
        std::printf(
            "Target: resumed TLS run 1 round trip above plain: **%s** (%.2f above; a full "
            "handshake %.2f).\n\n",
            verdict(above < 1.5), above, full_above);
    } else {
        std::printf(
            "Target: resumed TLS run 1 round trip above plain: **missed** (not available in this "
            "build; a full handshake %.2f above).\n\n",
            full_above);
    }
}

void print_renewals(const std::vector<renewal_window>& w) {
    const renewal_window& alone = w[0];
    const double alone_per = static_cast<double>(alone.asked.total()) / alone.renewals;
    std::printf(
        "| waiters | renewals counted | requests per renewal | extra per renewal (vs 0 "
        "waiters) | extra per waiter per renewal | client→server bytes per waiter per renewal "
        "| server→client bytes per waiter per renewal |\n"
        "|---:|---:|---:|---:|---:|---:|---:|\n");
    double extra_at_8 = -1;
    for (const renewal_window& r : w) {
        const double per = static_cast<double>(r.asked.total()) / r.renewals;
        const double extra = per - alone_per;
        if (r.waiters == 8) {
            extra_at_8 = extra;
        }
        if (r.waiters == 0) {
            std::printf("| 0 | %d | %.2f | | | | |\n", r.renewals, per);
            continue;
        }
        const double n = static_cast<double>(r.waiters) * r.renewals;
        const double up = static_cast<double>(r.bytes.up - alone.bytes.up) / n;
        const double down = static_cast<double>(r.bytes.down - alone.bytes.down) / n;
        std::printf("| %d | %d | %.2f | %.2f | %.2f | %.0f | %.0f |\n", r.waiters, r.renewals, per,
                    extra, extra / r.waiters, up, down);
    }
    std::printf("\nRequests per renewal, by command:\n\n");
    for (const renewal_window& r : w) {
        std::printf("- %d waiters: %s.\n", r.waiters,
                    r.asked.describe(static_cast<double>(r.renewals)).c_str());
    }
    std::printf("\nThe holder killed (no release): the first waiter's exit came");
    for (const renewal_window& r : w) {
        if (r.waiters > 0) {
            std::printf(" %.0f ms (%d waiters)%s", r.after_expiry_ms, r.waiters,
                        &r == &w.back() ? "" : ",");
        }
    }
    std::printf(
        " after the key's expiry: the server's word of the renewal mark's expiry (the last "
        "renew gave it the key's ttl; the server's active expiry cycle, 10 times a second by "
        "default, finds it) or the waiter's own poll, due just after the PTTL it last read "
        "(moved on by each renew heard) said the key could be gone, whichever came first; then "
        "one try, the job and the release. The bytes down per waiter per renewal are the push "
        "naming the renewal mark.\n");
    std::printf("\nTarget: 0 extra requests per renewal with 8 waiters: **%s** (%.2f).\n\n",
                verdict(extra_at_8 < 0.5), extra_at_8);
}

}  // namespace

int main(int argc, char** argv) {
    const std::int64_t started = edgelock_bench::mono_ns();
    bench b;
    b.agent = agent_from_args(argc, argv, program, EDGELOCK_BENCH_AGENT);
    try {
        b.certs = std::make_unique<edgelock_test::tls_certs>();
        b.dir = std::make_unique<edgelock_test::temp_dir>("edgelock-slow-link");
        b.plain = std::make_unique<edgelock_test::redis_server>();
        b.tls = std::make_unique<edgelock_test::redis_server>(b.certs->server_files(),
                                                              std::vector<std::string>{});
    } catch (const std::exception& e) {
        fail(program, std::string("set-up: ") + e.what());
    }
    if (std::system("redis-cli --version >/dev/null 2>&1") != 0) {
        fail(program,
             "redis-cli, the peer, is missing (Debian: redis-tools; make bench installs it)");
    }
    if (!b.plain_proxy.start(edgelock_bench::fault_proxy_program(), b.plain->port(), 1, 600) ||
        !b.tls_proxy.start(edgelock_bench::fault_proxy_program(), b.tls->port(), 2, 600)) {
        fail(program, "the fault proxies did not start");
    }
    b.plain_tally = std::make_unique<server_tally>(*b.plain);
    b.tls_tally = std::make_unique<server_tally>(*b.tls);
    b.resumable = try_resumption(b);

    std::vector<sample> at[kind_count][delay_count];
    double connect_at_max = 0;
    for (int d = 0; d < delay_count; ++d) {
        const std::string delay = "delay both " + std::to_string(delays_ms[d]);
        if (!b.plain_proxy.command(delay) || !b.tls_proxy.command(delay)) {
            fail(program, "the fault proxies refused '" + delay + "'");
        }
        std::fprintf(stderr, "%s: one-way delay %d ms\n", program, delays_ms[d]);
        if (d == delay_count - 1) {
            connect_at_max = connect_ms(b.plain_proxy.port());
            if (!wait_idle(b.plain_proxy, 10.0)) {
                fail(program, "a connection stayed open");
            }
        }
        for (int r = 0; r < runs_per_delay; ++r) {
            for (int k = 0; k < kind_count; ++k) {
                if (k != agent_resumed || b.resumable) {
                    at[k][d].push_back(run_once(b, static_cast<kind>(k)));
                }
            }
        }
    }
    figures f[kind_count];
    for (int k = 0; k < kind_count; ++k) {
        f[k] = summarize_kind(at[k]);
    }

    std::fprintf(stderr, "%s: renewals with waiters\n", program);
    if (!b.plain_proxy.command("pass")) {
        fail(program, "the fault proxy refused 'pass'");
    }
    std::vector<renewal_window> windows;
    for (const int waiters : {0, 8, 64}) {
        windows.push_back(
            measure_renewals(b.agent, b.plain_proxy, *b.plain_tally, renew_lock_name, waiters, 10));
    }
    const double seconds = static_cast<double>(edgelock_bench::mono_ns() - started) / 1e9;

    std::printf("## 10. On a slow link: one job through the agent\n\n");
    std::printf(
        "Redis reached over a cellular or satellite link, played by the fault proxy in front of "
        "a redis-server on loopback: `delay both D` holds every chunk D ms each way, D = %d ms "
        "and %d ms (RTT %d and %d ms). One run is `edgelock run -N URL KEY -- true`, the "
        "`edgelock` agent as built, uncontended; TLS runs go to a second redis-server with "
        "`--tls-port` only (the tests' certificates, verified against their CA). The proxy "
        "delays data, not TCP's handshake (a bare connect through it took %.2f ms at RTT %d "
        "ms), so the connect costs nothing here; on a real link add one RTT per connection. "
        "Round trips after the connect = (wall time at D - wall time with no delay) / 2D: wall "
        "time is from spawning the program to its exit, and the run with no delay, through the "
        "same proxy, holds the process start, the job and TLS computations. Medians of %d runs "
        "at each delay, the kinds of run alternating. Bytes are what the proxy delivered each "
        "way during a run; requests are what clients sent, from INFO commandstats less the "
        "commands scripts ran (MONITOR shows those). The peer is a lock by hand with "
        "`redis-cli`: `SET KEY TOKEN NX PX 30000`, then `EVAL` of a compare-and-delete, as two "
        "invocations, as a shell script does it: the job runs between them, and the release "
        "must not go before the SET has answered; that is two connections. The floor is two "
        "round trips and the fewest bytes SET NX PX and an EVALSHA compare-and-delete take "
        "(the same key, a 32-digit token, the script loaded beforehand). The TLS resumed row "
        "uses the agent's `--tls-session-cache FILE`, filled by a first run.\n\n",
        delays_ms[1], delays_ms[2], 2 * delays_ms[1], 2 * delays_ms[2], connect_at_max,
        2 * delays_ms[2], runs_per_delay);
    print_runs(f, b);

    std::printf(
        "Renewals while agents wait (no delay): one holder, `edgelock run --ttl %dms "
        "--renew-every %dms KEY -- sleep 60`, and 0, 8 or 64 agents `edgelock run --wait 60s KEY "
        "-- true` started while it holds, all through the proxy. Once they are all connected "
        "and three renewals have passed, a window of exactly 10 renewals (seen on the server: "
        "the key's PEXPIRETIME moving forward) counts the requests the server was asked and "
        "the bytes the proxy carried; the holder alone (0 waiters) is taken off to give what "
        "the waiters add. Then the holder is killed with its job (SIGKILL: no release), and "
        "every waiter gets the lock in turn and exits 0.\n\n",
        renewal_ttl_ms, renewal_every_ms);
    print_renewals(windows);
    std::fprintf(stderr, "%s: %.0f s\n", program, seconds);
    return 0;
}
