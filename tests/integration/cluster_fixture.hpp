// Test fixture: a Redis Cluster on loopback, three masters with one replica
// each, made by `redis-cli --cluster create` and ready when every node says
// cluster_state:ok, knows all six nodes, agrees on who serves which slot and
// every replica's link is up. Servers are always stopped (redis_server).
// What a test does to it (a slot moved, a failover, a kill) is in
// cluster_ops.hpp, whose cluster_deployment is this with those.
//
//   edgelock_test::running_cluster d;
//   const std::string url = d.url();   // redis-cluster://127.0.0.1:P1,...,P3
//   redis_server& m = d.master_of(slot);
//   redis_server* on = d.where_is(key_of("jobs"));
//
// What a test sees is asked of the servers themselves (CLUSTER NODES, ROLE,
// EXISTS), never cached: a migration, a failover or a kill changes it. The
// waits take an `idle` step, run between two looks: by default a short
// sleep; a test that holds a lock passes one that drives its client, so the
// watchdog renews while the cluster changes.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "edgelock/key_slot.hpp"
#include "integration/redis_server.hpp"
#include "integration/sentinel_fixture.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"

namespace edgelock_test {

// One line of CLUSTER NODES: `id ip:port@cport[,hostname] flags master
// ping-sent pong-recv config-epoch link-state slot...`.
struct cluster_node_line {
    std::string id;
    std::uint16_t port = 0;
    std::string flags;      // "myself,master", "slave", "master,fail", ...
    std::string master_id;  // a replica's master; "-" for a master
    std::string link;       // "connected" or "disconnected"
    // The slots it serves; the "[slot->-id]" and "[slot-<-id]" entries of a
    // migration under way are left out.
    std::vector<std::pair<int, int>> slots;

    bool has_flag(const std::string& flag) const {
        std::size_t from = 0;
        for (;;) {
            const std::size_t comma = flags.find(',', from);
            if (flags.compare(from, comma == std::string::npos ? std::string::npos : comma - from,
                              flag) == 0) {
                return true;
            }
            if (comma == std::string::npos) {
                return false;
            }
            from = comma + 1;
        }
    }
    bool serves(int slot) const {
        for (const auto& r : slots) {
            if (slot >= r.first && slot <= r.second) {
                return true;
            }
        }
        return false;
    }
};

inline std::vector<cluster_node_line> parse_cluster_nodes(const std::string& text) {
    std::vector<cluster_node_line> out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::vector<std::string> w;
        std::string one;
        while (words >> one) {
            w.push_back(one);
        }
        if (w.size() < 8) {
            continue;
        }
        cluster_node_line n;
        n.id = w[0];
        const std::size_t colon = w[1].rfind(':', w[1].find('@'));
        if (colon != std::string::npos) {
            n.port = static_cast<std::uint16_t>(std::atoi(w[1].c_str() + colon + 1));
        }
        n.flags = w[2];
        n.master_id = w[3];
        n.link = w[7];
        for (std::size_t i = 8; i < w.size(); ++i) {
            if (w[i].empty() || w[i][0] == '[') {
                continue;
            }
            const std::size_t dash = w[i].find('-');
            const int first = std::atoi(w[i].c_str());
            const int last = dash == std::string::npos ? first : std::atoi(w[i].c_str() + dash + 1);
            n.slots.emplace_back(first, last);
        }
        out.push_back(n);
    }
    return out;
}

// A field of CLUSTER INFO ("cluster_state" -> "ok"); "" when absent.
inline std::string info_field(const std::string& text, const std::string& field) {
    const std::size_t at = text.find(field + ":");
    if (at == std::string::npos) {
        return "";
    }
    const std::size_t from = at + field.size() + 1;
    return text.substr(from, text.find_first_of("\r\n", from) - from);
}

// The slot of a lock's key (tools/lock_key.hpp), as the library hashes it.
inline int slot_of_key(const std::string& key) {
    return edgelock::key_slot(edgelock::str_view(key.data(), key.size()));
}

inline int slot_of_lock(const std::string& name) {
    return slot_of_key(key_of(name));
}

// A lock name, prefix-N, whose key hashes to `slot` (the first one found).
inline std::string name_in_slot(int slot, const std::string& prefix) {
    for (long i = 0;; ++i) {
        const std::string name = prefix + "-" + std::to_string(i);
        if (slot_of_lock(name) == slot) {
            return name;
        }
    }
}

struct running_cluster {
    using idle_fn = std::function<void()>;

    // Six servers; the first three given to redis-cli become the masters.
    std::vector<std::unique_ptr<redis_server>> servers;

    running_cluster() {
        for (int i = 0; i < 6; ++i) {
            servers.push_back(start_node());
        }
        create();
        seeds_ = masters();
        REQUIRE(seeds_.size() == 3);
    }

