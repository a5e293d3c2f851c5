// Node URLs of loopback servers, and node lists, as the client and the agent
// take them.
//
//   redis_url(6379)                     redis://127.0.0.1:6379
//   redis_url(6379, "gw:pw", "/2")      redis://gw:pw@127.0.0.1:6379/2
//   node_list({a, b, c})                a,b,c   (for -N and EDGELOCK_NODES)
//
// tests/integration/redis_server.hpp adds redis_url(server, ...) for its
// fixture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgelock_test {

inline std::string redis_url(std::uint16_t port, const std::string& userinfo = "",
                             const std::string& path = "") {
    return "redis://" + (userinfo.empty() ? std::string() : userinfo + "@") +
           "127.0.0.1:" + std::to_string(port) + path;
}

inline std::string node_list(const std::vector<std::string>& urls) {
    std::string s;
    for (std::size_t i = 0; i < urls.size(); ++i) {
        s += (i == 0 ? "" : ",") + urls[i];
    }
    return s;
}

}  // namespace edgelock_test
