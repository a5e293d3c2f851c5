// The chaos checker's sentinel topology (chaos.hpp, topology.hpp).
//
// One master and two replicas, each behind a fault proxy that every client,
// sentinel and replica reaches it through (each node announces its proxy's
// port), watched by three sentinels (`redis-server --sentinel`, master
// "mymaster", quorum 2, down after 1 s) that the workers ask directly:
// the node list is the one URL redis-sentinel://S1,S2,S3/mymaster.
//
// Faults: kill -9 of the current master (restarted, empty, once the
// sentinels have promoted a replica, and made a replica of the new master),
// SENTINEL FAILOVER, a sentinel killed and restarted, a node paused, and the
// proxy's delay, blackhole, split writes and resets on one node at a time. A
// fault that can move the master (the kill, a failover, a pause or blackhole)
// starts only once the last move has settled: every sentinel running names
// the same master, knows the other two and a replica whose link is up.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "chaos/topology.hpp"
#include "tools/clock.hpp"

namespace edgelock_chaos {

using edgelock_test::redis_server;
using edgelock_test::reply;
using edgelock_test::sleep_ms;

namespace {

constexpr const char* master_name = "mymaster";
constexpr std::int64_t down_after_ms = 1000;
constexpr std::int64_t failover_timeout_ms = 5000;
// How long a move of the master may take before the next fault goes ahead.
constexpr std::int64_t move_wait_ms = 20000;

// The value of `key` in a sentinel's flat key/value reply.
std::string field(const reply& r, const std::string& key) {
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
        if (r.elements[i].text == key) {
            return r.elements[i + 1].text;
        }
    }
    return "";
}

class sentinel_topology final : public topology {
public:
    explicit sentinel_topology(const topology_options& o) : o_(o), rng_(*o.rng) {}

    bool start() override;
    std::string node_list() const override;
    const std::vector<std::string>& kinds() const override {
        static const std::vector<std::string> k = {
            "master_kill",   "master_kill", "sentinel_failover", "sentinel_failover",
            "sentinel_stop", "node_pause",  "proxy_delay",       "proxy_blackhole",
            "proxy_split",   "proxy_reset", "proxy_reset",       "holder_pause",
            "holder_pause"};
        return k;
    }
    started inject(const std::string& kind, active_fault& f,
                   const std::vector<active_fault>& active) override;
    bool advance(active_fault& f) override;
    void finish(active_fault& f) override;
    void count_locks_left(run_facts& facts) override {
        harness_errors += count_locks_left_on(nodes_, facts);
    }
    void stop_proxies() override { stop_proxies_of(nodes_); }

private:
    proxied_node& node(int n) { return nodes_[static_cast<std::size_t>(n)]; }
    int node_at(long long port) const {
        for (std::size_t n = 0; n < nodes_.size(); ++n) {
            if (port == nodes_[n].proxy_port() || port == nodes_[n].port()) {
                return static_cast<int>(n);
            }
        }
        return -1;
    }
    std::vector<std::string> sentinel_config(int master) const {
        return {"sentinel monitor " + std::string(master_name) + " 127.0.0.1 " +
                    std::to_string(nodes_[static_cast<std::size_t>(master)].proxy_port()) + " 2",
                "sentinel down-after-milliseconds " + std::string(master_name) + " " +
                    std::to_string(down_after_ms),
                "sentinel failover-timeout " + std::string(master_name) + " " +
                    std::to_string(failover_timeout_ms)};
    }
    bool announce(int n);
    bool follow(int n, int master);
    int named_master();
    bool settled();
    void restart_master(active_fault& f);
    void restart_sentinel(int s);

