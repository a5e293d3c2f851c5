// The chaos checker's standalone topology, and what every topology shares
// (topology.hpp).
//
// standalone: N redis-servers, each a master of its own, with a fault proxy
// in front; the workers lock through the proxies, a Redlock when N > 1.
// Faults touch a minority of the nodes at a time (on one node: that node):
// kill -9 with a restart delayed past the ttl (nodes run without persistence,
// so a restarted node has forgotten its locks), SIGSTOP / SIGCONT, proxy
// delay, blackhole, split writes and connection resets. In a link-delay run
// the only fault is a client-to-server delay on one node's link or more,
// lifted once it caught an agent's set-up (chaos.hpp).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>

#include "chaos/topology.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"
#include "tools/url.hpp"

#ifndef EDGELOCK_FAULT_PROXY_PATH
#error "EDGELOCK_FAULT_PROXY_PATH must name the fault proxy"
#endif

namespace edgelock_chaos {

using edgelock_test::sleep_ms;

bool ask(std::uint16_t port, const std::vector<std::string>& args, edgelock_test::reply& out,
         double timeout_s) {
    try {
        edgelock_test::redis_client c(port, timeout_s);
        out = c.command(args);
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

bool ask_ok(std::uint16_t port, const std::vector<std::string>& args, std::string& why,
            double timeout_s) {
    edgelock_test::reply r;
    if (!ask(port, args, r, timeout_s)) {
        why = "no answer";
        return false;
    }
    if (r.type == '-') {
        why = r.text;
        return false;
    }
    return true;
}

std::string info_field(const std::string& info, const std::string& field) {
    const std::string key = field + ":";
    std::string::size_type at = 0;
    while ((at = info.find(key, at)) != std::string::npos) {
        if (at == 0 || info[at - 1] == '\n') {
            const std::string::size_type from = at + key.size();
            const std::string::size_type eol = info.find_first_of("\r\n", from);
            return info.substr(from, eol == std::string::npos ? std::string::npos : eol - from);
        }
        at += key.size();
    }
    return "";
}

bool start_proxy_fault(const std::string& kind, edgelock_test::fault_proxy& px,
                       std::mt19937_64& rng, active_fault& f) {
    std::string cmd = kind == "proxy_blackhole" ? "blackhole" : "split";
    std::int64_t span_ms =
        kind == "proxy_blackhole" ? uniform(rng, 200, 3000) : uniform(rng, 1000, 3000);
    if (kind == "proxy_delay") {
        const std::int64_t d = uniform(rng, 5, 60);
        const std::int64_t j = uniform(rng, 0, 20);
        cmd = "delay both " + std::to_string(d) + " " + std::to_string(j);
        span_ms = uniform(rng, 1000, 4000);
        f.detail = "delay_ms=" + std::to_string(d) + "+" + std::to_string(j);
    }
    const bool ok = px.command(cmd);
    f.start = mono_ns();
    f.end = f.start + ms_to_ns(span_ms);
    return ok;
}

bool start_node_fault(const std::string& kind, proxied_node& n, std::mt19937_64& rng,
                      active_fault& f) {
    if (kind != "node_pause") {
        return start_proxy_fault(kind, *n.proxy, rng, f);
    }
    n.server->pause();
    f.start = mono_ns();
    f.end = f.start + ms_to_ns(uniform(rng, 200, 3000));
    return true;
}

bool start_proxy(proxied_node& n, const topology_options& o, int index) {
    n.proxy = std::make_unique<edgelock_test::fault_proxy>();
    if (!n.proxy->start(EDGELOCK_FAULT_PROXY_PATH, n.server->port(),
                        o.seed + static_cast<unsigned>(index), o.proxy_seconds)) {
        std::fprintf(stderr, "edgelock_chaos: the fault proxy did not start\n");
        return false;
    }
    return true;
}

namespace {

int lock_keys_left(std::uint16_t port, const std::string& who) {
    int left = 0;
    try {
        edgelock_test::redis_client c(port);
        const edgelock_test::reply keys = c.command({"KEYS", "*"});
        for (const edgelock_test::reply& k : keys.elements) {
            const edgelock_test::reply pttl = c.command({"PTTL", k.text});
            if (pttl.type == '-') {
                continue;  // MOVED: not this node's to serve
            }
            bool is_lock = k.text == edgelock_test::key_of(lock_name);
            for (unsigned i = 0; i < 16 && !is_lock; ++i) {
                is_lock = k.text == edgelock_test::permit_key_of(lock_name, i);  // a semaphore's
            }
            const bool is_counter = k.text == edgelock_test::fence_key_of(lock_name);
            if (is_lock || (!is_counter && pttl.integer == -1)) {
                std::fprintf(stderr, "edgelock_chaos: %s still has %s (pttl %lld)\n", who.c_str(),
                             k.text.c_str(), pttl.integer);
                ++left;
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "edgelock_chaos: %s: %s\n", who.c_str(), e.what());
        return -1;
    }
    return left;
}

}  // namespace

int count_locks_left_on(const std::vector<proxied_node>& nodes, run_facts& facts) {
    int errors = 0;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        const int left = lock_keys_left(nodes[n].port(), "node " + std::to_string(n));
        if (left < 0) {
            ++errors;
        } else {
            facts.locks_left += left;
        }
    }
    return errors;
}

void stop_proxies_of(std::vector<proxied_node>& nodes) {
    for (proxied_node& n : nodes) {
        n.proxy->stop();
    }
}

void sleep_until(std::int64_t until) {
    while (mono_ns() < until) {
        sleep_ms(10);
    }
}

bool cluster_peer::is(const char* flag) const {
    std::istringstream s(flags);
    std::string one;
    while (std::getline(s, one, ',')) {
        if (one == flag) {
            return true;
        }
    }
    return false;
}

bool cluster_peer::serves(int slot) const {
    for (const auto& r : slots) {
        if (slot >= r.first && slot <= r.second) {
            return true;
        }
    }
    return false;
}

std::vector<cluster_peer> parse_cluster_nodes(const std::string& text) {
    std::vector<cluster_peer> out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream s(line);
        cluster_peer p;
        std::string addr, ping, pong, epoch, link, slot;
        if (!(s >> p.id >> addr >> p.flags >> p.master_id >> ping >> pong >> epoch >> link)) {
            continue;
        }
        while (s >> slot) {
            if (slot[0] == '[') {
                p.migrating = true;
                continue;
            }
            const std::string::size_type dash = slot.find('-');
            const int lo = std::atoi(slot.c_str());
            p.slots.emplace_back(
                lo, dash == std::string::npos ? lo : std::atoi(slot.c_str() + dash + 1));
        }
        out.push_back(p);
    }
    return out;
}

bool in_path(const std::string& program) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path != nullptr ? path : "");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) {
            return true;
        }
    }
    return false;
}