    // Seed URL: the masters the cluster was made with.
    std::string url() const {
        std::string hosts;
        for (const redis_server* s : seeds_) {
            hosts +=
                (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s->port());
        }
        return "redis-cluster://" + hosts;
    }

    static bool alive(const redis_server& s) { return s.pid() > 0; }

    // The server's own CLUSTER NODES, parsed; empty when it cannot answer.
    static std::vector<cluster_node_line> nodes_seen_by(redis_server& s) {
        if (!alive(s)) {
            return {};
        }
        try {
            redis_client c(s.port(), 2.0);
            return parse_cluster_nodes(c.command({"CLUSTER", "NODES"}).text);
        } catch (const std::exception&) {
            return {};
        }
    }

    static cluster_node_line myself(redis_server& s) {
        for (const cluster_node_line& n : nodes_seen_by(s)) {
            if (n.has_flag("myself")) {
                return n;
            }
        }
        return {};
    }

    static std::string cluster_info(redis_server& s, const std::string& field) {
        if (!alive(s)) {
            return "";
        }
        try {
            redis_client c(s.port(), 2.0);
            return info_field(c.command({"CLUSTER", "INFO"}).text, field);
        } catch (const std::exception&) {
            return "";
        }
    }

    std::string id_of(redis_server& s) const {
        const std::string id = myself(s).id;
        REQUIRE(!id.empty());
        return id;
    }

    redis_server* by_port(std::uint16_t port) const {
        for (const auto& s : servers) {
            if (s->port() == port) {
                return s.get();
            }
        }
        return nullptr;
    }

    // The live servers that say they are masters, in the order of servers.
    std::vector<redis_server*> masters() const {
        std::vector<redis_server*> out;
        for (const auto& s : servers) {
            if (myself(*s).has_flag("master")) {
                out.push_back(s.get());
            }
        }
        return out;
    }

    // The live server that says it serves `slot`, as a master; waits (5 s at
    // most) while none or several do, as during a failover.
    redis_server& master_of(int slot) const {
        const double until = mono_s() + 5;
        for (;;) {
            std::vector<redis_server*> found;
            for (const auto& s : servers) {
                const cluster_node_line me = myself(*s);
                if (me.has_flag("master") && me.serves(slot)) {
                    found.push_back(s.get());
                }
            }
            if (found.size() == 1) {
                return *found[0];
            }
            INFO("slot " << slot << " claimed by " << found.size() << " masters");
            REQUIRE(mono_s() < until);
            sleep_ms(20);
        }
    }

    // A live replica of `master`, by the replicas' own word.
    redis_server& replica_of(redis_server& master) const {
        const std::string id = id_of(master);
        for (const auto& s : servers) {
            const cluster_node_line me = myself(*s);
            if (me.has_flag("slave") && me.master_id == id) {
                return *s;
            }
        }
        FAIL("no replica of the master on port " << master.port());
        throw std::logic_error("unreachable");
    }

    // A lock name, prefix-N, whose key's slot `master` serves now.
    std::string name_on(redis_server& master, const std::string& prefix) const {
        std::vector<std::pair<int, int>> slots = myself(master).slots;
        REQUIRE(!slots.empty());
        for (long i = 0;; ++i) {
            const std::string name = prefix + "-" + std::to_string(i);
            const int slot = slot_of_lock(name);
            for (const auto& r : slots) {
                if (slot >= r.first && slot <= r.second) {
                    return name;
                }
            }
        }
    }

    // The live masters on which `key` exists now, each asked by EXISTS
    // behind ASKING (so a slot being imported is looked into too) and
    // following no redirection.
    std::vector<redis_server*> holders(const std::string& key) const {
        std::vector<redis_server*> out;
        for (redis_server* m : masters()) {
            try {
                if (asking(*m, {"EXISTS", key}).integer == 1) {
                    out.push_back(m);
                }
            } catch (const std::exception&) {
            }
        }
        return out;
    }

    // The master on which `key` exists now; nullptr when on none. A key on
    // two masters at once fails the test.
    redis_server* where_is(const std::string& key) const {
        const std::vector<redis_server*> h = holders(key);
        INFO("key " << key << " exists on " << h.size() << " masters");
        REQUIRE(h.size() <= 1);
        return h.empty() ? nullptr : h[0];
    }

    // One command on that server behind ASKING (a slot being imported
    // answers too), following no redirection.
    static reply asking(redis_server& s, const std::vector<std::string>& args) {
        redis_client c(s.port(), 2.0);
        c.command({"ASKING"});
        return c.command(args);
    }

    // GET there (a plain lock's value is its token in hex).
    static std::string value_on(redis_server& s, const std::string& key) {
        return asking(s, {"GET", key}).text;
    }

