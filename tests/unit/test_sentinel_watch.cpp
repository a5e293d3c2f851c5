// A redis-sentinel:// node's watch alone, over loopback TCP with the test as
// the sentinel.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "edgelock/client.hpp"
#include "edgelock/detail/sentinel_watch.hpp"
#include "part_server.hpp"

using edgelock::client_options;
using edgelock::duration;
using edgelock::instant;
using edgelock::node_address;
using edgelock::resp_node;
using edgelock::str_view;
using edgelock::detail::sentinel_watch;
using edgelock::detail::watch_link;
using edgelock::detail::watch_phase;
using edgelock_test::bulk;
using edgelock_test::parse;
using edgelock_test::part_server;
using edgelock_test::pump;
using edgelock_test::text;
namespace port = edgelock::port;

namespace {

const std::string switch_subscribed = "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n";

std::string switch_message(const std::string& payload) {
    return "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n" + bulk(payload);
}

// A watch and its client, watching two sentinels the test plays.
struct watch_rig {
    part_server first;
    part_server second;
    std::string url;
    node_address address;
    client_options options;
    edgelock::random_source random = edgelock::client_base::system_random();
    resp_node nodes[EDGELOCK_CLIENT_REPLY_NODES];
    watch_link link;
    sentinel_watch watch;

    watch_rig() {
        url = "redis-sentinel://127.0.0.1:" + first.port_text() +
              ",127.0.0.1:" + second.port_text() + "/mymaster";
        address = parse(url.c_str());
        options.sentinel_timeout = duration::millis(100);
        options.reconnect_min = duration::millis(40);
        options.reconnect_max = duration::millis(400);
        link.via = &edgelock::plain_transport();
        link.options = &options;
        link.address = &address;
        link.front = 0;
        link.lookup_max_age = duration::seconds(1);
        link.random = &random;
        link.nodes = nodes;
        link.node_capacity = EDGELOCK_CLIENT_REPLY_NODES;
    }
    ~watch_rig() { watch.shut(edgelock::plain_transport()); }

    // Connects (to `to`) and takes SUBSCRIBE there: the sentinel's end.
    int subscribe(part_server& to, std::vector<std::string> want = {"SUBSCRIBE +switch-master"}) {
        pump(watch, link, true, [&] {
            return watch.phase() == watch_phase::listening || watch.phase() == watch_phase::backoff;
        });
        REQUIRE(watch.phase() == watch_phase::listening);
        const int fd = to.accept();
        REQUIRE(fd >= 0);
        CHECK(to.commands(fd, want.size()) == want);
        return fd;
    }

    // Sends to the watch and reads until it says something or closes.
    std::uint8_t tell(int fd, const std::string& bytes) {
        part_server::send(fd, bytes);
        port::wait_entry e;
        e.fd = watch.fd();
        e.want = port::want_read;
        REQUIRE(port::wait(&e, 1, port::now() + duration::seconds(1)) == 1);
        return watch.on_ready(e.ready, link, port::now());
    }
};

}  // namespace

TEST_CASE("sentinel watch: subscribes to +switch-master at the front sentinel",
          "[sentinel_parts]") {
    watch_rig w;
    CHECK(w.watch.phase() == watch_phase::off);
    const instant now = port::now();
    CHECK(w.watch.next_deadline(true, now) == now);
    CHECK(w.watch.next_deadline(false, now).is_never());
    CHECK(w.watch.service(false, w.link, now) == edgelock::detail::watch_none);
    CHECK(w.watch.phase() == watch_phase::off);

    SECTION("without credentials") {
        const int fd = w.subscribe(w.first);
        // The confirmation is awaited sentinel_timeout; then silence is.
        CHECK(w.watch.next_deadline(true, port::now()) <= port::now() + w.options.sentinel_timeout);
        CHECK(w.tell(fd, switch_subscribed) == edgelock::detail::watch_none);
        CHECK(w.watch.phase() == watch_phase::listening);
        CHECK(w.watch.next_deadline(true, port::now()) > port::now() + w.options.sentinel_timeout);
    }
    SECTION("with the sentinels' own credentials, AUTH first") {
        w.options.sentinel_username = "watcher";
        w.options.sentinel_password = "spw";
        const int fd = w.subscribe(w.first, {"AUTH watcher spw", "SUBSCRIBE +switch-master"});
        CHECK(w.tell(fd, "+OK\r\n" + switch_subscribed) == edgelock::detail::watch_none);
        CHECK(w.watch.phase() == watch_phase::listening);
    }
    SECTION("the front one is the one that answered last") {
        w.link.front = 1;
        w.subscribe(w.second);
        CHECK(w.first.accept(20) < 0);
    }
}

