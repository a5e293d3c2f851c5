// Node URLs of loopback servers, and node lists, as the client and the agent
// take them.
//
//   redis_url(6379)                     redis://127.0.0.1:6379
//   redis_url(6379, "gw:pw", "/2")      redis://gw:pw@127.0.0.1:6379/2
//   node_list({a, b, c})                a,b,c   (for -N and EDGELOCK_NODES)
//   url_list urls({a, b});              what client::configure() takes
//
// tests/integration/redis_server.hpp adds redis_url(server, ...) for its
// fixture.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "edgelock/str_view.hpp"

namespace edgelock_test {

inline std::string redis_url(std::uint16_t port, const std::string& userinfo = "",
                             const std::string& path = "") {
    return "redis://" + (userinfo.empty() ? std::string() : userinfo + "@") +
           "127.0.0.1:" + std::to_string(port) + path;
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

inline std::string node_list(const std::vector<std::string>& urls) {
    std::string s;
    for (std::size_t i = 0; i < urls.size(); ++i) {
        s += (i == 0 ? "" : ",") + urls[i];
    }
    return s;
}

}  // namespace edgelock_test
