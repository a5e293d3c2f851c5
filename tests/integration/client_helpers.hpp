// Helpers for tests that drive the client (client<N>, client_lock) against
// real redis-servers: configuration, what an operation ended with, the events
// a lock's callback saw, and commands sent through the client.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/redis_server.hpp"
#include "tools/describe.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"
#include "tools/url.hpp"

namespace edgelock_test {

inline double ms_since(edgelock::instant t) {
    return static_cast<double>((edgelock::port::now() - t).us) / 1000.0;
}

// What an operation ended with, for INFO.

inline void configure(edgelock::client_base& c, const url_list& urls,
                      const edgelock::client_options& o = {}) {
    REQUIRE(c.configure(urls.data(), urls.size(), o) == edgelock::client_errc::ok);
}

inline edgelock::lock_options options(unsigned ttl_ms, unsigned node_timeout_ms,
                                      edgelock::lock_mode mode = edgelock::lock_mode::plain) {
    edgelock::lock_options o;
    o.mode = mode;
    o.ttl = edgelock::duration::millis(ttl_ms);
    o.node_timeout = edgelock::duration::millis(node_timeout_ms);
    return o;
}

inline edgelock::watchdog_options no_watchdog() {
    edgelock::watchdog_options w;
    w.enabled = false;
    return w;
}

inline edgelock::watchdog_options renew_every(unsigned ms) {
    edgelock::watchdog_options w;
    w.renew_every = edgelock::duration::millis(ms);
    return w;
}

// Acquires or fails the test.
inline void must_acquire(edgelock::client_lock& l) {
    const edgelock::op_result r = l.try_acquire();
    INFO(what(r));
    REQUIRE(r.error == edgelock::client_errc::ok);
    REQUIRE(r.event.kind == edgelock::lock_event_kind::acquired);
}

inline void must_release(edgelock::client_lock& l) {
    const edgelock::op_result r = l.release();
    INFO(what(r));
    REQUIRE(r.error == edgelock::client_errc::ok);
    REQUIRE(r.event.kind == edgelock::lock_event_kind::released);
}

// Every event a lock's callback saw, and when.
struct recorder {
    struct entry : edgelock::lock_event {
        edgelock::instant at;
    };
    std::vector<entry> events;

    static void on_event(void* ctx, edgelock::client_lock&, const edgelock::lock_event& ev) {
        static_cast<recorder*>(ctx)->events.push_back(entry{ev, edgelock::port::now()});
    }
    void listen(edgelock::client_lock& l) { l.set_callback(&recorder::on_event, this); }

    int count(edgelock::lock_event_kind k) const {
        int n = 0;
        for (const entry& e : events) {
            n += e.kind == k ? 1 : 0;
        }
        return n;
    }
    // Index of the first event of kind k, or -1.
    int first(edgelock::lock_event_kind k) const {
        for (std::size_t i = 0; i < events.size(); ++i) {
            if (events[i].kind == k) {
                return static_cast<int>(i);
            }
        }
        return -1;
    }
    // "kind(reason)@ms" for each event, ms counted from the first one.
    std::string list() const {
        using edgelock::describe;
        std::string s;
        for (const entry& e : events) {
            s += describe(e.kind);
            if (e.reason != edgelock::lock_failure::none) {
                s += std::string("(") + describe(e.reason) + ")";
            }
            s += "@" + std::to_string((e.at - events.front().at).us / 1000) + " ";
        }
        return s;
    }
};

// What client_base::command() handed to its callback.
struct command_reply {
    int calls = 0;
    edgelock::resp_type type = edgelock::resp_type::null;
    std::string text;
    long long integer = 0;

    static void take(void* ctx, const edgelock::resp_node* nodes, std::size_t count) {
        auto& r = *static_cast<command_reply*>(ctx);
        ++r.calls;
        if (nodes != nullptr && count > 0) {
            r.type = nodes[0].type;
            r.text = str(nodes[0].text);
            r.integer = nodes[0].integer;
        }
    }
};

// One command on node `index`, which must answer within 3 s.
inline command_reply must_command(edgelock::client_base& c, std::uint8_t index,
                                  const std::vector<std::string>& args) {
    using namespace edgelock;
    std::vector<str_view> v;
    for (const std::string& a : args) {
        v.emplace_back(a.data(), a.size());
    }
    command_reply r;
    const client_errc e = c.command(index, v.data(), v.size(), port::now() + duration::seconds(3),
                                    &command_reply::take, &r);
    INFO("command " << args.at(0) << ": " << describe(e) << "; node: " << what(c.node(index)));
    REQUIRE(e == client_errc::ok);
    REQUIRE(r.calls == 1);
    return r;
}

// The server-side id of node `index`'s connection: the same id means the
// same connection, never dropped and made again.
inline long long connection_id(edgelock::client_base& c, std::uint8_t index) {
    const command_reply r = must_command(c, index, {"CLIENT", "ID"});
    REQUIRE(r.type == edgelock::resp_type::integer);
    return r.integer;
}

}  // namespace edgelock_test
