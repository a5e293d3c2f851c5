// Cluster URLs: redis-cluster://[user[:password]@]host[:port][,host[:port]...]:
// the seeds read back in order with 6379 by default, and every malformed
// part refused, the address left as it was.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "edgelock/node_url.hpp"

using edgelock::node_address;
using edgelock::parse_node_url;
using edgelock::str_view;
using edgelock::url_errc;

namespace {

std::string str(str_view v) {
    return v.empty() ? std::string() : std::string(v.data, v.size);
}

std::vector<std::string> seeds_of(const node_address& a) {
    std::vector<std::string> out;
    for (std::uint8_t i = 0; i < a.seed_count; ++i) {
        str_view host;
        std::uint16_t port = 0;
        REQUIRE(edgelock::node_url_seed(a, i, host, port));
        out.push_back(str(host) + ":" + std::to_string(port));
    }
    str_view host;
    std::uint16_t port = 0;
    CHECK_FALSE(edgelock::node_url_seed(a, a.seed_count, host, port));
    return out;
}

}  // namespace

TEST_CASE("cluster URLs: the accepted forms", "[url][cluster]") {
    struct good {
        std::string url;
        std::vector<std::string> seeds;
        const char* user;
        const char* password;
    };
    const good cases[] = {
        {"redis-cluster://10.0.0.1", {"10.0.0.1:6379"}, "", ""},
        {"redis-cluster://a:7000,b:7001,c", {"a:7000", "b:7001", "c:6379"}, "", ""},
        {"REDIS-CLUSTER://[::1]:7000,[fe80::1]/", {"::1:7000", "fe80::1:6379"}, "", ""},
        {"redis-cluster://alice:p%40ss@h1:7000", {"h1:7000"}, "alice", "p%40ss"},
    };
    for (const good& g : cases) {
        INFO(g.url);
        node_address a;
        REQUIRE(parse_node_url(str_view(g.url.data(), g.url.size()), a) == url_errc::ok);
        CHECK(seeds_of(a) == g.seeds);
        CHECK(str(a.user) == g.user);
        CHECK(str(a.password) == g.password);
        CHECK(a.db == 0);
        CHECK(a.sentinel_count == 0);
        CHECK_FALSE(a.tls);
        CHECK(str(a.host) + ":" + std::to_string(a.port) == g.seeds.front());
    }
    node_address a;
    REQUIRE(parse_node_url("redis://h:7000", a) == url_errc::ok);
    CHECK(a.seed_count == 0);
    REQUIRE(parse_node_url("redis-sentinel://h/m", a) == url_errc::ok);
    CHECK(a.seed_count == 0);
}

TEST_CASE("cluster URLs: malformed parts are refused, the address left as it was",
          "[url][cluster][bad-input]") {
    const std::pair<const char*, url_errc> cases[] = {
        {"redis-cluster://h/0", url_errc::bad_path},        // a database: Cluster has one
        {"redis-cluster://h/m", url_errc::bad_path},        // any path
        {"redis-cluster://h?db=1", url_errc::bad_query},    // a query
        {"redis-cluster://,h", url_errc::bad_host},         // an empty seed
        {"redis-cluster://h,", url_errc::bad_host},         // a trailing comma
        {"redis-cluster://h:0", url_errc::bad_port},        // port 0
        {"redis-cluster://h,i:99999", url_errc::bad_port},  // a later bad port
        {"redis-cluster://u@v@h", url_errc::bad_userinfo},  // a raw '@'
        {"redis-cluster://", url_errc::bad_host},           // no seed at all
        {"redis-clusterx://h", url_errc::bad_scheme},       // not the scheme
        {"redis-cluster://h1,h2,h3,h4,h5,h6,h7,h8,h9", url_errc::bad_host},  // nine seeds
    };
    for (const auto& c : cases) {
        INFO(c.first);
        node_address a;
        a.db = 77;
        CHECK(parse_node_url(c.first, a) == c.second);
        CHECK(a.db == 77);
        CHECK(a.seed_count == 0);
    }
}
