// One job through the agent on a slow link where a topology first says where
// to go: a Sentinel node (a sentinel asked, then the master it names) and a
// Cluster node (its seed serves the lock's slot, or answers MOVED to the
// other master). What the set-up's flight saves there is round trips.
//
// Every server has a fault proxy in front of it, with `delay both D` on all
// of them, so every request of the agent crosses the slow link: the
// sentinel names its master at the master's proxy (it monitors it through
// that proxy), and each Cluster master announces its proxy's port
// (cluster-announce-port), so CLUSTER SLOTS and MOVED name the proxies. As in
// section 10:
//
//   round trips after the connects = (wall at D - wall at no delay) / 2D
//
// (the proxy delays data, not TCP's handshake), medians of 5 runs at each
// delay, the kinds alternating. Bytes are the proxies' counters over a run:
// those of the Cluster's two proxies, and of the sentinel's (the master's
// proxy also carries the sentinel's own PING, INFO and hello messages, so
// it is not counted).
//
//   bench_slow_topology [--agent PATH]   (default: the agent built with it)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "bench/slow_link_tools.hpp"
#include "edgelock/key_slot.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"

#ifndef EDGELOCK_BENCH_AGENT
#error "EDGELOCK_BENCH_AGENT must name the edgelock agent"
#endif

namespace {

using edgelock_bench::fail;
using edgelock_bench::format;
using edgelock_test::fault_proxy;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using namespace edgelock_slow_link;

const char* const program = "bench_slow_topology";
const int delays_ms[] = {0, 25, 150};  // one way; index 0 is the reference
constexpr int delay_count = 3;
constexpr int runs_per_delay = 5;
constexpr double run_timeout_s = 60;

enum kind { sentinel_run, cluster_seed, cluster_moved, kind_count };

const char* const kind_labels[kind_count] = {
    "Sentinel (`redis-sentinel://`): the sentinel asked, then the master",
    "Cluster (`redis-cluster://`), the seed serves the slot",
    "Cluster, the seed answers MOVED to the other master",
};
// The fewest round trips after the connects: the question to the sentinel,
// and the MOVED, come on top of the acquire and the release.
const int floors[kind_count] = {3, 2, 3};
// Connections a run opens to the servers that answer it (on a real link,
// each costs a round trip more).
const int connects[kind_count] = {2, 1, 2};

struct deployment {
    std::unique_ptr<redis_server> master;
    std::unique_ptr<redis_server> sentinel;
    std::unique_ptr<redis_server> cluster[2];
    fault_proxy master_proxy;
    fault_proxy sentinel_proxy;
    fault_proxy cluster_proxy[2];
    std::string seed_name;   // a lock name whose slot the seed serves
    std::string moved_name;  // and one the other master serves
    std::string agent = EDGELOCK_BENCH_AGENT;