TEST_CASE("sentinel watch: one that never confirms, or falls silent, gives way to the next",
          "[sentinel_parts]") {
    watch_rig w;
    // Backing off from `at`: once that ends, to the second sentinel.
    const auto next_one = [&](instant at) {
        CHECK(w.watch.phase() == watch_phase::backoff);
        w.watch.service(true, w.link, at + w.options.reconnect_max);
        pump(w.watch, w.link, true, [&] { return w.watch.phase() == watch_phase::listening; });
        const int fd = w.second.accept();
        REQUIRE(fd >= 0);
        CHECK(w.second.commands(fd, 1) == std::vector<std::string>{"SUBSCRIBE +switch-master"});
    };
    const int fd = w.subscribe(w.first);
    SECTION("SUBSCRIBE never confirmed") {
        const instant by = w.watch.next_deadline(true, port::now());
        CHECK(w.watch.service(true, w.link, by) == edgelock::detail::watch_none);
        next_one(by);
    }
    SECTION("confirmed, then silent: a PING") {
        REQUIRE(w.tell(fd, switch_subscribed) == edgelock::detail::watch_none);
        const instant quiet = w.watch.next_deadline(true, port::now());
        CHECK(w.watch.service(true, w.link, quiet) == edgelock::detail::watch_none);
        CHECK(w.first.commands(fd, 1) == std::vector<std::string>{"PING"});
        const instant by = w.watch.next_deadline(true, quiet);
        CHECK(by == quiet + w.options.sentinel_timeout);
        SECTION("answered as Redis does in subscribed mode: it stays") {
            CHECK(w.tell(fd, "*2\r\n$4\r\npong\r\n$0\r\n\r\n") == edgelock::detail::watch_none);
            CHECK(w.watch.phase() == watch_phase::listening);
            CHECK(w.watch.next_deadline(true, port::now()) >
                  port::now() + w.options.sentinel_timeout);
        }
        SECTION("unanswered: the next sentinel") {
            CHECK(w.watch.service(true, w.link, by) == edgelock::detail::watch_none);
            next_one(by);
        }
    }
}

TEST_CASE("sentinel watch: a switch of its master is announced and others are not",
          "[sentinel_parts]") {
    watch_rig w;
    const int fd = w.subscribe(w.first);
    REQUIRE(w.tell(fd, switch_subscribed) == edgelock::detail::watch_none);

    CHECK(w.tell(fd, switch_message("othermaster 10.0.0.1 6379 10.0.0.9 6390")) ==
          edgelock::detail::watch_none);
    CHECK(w.watch.announced().port == 0);

    CHECK(w.tell(fd, switch_message("mymaster 10.0.0.1 6379 10.0.0.2 6380")) ==
          edgelock::detail::watch_switched);
    CHECK(text(w.watch.announced().host_view()) == "10.0.0.2");
    CHECK(w.watch.announced().port == 6380);

    // A name that only starts like it, and unreadable addresses: nothing.
    const char* const others[] = {
        "mymaster2 10.0.0.1 6379 10.0.0.3 6381", "mymaste 10.0.0.1 6379 10.0.0.3 6381",
        "mymaster 10.0.0.1 6379 10.0.0.3 0",     "mymaster 10.0.0.1 6379 10.0.0.3 65536",
        "mymaster 10.0.0.1 6379 10.0.0.3",       "mymaster",
    };
    for (const char* o : others) {
        CAPTURE(o);
        CHECK(w.tell(fd, switch_message(o)) == edgelock::detail::watch_none);
        CHECK(w.watch.announced().port == 6380);
    }
    // Two in one read: the latest wins.
    CHECK(w.tell(fd, switch_message("mymaster a 1 10.0.0.4 7000") +
                         switch_message("mymaster b 1 10.0.0.5 7001")) ==
          edgelock::detail::watch_switched);
    CHECK(text(w.watch.announced().host_view()) == "10.0.0.5");
    CHECK(w.watch.phase() == watch_phase::listening);
}

