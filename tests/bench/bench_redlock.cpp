// Measurement 5: Redlock on 5 nodes, the latency of one acquire + release cycle.
//
// Five redis-servers on loopback, reached two ways: directly, and each through
// its own fault proxy delaying every chunk 2 ms each way (a 4 ms round trip,
// plus the proxy's scheduling). For each link the program measures:
//
//   - one round trip: PING on one blocking socket to one node, through the
//     same path, written by hand (send the request, recv until "+PONG\r\n");
//     the floor of a cycle is two of them (acquire, then release);
//   - a 5-node fan-out round trip: PING written to all five sockets, then
//     poll() until the replies are in, timing the third (a quorum) and the
//     fifth (every node); it shows what a parallel round can cost when it
//     waits for a quorum or for every node;
//   - edgelock: a client<5>, connected before timing, one plain lock
//     (ttl 10 s, node timeout 50 ms, no watchdog), N cycles of try_acquire()
//     + release(), each timed; every acquire must say acquired and every
//     release released on all five nodes;
//   - the peer: a node-by-node Redlock on hiredis (five blocking contexts):
//     SET key token NX PX 10000 on node 1, then 2, ... 5, then EVALSHA of a
//     compare-and-delete script on each node in turn (the script loaded at
//     set-up); the token is 16 bytes of getrandom(), hex, fresh per cycle.
//     That is ten round trips per cycle.
//
// Each link uses its own keys; at the end every node must hold no key.
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/redis_server.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"
#include "tools/url.hpp"

using edgelock_bench::fail;
using edgelock_bench::format;
using edgelock_bench::mono_ns;
using edgelock_bench::summarize;
using edgelock_bench::summary;

namespace {

constexpr const char* program = "bench_redlock";
constexpr std::size_t node_count = 5;
constexpr std::uint8_t quorum = 3;
constexpr int ttl_ms = 10000;
constexpr int warmup_cycles = 20;
constexpr double target_ratio = 1.3;

const char ping_request[] = "*1\r\n$4\r\nPING\r\n";
const char pong_reply[] = "+PONG\r\n";
constexpr std::size_t pong_size = sizeof pong_reply - 1;

// Compare-and-delete: the peer's release.
const char release_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

// One link: a way to reach the five nodes, and what was measured over it.
struct route {
    const char* label = "";
    std::vector<std::uint16_t> ports;  // one per node: the server's, or its proxy's
    int cycles = 0;                    // timed cycles per implementation
    int pings = 0;                     // timed round trips
    const char* lock_name = "";        // edgelock's lock (key "{name}")
    const char* peer_key = "";         // the peer's key