    std::vector<fault_proxy*> proxies() {
        return {&master_proxy, &sentinel_proxy, &cluster_proxy[0], &cluster_proxy[1]};
    }
    // The proxies whose every connection is the agent's.
    std::vector<fault_proxy*> counted(kind k) {
        if (k == sentinel_run) {
            return {&sentinel_proxy};
        }
        return {&cluster_proxy[0], &cluster_proxy[1]};
    }
    std::vector<std::string> argv(kind k) const {
        std::string url;
        if (k == sentinel_run) {
            url =
                "redis-sentinel://127.0.0.1:" + std::to_string(sentinel_proxy.port()) + "/mymaster";
        } else {
            url = "redis-cluster://127.0.0.1:" + std::to_string(cluster_proxy[0].port());
        }
        return {agent,
                "run",
                "-q",
                "-N",
                url,
                k == cluster_moved ? moved_name : k == cluster_seed ? seed_name : "slow-sentinel",
                "--",
                "true"};
    }
};

std::string reply_text(redis_client& c, const std::vector<std::string>& args) {
    return c.command(args).text;
}

// Whether an integer `port` is anywhere in r (CLUSTER SLOTS: each range's
// nodes as [host, port, id, ...]).
bool names_port(const edgelock_test::reply& r, std::uint16_t port) {
    if (r.type == ':' && r.integer == port) {
        return true;
    }
    return std::any_of(r.elements.begin(), r.elements.end(),
                       [port](const edgelock_test::reply& e) { return names_port(e, port); });
}

// Two masters, half the slots each, meeting over their bus ports, each
// announcing its proxy's port to clients.
void make_cluster(deployment& d) {
    std::uint16_t bus[2];
    for (int i = 0; i < 2; ++i) {
        bus[i] = edgelock_test::free_port();
        d.cluster[i] = std::make_unique<redis_server>(std::vector<std::string>{
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
            std::to_string(bus[i]), "--cluster-node-timeout", "60000"});
        if (!d.cluster_proxy[i].start(edgelock_bench::fault_proxy_program(), d.cluster[i]->port(),
                                      static_cast<std::uint64_t>(10 + i), 900)) {
            fail(program, "a Cluster proxy did not start");
        }
    }
    redis_client a(d.cluster[0]->port());
    redis_client b(d.cluster[1]->port());
    for (int i = 0; i < 2; ++i) {
        redis_client& c = i == 0 ? a : b;
        if (reply_text(c, {"CONFIG", "SET", "cluster-announce-port",
                           std::to_string(d.cluster_proxy[i].port())}) != "OK") {
            fail(program, "CONFIG SET cluster-announce-port refused");
        }
    }
    if (reply_text(a, {"CLUSTER", "ADDSLOTSRANGE", "0", "8191"}) != "OK" ||
        reply_text(b, {"CLUSTER", "ADDSLOTSRANGE", "8192", "16383"}) != "OK" ||
        reply_text(a, {"CLUSTER", "MEET", "127.0.0.1", std::to_string(d.cluster[1]->port()),
                       std::to_string(bus[1])}) != "OK") {
        fail(program, "the Cluster's slots or its MEET were refused");
    }
    // Ready when each says ok and names the other's proxy in its slot map.
    const double until = edgelock_test::mono_s() + 30;
    for (;;) {
        bool ready = true;
        for (int i = 0; i < 2; ++i) {
            redis_client& c = i == 0 ? a : b;
            ready =
                ready &&
                reply_text(c, {"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos &&
                names_port(c.command({"CLUSTER", "SLOTS"}), d.cluster_proxy[1 - i].port());
        }
        if (ready) {
            break;
        }
        if (edgelock_test::mono_s() > until) {
            fail(program, "the Cluster did not come up in 30 s");
        }
        edgelock_test::sleep_ms(50);
    }
    for (int i = 0; d.seed_name.empty() || d.moved_name.empty(); ++i) {
        const std::string name = "slow-cluster-" + std::to_string(i);
        const std::string key = edgelock_test::key_of(name);
        const bool on_seed = edgelock::key_slot(edgelock::str_view(key.data(), key.size())) < 8192;
        std::string& slot = on_seed ? d.seed_name : d.moved_name;
        if (slot.empty()) {
            slot = name;
        }
    }
}

// A master, and a sentinel that watches it through its proxy (down only
// after a minute without an answer: the delays never make it fail over).
void make_sentinel(deployment& d) {
    d.master = std::make_unique<redis_server>();
    if (!d.master_proxy.start(edgelock_bench::fault_proxy_program(), d.master->port(), 20, 900)) {
        fail(program, "the master's proxy did not start");
    }
    // (A prvalue: redis_server is neither copied nor moved.)
    d.sentinel.reset(new redis_server(redis_server::sentinel(
        {"sentinel monitor mymaster 127.0.0.1 " + std::to_string(d.master_proxy.port()) + " 1",
         "sentinel down-after-milliseconds mymaster 60000"})));
    if (!d.sentinel_proxy.start(edgelock_bench::fault_proxy_program(), d.sentinel->port(), 21,
                                900)) {
        fail(program, "the sentinel's proxy did not start");
    }
}

struct sample {
    double wall_ms = 0;
    long long up = 0;
    long long down = 0;
};

sample run_once(deployment& d, kind k) {
    long long up = 0;
    long long down = 0;
    for (fault_proxy* p : d.counted(k)) {
        const wire w = wire_of(*p);
        up -= w.up;
        down -= w.down;
    }
    const timed_run r = run_timed(d.argv(k), run_timeout_s);
    if (r.status != 0) {
        fail(program,
             format("%s: the agent exited %d: %s", kind_labels[k], r.status, r.err.c_str()));
    }
    for (fault_proxy* p : d.counted(k)) {
        if (!wait_idle(*p, 10.0)) {
            fail(program, "a connection stayed open after its run");
        }
        const wire w = wire_of(*p);
        up += w.up;
        down += w.down;
    }
    sample s;
    s.wall_ms = static_cast<double>(r.wall_ns) / 1e6;
    s.up = up;
    s.down = down;
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    const std::int64_t started = edgelock_bench::mono_ns();
    deployment d;
    d.agent = agent_from_args(argc, argv, program, EDGELOCK_BENCH_AGENT);
    try {
        make_sentinel(d);
        make_cluster(d);
    } catch (const std::exception& e) {
        fail(program, std::string("set-up: ") + e.what());
    }

    std::vector<sample> at[kind_count][delay_count];
    for (int delay = 0; delay < delay_count; ++delay) {
        const std::string cmd = "delay both " + std::to_string(delays_ms[delay]);
        for (fault_proxy* p : d.proxies()) {
            if (!p->command(cmd)) {
                fail(program, "a proxy refused '" + cmd + "'");
            }
        }
        std::fprintf(stderr, "%s: one-way delay %d ms\n", program, delays_ms[delay]);
        for (int r = 0; r < runs_per_delay; ++r) {
            for (int k = 0; k < kind_count; ++k) {
                at[k][delay].push_back(run_once(d, static_cast<kind>(k)));
            }
        }
    }

    std::printf("## 11. On a slow link: Sentinel and Cluster nodes\n\n");
    std::printf(
        "The run of section 10 (`edgelock run -N URL KEY -- true`, uncontended) where the "
        "topology first says where to go. Every server has a fault proxy in front of it, all "
        "with `delay both D`, D = %d and %d ms: a redis-server and one `redis-server "
        "--sentinel` that names it at its proxy's port (and watches it through that proxy); two "
        "cluster-enabled redis-servers, half the slots each, each announcing its proxy's port "
        "(`cluster-announce-port`), so that the slot map and MOVED name the proxies, and the "
        "URL names the first as the seed. Round trips after the connects = (wall time at D - "
        "wall time with no delay) / 2D, medians of %d runs at each delay, the kinds "
        "alternating. The floor: the acquire and the release, and the sentinel's answer or the "
        "MOVED before them. The proxies delay data, not TCP's handshake: on a real link add one "
        "round trip per connection (the connects column). Bytes are what the proxies of the "
        "sentinel or of the Cluster delivered each way (the master's proxy also carries the "
        "sentinel's own monitoring, so a Sentinel run's bytes are its sentinel's only: the "
        "question and the watch).\n\n",
        delays_ms[1], delays_ms[2], runs_per_delay);
    std::printf(
        "| run | round trips after the connects, RTT %d ms | RTT %d ms | floor | connects | wall "
        "at RTT %d ms | bytes up | bytes down |\n|---|---|---|---|---|---|---|---|\n",
        2 * delays_ms[1], 2 * delays_ms[2], 2 * delays_ms[2]);
    double worst_over_floor = 0;
    for (int k = 0; k < kind_count; ++k) {
        double wall[delay_count];
        for (int delay = 0; delay < delay_count; ++delay) {
            std::vector<double> w;
            for (const sample& s : at[k][delay]) {
                w.push_back(s.wall_ms);
            }
            wall[delay] = median(w);
        }
        std::vector<double> up;
        std::vector<double> down;
        for (int delay = 1; delay < delay_count; ++delay) {
            for (const sample& s : at[k][delay]) {
                up.push_back(static_cast<double>(s.up));
                down.push_back(static_cast<double>(s.down));
            }
        }
        const double rt1 = (wall[1] - wall[0]) / (2.0 * delays_ms[1]);
        const double rt2 = (wall[2] - wall[0]) / (2.0 * delays_ms[2]);
        worst_over_floor = std::max(worst_over_floor, rt2 - floors[k]);
        std::printf("| %s | %.2f | %.2f | %d | %d | %.0f ms | %.0f | %.0f |\n", kind_labels[k], rt1,
                    rt2, floors[k], connects[k], wall[2], median(up), median(down));
    }
    std::printf(
        "\nTarget: each run within a tenth of a round trip of its floor at RTT %d ms: **%s** "
        "(at most %.2f above).\n\n",
        2 * delays_ms[2], worst_over_floor <= 0.1 ? "met" : "missed", worst_over_floor);
    const double seconds = static_cast<double>(edgelock_bench::mono_ns() - started) / 1e9;
    std::fprintf(stderr, "%s: %.0f s\n", program, seconds);
    return 0;
}
