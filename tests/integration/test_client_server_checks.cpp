// What the lock needs from Redis, checked by the client against real
// redis-servers: a replica fails its node at set-up, an evicting maxmemory
// policy is a warning, a refused INFO says nothing, an INFO too long for the
// receive buffer is skipped; and a lock request the server refuses (WRONGTYPE,
// NOPERM, OOM, READONLY) shows in node(i) with the server's text while the
// connection stays up.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"

using namespace edgelock;
using edgelock_test::configure;
using edgelock_test::connection_id;
using edgelock_test::fence_key_of;
using edgelock_test::key_of;
using edgelock_test::must_acquire;
using edgelock_test::must_release;
using edgelock_test::no_watchdog;
using edgelock_test::options;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::redis_url;
using edgelock_test::sleep_ms;
using edgelock_test::str;
using edgelock_test::url_list;
using edgelock_test::what;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// A try_acquire the server refuses: no quorum, and node 0 says why.
node_info must_be_refused(client_base& c, client_lock& l) {
    const op_result r = l.try_acquire();
    const node_info n = c.node(0);
    INFO(what(r) << "; node: " << what(n));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::failed);
    CHECK(r.event.reason == lock_failure::no_quorum);
    CHECK_FALSE(l.held());
    CHECK(n.state == node_state::ready);  // refused, not dropped
    CHECK(n.error == node_error::server_error);
    CHECK(n.message.size <= EDGELOCK_CLIENT_MESSAGE);
    return n;
}

}  // namespace

// --- set-up: what INFO says -----------------------------------------------------------

TEST_CASE("client server checks: a replica fails its node at set-up", "[integration][client]") {
    redis_server master;
    redis_server replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
    const char* name = "checks-replica";
    const url_list urls({redis_url(replica)});
    client_options co;
    co.reconnect_min = duration::millis(50);
    co.reconnect_max = duration::millis(200);
    client<1> c;
    configure(c, urls, co);
    client_lock l;
    REQUIRE(l.attach(c, name, options(5000, 500), no_watchdog()) == client_errc::ok);

    const op_result r = l.try_acquire();
    // HELLO said "replica" before the acquire's reply; INFO, asked then,
    // says whose, and the connection closes once that is in.
    REQUIRE(c.settle(port::now() + duration::seconds(2)) == client_errc::ok);
    const node_info n = c.node(0);
    INFO(what(r) << "; node: " << what(n));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::failed);
    CHECK(r.event.reason == lock_failure::no_quorum);
    CHECK_FALSE(l.held());
    CHECK(n.error == node_error::replica);
    CHECK(std::string(describe(n.error)) == "a replica (read-only): a lock needs a master");
    CHECK(str(n.message) == "replica of 127.0.0.1:" + std::to_string(master.port()));
    CHECK((n.state == node_state::backoff || n.state == node_state::down));
    {
        redis_client admin(master.port());
        CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    }

    // Still a replica on the next attempt, after the backoff.
    c.run_for(duration::millis(300));
    CHECK(c.connect(port::now() + duration::seconds(2)) == 0);
    CHECK(c.node(0).error == node_error::replica);

    // Promoted: the next attempt sets it up and the lock works.
    {
        redis_client admin(replica.port());
        REQUIRE(admin.command({"REPLICAOF", "NO", "ONE"}).text == "OK");
    }
    const op_result again = l.acquire(duration::seconds(3));
    INFO("after REPLICAOF NO ONE: " << what(again) << "; node: " << what(c.node(0)));
    REQUIRE(again.error == client_errc::ok);
    CHECK(again.event.kind == lock_event_kind::acquired);
    CHECK(c.node(0).state == node_state::ready);
    CHECK(c.node(0).error == node_error::none);
    CHECK(c.node(0).message.empty());
    must_release(l);
}