    summary rtt;
    summary fan_quorum;
    summary fan_all;
    summary edgelock;
    summary edgelock_acquire;  // the acquire part of a cycle
    summary edgelock_release;
    summary peer;
};

// A blocking TCP connection to 127.0.0.1:port with Nagle off, or the program fails.
int connect_or_fail(std::uint16_t port) {
    const int fd = edgelock_test::connect_loopback(port);
    if (fd < 0) {
        fail(program, format("connect to port %u: %s", port, std::strerror(errno)));
    }
    return fd;
}

void send_ping(int fd) {
    const std::size_t size = sizeof ping_request - 1;
    if (::send(fd, ping_request, size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) {
        fail(program, format("send PING: %s", std::strerror(errno)));
    }
}

// Reads what is there of a PONG; true once all of it has come.
bool read_pong(int fd, std::size_t& have) {
    char buf[16];
    const ssize_t n = ::recv(fd, buf, pong_size - have, 0);
    if (n <= 0) {
        fail(program, n == 0 ? std::string("PING: connection closed")
                             : format("recv PONG: %s", std::strerror(errno)));
    }
    if (std::memcmp(buf, pong_reply + have, static_cast<std::size_t>(n)) != 0) {
        fail(program, "PING: unexpected reply");
    }
    have += static_cast<std::size_t>(n);
    return have == pong_size;
}

// One node's round trip: `count` PINGs, one at a time, on one connection.
summary measure_rtt(std::uint16_t port, int count) {
    const int fd = connect_or_fail(port);
    std::vector<std::int64_t> samples;
    samples.reserve(static_cast<std::size_t>(count));
    for (int i = -warmup_cycles; i < count; ++i) {
        const std::int64_t t0 = mono_ns();
        send_ping(fd);
        std::size_t have = 0;
        while (!read_pong(fd, have)) {
        }
        if (i >= 0) {
            samples.push_back(mono_ns() - t0);
        }
    }
    ::close(fd);
    return summarize(samples);
}

// A parallel round of PINGs to every node: time to the quorum-th and to the
// last reply.
void measure_fan_out(route& l) {
    int fds[node_count];
    for (std::size_t n = 0; n < node_count; ++n) {
        fds[n] = connect_or_fail(l.ports[n]);
    }
    std::vector<std::int64_t> at_quorum;
    std::vector<std::int64_t> at_all;
    for (int i = -warmup_cycles; i < l.pings; ++i) {
        const std::int64_t t0 = mono_ns();
        pollfd pfd[node_count];
        std::size_t have[node_count] = {};
        for (std::size_t n = 0; n < node_count; ++n) {
            send_ping(fds[n]);
            pfd[n] = pollfd{fds[n], POLLIN, 0};
        }
        std::size_t done = 0;
        std::int64_t t_quorum = 0;
        while (done < node_count) {
            if (::poll(pfd, node_count, 5000) <= 0) {
                fail(program, "fan-out PING: no reply within 5 s");
            }
            for (std::size_t n = 0; n < node_count; ++n) {
                if (pfd[n].revents == 0) {
                    continue;
                }
                if (read_pong(fds[n], have[n])) {
                    pfd[n].fd = -1;
                    if (++done == quorum) {
                        t_quorum = mono_ns();
                    }
                }
            }
        }
        if (i >= 0) {
            at_quorum.push_back(t_quorum - t0);
            at_all.push_back(mono_ns() - t0);
        }
    }
    for (int fd : fds) {
        ::close(fd);
    }
    l.fan_quorum = summarize(at_quorum);
    l.fan_all = summarize(at_all);
}

std::string describe_result(const edgelock::op_result& r) {
    std::string s = std::string("error=") + edgelock::describe(r.error);
    if (r.error == edgelock::client_errc::ok) {
        s += std::string(" event=") + edgelock::describe(r.event.kind);
        if (r.event.reason != edgelock::lock_failure::none) {
            s += std::string(" reason=") + edgelock::describe(r.event.reason);
        }
    }
    return s;
}

void measure_edgelock(route& l) {
    std::vector<std::string> urls;
    std::vector<edgelock::str_view> views;
    for (std::uint16_t p : l.ports) {
        urls.push_back(edgelock_test::redis_url(p));
    }
    for (const std::string& u : urls) {
        views.emplace_back(u.data(), u.size());
    }
    edgelock::client<node_count> c;
    if (c.configure(views.data(), views.size(), edgelock::client_options{}) !=
        edgelock::client_errc::ok) {
        fail(program, "client configure failed");
    }
    const std::uint8_t ready = c.connect(edgelock::port::now() + edgelock::duration::seconds(5));
    if (ready != node_count) {
        fail(program, format("%s: only %u of %zu nodes connected", l.label, ready, node_count));
    }
    edgelock::lock_options options;
    options.mode = edgelock::lock_mode::plain;
    options.ttl = edgelock::duration::millis(ttl_ms);
    options.node_timeout = edgelock::duration::millis(50);
    edgelock::watchdog_options watchdog;
    watchdog.enabled = false;
    edgelock::client_lock lk;
    if (lk.attach(c, l.lock_name, options, watchdog) != edgelock::client_errc::ok) {
        fail(program, "lock attach failed");
    }
    std::vector<std::int64_t> cycles;
    std::vector<std::int64_t> acquires;
    std::vector<std::int64_t> releases;
    for (int i = -warmup_cycles; i < l.cycles; ++i) {
        const std::int64_t t0 = mono_ns();
        const edgelock::op_result a = lk.try_acquire();
        const std::int64_t t_acquired = mono_ns();
        if (a.error != edgelock::client_errc::ok ||
            a.event.kind != edgelock::lock_event_kind::acquired) {
            fail(program,
                 format("%s: edgelock acquire %d: %s", l.label, i, describe_result(a).c_str()));
        }
        const edgelock::op_result r = lk.release();
        const std::int64_t t1 = mono_ns();
        // A warm-up release may end at its quorum while the other nodes
        // still answer the NOSCRIPT of a fresh server's script cache; timed
        // cycles must be released on every node.
        const std::size_t released_on = i < 0 ? node_count / 2 + 1 : node_count;
        if (r.error != edgelock::client_errc::ok ||
            r.event.kind != edgelock::lock_event_kind::released || r.event.nodes < released_on) {
            fail(program, format("%s: edgelock release %d: %s, nodes=%u", l.label, i,
                                 describe_result(r).c_str(), r.event.nodes));
        }
        if (i >= 0) {
            cycles.push_back(t1 - t0);
            acquires.push_back(t_acquired - t0);
            releases.push_back(t1 - t_acquired);
        }
    }
    lk.detach();
    l.edgelock = summarize(cycles);
    l.edgelock_acquire = summarize(acquires);
    l.edgelock_release = summarize(releases);
}

struct redis_context_deleter {
    void operator()(redisContext* c) const { redisFree(c); }
};
struct redis_reply_deleter {
    void operator()(redisReply* r) const { freeReplyObject(r); }
};
using context_ptr = std::unique_ptr<redisContext, redis_context_deleter>;
using reply_ptr = std::unique_ptr<redisReply, redis_reply_deleter>;

reply_ptr command(redisContext* c, const char* what, std::vector<const char*> args) {
    std::vector<std::size_t> lens;
    for (const char* a : args) {
        lens.push_back(std::strlen(a));
    }
    void* r = redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data());
    if (r == nullptr) {
        fail(program, format("hiredis %s: %s", what, c->errstr));
    }
    return reply_ptr(static_cast<redisReply*>(r));
}

summary measure_peer(const route& l) {
    std::vector<context_ptr> ctx;
    const timeval timeout{5, 0};
    for (std::uint16_t p : l.ports) {
        context_ptr c(redisConnectWithTimeout("127.0.0.1", p, timeout));
        if (!c || c->err != 0) {
            fail(program,
                 format("hiredis connect to port %u: %s", p, c ? c->errstr : "out of memory"));
        }
        redisSetTimeout(c.get(), timeout);
        ctx.push_back(std::move(c));
    }
    std::string sha;
    for (context_ptr& c : ctx) {
        const reply_ptr r = command(c.get(), "SCRIPT LOAD", {"SCRIPT", "LOAD", release_script});
        if (r->type != REDIS_REPLY_STRING) {
            fail(program, "hiredis SCRIPT LOAD: unexpected reply");
        }
        sha.assign(r->str, r->len);
    }
    const std::string ttl = std::to_string(ttl_ms);
    std::vector<std::int64_t> samples;
    samples.reserve(static_cast<std::size_t>(l.cycles));
    char token[33];
    for (int i = -warmup_cycles; i < l.cycles; ++i) {
        const std::int64_t t0 = mono_ns();
        edgelock_bench::peer_token(program, token);
        for (context_ptr& c : ctx) {
            const reply_ptr r =
                command(c.get(), "SET", {"SET", l.peer_key, token, "NX", "PX", ttl.c_str()});
            if (r->type != REDIS_REPLY_STATUS || std::strcmp(r->str, "OK") != 0) {
                fail(program, format("%s: peer acquire %d refused", l.label, i));
            }
        }
        for (context_ptr& c : ctx) {
            const reply_ptr r =
                command(c.get(), "EVALSHA", {"EVALSHA", sha.c_str(), "1", l.peer_key, token});
            if (r->type != REDIS_REPLY_INTEGER || r->integer != 1) {
                fail(program, format("%s: peer release %d did not delete", l.label, i));
            }
        }
        if (i >= 0) {
            samples.push_back(mono_ns() - t0);
        }
    }
    return summarize(samples);
}

void measure(route& l) {
    std::fprintf(stderr, "%s: %s: round trip\n", program, l.label);
    l.rtt = measure_rtt(l.ports[0], l.pings);
    std::fprintf(stderr, "%s: %s: 5-node fan-out round trip\n", program, l.label);
    measure_fan_out(l);
    std::fprintf(stderr, "%s: %s: edgelock, %d cycles\n", program, l.label, l.cycles);
    measure_edgelock(l);
    std::fprintf(stderr, "%s: %s: hiredis node by node, %d cycles\n", program, l.label, l.cycles);
    l.peer = measure_peer(l);
    std::fprintf(stderr,
                 "%s: %s: rtt p50 %.3f ms, fan-out 3rd/5th p50 %.3f/%.3f ms, edgelock p50 %.3f "
                 "p99 %.3f ms, peer p50 %.3f p99 %.3f ms\n",
                 program, l.label, l.rtt.p50_ms, l.fan_quorum.p50_ms, l.fan_all.p50_ms,
                 l.edgelock.p50_ms, l.edgelock.p99_ms, l.peer.p50_ms, l.peer.p99_ms);
}

void run() {
    const std::int64_t start = mono_ns();
    std::vector<std::unique_ptr<edgelock_test::redis_server>> servers;
    for (std::size_t n = 0; n < node_count; ++n) {
        servers.push_back(std::make_unique<edgelock_test::redis_server>());
    }
    std::vector<std::unique_ptr<edgelock_test::fault_proxy>> proxies;
    for (std::size_t n = 0; n < node_count; ++n) {
        auto p = std::make_unique<edgelock_test::fault_proxy>();
        if (!p->start(edgelock_bench::fault_proxy_program(), servers[n]->port(), 7 + n, 120)) {
            fail(program, "a fault proxy did not start");
        }
        if (!p->command("delay both 2")) {
            fail(program, "fault proxy refused \"delay both 2\"");
        }
        proxies.push_back(std::move(p));
    }

    route links[2];
    links[0].label = "loopback";
    links[0].cycles = links[0].pings = 2000;
    links[0].lock_name = "bench-redlock-loopback";
    links[0].peer_key = "bench-redlock-peer-loopback";
    links[1].label = "delay 2 ms each way";
    links[1].cycles = links[1].pings = 300;
    links[1].lock_name = "bench-redlock-delay";
    links[1].peer_key = "bench-redlock-peer-delay";
    for (std::size_t n = 0; n < node_count; ++n) {
        links[0].ports.push_back(servers[n]->port());
        links[1].ports.push_back(proxies[n]->port());
    }
    for (route& l : links) {
        measure(l);
    }

    for (std::size_t n = 0; n < node_count; ++n) {
        edgelock_test::redis_client admin(servers[n]->port());
        const long long keys = admin.command({"DBSIZE"}).integer;
        if (keys != 0) {
            fail(program, format("node %zu holds %lld keys after the run", n + 1, keys));
        }
    }

    std::printf("## 5. Redlock on 5 nodes: cycle latency\n\n");
    std::printf(
        "Five redis-servers, reached over loopback directly and each through its own fault "
        "proxy delaying every chunk 2 ms each way. A cycle is acquire + release of one plain "
        "lock (ttl %d s, node timeout 50 ms, quorum 3 of 5), timed one by one: %d cycles on "
        "loopback, %d through the delay, after %d not counted. RTT: a hand-written blocking "
        "PING on one connection to one node over the same path; the floor is 2 RTT (p50). "
        "Fan-out: a PING written to all five nodes at once, timed to the 3rd reply (a quorum) "
        "and the 5th (all); their sum is the floor of a parallel cycle whose acquire waits for "
        "a quorum and whose release waits for every node. edgelock: `client<5>`, "
        "`try_acquire()` + `release()`, connected before timing. Peer: a node-by-node Redlock "
        "on hiredis %d.%d.%d, `SET key token NX PX %d` on nodes 1 to 5 in turn, then `EVALSHA` "
        "of a compare-and-delete script on each in turn (10 round trips), a fresh 16-byte "
        "random token per cycle. Every acquire and release succeeded on all five nodes; no key was "
        "left.\n\n",
        ttl_ms / 1000, links[0].cycles, links[1].cycles, warmup_cycles, HIREDIS_MAJOR,
        HIREDIS_MINOR, HIREDIS_PATCH, ttl_ms);
    std::printf("| | %s | %s |\n|---|---|---|\n", links[0].label, links[1].label);
    auto row = [&](const char* what, auto cell) {
        std::printf("| %s | %s | %s |\n", what, cell(links[0]).c_str(), cell(links[1]).c_str());
    };
    auto floor_ms = [](const route& l) { return 2 * l.rtt.p50_ms; };
    auto fan_floor_ms = [](const route& l) { return l.fan_quorum.p50_ms + l.fan_all.p50_ms; };
    row("RTT, one node, p50 / p99",
        [](const route& l) { return format("%.3f / %.3f ms", l.rtt.p50_ms, l.rtt.p99_ms); });
    row("floor: 2 RTT (p50)", [&](const route& l) { return format("%.3f ms", floor_ms(l)); });
    row("fan-out to 5 nodes, 3rd / 5th reply, p50", [](const route& l) {
        return format("%.3f / %.3f ms", l.fan_quorum.p50_ms, l.fan_all.p50_ms);
    });
    row("**edgelock cycle, p50 / p99**", [](const route& l) {
        return format("**%.3f / %.3f ms**", l.edgelock.p50_ms, l.edgelock.p99_ms);
    });
    row("edgelock acquire / release, p50", [](const route& l) {
        return format("%.3f / %.3f ms", l.edgelock_acquire.p50_ms, l.edgelock_release.p50_ms);
    });
    row("edgelock / floor (p50)",
        [&](const route& l) { return format("%.2fx", l.edgelock.p50_ms / floor_ms(l)); });
    row("edgelock / fan-out floor, 3rd + 5th (p50)",
        [&](const route& l) { return format("%.2fx", l.edgelock.p50_ms / fan_floor_ms(l)); });
    row("hiredis node by node cycle, p50 / p99",
        [](const route& l) { return format("%.3f / %.3f ms", l.peer.p50_ms, l.peer.p99_ms); });
    row("hiredis / edgelock (p50)",
        [](const route& l) { return format("%.2fx", l.peer.p50_ms / l.edgelock.p50_ms); });
    row("target: edgelock p50 <= 1.3x floor", [&](const route& l) {
        return std::string(l.edgelock.p50_ms / floor_ms(l) <= target_ratio ? "met" : "missed");
    });
    std::printf("\n");
    for (const route& l : links) {
        const double ratio = l.edgelock.p50_ms / floor_ms(l);
        std::printf("Target (%s): p50 within %.1fx of 2 round trips: **%s** (%.2fx).\n", l.label,
                    target_ratio, ratio <= target_ratio ? "met" : "missed", ratio);
    }
    std::fprintf(stderr, "%s: done in %.1f s\n", program,
                 static_cast<double>(mono_ns() - start) / 1e9);
}

}  // namespace

int main() {
    try {
        run();
    } catch (const std::exception& e) {
        fail(program, e.what());
    }
    return 0;
}
