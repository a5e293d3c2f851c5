// Helpers for tests that drive the client (client<N>, client_lock) against
// real redis-servers: URLs, configuration, and what an operation ended with.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/redis_server.hpp"

namespace edgelock_test {

inline std::string tcp_url(const redis_server& s, const std::string& userinfo = "",
                           const std::string& path = "") {
    return "redis://" + (userinfo.empty() ? std::string() : userinfo + "@") +
           "127.0.0.1:" + std::to_string(s.port()) + path;
}

// The Redis key of a lock name.
inline std::string key_of(const char* name) {
    return std::string("{") + name + "}";
}

inline std::string str(edgelock::str_view v) {
    return v.empty() ? std::string() : std::string(v.data, v.size);
}

inline double ms_since(edgelock::instant t) {
    return static_cast<double>((edgelock::port::now() - t).us) / 1000.0;
}

// What an operation ended with, for INFO.
inline std::string what(const edgelock::op_result& r) {
    using edgelock::describe;
    std::string s = std::string("error=") + describe(r.error);
    if (r.error == edgelock::client_errc::lock_rejected) {
        s += std::string(" lock_error=") + describe(r.lock_error);
    }
    if (r.error == edgelock::client_errc::ok) {
        s += std::string(" event=") + describe(r.event.kind);
        if (r.event.reason != edgelock::lock_failure::none) {
            s += std::string(" reason=") + describe(r.event.reason);
        }
    }
    return s;
}

inline std::string what(const edgelock::node_info& n) {
    using edgelock::describe;
    return std::string("state=") + describe(n.state) + " error=" + describe(n.error) +
           " code=" + std::to_string(n.code) + " message='" + str(n.message) + "'";
}

// The URLs a client is configured with. The client keeps views into them:
// declare the list before the client so it outlives it. Not copyable.
struct url_list {
    std::vector<std::string> text;
    std::vector<edgelock::str_view> views;

    explicit url_list(std::vector<std::string> urls) : text(std::move(urls)) {
        for (const std::string& u : text) {
            views.emplace_back(u.data(), u.size());
        }
    }
    url_list(const url_list&) = delete;
    url_list& operator=(const url_list&) = delete;

    const edgelock::str_view* data() const { return views.data(); }
    std::size_t size() const { return views.size(); }
};

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

}  // namespace edgelock_test
