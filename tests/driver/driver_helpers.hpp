// Helpers for tests that run the real driver (client<N>, client_lock) on the
// test port: the URLs of a net's nodes, an event recorder for a lock's
// callback, and short descriptions of results for INFO.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "sim/net.hpp"
#include "tools/describe.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"

namespace edgelock_test {

// The URLs of nodes [0, count) of a net. The client keeps views into them:
// declare this before the client so it outlives it.
struct node_urls {
    std::vector<std::string> text;
    std::vector<edgelock::str_view> views;

    explicit node_urls(sim::net& n, int count = -1, const std::string& userinfo = "",
                       const std::string& path = "") {
        const int k = count < 0 ? n.node_count() : count;
        for (int i = 0; i < k; ++i) {
            text.push_back(n.url(i, userinfo, path));
        }
        for (const std::string& u : text) {
            views.emplace_back(u.data(), u.size());
        }
    }
    node_urls(const node_urls&) = delete;
    node_urls& operator=(const node_urls&) = delete;
};

inline void configure(edgelock::client_base& c, const node_urls& urls,
                      const edgelock::client_options& o = {}) {
    REQUIRE(c.configure(urls.views.data(), urls.views.size(), o) == edgelock::client_errc::ok);
}

// Every event of the locks it is attached to, with the virtual time it came.
struct event_log {
    struct entry {
        const edgelock::client_lock* lock;
        edgelock::instant at;
        edgelock::lock_event ev;
    };
    std::vector<entry> events;

    void attach(edgelock::client_lock& l) { l.set_callback(&event_log::record, this); }
    std::size_t count(edgelock::lock_event_kind k, const edgelock::client_lock* l = nullptr) const {
        std::size_t n = 0;
        for (const entry& e : events) {
            n += e.ev.kind == k && (l == nullptr || e.lock == l) ? 1 : 0;
        }
        return n;
    }
    const entry* last(const edgelock::client_lock* l = nullptr) const {
        for (auto it = events.rbegin(); it != events.rend(); ++it) {
            if (l == nullptr || it->lock == l) {
                return &*it;
            }
        }
        return nullptr;
    }

private:
    static void record(void* ctx, edgelock::client_lock& l, const edgelock::lock_event& ev) {
        static_cast<event_log*>(ctx)->events.push_back(entry{&l, edgelock::port::now(), ev});
    }
};

// Short timeouts for tests that run in virtual milliseconds.
inline edgelock::lock_options fast_lock_options(
    edgelock::lock_mode mode = edgelock::lock_mode::plain) {
    edgelock::lock_options o;
    o.mode = mode;
    o.ttl = edgelock::duration::millis(1000);
    o.node_timeout = edgelock::duration::millis(50);
    o.retry_min = edgelock::duration::millis(5);
    o.retry_max = edgelock::duration::millis(20);
    return o;
}

// Every node of a net a fixed round trip away (fixed_rtt_us), and the round
// trips from `from` to now, to a tenth: what a path costs, counted exactly.
constexpr std::uint64_t fixed_rtt_us = 10000;

inline void fixed_round_trip(sim::net& n) {
    for (int i = 0; i < n.node_count(); ++i) {
        n.faults(i).latency_min_us = fixed_rtt_us;
        n.faults(i).latency_max_us = fixed_rtt_us;
    }
}

inline double round_trips(sim::net& n, edgelock::instant from) {
    return static_cast<double>((n.now().us - from.us) / (fixed_rtt_us / 10)) / 10.0;
}

// Whether a command a node ran is the renew script, by digest or by text.
inline bool is_renew(const std::vector<std::string>& argv) {
    return argv.size() >= 2 && (argv[1] == sim::to_std(edgelock::script_renew.sha1) ||
                                argv[1] == sim::to_std(edgelock::script_renew.text));
}

// The value of a lock's key on a node ("" when absent), as a holder sees it.
inline std::string value_at(sim::net& n, int node, const std::string& name) {
    sim::keyspace::entry* e = n.node(node).find(key_of(name), n.now().us);
    if (e == nullptr) {
        return "";
    }
    return e->hash ? std::string("<hash>") : e->str;
}

}  // namespace edgelock_test

// Readable values in failed checks.
namespace Catch {
template <>
struct StringMaker<edgelock::instant> {
    static std::string convert(edgelock::instant t) { return std::to_string(t.us) + " us"; }
};
template <>
struct StringMaker<edgelock::duration> {
    static std::string convert(edgelock::duration d) { return std::to_string(d.us) + " us"; }
};
#define EDGELOCK_DESCRIBED(type)                                             \
    template <>                                                              \
    struct StringMaker<type> {                                               \
        static std::string convert(type v) { return edgelock::describe(v); } \
    };
EDGELOCK_DESCRIBED(edgelock::client_errc)
EDGELOCK_DESCRIBED(edgelock::node_state)
EDGELOCK_DESCRIBED(edgelock::node_error)
EDGELOCK_DESCRIBED(edgelock::node_warning)
EDGELOCK_DESCRIBED(edgelock::lock_event_kind)
EDGELOCK_DESCRIBED(edgelock::lock_failure)
EDGELOCK_DESCRIBED(edgelock::lock_state)
#undef EDGELOCK_DESCRIBED
template <>
struct StringMaker<edgelock::port::net_status> {
    static std::string convert(edgelock::port::net_status v) { return edgelock::port::describe(v); }
};
}  // namespace Catch