TEST_CASE("client server checks: an evicting maxmemory policy is a warning",
          "[integration][client]") {
    struct row {
        const char* what;
        std::vector<std::string> args;
        bool resp3;
        node_warning warning;
        const char* policy;
    };
    const std::vector<row> rows = {
        {"100mb allkeys-lru",
         {"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"},
         false,
         node_warning::may_evict,
         "allkeys-lru"},
        {"100mb allkeys-lru over RESP3 (a verbatim string)",
         {"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"},
         true,
         node_warning::may_evict,
         "allkeys-lru"},
        {"100mb volatile-lru (lock keys have a TTL)",
         {"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"},
         false,
         node_warning::may_evict,
         "volatile-lru"},
        {"100mb noeviction",
         {"--maxmemory", "100mb", "--maxmemory-policy", "noeviction"},
         false,
         node_warning::none,
         "noeviction"},
        {"no maxmemory, allkeys-lru",
         {"--maxmemory", "0", "--maxmemory-policy", "allkeys-lru"},
         false,
         node_warning::none,
         "allkeys-lru"},
        {"the defaults", {}, false, node_warning::none, "noeviction"},
    };
    for (const row& w : rows) {
        INFO(w.what);
        redis_server srv(w.args);
        const url_list urls({redis_url(srv)});
        client_options co;
        co.resp3 = w.resp3;
        client<1> c;
        configure(c, urls, co);
        client_lock l;
        REQUIRE(l.attach(c, "checks-evict", options(5000, 500), no_watchdog()) == client_errc::ok);
        must_acquire(l);
        const node_info n = c.node(0);
        INFO(what(n));
        CHECK(n.state == node_state::ready);
        CHECK(n.error == node_error::none);
        CHECK(n.warning == w.warning);
        CHECK(str(n.maxmemory_policy) == w.policy);
        must_release(l);
    }
    CHECK(std::string(describe(node_warning::may_evict)) ==
          "the server may evict lock keys (maxmemory with an evicting policy)");
    CHECK(std::string(describe(node_warning::none)) == "no warning");
}

TEST_CASE("client server checks: the warning is read again on every connection",
          "[integration][client]") {
    redis_server srv({"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"});
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    CHECK(c.node(0).warning == node_warning::may_evict);

    // Changed on the server: the connection up keeps what its set-up saw...
    REQUIRE(admin.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).text == "OK");
    CHECK(c.node(0).warning == node_warning::may_evict);
    // ...and a new one reads it anew.
    c.disconnect();
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    INFO(what(c.node(0)));
    CHECK(c.node(0).warning == node_warning::none);
    CHECK(str(c.node(0).maxmemory_policy) == "noeviction");

    REQUIRE(admin.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"}).text == "OK");
    c.disconnect();
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    CHECK(c.node(0).warning == node_warning::may_evict);
    CHECK(str(c.node(0).maxmemory_policy) == "volatile-ttl");
}

TEST_CASE("client server checks: a writable replica's key, taken behind the set-up, is deleted",
          "[integration][client]") {
    redis_server master;
    redis_server replica(
        {"--replicaof", "127.0.0.1", std::to_string(master.port()), "--replica-read-only", "no"});
    const char* name = "checks-writable-replica";
    const url_list urls({redis_url(replica)});
    client_options co;
    co.reconnect_min = duration::seconds(5);  // one connection: the one that took the key
    co.reconnect_max = duration::seconds(5);
    client<1> c;
    configure(c, urls, co);
    client_lock l;
    REQUIRE(l.attach(c, name, options(5000, 500), no_watchdog()) == client_errc::ok);
    const op_result r = l.try_acquire();
    INFO(what(r));
    CHECK(r.event.kind == lock_event_kind::failed);
    REQUIRE(c.settle(port::now() + duration::seconds(2)) == client_errc::ok);
    CHECK(c.node(0).error == node_error::replica);
    redis_client on_replica(replica.port());
    CHECK(on_replica.command({"EXISTS", key_of(name)}).integer == 0);
    // It ran there, and its cleanup after it (which wrote the release mark).
    CHECK(edgelock_test::command_calls(on_replica, "set") == 2);
    CHECK(edgelock_test::command_calls(on_replica, "eval") >= 1);
}

