// A redis-cluster:// node's routing alone: MOVED and ASK texts, when the slot
// map is asked for, which seed the own connection tries, and what a CLUSTER
// SLOTS reply in Redis 7's shape gives.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/detail/cluster_router.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/resp.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::str_view;
using edgelock::detail::cluster_router;
using edgelock::detail::redirect;
using edgelock::detail::slot_range;

namespace {

std::string text(str_view s) {
    return std::string(s.data, s.size);
}

std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

std::string integer(long long v) {
    return ":" + std::to_string(v) + "\r\n";
}

// A node of a range as Redis 7 gives it: ip, port, id, networking metadata.
std::string node(const std::string& host, int port, const std::string& id) {
    return "*4\r\n" + bulk(host) + integer(port) + bulk(id) + "*2\r\n" + bulk("hostname") +
           bulk("host-" + id);
}

std::string range(long long first, long long last, const std::vector<std::string>& nodes) {
    std::string s =
        "*" + std::to_string(2 + nodes.size()) + "\r\n" + integer(first) + integer(last);
    for (const std::string& n : nodes) {
        s += n;
    }
    return s;
}

std::string map_of(const std::vector<std::string>& ranges) {
    std::string s = "*" + std::to_string(ranges.size()) + "\r\n";
    for (const std::string& r : ranges) {
        s += r;
    }
    return s;
}

struct seen {
    long long first;
    long long last;
    std::string host;
    std::uint16_t port;
};

void collect(void* ctx, const slot_range& r) {
    static_cast<std::vector<seen>*>(ctx)->push_back({r.first, r.last, text(r.host), r.port});
}

std::vector<seen> read_map(cluster_router& router, const std::string& reply,
                           std::size_t capacity = 32) {
    std::vector<edgelock::resp_node> nodes(capacity);
    std::vector<seen> out;
    router.on_map(reply.data(), reply.size(), nodes.data(), capacity, collect, &out);
    return out;
}

}  // namespace

TEST_CASE("cluster router: MOVED and ASK name a slot and a node", "[cluster_router]") {
    redirect r;
    SECTION("MOVED") {
        REQUIRE(cluster_router::parse_redirect("MOVED 3999 127.0.0.1:6381", r));
        CHECK_FALSE(r.ask);
        CHECK(r.slot == 3999);
        CHECK(text(r.host) == "127.0.0.1");
        CHECK(r.port == 6381);
    }
    SECTION("ASK, and the slot range's ends") {
        REQUIRE(cluster_router::parse_redirect("ASK 0 10.0.0.2:7000", r));
        CHECK(r.ask);
        CHECK(r.slot == 0);
        CHECK(r.port == 7000);
        REQUIRE(cluster_router::parse_redirect("ASK 16383 10.0.0.2:65535", r));
        CHECK(r.slot == 16383);
        CHECK(r.port == 65535);
    }
    SECTION("an IPv6 host: the port is after the last colon") {
        REQUIRE(cluster_router::parse_redirect("MOVED 12 2001:db8::1:6379", r));
        CHECK(text(r.host) == "2001:db8::1");
        CHECK(r.port == 6379);
    }
    SECTION("an empty host: the node that answered") {
        REQUIRE(cluster_router::parse_redirect("MOVED 5 :6380", r));
        CHECK(r.host.size == 0);
        CHECK(r.port == 6380);
    }
    SECTION("a host name at the longest") {
        const std::string host(edgelock::node_url_max_host, 'h');
        const std::string moved = "MOVED 1 " + host + ":1";
        REQUIRE(cluster_router::parse_redirect(str_view(moved.c_str()), r));
        CHECK(text(r.host) == host);
    }
}

TEST_CASE("cluster router: what is not a redirect is left alone", "[cluster_router]") {
    const char* const bad[] = {
        "ERR unknown command",
        "moved 1 h:1",  // the server's are upper case
        "MOVED",
        "MOVED 1",
        "MOVED 1h:1",
        "ASKING",
        "MOVED  1 h:1",
        "MOVED 16384 h:1",  // no such slot
        "MOVED -1 h:1",
        "MOVED abc h:1",
        "MOVED  h:1",
        "MOVED 1 h:0",  // no such port
        "MOVED 1 h:65536",
        "MOVED 1 h:",
        "MOVED 1 h",
        "MOVED 1 h:12x",
        "ASK 1 h:-1",
    };
    for (const char* t : bad) {
        CAPTURE(t);
        redirect r;
        r.slot = 77;
        r.port = 99;
        CHECK_FALSE(cluster_router::parse_redirect(str_view(t), r));
        CHECK(r.slot == 77);  // untouched
        CHECK(r.port == 99);
    }
    const std::string long_host(edgelock::node_url_max_host + 1, 'h');
    const std::string moved = "MOVED 1 " + long_host + ":1";
    redirect r;
    CHECK_FALSE(cluster_router::parse_redirect(str_view(moved.c_str()), r));
}