    topology_options o_;
    std::mt19937_64& rng_;
    std::vector<proxied_node> nodes_;
    std::vector<std::unique_ptr<redis_server>> sentinels_;
    std::vector<bool> sentinel_down_;
    int moving_from_ = -1;  // a move of the master under way: the node it leaves
    std::int64_t moving_until_ = 0;
};

// Replicas tell their master the proxy's port, so sentinels and the other
// replicas reach them through it too (again after every restart).
bool sentinel_topology::announce(int n) {
    std::string why;
    const std::uint16_t port = node(n).port();
    return ask_ok(port, {"CONFIG", "SET", "replica-announce-ip", "127.0.0.1"}, why) &&
           ask_ok(port,
                  {"CONFIG", "SET", "replica-announce-port", std::to_string(node(n).proxy_port())},
                  why);
}

bool sentinel_topology::follow(int n, int master) {
    std::string why;
    if (ask_ok(node(n).port(),
               {"REPLICAOF", "127.0.0.1", std::to_string(node(master).proxy_port())}, why)) {
        return true;
    }
    std::fprintf(stderr, "edgelock_chaos: node %d: REPLICAOF: %s\n", n, why.c_str());
    return false;
}

bool sentinel_topology::start() {
    for (int n = 0; n < 3; ++n) {
        nodes_.emplace_back();
        nodes_.back().server = std::make_unique<redis_server>();
        if (!start_proxy(nodes_.back(), o_, n) || !announce(n) || (n > 0 && !follow(n, 0))) {
            std::fprintf(stderr, "edgelock_chaos: node %d could not be set up\n", n);
            return false;
        }
    }
    for (int s = 0; s < 3; ++s) {
        // A sentinel is made in place: redis_server neither copies nor moves.
        sentinels_.emplace_back(new redis_server(redis_server::sentinel(sentinel_config(0))));
        sentinel_down_.push_back(false);
    }
    // Sentinels find each other and the replicas within a few seconds.
    const std::int64_t until = mono_ns() + ms_to_ns(30000);
    while (!settled()) {
        if (mono_ns() > until) {
            std::fprintf(stderr, "edgelock_chaos: the sentinels did not settle within 30 s\n");
            return false;
        }
        sleep_ms(100);
    }
    return true;
}

std::string sentinel_topology::node_list() const {
    std::string hosts;
    for (const auto& s : sentinels_) {
        hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s->port());
    }
    return "redis-sentinel://" + hosts + "/" + master_name;
}

// The node the first sentinel that answers names as master, -1 when none does.
int sentinel_topology::named_master() {
    for (std::size_t s = 0; s < sentinels_.size(); ++s) {
        reply r;
        if (!sentinel_down_[s] &&
            ask(sentinels_[s]->port(), {"SENTINEL", "get-master-addr-by-name", master_name}, r) &&
            r.elements.size() == 2) {
            return node_at(std::atoll(r.elements[1].text.c_str()));
        }
    }
    return -1;
}

bool sentinel_topology::settled() {
    int master = -1;
    for (std::size_t s = 0; s < sentinels_.size(); ++s) {
        if (sentinel_down_[s]) {
            continue;
        }
        reply m;
        reply replicas;
        const std::uint16_t port = sentinels_[s]->port();
        if (!ask(port, {"SENTINEL", "master", master_name}, m) ||
            !ask(port, {"SENTINEL", "replicas", master_name}, replicas)) {
            return false;
        }
        const int named = node_at(std::atoll(field(m, "port").c_str()));
        if (field(m, "flags") != "master" || named < 0 || (master >= 0 && named != master) ||
            std::atoi(field(m, "num-other-sentinels").c_str()) < 2) {
            return false;
        }
        master = named;
        bool linked = false;
        for (const reply& one : replicas.elements) {
            linked = linked ||
                     (field(one, "flags") == "slave" && field(one, "master-link-status") == "ok");
        }
        if (!linked) {
            return false;
        }
    }
    if (master < 0) {
        return false;
    }
    if (moving_from_ >= 0) {
        if (master == moving_from_ && mono_ns() < moving_until_) {
            return false;  // the move asked for has not happened yet
        }
        moving_from_ = -1;
    }
    reply role;
    return ask(node(master).port(), {"ROLE"}, role) && !role.elements.empty() &&
           role.elements[0].text == "master";
}

topology::started sentinel_topology::inject(const std::string& kind, active_fault& f,
                                            const std::vector<active_fault>& active) {
    bool node_fault = false;
    bool sentinel_fault = false;
    for (const active_fault& a : active) {
        sentinel_fault = sentinel_fault || a.kind == "sentinel_stop";
        node_fault = node_fault || (a.kind != "sentinel_stop" && a.kind != "holder_pause");
    }
    if (kind == "proxy_reset") {
        f.target = static_cast<int>(uniform(rng_, 0, 2));
        f.start = mono_ns();
        if (!node(f.target).proxy->command("reset")) {
            ++harness_errors;
        }
        return started::one_shot;
    }
    if (kind == "sentinel_stop") {
        if (sentinel_fault) {
            return started::none;
        }
        f.target = static_cast<int>(uniform(rng_, 0, 2));
        sentinels_[static_cast<std::size_t>(f.target)]->kill();
        sentinel_down_[static_cast<std::size_t>(f.target)] = true;
        f.start = mono_ns();
        f.end = f.start + ms_to_ns(uniform(rng_, 1000, 5000));
        return started::active;
    }
    // One node at a time; a fault that can move the master only once settled.
    const bool moves = kind == "master_kill" || kind == "sentinel_failover" ||
                       kind == "node_pause" || kind == "proxy_blackhole";
    if (node_fault || (moves && !settled())) {
        return started::none;
    }
    if (kind == "sentinel_failover") {
        const int master = named_master();
        std::vector<std::size_t> up;
        for (std::size_t s = 0; s < sentinels_.size(); ++s) {
            if (!sentinel_down_[s]) {
                up.push_back(s);
            }
        }
        const std::size_t s = up[static_cast<std::size_t>(
            uniform(rng_, 0, static_cast<std::int64_t>(up.size()) - 1))];
        std::string why;
        if (master < 0 ||
            !ask_ok(sentinels_[s]->port(), {"SENTINEL", "FAILOVER", master_name}, why)) {
            return started::none;  // NOGOODSLAVE, INPROG: not now
        }
        f.target = master;
        f.start = mono_ns();
        f.detail = "via_sentinel=" + std::to_string(s);
        moving_from_ = master;
        moving_until_ = f.start + ms_to_ns(move_wait_ms);
        return started::one_shot;
    }
    if (kind == "master_kill") {
        f.target = named_master();
        if (f.target < 0) {
            return started::none;
        }
        node(f.target).server->kill();
        f.start = mono_ns();
        // Back no sooner than the ttl, and (advance) once a replica took over.
        f.end = f.start + ms_to_ns(ttl_ms + uniform(rng_, 50, 1000));
        moving_from_ = f.target;
        moving_until_ = f.start + ms_to_ns(move_wait_ms);
        return started::active;
    }
    f.target = static_cast<int>(uniform(rng_, 0, 2));
    if (!start_node_fault(kind, node(f.target), rng_, f)) {
        ++harness_errors;
    }
    return started::active;
}

