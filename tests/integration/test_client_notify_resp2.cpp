// Waiters told over RESP2 against real redis-server processes: a node spoken
// to in RESP2 (client_options::resp3 false, or a server without HELLO) gets a
// second connection subscribed to __redis__:invalidate, and the lock
// connection's tracking is redirected to it. The key deleted, expired or
// flushed wakes the waiter; a subscription killed meanwhile is made again and
// what it missed is not lost; garbage on it makes it anew and keeps the lock
// connection; a server that refuses a part of it keeps the node, which
// polls, without reconnecting in a loop; notify off makes none.
//
// As in test_client_notify.cpp, the waiters' retry delay is 3 s, so a waiter
// that acquires well within it was told.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/notify_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/sub_relay.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

client_options resp2() {
    client_options o;
    o.resp3 = false;
    return o;
}

// Runs the client until node 0 is told of keys, or 3 s pass.
bool until_tracking(client_base& c) {
    const instant t0 = port::now();
    while (!c.node(0).tracking && ms_since(t0) < 3000) {
        REQUIRE(c.run_for(duration::millis(10)) == client_errc::ok);
    }
    return c.node(0).tracking;
}

// The "field=value" of `field` in a CLIENT LIST line, or "".
std::string client_field(const std::string& line, const std::string& field) {
    const std::size_t at = line.find(" " + field + "=");
    if (at == std::string::npos) {
        return "";
    }
    const std::size_t from = at + field.size() + 2;
    return line.substr(from, line.find(' ', from) - from);
}

// The CLIENT LIST lines of the server, one per connection.
std::vector<std::string> client_lines(redis_client& admin, const std::string& type = "") {
    std::vector<std::string> args{"CLIENT", "LIST"};
    if (!type.empty()) {
        args.insert(args.end(), {"TYPE", type});
    }
    const std::string text = admin.command(args).text;
    std::vector<std::string> lines;
    std::size_t from = 0;
    while (from < text.size()) {
        std::size_t end = text.find('\n', from);
        if (end == std::string::npos) {
            end = text.size();
        }
        if (end > from) {
            lines.push_back(" " + text.substr(from, end - from));
        }
        from = end + 1;
    }
    return lines;
}

// The ids of the server's pubsub connections.
std::vector<long long> pubsub_ids(redis_client& admin) {
    std::vector<long long> ids;
    for (const std::string& line : client_lines(admin, "pubsub")) {
        ids.push_back(std::atoll(client_field(line, "id").c_str()));
    }
    return ids;
}

long long server_stat(redis_client& admin, const std::string& field) {
    const std::string text = admin.command({"INFO", "stats"}).text;
    const std::size_t at = text.find(field + ":");
    return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + field.size() + 1);
}

}  // namespace

TEST_CASE("notify resp2: a waiter is told over a subscription", "[integration][notify]") {
    // resp3 off by option, and a server without HELLO, which falls back.
    const bool by_option[] = {true, false};
    for (const bool option : by_option) {
        INFO((option ? "resp3 = false" : "HELLO renamed away"));
        redis_server srv(option ? std::vector<std::string>{}
                                : std::vector<std::string>{"--rename-command", "HELLO", ""});
        const char* name = "notify-resp2";
        const url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls, option ? resp2() : client_options{});
        client_lock l;
        REQUIRE(l.attach(c, name, waiting_options(), no_watchdog()) == client_errc::ok);
        REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
        INFO(what(c.node(0)));
        CHECK(c.node(0).resp2 == !option);  // fell back from RESP3
        REQUIRE(until_tracking(c));

        const std::string key = key_of(name);
        INFO("released");
        told_when_gone(srv, c, l, {"SET", key, "other", "PX", "10000"},
                       marked_release(name, "other"));

        // The waiter's name is tracked in broadcasting mode, its
        // invalidations sent to the subscription.
        redis_client admin(srv.port());
        const std::vector<long long> subs = pubsub_ids(admin);
        REQUIRE(subs.size() == 1);
        const std::string lock_id = std::to_string(connection_id(c, 0));
        bool redirected = false;
        for (const std::string& line : client_lines(admin)) {
            if (client_field(line, "id") == lock_id) {
                INFO(line);
                CHECK(client_field(line, "redir") == std::to_string(subs[0]));
                CHECK(client_field(line, "flags").find('t') != std::string::npos);
                CHECK(client_field(line, "flags").find('B') != std::string::npos);
                redirected = true;
            }
        }
        CHECK(redirected);
        INFO("flushed");
        told_when_gone(srv, c, l, {"SET", key, "other", "PX", "10000"}, {"FLUSHALL"}, false);
    }
}