TEST_CASE("sentinel watch: an error backs off to the next sentinel", "[sentinel_parts]") {
    watch_rig w;
    const int fd = w.subscribe(w.first);
    part_server::send(fd, "-NOPERM this user has no permissions to access the channel\r\n");
    port::wait_entry e;
    e.fd = w.watch.fd();
    e.want = port::want_read;
    REQUIRE(port::wait(&e, 1, port::now() + duration::seconds(1)) == 1);
    const instant now = port::now();
    CHECK(w.watch.on_ready(e.ready, w.link, now) == edgelock::detail::watch_none);
    CHECK(w.watch.phase() == watch_phase::backoff);
    CHECK(w.watch.fd() < 0);
    CHECK(part_server::closed_by_peer(fd));
    const instant again = w.watch.next_deadline(true, now);
    CHECK(again >= now + duration::millis(20));
    CHECK(again <= now + duration::millis(40));
    CHECK(w.watch.next_deadline(false, now).is_never());
    CHECK(w.watch.service(true, w.link, instant{again.us - 1}) == edgelock::detail::watch_none);
    CHECK(w.watch.phase() == watch_phase::backoff);
    // Its time over: the second sentinel.
    CHECK(w.watch.service(true, w.link, again) == edgelock::detail::watch_none);
    CHECK(w.watch.phase() != watch_phase::backoff);
    w.subscribe(w.second);
    CHECK(w.first.accept(20) < 0);
}

TEST_CASE("sentinel watch: a message it cannot read is a missed switch", "[sentinel_parts]") {
    watch_rig w;
    const int fd = w.subscribe(w.first);
    REQUIRE(w.tell(fd, switch_subscribed) == edgelock::detail::watch_none);
    SECTION("not RESP") {
        CHECK(w.tell(fd, "?what\r\n") == edgelock::detail::watch_missed);
    }
    SECTION("more nodes than the array") {
        std::string m = "*30\r\n";
        for (int i = 0; i < 30; ++i) {
            m += "*1\r\n:1\r\n";
        }
        REQUIRE(m.size() < 600);  // fits the buffer: only the nodes do not
        CHECK(w.tell(fd, m) == edgelock::detail::watch_missed);
    }
    SECTION("longer than its buffer") {
        CHECK((w.tell(fd, switch_message("mymaster " + std::string(2000, 'x'))) &
               edgelock::detail::watch_missed) != 0);
    }
    CHECK(w.watch.phase() == watch_phase::backoff);
    CHECK(w.watch.fd() < 0);
    CHECK(w.watch.announced().port == 0);
}

TEST_CASE("sentinel watch: a connect not taken within sentinel_timeout backs off",
          "[sentinel_parts]") {
    watch_rig w;
    const instant t0 = port::now();
    REQUIRE(w.watch.service(true, w.link, t0) == edgelock::detail::watch_none);
    // Loopback completes the TCP handshake into the listener's backlog; the
    // watch is not told (no on_ready), as if the connect never completed.
    REQUIRE(w.watch.phase() == watch_phase::connecting);
    CHECK(w.watch.fd() >= 0);
    CHECK(w.watch.wants(*w.link.via) == port::want_write);
    const instant deadline = t0 + w.options.sentinel_timeout;
    CHECK(w.watch.next_deadline(true, t0) == deadline);
    CHECK(w.watch.next_deadline(false, t0) == deadline);  // ends even when not wanted
    CHECK(w.watch.service(true, w.link, instant{deadline.us - 1}) == edgelock::detail::watch_none);
    CHECK(w.watch.phase() == watch_phase::connecting);
    CHECK(w.watch.service(true, w.link, deadline) == edgelock::detail::watch_none);
    CHECK(w.watch.phase() == watch_phase::backoff);
    CHECK(w.watch.fd() < 0);
    const instant again = w.watch.next_deadline(true, deadline);
    CHECK(again >= deadline + duration::millis(20));
    CHECK(again <= deadline + duration::millis(40));
}

TEST_CASE("sentinel watch: shut closes it and it starts again from off", "[sentinel_parts]") {
    watch_rig w;
    const int fd = w.subscribe(w.first);
    w.watch.shut(*w.link.via);
    CHECK(w.watch.phase() == watch_phase::off);
    CHECK(w.watch.fd() < 0);
    CHECK(part_server::closed_by_peer(fd));
    const instant now = port::now();
    CHECK(w.watch.next_deadline(true, now) == now);
    CHECK(w.watch.next_deadline(false, now).is_never());
    // Not wanted: stays off.
    CHECK(w.watch.service(false, w.link, now) == edgelock::detail::watch_none);
    CHECK(w.watch.phase() == watch_phase::off);
}