TEST_CASE("cluster router: the map is asked once when wanted and while it can be read",
          "[cluster_router]") {
    cluster_router router;
    const instant t0{5000};
    // The interval since the map was asked last is over.
    const instant later = t0 + cluster_router::map_interval;
    CHECK_FALSE(router.map_wanted(t0));
    CHECK_FALSE(router.map_out());
    router.want_map();
    CHECK(router.map_wanted(t0));

    const std::string ask = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    char buf[64];
    // No room: nothing written, still wanted, not out.
    CHECK(router.write_map_request(buf, ask.size() - 1, t0) == 0);
    CHECK(router.map_wanted(t0));
    CHECK_FALSE(router.map_out());

    REQUIRE(router.write_map_request(buf, ask.size(), t0) == ask.size());
    CHECK(std::string(buf, ask.size()) == ask);
    CHECK(router.map_out());
    CHECK_FALSE(router.map_wanted(later));

    // Wanted again while out: asked once the reply is in.
    router.want_map();
    CHECK_FALSE(router.map_wanted(later));
    CHECK(read_map(router, "-ERR This instance has cluster support disabled\r\n").empty());
    CHECK_FALSE(router.map_out());
    CHECK(router.map_wanted(later));

    SECTION("the connection carrying it is lost") {
        REQUIRE(router.write_map_request(buf, sizeof buf, later) > 0);
        router.map_lost();
        CHECK_FALSE(router.map_out());
        const instant after = later + cluster_router::map_interval;
        CHECK_FALSE(router.map_wanted(after));  // lost, not due: the one that lost it says
        router.want_map();
        CHECK(router.map_wanted(after));
    }
    SECTION("a map too large to read is not asked again until reset") {
        router.map_unreadable();
        CHECK_FALSE(router.map_wanted(later));
        router.want_map();
        router.connection_lost(true, 3);
        CHECK_FALSE(router.map_wanted(later));
        router.reset();
        CHECK_FALSE(router.map_wanted(later));
        router.want_map();
        CHECK(router.map_wanted(later));
    }
}

TEST_CASE("cluster router: the map is asked at most once per interval, however often wanted",
          "[cluster_router]") {
    cluster_router router;
    const instant t0{1000000};
    char buf[64];
    router.want_map();
    REQUIRE(router.write_map_request(buf, sizeof buf, t0) > 0);
    CHECK(read_map(router, "*0\r\n").empty());
    // Every MOVED wants it again: not before the interval is over.
    for (int i = 0; i < 1000; ++i) {
        router.want_map();
    }
    router.connection_lost(true, 2);
    const instant almost{t0.us + cluster_router::map_interval.us - 1};
    CHECK_FALSE(router.map_wanted(t0));
    CHECK_FALSE(router.map_wanted(almost));
    const instant then = t0 + cluster_router::map_interval;
    CHECK(router.map_wanted(then));
    REQUIRE(router.write_map_request(buf, sizeof buf, then) > 0);
    CHECK(read_map(router, "*0\r\n").empty());
    router.want_map();
    CHECK_FALSE(router.map_wanted(then + duration::millis(999)));
    CHECK(router.map_wanted(then + cluster_router::map_interval));
}

TEST_CASE("cluster router: a lost connection moves the own one to the next seed",
          "[cluster_router]") {
    cluster_router router;
    CHECK(router.seed() == 0);
    router.connection_lost(true, 3);
    CHECK(router.seed() == 1);
    CHECK(router.map_wanted(edgelock::instant{}));  // a master may be gone
    router.connection_lost(true, 3);
    CHECK(router.seed() == 2);
    router.connection_lost(true, 3);
    CHECK(router.seed() == 0);  // round again

    cluster_router other;
    other.connection_lost(false, 3);  // an extra connection: its seed stays
    CHECK(other.seed() == 0);
    CHECK(other.map_wanted(edgelock::instant{}));
    other.connection_lost(true, 0);  // no seeds: nothing to move to
    CHECK(other.seed() == 0);
    other.connection_lost(true, 1);
    CHECK(other.seed() == 0);
    other.connection_lost(true, 2);
    CHECK(other.seed() == 1);
    other.reset();
    CHECK(other.seed() == 0);
}