TEST_CASE(
    "client server checks: a user that may run neither CONFIG nor INFO locks without a "
    "warning",
    "[integration][client]") {
    // An evicting policy the client cannot see: no CONFIG, no INFO, no
    // warning, no failure.
    redis_server srv({"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru", "--user",
                      "locker", "on", ">pw", "~*", "&*", "+@all", "-info", "-config"});
    {
        redis_client admin(srv.port());
        REQUIRE(admin.command({"AUTH", "locker", "pw"}).text == "OK");
        const edgelock_test::reply denied = admin.command({"INFO", "memory"});
        INFO(denied.text);
        REQUIRE(denied.type == '-');
        REQUIRE(starts_with(denied.text, "NOPERM"));
    }
    for (const bool resp3 : {false, true}) {
        INFO("resp3 " << resp3);
        const url_list urls({redis_url(srv, "locker:pw")});
        client_options co;
        co.resp3 = resp3;
        client<1> c;
        configure(c, urls, co);
        client_lock l;
        REQUIRE(l.attach(c, "checks-noinfo", options(5000, 500), no_watchdog()) == client_errc::ok);
        must_acquire(l);
        // CONFIG GET's refusal asked INFO memory, behind the acquire.
        REQUIRE(c.run_for(duration::millis(50)) == client_errc::ok);
        const node_info n = c.node(0);
        INFO(what(n));
        CHECK(n.state == node_state::ready);
        CHECK(n.error == node_error::none);
        CHECK(n.message.empty());
        CHECK(n.warning == node_warning::none);
        CHECK(n.maxmemory_policy.empty());
        must_release(l);
    }
}

TEST_CASE("client server checks: an INFO reply too long for the buffer is skipped",
          "[integration][client]") {
    // A master's INFO replication lists its replicas; connections that say
    // they are replicas with long addresses make it longer than the receive
    // buffer, as a future server's INFO might be. The node must not fail, and
    // the replies after it (INFO memory, the lock's) must still line up.
    redis_server srv({"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru",
                      "--repl-diskless-sync-delay", "60"});
    std::vector<std::unique_ptr<redis_client>> fake_replicas;
    const std::string address(200, 'r');
    for (int i = 0; i < 12; ++i) {
        fake_replicas.emplace_back(new redis_client(srv.port()));
        redis_client& r = *fake_replicas.back();
        REQUIRE(r.command({"REPLCONF", "ip-address", address}).text == "OK");
        REQUIRE(r.command({"REPLCONF", "listening-port", std::to_string(10000 + i)}).text == "OK");
        r.send_raw("*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n");
    }
    std::size_t info_size = 0;
    {
        redis_client admin(srv.port());
        for (int tries = 0; tries < 100 && info_size <= EDGELOCK_CLIENT_RX_BUFFER; ++tries) {
            info_size = admin.command({"INFO", "replication"}).text.size();
            if (info_size <= EDGELOCK_CLIENT_RX_BUFFER) {
                sleep_ms(20);
            }
        }
    }
    INFO("INFO replication: " << info_size << " bytes");
    REQUIRE(info_size > EDGELOCK_CLIENT_RX_BUFFER + 512);

    for (const bool resp3 : {false, true}) {
        INFO("resp3 " << resp3);
        const url_list urls({redis_url(srv)});
        client_options co;
        co.resp3 = resp3;
        client<1> c;
        configure(c, urls, co);
        client_lock l;
        REQUIRE(l.attach(c, "checks-long-info", options(5000, 500), no_watchdog()) ==
                client_errc::ok);
        must_acquire(l);
        const node_info n = c.node(0);
        INFO(what(n));
        CHECK(n.state == node_state::ready);
        CHECK(n.error == node_error::none);
        // INFO memory, right behind the skipped reply, was read whole.
        CHECK(n.warning == node_warning::may_evict);
        CHECK(str(n.maxmemory_policy) == "allkeys-lru");
        must_release(l);
        // And the connection is in step: a command gets its own reply.
        CHECK(connection_id(c, 0) > 0);
    }
}

// --- lock requests the server refuses ------------------------------------------------------