TEST_CASE("notify resp2: a node given by name is told as any node", "[integration][notify]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "notify-resp2-named";
    // localhost: looked up off the client's thread, maybe ::1 first (nothing
    // listens there), then 127.0.0.1.
    const url_list urls({"redis://localhost:" + std::to_string(srv.port())});
    client<1> c;
    configure(c, urls, resp2());
    client_lock l;
    REQUIRE(l.attach(c, name, waiting_options(), no_watchdog()) == client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    INFO(what(c.node(0)));
    REQUIRE(until_tracking(c));
    const std::string key = key_of(name);
    told_when_gone(srv, c, l, {"SET", key, "other", "PX", "10000"}, marked_release(name, "other"));
    // Its lock connection redirects to its subscription (which connected to
    // the address the lock connection reached, with no lookup of its own).
    const std::vector<long long> subs = pubsub_ids(admin);
    REQUIRE(subs.size() == 1);
    const std::string lock_id = std::to_string(connection_id(c, 0));
    bool redirected = false;
    for (const std::string& line : client_lines(admin)) {
        redirected = redirected || (client_field(line, "id") == lock_id &&
                                    client_field(line, "redir") == std::to_string(subs[0]));
    }
    CHECK(redirected);
}

TEST_CASE("notify resp2: what a killed subscription missed is not lost", "[integration][notify]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "notify-resp2-killed";
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls, resp2());
    client_lock l;
    REQUIRE(l.attach(c, name, waiting_options(), no_watchdog()) == client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    REQUIRE(until_tracking(c));
    const std::vector<long long> before = pubsub_ids(admin);
    REQUIRE(before.size() == 1);
    const long long lock_id = connection_id(c, 0);

    REQUIRE(admin.command({"SET", key_of(name), "other", "PX", "10000"}).text == "OK");
    const instant t0 = port::now();
    op_result r;
    {
        // The subscription goes, and the key with it before the client can
        // have subscribed again: the server had no one to tell.
        redis_client actor(srv.port());
        const later go(150, [&] {
            actor.command({"CLIENT", "KILL", "TYPE", "pubsub"});
            actor.command({"DEL", key_of(name)});
        });
        r = l.acquire(duration::seconds(6));
    }
    INFO(what(r));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(ms_since(t0) < told_bound_ms);
    CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
    must_release(l);

    // A new subscription, the lock connection kept and redirected to it.
    REQUIRE(until_tracking(c));
    const std::vector<long long> after = pubsub_ids(admin);
    REQUIRE(after.size() == 1);
    CHECK(after[0] != before[0]);
    CHECK(connection_id(c, 0) == lock_id);
    // Its name was asked for anew, redirected to the new one, by the try
    // that took the key.
    told_when_gone(srv, c, l, {"SET", key_of(name), "other", "PX", "10000"},
                   marked_release(name, "other"), false);
}

TEST_CASE("notify resp2: bad bytes on the subscription make it anew, the lock connection kept",
          "[integration][notify][bad-input]") {
    redis_server srv;
    sub_relay relay(srv.port());  // writes bytes of its own to the subscription
    const char* name = "notify-resp2-bad";
    const url_list urls({redis_url(relay.port())});
    client<1> c;
    configure(c, urls, resp2());
    client_lock l;
    REQUIRE(l.attach(c, name, waiting_options(), no_watchdog()) == client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    REQUIRE(until_tracking(c));
    const long long lock_id = connection_id(c, 0);

    // Not an invalidation: read and let be.
    relay.inject("*3\r\n$7\r\nmessage\r\n$5\r\nother\r\n$1\r\nx\r\n");
    REQUIRE(c.run_for(duration::millis(300)) == client_errc::ok);
    CHECK(c.node(0).tracking);
    CHECK(relay.accepted() == 2);

    struct bad_case {
        const char* what;
        std::string bytes;
    };
    const bad_case cases[] = {
        {"not RESP", "garbage\r\n"},
        {"longer than the buffer", "$100000\r\n" + std::string(1000, 'x')},
        {"an error", "-ERR nonsense\r\n"},
    };
    int accepted = relay.accepted();
    for (const bad_case& k : cases) {
        INFO(k.what);
        relay.inject(k.bytes);
        const instant t0 = port::now();
        while (c.node(0).tracking && ms_since(t0) < 2000) {
            REQUIRE(c.run_for(duration::millis(5)) == client_errc::ok);
        }
        INFO(what(c.node(0)));
        CHECK_FALSE(c.node(0).tracking);
        REQUIRE(until_tracking(c));  // made again after the backoff
        CHECK(relay.accepted() == accepted + 1);
        accepted = relay.accepted();
        CHECK(c.node(0).state == node_state::ready);
        CHECK(connection_id(c, 0) == lock_id);
    }
    // And a waiter is still told.
    told_when_gone(srv, c, l, {"SET", key_of(name), "other", "PX", "10000"},
                   marked_release(name, "other"));

    // An invalidation whose keys cannot be read wakes every waiter once
    // (what it said is lost); the subscription stays.
    redis_client admin(srv.port());
    REQUIRE(admin.command({"SET", key_of(name), "other", "PX", "10000"}).text == "OK");
    REQUIRE(l.start_acquire(1000, duration::seconds(6)) == client_errc::ok);
    REQUIRE(c.run_for(duration::millis(200)) == client_errc::ok);  // busy, registered
    REQUIRE_FALSE(l.held());
    REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
    relay.inject("*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n:1\r\n");
    REQUIRE(c.run_for(duration::millis(300)) == client_errc::ok);
    // One attempt (a told waiter's: PTTL, SET), still busy.
    CHECK(command_calls(admin, "pttl") == 1);
    CHECK(command_calls(admin, "evalsha") == 0);
    CHECK(c.node(0).tracking);
    CHECK(relay.accepted() == accepted);
    CHECK_FALSE(l.held());
}

TEST_CASE("notify resp2: a server that refuses a part of it keeps the node",
          "[integration][notify]") {
    struct refusal {
        const char* what;
        const char* rule;
        bool subscribed;  // the subscription stands; a waiter's CLIENT TRACKING is refused
    };
    const refusal cases[] = {
        {"no SUBSCRIBE", "-subscribe", false},
        {"no CLIENT TRACKING", "-client|tracking", true},
        {"no CLIENT ID", "-client|id", false},
    };
    for (const refusal& k : cases) {
        INFO(k.what);
        redis_server srv({"--user", "default", "on", "nopass", "~*", "&*", "+@all", k.rule});
        redis_client admin(srv.port());
        const url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls, resp2());
        client_lock l;
        REQUIRE(l.attach(c, "notify-resp2-refused", lock_options{}, no_watchdog()) ==
                client_errc::ok);
        REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
        REQUIRE(c.run_for(duration::millis(200)) == client_errc::ok);
        const long long connections = server_stat(admin, "total_connections_received");
        // Asked once, then left alone: no new connection a backoff.
        REQUIRE(c.run_for(duration::millis(1000)) == client_errc::ok);
        INFO(what(c.node(0)));
        CHECK(c.node(0).state == node_state::ready);
        CHECK(c.node(0).tracking == k.subscribed);
        CHECK(server_stat(admin, "total_connections_received") == connections);
        // The lock connection and admin's (and the subscription).
        CHECK(client_lines(admin).size() == (k.subscribed ? 3u : 2u));
        // And the lock works, by polling: a waiter asks for its name once.
        REQUIRE(admin.command({"SET", "notify-resp2-refused", "other", "PX", "300"}).text == "OK");
        REQUIRE(admin.command({"CONFIG", "RESETSTAT"}).text == "OK");
        const op_result r = l.acquire(duration::seconds(4));
        INFO(what(r));
        REQUIRE(r.event.kind == lock_event_kind::acquired);
        CHECK(error_calls(admin, "NOPERM") == (k.subscribed ? 1 : 0));
        must_release(l);
    }
}

TEST_CASE("notify resp2: notify off, or RESP3, makes no subscription", "[integration][notify]") {
    redis_server srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    client_options off = resp2();
    off.notify = false;
    client<1> quiet;
    configure(quiet, urls, off);
    REQUIRE(quiet.connect(port::now() + duration::seconds(3)) == 1);
    client_options three;
    three.resp3 = true;
    client<1> pushed;
    configure(pushed, urls, three);
    REQUIRE(pushed.connect(port::now() + duration::seconds(3)) == 1);
    REQUIRE(quiet.run_for(duration::millis(300)) == client_errc::ok);
    REQUIRE(pushed.run_for(duration::millis(300)) == client_errc::ok);
    CHECK_FALSE(quiet.node(0).tracking);
    CHECK(pushed.node(0).tracking);  // on its own connection
    CHECK(pubsub_ids(admin).empty());
    CHECK(client_lines(admin).size() == 3);  // quiet, pushed and admin
}
