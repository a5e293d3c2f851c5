// Sentinel URLs: redis-sentinel://[user[:password]@]host[:port][,...]/NAME[/db]:
// the accepted forms, each sentinel read back in order with 26379 by
// default, and every malformed part refused with the component at fault.
// rediss-sentinel:// is the same URL with tls set.
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

// "host:port" of every sentinel, in order.
std::vector<std::string> sentinels_of(const node_address& a) {
    std::vector<std::string> out;
    for (std::uint8_t i = 0; i < a.sentinel_count; ++i) {
        str_view host;
        std::uint16_t port = 0;
        REQUIRE(edgelock::node_url_sentinel(a, i, host, port));
        out.push_back(str(host) + ":" + std::to_string(port));
    }
    str_view host;
    std::uint16_t port = 0;
    CHECK_FALSE(edgelock::node_url_sentinel(a, a.sentinel_count, host, port));
    return out;
}

}  // namespace

TEST_CASE("sentinel URLs: the accepted forms", "[url][sentinel]") {
    struct good {
        std::string url;
        std::vector<std::string> sentinels;
        const char* name;
        std::uint32_t db;
        const char* user;
        const char* password;
    };
    const good cases[] = {
        {"redis-sentinel://10.0.0.1/mymaster", {"10.0.0.1:26379"}, "mymaster", 0, "", ""},
        {"redis-sentinel://a:1,b:2,c/jobs/3", {"a:1", "b:2", "c:26379"}, "jobs", 3, "", ""},
        {"REDIS-SENTINEL://[::1]:5000,[fe80::1]/m", {"::1:5000", "fe80::1:26379"}, "m", 0, "", ""},
        {"redis-sentinel://:pw@s1,s2/m.x-y_z:1",
         {"s1:26379", "s2:26379"},
         "m.x-y_z:1",
         0,
         "",
         "pw"},
        {"redis-sentinel://alice:p%40ss@s1/m", {"s1:26379"}, "m", 0, "alice", "p%40ss"},
    };
    for (const good& g : cases) {
        INFO(g.url);
        node_address a;
        REQUIRE(parse_node_url(str_view(g.url.data(), g.url.size()), a) == url_errc::ok);
        CHECK(sentinels_of(a) == g.sentinels);
        CHECK(str(a.master_name) == g.name);
        CHECK(a.db == g.db);
        CHECK(str(a.user) == g.user);
        CHECK(str(a.password) == g.password);
        CHECK_FALSE(a.tls);
        // host and port are the first sentinel's.
        CHECK(str(a.host) + ":" + std::to_string(a.port) == g.sentinels.front());
    }
    // Eight sentinels at most.
    std::string eight = "redis-sentinel://h1";
    for (int i = 2; i <= 8; ++i) {
        eight += ",h" + std::to_string(i);
    }
    node_address a;
    REQUIRE(parse_node_url(str_view((eight + "/m").data(), eight.size() + 2), a) == url_errc::ok);
    CHECK(a.sentinel_count == 8);
    const std::string nine = eight + ",h9/m";
    CHECK(parse_node_url(str_view(nine.data(), nine.size()), a) == url_errc::bad_host);
    // Plain URLs are not Sentinel ones.
    REQUIRE(parse_node_url("redis://h/1", a) == url_errc::ok);
    CHECK(a.sentinel_count == 0);
    CHECK(a.master_name.empty());
}