TEST_CASE("client server checks: a refused lock request shows in node(i)",
          "[integration][client]") {
    SECTION("WRONGTYPE: the fencing counter holds a hash; then cleared by a good reply") {
        // (A lock key of another type is no error: another client's lock,
        // busy. Our own counter spoilt is one.)
        redis_server srv;
        redis_client admin(srv.port());
        const char* name = "checks-wrongtype";
        REQUIRE(admin.command({"HSET", fence_key_of(name), "f", "v"}).integer == 1);
        const url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 500, lock_mode::fenced), no_watchdog()) ==
                client_errc::ok);
        REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
        const long long id = connection_id(c, 0);

        const node_info n = must_be_refused(c, l);
        CHECK(starts_with(str(n.message), "WRONGTYPE"));
        CHECK(std::string(describe(n.error)) == "the server refused the request");
        // The server's own text, cut to EDGELOCK_CLIENT_MESSAGE (a script
        // error carries the script's position: longer than that on 7.0).
        const edgelock_test::reply own =
            admin.command({"EVALSHA", str(script_fenced_acquire.sha1), "2", key_of(name),
                           fence_key_of(name), "token", "5000"});
        REQUIRE(own.type == '-');
        CHECK(str(n.message) == own.text.substr(0, EDGELOCK_CLIENT_MESSAGE));
        CHECK(connection_id(c, 0) == id);  // the connection stayed up
        CHECK(admin.command({"TYPE", fence_key_of(name)}).text == "hash");

        // The latest reason: a lock reply that is not an error clears it.
        REQUIRE(admin.command({"DEL", fence_key_of(name)}).integer == 1);
        REQUIRE(admin.command({"DEL", key_of(name)}).integer == 1);  // set by `own` before failing
        must_acquire(l);
        INFO(what(c.node(0)));
        CHECK(c.node(0).error == node_error::none);
        CHECK(c.node(0).message.empty());
        CHECK(connection_id(c, 0) == id);
        must_release(l);
    }

    SECTION("NOPERM: an ACL user without SET, EVAL and EVALSHA") {
        redis_server srv(
            {"--user", "locker", "on", ">pw", "~*", "&*", "+@all", "-eval", "-evalsha", "-set"});
        const url_list urls({redis_url(srv, "locker:pw")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, "checks-noperm", options(5000, 500), no_watchdog()) == client_errc::ok);
        const node_info n = must_be_refused(c, l);
        CHECK(starts_with(str(n.message), "NOPERM"));
    }

    SECTION("OOM: maxmemory 1 with noeviction") {
        redis_server srv({"--maxmemory", "1", "--maxmemory-policy", "noeviction"});
        const url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, "checks-oom", options(5000, 500), no_watchdog()) == client_errc::ok);
        const node_info n = must_be_refused(c, l);
        CHECK(starts_with(str(n.message), "OOM"));
        CHECK(n.warning == node_warning::none);  // noeviction: full, but nothing evicted
    }

    SECTION("READONLY: the master became a replica under a ready connection") {
        redis_server srv;
        redis_server other;
        const url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, "checks-readonly", options(5000, 500), no_watchdog()) ==
                client_errc::ok);
        must_acquire(l);
        must_release(l);
        const long long id = connection_id(c, 0);
        {
            redis_client admin(srv.port());
            REQUIRE(admin.command({"REPLICAOF", "127.0.0.1", std::to_string(other.port())}).text ==
                    "OK");
        }
        const node_info n = must_be_refused(c, l);
        CHECK(starts_with(str(n.message), "READONLY"));
        CHECK(connection_id(c, 0) == id);
        // A new connection's set-up sees the replica and fails the node.
        c.disconnect();
        CHECK(c.connect(port::now() + duration::seconds(3)) == 0);
        CHECK(c.node(0).error == node_error::replica);
    }

    SECTION("NOSCRIPT, retried with EVAL, leaves no error behind") {
        redis_server srv;
        redis_client admin(srv.port());
        const url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, "checks-noscript", options(5000, 500), no_watchdog()) ==
                client_errc::ok);
        REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
        REQUIRE(admin.command({"SCRIPT", "FLUSH"}).text == "OK");
        must_acquire(l);
        INFO(what(c.node(0)));
        CHECK(c.node(0).error == node_error::none);
        CHECK(c.node(0).message.empty());
        must_release(l);
    }
}