namespace {

class standalone final : public topology {
public:
    explicit standalone(const topology_options& o) : o_(o), rng_(*o.rng) {}

    bool start() override {
        for (int n = 0; n < o_.nodes; ++n) {
            nodes_.emplace_back();
            nodes_.back().server = std::make_unique<edgelock_test::redis_server>();
            if (!start_proxy(nodes_.back(), o_, n)) {
                return false;
            }
        }
        return true;
    }

    std::string node_list() const override {
        std::vector<std::string> urls;
        for (const proxied_node& n : nodes_) {
            urls.push_back(edgelock_test::redis_url(n.proxy_port()));
        }
        return edgelock_test::node_list(urls);
    }

    const std::vector<std::string>& kinds() const override {
        static const std::vector<std::string> k = {
            "node_kill",   "node_pause",  "proxy_delay",  "proxy_blackhole", "proxy_split",
            "proxy_reset", "proxy_reset", "holder_pause", "holder_pause"};
        static const std::vector<std::string> delays = {"link_delay"};
        return o_.link_delays ? delays : k;
    }

    started inject(const std::string& kind, active_fault& f,
                   const std::vector<active_fault>& active) override {
        const int count = static_cast<int>(nodes_.size());
        if (kind == "link_delay") {
            return start_link_delay(f, active);
        }
        const int max_faulty = count == 1 ? 1 : (count - 1) / 2;
        std::vector<int> healthy;
        int faulty = 0;
        for (int n = 0; n < count; ++n) {
            bool hit = false;
            for (const active_fault& a : active) {
                hit = hit || (a.kind != "holder_pause" && a.target == n);
            }
            if (hit) {
                ++faulty;
            } else {
                healthy.push_back(n);
            }
        }
        if (kind == "proxy_reset") {
            // One-shot: every connection through one node's proxy breaks.
            f.target = static_cast<int>(uniform(rng_, 0, count - 1));
            f.start = mono_ns();
            if (!node(f.target).proxy->command("reset")) {
                ++harness_errors;
            }
            return started::one_shot;
        }
        if (healthy.empty() || faulty >= max_faulty) {
            return started::none;
        }
        f.target = healthy[static_cast<std::size_t>(
            uniform(rng_, 0, static_cast<std::int64_t>(healthy.size()) - 1))];
        proxied_node& n = node(f.target);
        if (kind == "node_kill") {
            // Down for longer than the ttl: a restarted node comes back empty,
            // so it must not come back while a lock it granted could be valid.
            n.server->kill();
            f.start = mono_ns();
            const std::int64_t down_ms = ttl_ms + uniform(rng_, 50, 1000);
            f.end = f.start + ms_to_ns(down_ms);
            f.detail = "restart_after_ms=" + std::to_string(down_ms);
        } else if (!start_node_fault(kind, n, rng_, f)) {
            ++harness_errors;
        }
        return started::active;
    }

