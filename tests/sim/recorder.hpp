// Small helpers shared by the lock machine's simulation tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/cluster.hpp"

namespace sim {

struct recorded_event {
    int client;
    int lock;
    edgelock::instant at;
    edgelock::lock_event ev;
};

// Records every event of a cluster, with the virtual time it was seen.
struct recorder {
    std::vector<recorded_event> events;

    explicit recorder(cluster& c) : c_(c) {
        c.on_event = [this](int client, int lock, const edgelock::lock_event& ev) {
            events.push_back(recorded_event{client, lock, c_.now(), ev});
        };
    }
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

private:
    cluster& c_;
};

inline std::string token_hex(const edgelock::lock& l) {
    char hex[edgelock::owner_token::hex_size];
    l.token().to_hex(hex);
    return std::string(hex, sizeof hex);
}

// The value at `{name}` on a node, or "" when there is none.
inline std::string value_at(cluster& c, int node, const std::string& name) {
    redis_node::entry* e = c.node(node).find("{" + name + "}", c.now().us);
    if (e == nullptr) {
        return "";
    }
    return e->hash ? std::string("<hash>") : e->str;
}

// Sets `{name}` on a node as another holder would.
inline void hold_as(cluster& c, int node, const std::string& name, const std::string& value,
                    edgelock::duration ttl) {
    redis_node::entry e;
    e.str = value;
    e.expire_at = c.now().us + ttl.us;
    c.node(node).data["{" + name + "}"] = e;
}

// As after SCRIPT LOAD: EVALSHA works at once, no NOSCRIPT round trip.
inline void preload_scripts(cluster& c) {
    for (int i = 0; i < c.node_count(); ++i) {
        for (unsigned s = 0; s < edgelock::lock_scripts_count; ++s) {
            c.node(i).script_cache.insert(to_std(edgelock::lock_scripts_all[s]->sha1));
        }
    }
}

inline edgelock::lock_options fast_options() {
    edgelock::lock_options o;
    o.ttl = edgelock::duration::millis(1000);
    o.node_timeout = edgelock::duration::millis(50);
    o.retry_min = edgelock::duration::millis(5);
    o.retry_max = edgelock::duration::millis(20);
    return o;
}

}  // namespace sim
