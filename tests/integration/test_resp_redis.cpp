// The RESP codec against a real redis-server: what Redis actually sends, in
// RESP2 and (after HELLO 3) RESP3, whole, large, pipelined, and over a unix
// socket.
#include <catch2/catch.hpp>

#include <string>

#include "integration/redis_server.hpp"

using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::reply;

namespace {

const reply* map_get(const reply& m, const std::string& key) {
    for (std::size_t i = 0; i + 1 < m.elements.size(); i += 2) {
        if (m.elements[i].text == key) {
            return &m.elements[i + 1];
        }
    }
    return nullptr;
}

}  // namespace

TEST_CASE("redis: RESP2 replies decode as Redis sends them", "[integration][resp]") {
    redis_server srv;
    redis_client c(srv.port());

    CHECK(c.command({"SET", "k", "v"}).type == '+');
    const reply got = c.command({"GET", "k"});
    CHECK(got.type == '$');
    CHECK(got.text == "v");
    CHECK(c.command({"GET", "missing"}).type == '_');  // $-1 decodes as null
    const reply n = c.command({"INCRBY", "n", "-9223372036854775807"});
    CHECK(n.type == ':');
    CHECK(n.integer == -9223372036854775807LL);
    const reply e = c.command({"LPUSH", "k", "x"});
    CHECK(e.type == '-');
    CHECK(e.text.rfind("WRONGTYPE", 0) == 0);
    c.command({"RPUSH", "l", "a", "", "c"});
    const reply l = c.command({"LRANGE", "l", "0", "-1"});
    REQUIRE(l.type == '*');
    REQUIRE(l.elements.size() == 3);
    CHECK(l.elements[1].text.empty());
    const reply m = c.command({"MGET", "k", "missing"});
    REQUIRE(m.elements.size() == 2);
    CHECK(m.elements[1].type == '_');
    // A binary-safe argument survives the round trip.
    const std::string binary("a\r\nb\0c", 6);
    c.command({"SET", "bin", binary});
    CHECK(c.command({"GET", "bin"}).text == binary);
}

TEST_CASE("redis: RESP3 replies after HELLO 3", "[integration][resp]") {
    redis_server srv;
    redis_client c(srv.port());

    const reply hello = c.command({"HELLO", "3"});
    REQUIRE(hello.type == '%');
    const reply* proto = map_get(hello, "proto");
    REQUIRE(proto != nullptr);
    CHECK(proto->integer == 3);
    const reply* server = map_get(hello, "server");
    REQUIRE(server != nullptr);
    // Redis, or Valkey in the Valkey run (its INFO says valkey_version too).
    CHECK((server->text == "redis" || server->text == "valkey"));
    const reply* modules = map_get(hello, "modules");
    REQUIRE(modules != nullptr);
    CHECK(modules->type == '*');

    CHECK(c.command({"GET", "missing"}).type == '_');
    c.command({"HSET", "h", "f1", "v1", "f2", "v2"});
    const reply h = c.command({"HGETALL", "h"});
    CHECK(h.type == '%');
    CHECK(h.elements.size() == 4);
    c.command({"SADD", "s", "a", "b"});
    const reply s = c.command({"SMEMBERS", "s"});
    CHECK(s.type == '~');
    CHECK(s.elements.size() == 2);
    c.command({"ZADD", "z", "1.5", "m"});
    const reply d = c.command({"ZSCORE", "z", "m"});
    CHECK(d.type == ',');
    CHECK(d.text == "1.5");
    const reply info = c.command({"INFO", "server"});
    CHECK(info.type == '=');  // verbatim string, "txt" format
    CHECK(info.text.find("redis_version:") != std::string::npos);
    CHECK((info.text.find("valkey_version:") != std::string::npos) == (server->text == "valkey"));
    const reply t = c.command({"EXISTS", "h"});
    CHECK(t.type == ':');
    CHECK(t.integer == 1);
}

TEST_CASE("redis: RESP3 push messages from client tracking", "[integration][resp]") {
    redis_server srv;
    redis_client watcher(srv.port());
    redis_client writer(srv.port());
    watcher.command({"HELLO", "3"});
    REQUIRE(watcher.command({"CLIENT", "TRACKING", "on"}).text == "OK");
    writer.command({"SET", "tracked", "1"});
    watcher.command({"GET", "tracked"});
    writer.command({"SET", "tracked", "2"});
    // The invalidation arrives out of band, as a push: >2 invalidate [key].
    const reply push = watcher.read_reply();
    REQUIRE(push.type == '>');
    REQUIRE(push.elements.size() == 2);
    CHECK(push.elements[0].text == "invalidate");
    REQUIRE(push.elements[1].elements.size() == 1);
    CHECK(push.elements[1].elements[0].text == "tracked");
}

TEST_CASE("redis: a large reply decodes across many reads", "[integration][resp]") {
    redis_server srv;
    redis_client c(srv.port());
    std::string big(200 * 1024, 'x');
    for (std::size_t i = 0; i < big.size(); i += 997) {
        big[i] = static_cast<char>('a' + i % 26);
    }
    c.command({"SET", "big", big});
    CHECK(c.command({"GET", "big"}).text == big);
}

TEST_CASE("redis: pipelined replies come back in order", "[integration][resp]") {
    redis_server srv;
    redis_client c(srv.port());
    std::string batch;
    for (int i = 0; i < 100; ++i) {
        batch += "*2\r\n$4\r\nINCR\r\n$3\r\nctr\r\n";
    }
    c.send_raw(batch);
    for (int i = 1; i <= 100; ++i) {
        const reply r = c.read_reply();
        REQUIRE(r.type == ':');
        REQUIRE(r.integer == i);
    }
}

TEST_CASE("redis: the codec over a unix socket", "[integration][resp]") {
    redis_server srv;
    redis_client c(srv.unix_path());
    CHECK(c.command({"PING"}).text == "PONG");
    CHECK(c.command({"SET", "u", "1", "NX", "PX", "30000"}).text == "OK");
    CHECK(c.command({"SET", "u", "2", "NX", "PX", "30000"}).type == '_');
}

TEST_CASE("redis: the fixture stops, restarts, pauses", "[integration]") {
    redis_server srv;
    srv.kill();
    CHECK_THROWS(redis_client(srv.port(), 0.5));
    srv.restart();
    redis_client c(srv.port());
    CHECK(c.command({"PING"}).text == "PONG");
    srv.pause();
    redis_client slow(srv.port(), 0.3);  // the kernel still accepts
    CHECK_THROWS(slow.command({"PING"}));
    srv.resume();
    CHECK(c.command({"PING"}).text == "PONG");
}