    bool advance(active_fault& f) override {
        if (f.kind == "link_delay") {
            return advance_link_delay(f);
        }
        proxied_node& n = node(f.target);
        if (f.kind == "node_kill") {
            const std::uint16_t port = n.port();
            try {
                n.server->restart();
            } catch (const std::exception& e) {
                std::fprintf(stderr, "edgelock_chaos: node %d did not restart: %s\n", f.target,
                             e.what());
                ++harness_errors;
            }
            if (n.port() != port) {
                std::fprintf(stderr, "edgelock_chaos: node %d came back on another port\n",
                             f.target);
                ++harness_errors;
            }
        } else if (f.kind == "node_pause") {
            n.server->resume();
        } else if (!n.proxy->command("pass")) {
            ++harness_errors;
        }
        return true;
    }

    void finish(active_fault& f) override {
        if (f.kind == "node_kill") {
            sleep_until(f.end);  // a killed node still waits out its delay
        }
        if (f.kind == "link_delay") {
            lift_link_delay(f);
            return;
        }
        advance(f);
    }

    void count_locks_left(run_facts& facts) override {
        harness_errors += count_locks_left_on(nodes_, facts);
    }

    void stop_proxies() override { stop_proxies_of(nodes_); }

private:
    proxied_node& node(int n) { return nodes_[static_cast<std::size_t>(n)]; }

    // A number from a node's proxy's status line; -1 when it did not answer.
    long long proxy_field(int n, const char* name) {
        const std::string status = node(n).proxy->ask("status");
        const std::string key = std::string(" ") + name + "=";
        const std::size_t at = status.find(key);
        return at == std::string::npos ? -1 : std::atoll(status.c_str() + at + key.size());
    }

    // The connections the slowed nodes' proxies have accepted.
    long long accepted_on(const active_fault& f) {
        long long sum = 0;
        for (int n = 0; n < static_cast<int>(nodes_.size()); ++n) {
            sum += (f.nodes >> n & 1U) != 0 ? proxy_field(n, "accepted") : 0;
        }
        return sum;
    }

    // Slows what clients send to one or more nodes (a gateway's uplink slows
    // them all), one link delay at a time; advance_link_delay() lifts it.
    started start_link_delay(active_fault& f, const std::vector<active_fault>& active) {
        for (const active_fault& a : active) {
            if (a.kind == "link_delay") {
                return started::none;
            }
        }
        const int count = static_cast<int>(nodes_.size());
        const int slowed = static_cast<int>(uniform(rng_, 1, count));
        std::vector<int> order;
        for (int n = 0; n < count; ++n) {
            order.push_back(n);
        }
        std::shuffle(order.begin(), order.end(), rng_);
        f.nodes = 0;
        for (int i = 0; i < slowed; ++i) {
            f.nodes |= 1U << order[static_cast<std::size_t>(i)];
        }
        f.target = order[0];
        f.accepted = accepted_on(f);
        const std::int64_t ms = uniform(rng_, link_delay_min_ms, link_delay_max_ms);
        for (int n = 0; n < count; ++n) {
            if ((f.nodes >> n & 1U) != 0 &&
                !node(n).proxy->command("delay up " + std::to_string(ms))) {
                ++harness_errors;
            }
        }
        f.start = mono_ns();
        f.end = f.start + ms_to_ns(10);
        f.detail = "delay_up_ms=" + std::to_string(ms) + ",nodes=" + std::to_string(slowed);
        return started::active;
    }

    // Step 0: waiting for a set-up to be caught: a connection accepted since
    // the delay began, with bytes held. Then lifted after up to 150 ms more
    // (a reconnect may be caught too), or after 500 ms if no agent set up.
    bool advance_link_delay(active_fault& f) {
        const std::int64_t now = mono_ns();
        if (f.step == 0 && now - f.start < ms_to_ns(500)) {
            bool held = false;
            for (int n = 0; n < static_cast<int>(nodes_.size()) && !held; ++n) {
                held = (f.nodes >> n & 1U) != 0 && proxy_field(n, "queued_up") > 0;
            }
            if (!held || accepted_on(f) <= f.accepted) {
                f.end = now + ms_to_ns(10);
                return false;
            }
            f.step = 1;
            f.end = now + ms_to_ns(uniform(rng_, 0, 150));
            return false;
        }
        lift_link_delay(f);
        return true;
    }

    void lift_link_delay(active_fault& f) {
        for (int n = 0; n < static_cast<int>(nodes_.size()); ++n) {
            if ((f.nodes >> n & 1U) != 0 && !node(n).proxy->command("delay up 0")) {
                ++harness_errors;
            }
        }
    }

    topology_options o_;
    std::mt19937_64& rng_;
    std::vector<proxied_node> nodes_;
};

}  // namespace

std::unique_ptr<topology> make_standalone(const topology_options& o) {
    return std::make_unique<standalone>(o);
}

}  // namespace edgelock_chaos