    // Every live node says cluster_state:ok, sees every live node connected
    // and not failing, and all of them agree on who serves each slot.
    bool settled() const {
        std::vector<std::pair<std::pair<int, int>, std::string>> first;
        bool have_first = false;
        std::vector<std::string> live_ids;
        for (const auto& s : servers) {
            if (alive(*s)) {
                const std::string id = myself(*s).id;
                if (id.empty()) {
                    return false;
                }
                live_ids.push_back(id);
            }
        }
        for (const auto& s : servers) {
            if (!alive(*s)) {
                continue;
            }
            if (cluster_info(*s, "cluster_state") != "ok") {
                return false;
            }
            const std::vector<cluster_node_line> seen = nodes_seen_by(*s);
            if (seen.size() != servers.size()) {
                return false;
            }
            std::vector<std::pair<std::pair<int, int>, std::string>> map;
            for (const cluster_node_line& n : seen) {
                const bool live =
                    std::find(live_ids.begin(), live_ids.end(), n.id) != live_ids.end();
                if (live &&
                    (n.has_flag("fail") || n.has_flag("fail?") || n.has_flag("handshake") ||
                     n.has_flag("noaddr") || (!n.has_flag("myself") && n.link != "connected"))) {
                    return false;
                }
                for (const auto& r : n.slots) {
                    map.emplace_back(r, n.id);
                }
            }
            std::sort(map.begin(), map.end());
            if (!have_first) {
                first = map;
                have_first = true;
            } else if (map != first) {
                return false;
            }
        }
        return have_first;
    }

    // Every live node's CLUSTER NODES gives `slot` to the node `id`.
    bool everyone_says(int slot, const std::string& id) const {
        for (const auto& s : servers) {
            if (!alive(*s)) {
                continue;
            }
            bool found = false;
            for (const cluster_node_line& n : nodes_seen_by(*s)) {
                if (n.serves(slot)) {
                    if (n.id != id) {
                        return false;
                    }
                    found = true;
                }
            }
            if (!found) {
                return false;
            }
        }
        return true;
    }

    // Polls `done` until it holds, running `idle` between looks (a 20 ms
    // sleep when empty); fails the test after timeout_s.
    template <class F>
    static void wait_until(F done, double timeout_s, const idle_fn& idle = {}) {
        const double until = mono_s() + timeout_s;
        while (!done()) {
            INFO("the cluster did not settle within " << timeout_s << " s");
            REQUIRE(mono_s() < until);
            if (idle) {
                idle();
            } else {
                sleep_ms(20);
            }
        }
    }

private:
    static std::unique_ptr<redis_server> start_node() {
        // The bus port is given (the default, port + 10000, may not exist):
        // one nothing listens on, another if it was taken meanwhile. A
        // replica's first sync starts at once (not after the 5 s a diskless
        // sync waits for more replicas by default); any replica may be
        // promoted, however long ago it last heard from its master.
        for (int attempt = 0;; ++attempt) {
            try {
                return std::unique_ptr<redis_server>(new redis_server(
                    {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-node-timeout", "1000", "--cluster-port",
                     std::to_string(free_port()), "--cluster-replica-validity-factor", "0",
                     "--repl-diskless-sync-delay", "0"}));
            } catch (const std::exception&) {
                if (attempt == 2) {
                    throw;
                }
            }
        }
    }

    void create() {
        temp_dir dir("edgelock-cluster");
        std::vector<std::string> args = {"redis-cli", "--cluster", "create"};
        for (const auto& s : servers) {
            args.push_back("127.0.0.1:" + std::to_string(s->port()));
        }
        const std::vector<std::string> tail = {"--cluster-replicas", "1", "--cluster-yes"};
        args.insert(args.end(), tail.begin(), tail.end());
        const std::string log = dir / "create.log";
        const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        REQUIRE(out >= 0);
        spawn_options o;
        o.stdout_fd = out;
        o.stderr_fd = out;
        const pid_t pid = spawn(args, o);
        ::close(out);
        REQUIRE(pid > 0);
        const double until = mono_s() + 20;
        int status = 0;
        while (!reap(pid, &status)) {
            if (mono_s() >= until) {
                kill_and_reap(pid);
                FAIL("redis-cli --cluster create took over 20 s: " << read_file(log));
            }
            sleep_ms(20);
        }
        INFO("redis-cli --cluster create: " << read_file(log));
        REQUIRE(exit_status(status) == 0);
        // Every node ok, knowing all six, agreeing on the slots; every
        // replica linked to its master (a failover needs it).
        wait_until(
            [&] {
                if (!settled()) {
                    return false;
                }
                for (const auto& s : servers) {
                    if (cluster_info(*s, "cluster_known_nodes") != "6") {
                        return false;
                    }
                    if (role(*s) == "slave") {
                        redis_client c(s->port());
                        if (c.command({"INFO", "replication"}).text.find("master_link_status:up") ==
                            std::string::npos) {
                            return false;
                        }
                    }
                }
                return true;
            },
            20);
    }

    std::vector<redis_server*> seeds_;
};

}  // namespace edgelock_test
