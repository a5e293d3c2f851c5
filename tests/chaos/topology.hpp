// What the chaos checker's topologies (topology*.cpp) share: asking a server
// with a deadline, reading INFO fields, and the fault proxy's faults.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "chaos/chaos.hpp"
#include "integration/redis_server.hpp"
#include "tools/proc.hpp"

namespace edgelock_chaos {

// A uniform draw in [lo, hi].
inline std::int64_t uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// The reply to `args` from the server on the loopback port, on a connection
// of its own, within timeout_s; false (out untouched) when none came. An
// error reply is a reply: out.type is '-'.
bool ask(std::uint16_t port, const std::vector<std::string>& args, edgelock_test::reply& out,
         double timeout_s = 1.0);
// The same, true only for a reply that is not an error; `why` says otherwise.
bool ask_ok(std::uint16_t port, const std::vector<std::string>& args, std::string& why,
            double timeout_s = 1.0);

// The value of "field:value" in an INFO text, "" when absent.
std::string info_field(const std::string& info, const std::string& field);

// Starts a proxy fault (proxy_delay, proxy_blackhole, proxy_split) on `px`:
// f.start, f.end and f.detail set, false when the proxy refused.
bool start_proxy_fault(const std::string& kind, edgelock_test::fault_proxy& px,
                       std::mt19937_64& rng, active_fault& f);

// A data node of a replicated topology: the server, and the fault proxy
// every client and replica reaches it through (its announced port).
struct proxied_node {
    std::unique_ptr<edgelock_test::redis_server> server;
    std::unique_ptr<edgelock_test::fault_proxy> proxy;
    std::uint16_t port() const { return server->port(); }
    std::uint16_t proxy_port() const { return proxy->port(); }
};

// Starts node_pause (the server stopped for 0.2 to 3 s) or a proxy fault on
// `n`: f.start and f.end set, false when the proxy refused.
bool start_node_fault(const std::string& kind, proxied_node& n, std::mt19937_64& rng,
                      active_fault& f);

// Starts the proxy in front of a started server; false, said on stderr, when
// it did not start.
bool start_proxy(proxied_node& n, const topology_options& o, int index);

// Adds to facts.locks_left the lock keys (and keys without an expiry but
// the fencing counter) each node still serves, each said on stderr; keys in
// a slot a node does not serve (a cluster replica's MOVED) do not count.
// Returns how many nodes could not be asked.
int count_locks_left_on(const std::vector<proxied_node>& nodes, run_facts& facts);

void stop_proxies_of(std::vector<proxied_node>& nodes);

// One line of CLUSTER NODES.
struct cluster_peer {
    std::string id;
    std::string flags;      // "myself,master", "slave", "master,fail?"...
    std::string master_id;  // a replica's master, "-" for a master
    std::vector<std::pair<int, int>> slots;
    bool migrating = false;  // a slot importing or migrating ("[...]")
    bool is(const char* flag) const;
    bool serves(int slot) const;
};
std::vector<cluster_peer> parse_cluster_nodes(const std::string& text);

// Whether `program` is an executable in a directory of PATH.
bool in_path(const std::string& program);

// Sleeps until mono_ns() reaches `until`.
void sleep_until(std::int64_t until);

}  // namespace edgelock_chaos
