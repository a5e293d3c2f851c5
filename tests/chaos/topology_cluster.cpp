// The chaos checker's cluster topology (chaos.hpp, topology.hpp).
//
// Three masters and three replicas (`redis-cli --cluster create
// --cluster-replicas 1`), each node in a directory of its own (nodes.conf is
// per node), node timeout 1.5 s, each behind a fault proxy whose port it
// announces: clients and replicas reach it through the proxy, the cluster bus
// (on a port of its own) does not. The workers lock through the one URL
// redis-cluster://P1,P2,P3, the three first masters as seed nodes.
//
// Faults: kill -9 of a master (its replica takes over; restarted later, it
// comes back as a replica), CLUSTER FAILOVER on a replica (now and then with
// FORCE, which does not wait for the replica to catch up), a migration by
// hand of the lock's slot to another master (SETSLOT IMPORTING / MIGRATING,
// a pause, MIGRATE of its keys, a pause, SETSLOT NODE), a node paused, and
// the proxy's delay, blackhole, split writes and resets. The first three and
// the pause come one at a time, each once the cluster has settled: every
// node says cluster_state:ok, none is failing, all agree who serves the
// lock's slot, and every master has a replica whose link is up. Half of them
// aim at the master of the lock's slot.
#include <fcntl.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "chaos/topology.hpp"
#include "edgelock/key_slot.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"

namespace edgelock_chaos {

using edgelock_test::redis_server;
using edgelock_test::reply;
using edgelock_test::sleep_ms;

namespace {

constexpr int node_count = 6;
constexpr std::int64_t move_wait_ms = 20000;  // a failover's longest wait

class cluster_topology final : public topology {
public:
    explicit cluster_topology(const topology_options& o)
        : o_(o),
          rng_(*o.rng),
          slot_(edgelock::key_slot(edgelock::str_view(lock_key_.data(), lock_key_.size()))) {}