TEST_CASE("cluster router: a Redis 7 CLUSTER SLOTS reply gives each range's master",
          "[cluster_router]") {
    cluster_router router;
    const std::string reply = map_of({
        range(0, 5460, {node("127.0.0.1", 30001, "a1"), node("127.0.0.1", 30004, "r1")}),
        range(5461, 10922, {node("?", 30002, "a2")}),
        range(10923, 16000,
              {node("", 30003, "a3"), node("127.0.0.1", 30005, "r3"),
               node("127.0.0.1", 30006, "r4")}),
        range(16001, 16383, {node("redis-3.example", 30007, "a4")}),
    });
    const std::vector<seen> got = read_map(router, reply);
    REQUIRE(got.size() == 4);
    CHECK(got[0].first == 0);
    CHECK(got[0].last == 5460);
    CHECK(got[0].host == "127.0.0.1");
    CHECK(got[0].port == 30001);  // the master, never a replica
    CHECK(got[1].first == 5461);
    CHECK(got[1].host.empty());  // "?": the node that answered
    CHECK(got[1].port == 30002);
    CHECK(got[2].host.empty());
    CHECK(got[2].port == 30003);
    CHECK(got[2].last == 16000);
    CHECK(got[3].host == "redis-3.example");
    CHECK(got[3].port == 30007);

    SECTION("the minimal node shape of older servers: ip and port only") {
        const std::string old = map_of(
            {"*3\r\n" + integer(0) + integer(16383) + "*2\r\n" + bulk("10.0.0.1") + integer(7000)});
        const std::vector<seen> one = read_map(router, old);
        REQUIRE(one.size() == 1);
        CHECK(one[0].host == "10.0.0.1");
        CHECK(one[0].port == 7000);
    }
}

TEST_CASE("cluster router: malformed ranges are skipped and an error gives none",
          "[cluster_router]") {
    cluster_router router;
    const std::string good = range(0, 99, {node("10.0.0.1", 7000, "a")});
    const std::string last = range(200, 299, {node("10.0.0.2", 7001, "b")});
    const std::string malformed[] = {
        "*2\r\n" + integer(100) + integer(199),                               // no master
        range(100, 199, {"*1\r\n" + bulk("10.0.0.9")}),                       // no port
        range(100, 199, {"*2\r\n" + bulk("10.0.0.9") + integer(0)}),          // port 0
        range(100, 199, {"*2\r\n" + bulk("10.0.0.9") + integer(65536)}),      // port too big
        range(100, 199, {"*2\r\n" + bulk("10.0.0.9") + bulk("7000")}),        // port as text
        range(100, 199, {"*2\r\n" + integer(1) + integer(7000)}),             // host a number
        "*3\r\n" + bulk("100") + integer(199) + node("10.0.0.9", 7000, "x"),  // first as text
        bulk("not a range"),
    };
    for (const std::string& m : malformed) {
        CAPTURE(m);
        const std::vector<seen> got = read_map(router, map_of({good, m, last}));
        REQUIRE(got.size() == 2);
        CHECK(got[0].port == 7000);
        CHECK(got[1].first == 200);
        CHECK(got[1].port == 7001);
    }
    CHECK(read_map(router, "-ERR This instance has cluster support disabled\r\n").empty());
    CHECK(read_map(router, "+OK\r\n").empty());
    CHECK(read_map(router, "*0\r\n").empty());
    CHECK(read_map(router, "").empty());
}

TEST_CASE("cluster router: a range with more nodes than the scratch array ends the map",
          "[cluster_router]") {
    cluster_router router;
    // 2 + 4 nodes of 8 each: 34 nodes, for a scratch array of 16.
    const std::string big = range(100, 199,
                                  {node("10.0.0.2", 7001, "m"), node("10.0.0.3", 7002, "r1"),
                                   node("10.0.0.4", 7003, "r2"), node("10.0.0.5", 7004, "r3")});
    const std::string before = range(0, 99, {node("10.0.0.1", 7000, "a")});
    const std::string after = range(200, 299, {node("10.0.0.6", 7005, "b")});
    const std::vector<seen> small = read_map(router, map_of({before, big, after}), 16);
    // What came before is kept; from the range that could not be read on, MOVED
    // answers teach the routes.
    REQUIRE(small.size() == 1);
    CHECK(small[0].port == 7000);
    CHECK_FALSE(router.map_out());
    // The same reply with room for it gives every range.
    const std::vector<seen> all = read_map(router, map_of({before, big, after}), 64);
    REQUIRE(all.size() == 3);
    CHECK(all[1].port == 7001);
    CHECK(all[2].port == 7005);
}