TEST_CASE("sentinel URLs: malformed parts are refused, the address left as it was",
          "[url][sentinel][bad-input]") {
    const std::pair<const char*, url_errc> cases[] = {
        {"redis-sentinel://h", url_errc::bad_path},            // no master name
        {"redis-sentinel://h/", url_errc::bad_path},           // an empty one
        {"redis-sentinel://h/a b", url_errc::bad_path},        // a space
        {"redis-sentinel://h/m/x", url_errc::bad_db},          // not a db
        {"redis-sentinel://h/m/1/2", url_errc::bad_db},        // more path
        {"redis-sentinel://h/m?x=1", url_errc::bad_query},     // a query
        {"redis-sentinel://,h/m", url_errc::bad_host},         // an empty sentinel
        {"redis-sentinel://h,/m", url_errc::bad_host},         // a trailing comma
        {"redis-sentinel://h,,i/m", url_errc::bad_host},       // two commas
        {"redis-sentinel://h:0/m", url_errc::bad_port},        // port 0
        {"redis-sentinel://h,i:99999/m", url_errc::bad_port},  // a later bad port
        {"redis-sentinel://h,i!/m", url_errc::bad_host},       // a later bad host
        {"redis-sentinel://u@v@h/m", url_errc::bad_userinfo},  // a raw '@'
        {"redis-sentinel:///m", url_errc::bad_host},           // no sentinel at all
    };
    for (const auto& c : cases) {
        INFO(c.first);
        node_address a;
        a.db = 77;
        CHECK(parse_node_url(c.first, a) == c.second);
        CHECK(a.db == 77);
        CHECK(a.sentinel_count == 0);
        // The same faults over TLS, the same answers.
        const std::string tls = "rediss" + std::string(c.first).substr(5);
        INFO(tls);
        CHECK(parse_node_url(str_view(tls.data(), tls.size()), a) == c.second);
        CHECK(a.db == 77);
        CHECK_FALSE(a.tls);
        CHECK(a.sentinel_count == 0);
    }
    const std::string long_name = "redis-sentinel://h/" + std::string(129, 'n');
    node_address a;
    CHECK(parse_node_url(str_view(long_name.data(), long_name.size()), a) == url_errc::bad_path);
}

TEST_CASE("sentinel URLs: rediss-sentinel:// is the same URL over TLS", "[url][sentinel][tls]") {
    const char* const urls[] = {
        "redis-sentinel://10.0.0.1/mymaster",
        "redis-sentinel://a:1,b:2,c/jobs/3",
        "redis-sentinel://[::1]:5000,[fe80::1]/m",
        "redis-sentinel://alice:p%40ss@s1,s2/m.x-y_z:1/7",
        "redis-sentinel://:@h/m",
    };
    for (const char* plain_url : urls) {
        const std::string tls_url = "rediss" + std::string(plain_url).substr(5);
        INFO(tls_url);
        node_address plain;
        node_address tls;
        REQUIRE(parse_node_url(plain_url, plain) == url_errc::ok);
        REQUIRE(parse_node_url(str_view(tls_url.data(), tls_url.size()), tls) == url_errc::ok);
        CHECK_FALSE(plain.tls);
        CHECK(tls.tls);
        CHECK(sentinels_of(tls) == sentinels_of(plain));
        CHECK(str(tls.host) == str(plain.host));
        CHECK(tls.port == plain.port);
        CHECK(str(tls.master_name) == str(plain.master_name));
        CHECK(tls.db == plain.db);
        CHECK(str(tls.user) == str(plain.user));
        CHECK(str(tls.password) == str(plain.password));
        CHECK(tls.has_password == plain.has_password);
        CHECK(tls.seed_count == 0);
        CHECK(tls.unix_path.empty());
    }
    // The scheme in any case.
    for (const char* scheme : {"REDISS-SENTINEL", "Rediss-Sentinel", "rEdIsS-sEnTiNeL"}) {
        const std::string url = std::string(scheme) + "://h1:26380,h2/m/2";
        INFO(url);
        node_address a;
        REQUIRE(parse_node_url(str_view(url.data(), url.size()), a) == url_errc::ok);
        CHECK(a.tls);
        CHECK(sentinels_of(a) == std::vector<std::string>{"h1:26380", "h2:26379"});
        CHECK(str(a.master_name) == "m");
        CHECK(a.db == 2);
    }
    // Near misses are other schemes, refused.
    for (const char* url : {"redis-sentinels://h/m", "redisssentinel://h/m",
                            "rediss+sentinel://h/m", "sentinel://h/m"}) {
        INFO(url);
        node_address a;
        CHECK(parse_node_url(url, a) == url_errc::bad_scheme);
    }
}