    bool start() override;
    std::string node_list() const override { return seeds_; }
    const std::vector<std::string>& kinds() const override {
        static const std::vector<std::string> k = {
            "master_kill",     "master_kill",    "cluster_failover", "cluster_failover",
            "slot_migration",  "slot_migration", "node_pause",       "proxy_delay",
            "proxy_blackhole", "proxy_split",    "proxy_reset",      "holder_pause",
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
    int index_of(const std::string& id) const {
        for (std::size_t n = 0; n < ids_.size(); ++n) {
            if (ids_[n] == id) {
                return static_cast<int>(n);
            }
        }
        return -1;
    }
    bool view(int n, std::vector<cluster_peer>& out) {
        reply r;
        if (!ask(node(n).port(), {"CLUSTER", "NODES"}, r) || r.type == '-') {
            return false;
        }
        out = parse_cluster_nodes(r.text);
        return true;
    }
    bool is_master(int n) {
        std::vector<cluster_peer> v;
        if (!view(n, v)) {
            return false;
        }
        for (const cluster_peer& p : v) {
            if (p.is("myself")) {
                return p.is("master");
            }
        }
        return false;
    }
    bool announce(int n) {
        std::string why;
        return ask_ok(
            node(n).port(),
            {"CONFIG", "SET", "cluster-announce-port", std::to_string(node(n).proxy_port())}, why);
    }
    bool create();
    bool settled();
    int pick_master();
    bool setslot(int n, const std::string& how, const std::string& id);
    bool migrate_keys(int src, int dst);
    void finish_migration(active_fault& f);
    void restart_node(active_fault& f);

    topology_options o_;
    std::mt19937_64& rng_;
    const std::string lock_key_ = edgelock_test::key_of(lock_name);
    const int slot_;
    std::vector<proxied_node> nodes_;
    std::vector<std::string> ids_;
    std::string seeds_;
    // From the last settled(): masters serving slots, their replicas, and
    // the master of the lock's slot.
    std::vector<int> masters_;
    std::vector<int> replica_of_;  // by node: its replica (masters only), -1
    int owner_ = -1;
    int promoting_ = -1;  // a replica asked to take over (failover, kill)
    std::int64_t promoting_until_ = 0;
    int migrating_to_ = -1;
};

bool cluster_topology::start() {
    if (!in_path("redis-cli")) {
        std::fprintf(stderr,
                     "edgelock_chaos: the cluster topology needs redis-cli (make deps installs "
                     "it)\n");
        return false;
    }
    for (int n = 0; n < node_count; ++n) {
        const std::string bus = std::to_string(edgelock_test::free_port());
        nodes_.emplace_back();
        nodes_.back().server = std::make_unique<redis_server>(std::vector<std::string>{
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", "1500", "--cluster-port", bus,
            "--cluster-require-full-coverage", "no", "--cluster-replica-validity-factor", "0",
            "--cluster-allow-replica-migration", "no", "--cluster-announce-ip", "127.0.0.1"});
        reply id;
        if (!start_proxy(nodes_.back(), o_, n) || !announce(n) ||
            !ask(node(n).port(), {"CLUSTER", "MYID"}, id) || id.type == '-') {
            std::fprintf(stderr, "edgelock_chaos: cluster node %d could not be set up\n", n);
            return false;
        }
        ids_.push_back(id.text);
    }
    if (!create()) {
        return false;
    }
    const std::int64_t until = mono_ns() + ms_to_ns(60000);
    while (!settled()) {
        if (mono_ns() > until) {
            std::fprintf(stderr, "edgelock_chaos: the cluster did not settle within 60 s\n");
            return false;
        }
        sleep_ms(100);
    }
    for (int m : masters_) {
        seeds_ += (seeds_.empty() ? "redis-cluster://" : ",") + std::string("127.0.0.1:") +
                  std::to_string(node(m).proxy_port());
    }
    return true;
}

// redis-cli --cluster create, its output in the run's directory, 60 s at most.
bool cluster_topology::create() {
    std::vector<std::string> args = {"redis-cli", "--cluster", "create"};
    for (int n = 0; n < node_count; ++n) {
        args.push_back("127.0.0.1:" + std::to_string(node(n).port()));
    }
    args.insert(args.end(), {"--cluster-replicas", "1", "--cluster-yes"});
    const std::string log = o_.dir + "/cluster-create.log";
    edgelock_test::spawn_options so;
    so.stdin_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    so.stdout_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    so.stderr_fd = so.stdout_fd;
    const pid_t pid = edgelock_test::spawn(args, so);
    for (int fd : {so.stdin_fd, so.stdout_fd}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    int status = -1;
    const std::int64_t until = mono_ns() + ms_to_ns(60000);
    while (pid > 0 && !edgelock_test::reap(pid, &status)) {
        if (mono_ns() > until) {
            edgelock_test::kill_and_reap(pid);
            status = -1;
            break;
        }
        sleep_ms(50);
    }
    if (status != 0) {
        std::fprintf(stderr, "edgelock_chaos: redis-cli --cluster create failed (see %s)\n",
                     log.c_str());
        return false;
    }
    return true;
}

bool cluster_topology::settled() {
    if (promoting_ >= 0) {
        if (mono_ns() < promoting_until_ && !is_master(promoting_)) {
            return false;
        }
        promoting_ = -1;
    }
    std::vector<cluster_peer> first;
    int owner = -1;
    for (int n = 0; n < node_count; ++n) {
        reply info;
        std::vector<cluster_peer> v;
        if (!ask(node(n).port(), {"CLUSTER", "INFO"}, info) ||
            info_field(info.text, "cluster_state") != "ok" || !view(n, v)) {
            return false;
        }
        int serves = -1;
        for (const cluster_peer& p : v) {
            if (p.is("fail") || p.is("fail?") || p.is("handshake") || p.is("noaddr") ||
                p.migrating || index_of(p.id) < 0) {
                return false;
            }
            if (p.is("master") && p.serves(slot_)) {
                serves = index_of(p.id);
            }
        }
        if (serves < 0 || (owner >= 0 && serves != owner)) {
            return false;
        }
        owner = serves;
        if (n == 0) {
            first = v;
        }
    }
    std::vector<int> masters;
    std::vector<int> replica_of(node_count, -1);
    for (const cluster_peer& m : first) {
        if (!m.is("master") || m.slots.empty()) {
            continue;
        }
        masters.push_back(index_of(m.id));
        for (const cluster_peer& r : first) {
            reply info;
            const int ri = index_of(r.id);
            if (r.master_id == m.id && ask(node(ri).port(), {"INFO", "replication"}, info) &&
                info_field(info.text, "master_link_status") == "up") {
                replica_of[static_cast<std::size_t>(masters.back())] = ri;
            }
        }
        if (replica_of[static_cast<std::size_t>(masters.back())] < 0) {
            return false;
        }
    }
    masters_ = masters;
    replica_of_ = replica_of;
    owner_ = owner;
    return !masters_.empty();
}

// The master of the lock's slot half of the time, else any master.
int cluster_topology::pick_master() {
    if (uniform(rng_, 0, 1) == 0) {
        return owner_;
    }
    return masters_[static_cast<std::size_t>(
        uniform(rng_, 0, static_cast<std::int64_t>(masters_.size()) - 1))];
}

topology::started cluster_topology::inject(const std::string& kind, active_fault& f,
                                           const std::vector<active_fault>& active) {
    bool proxy_fault = false;
    bool node_fault = false;
    for (const active_fault& a : active) {
        proxy_fault = proxy_fault || a.kind.compare(0, 6, "proxy_") == 0;
        node_fault = node_fault || a.kind == "master_kill" || a.kind == "node_pause" ||
                     a.kind == "slot_migration";
    }
    if (kind == "proxy_reset") {
        f.target = static_cast<int>(uniform(rng_, 0, node_count - 1));
        f.start = mono_ns();
        if (!node(f.target).proxy->command("reset")) {
            ++harness_errors;
        }
        return started::one_shot;
    }
    if (kind.compare(0, 6, "proxy_") == 0) {
        if (proxy_fault) {
            return started::none;
        }
        f.target = static_cast<int>(uniform(rng_, 0, node_count - 1));
        if (!start_proxy_fault(kind, *node(f.target).proxy, rng_, f)) {
            ++harness_errors;
        }
        return started::active;
    }
    if (node_fault || !settled()) {
        return started::none;
    }
    if (kind == "node_pause") {
        f.target = static_cast<int>(uniform(rng_, 0, node_count - 1));
        start_node_fault(kind, node(f.target), rng_, f);
        return started::active;
    }
    if (kind == "slot_migration") {
        std::vector<int> others;
        for (int m : masters_) {
            if (m != owner_) {
                others.push_back(m);
            }
        }
        const int dst = others[static_cast<std::size_t>(
            uniform(rng_, 0, static_cast<std::int64_t>(others.size()) - 1))];
        f.target = owner_;
        if (!setslot(dst, "IMPORTING", ids_[static_cast<std::size_t>(owner_)]) ||
            !setslot(owner_, "MIGRATING", ids_[static_cast<std::size_t>(dst)])) {
            ++harness_errors;
            setslot(dst, "STABLE", "");
            setslot(owner_, "STABLE", "");
            return started::none;
        }
        migrating_to_ = dst;
        f.start = mono_ns();
        f.end = f.start + ms_to_ns(uniform(rng_, 100, 1500));
        f.step = 1;
        f.detail = "slot=" + std::to_string(slot_) + ",to=" + std::to_string(dst);
        return started::active;
    }
    const int master = pick_master();
    const int replica = replica_of_[static_cast<std::size_t>(master)];
    f.target = master;
    if (kind == "cluster_failover") {
        const bool force = uniform(rng_, 0, 2) == 0;
        std::vector<std::string> cmd = {"CLUSTER", "FAILOVER"};
        if (force) {
            cmd.push_back("FORCE");
        }
        std::string why;
        if (!ask_ok(node(replica).port(), cmd, why)) {
            return started::none;
        }
        f.start = mono_ns();
        f.detail = "replica=" + std::to_string(replica) + (force ? ",force" : "");
        promoting_ = replica;
        promoting_until_ = f.start + ms_to_ns(move_wait_ms);
        return started::one_shot;
    }
    node(master).server->kill();  // master_kill
    f.start = mono_ns();
    // Back no sooner than the ttl, and (advance) once its replica took over.
    f.end = f.start + ms_to_ns(ttl_ms + uniform(rng_, 50, 1000));
    f.other = replica;
    return started::active;
}

bool cluster_topology::setslot(int n, const std::string& how, const std::string& id) {
    std::vector<std::string> cmd = {"CLUSTER", "SETSLOT", std::to_string(slot_), how};
    if (!id.empty()) {
        cmd.push_back(id);
    }
    std::string why;
    if (ask_ok(node(n).port(), cmd, why)) {
        return true;
    }
    if (how != "STABLE") {
        std::fprintf(stderr, "edgelock_chaos: node %d: CLUSTER SETSLOT %s: %s\n", n, how.c_str(),
                     why.c_str());
    }
    return false;
}

// Moves every key of the lock's slot from src to dst, a batch per MIGRATE.
bool cluster_topology::migrate_keys(int src, int dst) {
    for (int round = 0; round < 20; ++round) {
        reply keys;
        if (!ask(node(src).port(), {"CLUSTER", "GETKEYSINSLOT", std::to_string(slot_), "100"},
                 keys) ||
            keys.type == '-') {
            break;
        }
        if (keys.elements.empty()) {
            return true;
        }
        std::vector<std::string> cmd = {
            "MIGRATE", "127.0.0.1", std::to_string(node(dst).port()), "", "0", "5000", "KEYS"};
        for (const reply& k : keys.elements) {
            cmd.push_back(k.text);
        }
        std::string why;
        if (!ask_ok(node(src).port(), cmd, why, 6.0)) {
            std::fprintf(stderr, "edgelock_chaos: node %d: MIGRATE: %s\n", src, why.c_str());
            return false;
        }
    }
    std::fprintf(stderr, "edgelock_chaos: node %d: the slot's keys did not all move\n", src);
    return false;
}

// The slot is dst's: first on dst, then on src (which must hold none of its
// keys any more), then on the other masters.
void cluster_topology::finish_migration(active_fault& f) {
    const int src = f.target;
    const int dst = migrating_to_;
    const std::string dst_id = ids_[static_cast<std::size_t>(dst)];
    bool ok = setslot(dst, "NODE", dst_id);
    if (ok && !setslot(src, "NODE", dst_id)) {
        ok = migrate_keys(src, dst) && setslot(src, "NODE", dst_id);
    }
    for (int m : masters_) {
        if (m != src && m != dst) {
            setslot(m, "NODE", dst_id);
        }
    }
    if (!ok) {
        ++harness_errors;
    }
    migrating_to_ = -1;
}

// Starts a killed master again: from its nodes.conf it rejoins, learns that
// its replica has its slots and becomes that one's replica.
void cluster_topology::restart_node(active_fault& f) {
    proxied_node& n = node(f.target);
    const std::uint16_t port = n.port();
    const bool took_over = f.other >= 0 && is_master(f.other);
    try {
        n.server->restart();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "edgelock_chaos: node %d did not restart: %s\n", f.target, e.what());
        ++harness_errors;
        return;
    }
    if (n.port() != port || !announce(f.target)) {
        std::fprintf(stderr, "edgelock_chaos: node %d came back unlike it was\n", f.target);
        ++harness_errors;
    }
    f.detail =
        "down_ms=" + std::to_string((mono_ns() - f.start) / 1000000) +
        (took_over ? ",replica_" + std::to_string(f.other) + "_took_over" : ",not_failed_over");
}

bool cluster_topology::advance(active_fault& f) {
    const std::int64_t now = mono_ns();
    if (f.kind == "master_kill") {
        if (now < f.start + ms_to_ns(move_wait_ms) && !is_master(f.other)) {
            f.end = now + ms_to_ns(100);  // its replica has not taken over yet
            return false;
        }
        restart_node(f);
    } else if (f.kind == "slot_migration" && f.step == 1) {
        if (!migrate_keys(f.target, migrating_to_)) {
            ++harness_errors;
        }
        f.step = 2;
        f.end = now + ms_to_ns(uniform(rng_, 0, 500));
        return false;
    } else if (f.kind == "slot_migration") {
        finish_migration(f);
    } else if (f.kind == "node_pause") {
        node(f.target).server->resume();
    } else if (!node(f.target).proxy->command("pass")) {
        ++harness_errors;
    }
    return true;
}

void cluster_topology::finish(active_fault& f) {
    if (f.kind == "master_kill") {
        sleep_until(f.end);  // down at least the ttl, failed over or not
        restart_node(f);
        return;
    }
    while (!advance(f)) {
    }
}

}  // namespace

std::unique_ptr<topology> make_cluster(const topology_options& o) {
    return std::make_unique<cluster_topology>(o);
}

}  // namespace edgelock_chaos