// Starts a killed master again, empty, and makes it a replica of the master
// the sentinels name (if they promoted another node).
void sentinel_topology::restart_master(active_fault& f) {
    proxied_node& n = node(f.target);
    const std::uint16_t port = n.port();
    try {
        n.server->restart();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "edgelock_chaos: node %d did not restart: %s\n", f.target, e.what());
        ++harness_errors;
        return;
    }
    if (n.port() != port) {
        std::fprintf(stderr, "edgelock_chaos: node %d came back on another port\n", f.target);
        ++harness_errors;
    }
    const int master = named_master();
    const bool replica = master >= 0 && master != f.target;
    if (!announce(f.target) || (replica && !follow(f.target, master))) {
        ++harness_errors;
    }
    f.detail = "down_ms=" + std::to_string((mono_ns() - f.start) / 1000000) +
               (replica ? ",back_as_replica_of=" + std::to_string(master) : ",back_as=master");
}

// A restarted sentinel reads the configuration it was first given: when the
// master has moved since, it is told where the master is now.
void sentinel_topology::restart_sentinel(int s) {
    redis_server& sentinel = *sentinels_[static_cast<std::size_t>(s)];
    try {
        sentinel.restart();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "edgelock_chaos: sentinel %d did not restart: %s\n", s, e.what());
        ++harness_errors;
        return;
    }
    const int master = named_master();  // the others' word
    sentinel_down_[static_cast<std::size_t>(s)] = false;
    if (master <= 0) {
        return;  // still node 0, as configured (or nobody knows: it learns)
    }
    std::string why;
    const bool ok = ask_ok(sentinel.port(), {"SENTINEL", "REMOVE", master_name}, why) &&
                    ask_ok(sentinel.port(),
                           {"SENTINEL", "MONITOR", master_name, "127.0.0.1",
                            std::to_string(node(master).proxy_port()), "2"},
                           why) &&
                    ask_ok(sentinel.port(),
                           {"SENTINEL", "SET", master_name, "down-after-milliseconds",
                            std::to_string(down_after_ms), "failover-timeout",
                            std::to_string(failover_timeout_ms)},
                           why);
    if (!ok) {
        std::fprintf(stderr, "edgelock_chaos: sentinel %d: %s\n", s, why.c_str());
        ++harness_errors;
    }
}

bool sentinel_topology::advance(active_fault& f) {
    if (f.kind == "master_kill") {
        const std::int64_t now = mono_ns();
        const int master = named_master();
        if ((master < 0 || master == f.target) && now < f.start + ms_to_ns(move_wait_ms)) {
            f.end = now + ms_to_ns(100);  // no replica promoted yet
            return false;
        }
        restart_master(f);
    } else if (f.kind == "sentinel_stop") {
        restart_sentinel(f.target);
    } else if (f.kind == "node_pause") {
        node(f.target).server->resume();
    } else if (!node(f.target).proxy->command("pass")) {
        ++harness_errors;
    }
    return true;
}

void sentinel_topology::finish(active_fault& f) {
    if (f.kind == "master_kill") {
        sleep_until(f.end);  // down at least the ttl, failed over or not
        restart_master(f);
        return;
    }
    advance(f);
}

}  // namespace

std::unique_ptr<topology> make_sentinel(const topology_options& o) {
    return std::make_unique<sentinel_topology>(o);
}

}  // namespace edgelock_chaos
