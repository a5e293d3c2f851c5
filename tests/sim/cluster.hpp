// Scenario tests of the lock on the real driver: simulated nodes on a
// sim::net, clients (client<lock_max_nodes>) each with locks of their own,
// one event loop over all of them, and every event recorded with its
// virtual time. Each client is connected and set up when it is added, so a
// scenario starts from ready connections.
//
// Locks are attached with the watchdog off: a scenario renews when it says
// so. Reconnects back off 5..20 ms unless the options say otherwise, so a
// node restarted is in use again soon. Every command a node receives is
// logged, for counting requests.
//
//   sim::cluster c(3, seed);
//   const int a = c.add_client();
//   edgelock::client_lock& l = c.add_lock(a, "jobs", options);
//   REQUIRE(c.acquire(l) == edgelock::client_errc::ok);
//   REQUIRE(c.run_for(edgelock::duration::millis(100)));
//   CHECK(c.count(edgelock::lock_event_kind::acquired) == 1);
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"

namespace sim {

struct recorded_event {
    int client;
    int lock;
    edgelock::instant at;
    edgelock::lock_event ev;
};

struct received_command {
    int node;
    edgelock::instant at;
    std::vector<std::string> argv;
};

inline edgelock::client_options scenario_client_options() {
    edgelock::client_options o;
    o.reconnect_min = edgelock::duration::millis(5);
    o.reconnect_max = edgelock::duration::millis(20);
    return o;
}

class cluster {
public:
    cluster(int nodes, std::uint64_t seed,
            const edgelock::client_options& options = scenario_client_options())
        : net_(seed), loop_(net_), options_(options) {
        net_.add_nodes(nodes);
        for (int i = 0; i < nodes; ++i) {
            urls_.push_back(net_.url(i));
        }
        for (const std::string& u : urls_) {
            views_.emplace_back(u.data(), u.size());
        }
        net_.on_command = [this](int node, std::uint64_t, const std::vector<std::string>& argv) {
            commands.push_back(received_command{node, net_.now(), argv});
        };
    }
    ~cluster() {
        // The locks go before their clients, the clients before the net.
        locks_.clear();
        clients_.clear();
    }
    cluster(const cluster&) = delete;
    cluster& operator=(const cluster&) = delete;

    // A client for every node, set up before this returns.
    int add_client() {
        auto c = std::make_unique<client_type>();
        REQUIRE(c->configure(views_.data(), views_.size(), options_) == edgelock::client_errc::ok);
        c->connect(net_.now() + edgelock::duration::seconds(1));
        loop_.add(*c);
        clients_.push_back(std::move(c));
        return static_cast<int>(clients_.size()) - 1;
    }

    edgelock::client_lock& add_lock(int client, const std::string& name,
                                    const edgelock::lock_options& options, bool watchdog = false) {
        auto e = std::make_unique<lock_entry>();
        e->owner = this;
        e->client = client;
        e->index = static_cast<int>(locks_.size());
        e->name = name;
        edgelock::watchdog_options w;
        w.enabled = watchdog;
        REQUIRE(e->lock.attach(*clients_.at(static_cast<std::size_t>(client)),
                               edgelock::str_view(e->name.data(), e->name.size()), options,
                               w) == edgelock::client_errc::ok);
        e->lock.set_callback(&cluster::record, e.get());
        locks_.push_back(std::move(e));
        return locks_.back()->lock;
    }

    edgelock::client_base& client(int i) { return *clients_.at(static_cast<std::size_t>(i)); }
    net& network() { return net_; }
    event_loop& loop() { return loop_; }
    redis_node& node(int i) { return net_.node(i); }
    node_faults& faults(int i) { return net_.faults(i); }
    void crash(int i) { net_.crash(i); }
    void restart(int i, bool keep_data) { net_.restart(i, keep_data); }
    void pause(int i, edgelock::duration d) { net_.pause(i, d); }
    edgelock::instant now() const { return net_.now(); }

    bool run_until(edgelock::instant t) { return loop_.run_until(t) && net_.failure().empty(); }
    bool run_for(edgelock::duration d) { return run_until(now() + d); }

    // Starts an acquisition with the retry policy of the lock's options.
    static edgelock::client_errc acquire(edgelock::client_lock& l) {
        const edgelock::lock_options& o = l.machine().options();
        return l.start_acquire(o.max_tries, o.wait);
    }

    // --- what happened ----------------------------------------------------
    std::vector<recorded_event> events;
    std::vector<received_command> commands;

    std::size_t count(edgelock::lock_event_kind k, int client = -1) const {
        std::size_t n = 0;
        for (const auto& e : events) {
            if (e.ev.kind == k && (client < 0 || e.client == client)) {
                ++n;
            }
        }
        return n;
    }
    const recorded_event* last(int client = -1) const {
        for (auto it = events.rbegin(); it != events.rend(); ++it) {
            if (client < 0 || it->client == client) {
                return &*it;
            }
        }
        return nullptr;
    }
    // Requests running script `s` that reached `node` (EVALSHA or EVAL).
    std::size_t count_script(int node, const edgelock::lock_script& s) const {
        const std::string sha = to_std(s.sha1);
        const std::string text = to_std(s.text);
        std::size_t n = 0;
        for (const auto& c : commands) {
            if (c.node == node && c.argv.size() >= 2 && (c.argv[1] == sha || c.argv[1] == text)) {
                ++n;
            }
        }
        return n;
    }

    // --- the keyspace, as other clients see it -----------------------------
    // The value at the lock's key on a node, "" when there is none.
    std::string value_at(int node, const std::string& name) {
        keyspace::entry* e = net_.node(node).find(edgelock_test::key_of(name), now().us);
        if (e == nullptr) {
            return "";
        }
        return e->hash ? std::string("<hash>") : e->str;
    }
    // Sets the lock's key on a node as another holder would.
    void hold_as(int node, const std::string& name, const std::string& value,
                 edgelock::duration ttl) {
        keyspace::entry e;
        e.str = value;
        e.expire_at = now().us + ttl.us;
        net_.node(node).data[edgelock_test::key_of(name)] = e;
    }

private:
    using client_type = edgelock::client<edgelock::lock_max_nodes>;
    struct lock_entry {
        cluster* owner = nullptr;
        int client = 0;
        int index = 0;
        std::string name;
        edgelock::client_lock lock;
    };

    static void record(void* ctx, edgelock::client_lock&, const edgelock::lock_event& ev) {
        auto* e = static_cast<lock_entry*>(ctx);
        e->owner->events.push_back(recorded_event{e->client, e->index, e->owner->now(), ev});
    }

    net net_;
    event_loop loop_;
    edgelock::client_options options_;
    std::vector<std::string> urls_;
    std::vector<edgelock::str_view> views_;
    std::vector<std::unique_ptr<client_type>> clients_;
    std::vector<std::unique_ptr<lock_entry>> locks_;
};

inline edgelock::lock_options fast_options() {
    edgelock::lock_options o;
    o.ttl = edgelock::duration::millis(1000);
    o.node_timeout = edgelock::duration::millis(50);
    o.retry_min = edgelock::duration::millis(5);
    o.retry_max = edgelock::duration::millis(20);
    return o;
}

}  // namespace sim
