// A redis-sentinel:// node's parts alone: the resolver (whom to ask, in what
// time, what to ask, what an answer means) without a socket, and the watch
// over loopback TCP with the test as the sentinel.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/detail/sentinel_resolver.hpp"
#include "edgelock/detail/sentinel_watch.hpp"
#include "edgelock/resp_decoder.hpp"
#include "part_server.hpp"
#include "tools/skip.hpp"

using edgelock::client_options;
using edgelock::duration;
using edgelock::instant;
using edgelock::node_address;
using edgelock::resp_node;
using edgelock::str_view;
using edgelock::detail::peer;
using edgelock::detail::sentinel_resolver;
using edgelock::detail::sentinel_watch;
using edgelock::detail::watch_link;
using edgelock::detail::watch_phase;
using edgelock_test::part_server;
using edgelock_test::pump;
namespace port = edgelock::port;

namespace {

using answer = sentinel_resolver::answer;

// The address points into `url`: keep it.
node_address parse(const char* url) {
    node_address a;
    REQUIRE(edgelock::parse_node_url(str_view(url), a) == edgelock::url_errc::ok);
    return a;
}

std::string text(str_view s) {
    return std::string(s.data, s.size);
}

std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

std::string asked(const sentinel_resolver& r, const node_address& a) {
    str_view host;
    std::uint16_t port = 0;
    if (!r.sentinel(a, host, port)) {
        return "none";
    }
    return text(host) + ":" + std::to_string(port);
}

// The commands in buf, each as its arguments joined by spaces.
std::vector<std::string> commands(const char* buf, std::size_t size) {
    std::vector<std::string> out;
    for (std::size_t at = 0; at < size;) {
        resp_node nodes[8];
        const edgelock::resp_result r = edgelock::resp_decode_whole(buf + at, size - at, nodes, 8);
        REQUIRE(r.status == edgelock::resp_status::complete);
        std::string joined;
        for (std::size_t i = 1; i < r.nodes; ++i) {
            joined += (i > 1 ? " " : "") + text(nodes[i].text);
        }
        out.push_back(joined);
        at += r.size;
    }
    return out;
}

// A reply as the resolver is given it.
struct reply {
    resp_node nodes[8];
    std::size_t count = 0;
    std::string wire;

    explicit reply(std::string w) : wire(std::move(w)) {
        const edgelock::resp_result r =
            edgelock::resp_decode_whole(wire.data(), wire.size(), nodes, 8);
        REQUIRE(r.status == edgelock::resp_status::complete);
        count = r.nodes;
    }
};

// The reply stays until the next one: why() points into it.
answer on_reply(sentinel_resolver& r, std::uint32_t tag, const std::string& wire,
                const node_address& a, peer& master) {
    static std::unique_ptr<reply> last;
    last.reset(new reply(wire));
    return r.on_reply(tag, last->nodes, last->count, a, master);
}

const char* const three = "redis-sentinel://s1:26379,s2:26380,s3/mymaster";

}  // namespace

TEST_CASE("sentinel resolver: each sentinel in turn within its time and the connect's",
          "[sentinel_parts]") {
    const node_address a = parse(three);
    sentinel_resolver r;
    CHECK_FALSE(r.asking());
    CHECK(r.deadline().is_never());
    CHECK(asked(r, a) == "s1:26379");

    const instant now{1000000};
    const duration each = duration::millis(250);
    r.begin(now, now + duration::seconds(1), each);
    CHECK(r.asking());
    CHECK(r.deadline() == now + each);
    CHECK_FALSE(r.expired(instant{(now + each).us - 1}));
    CHECK(r.expired(now + each));

    CHECK(r.next(a, now, now + duration::seconds(1), each));
    CHECK(asked(r, a) == "s2:26380");
    // A new connection to it starts its own time.
    const instant later = now + duration::millis(300);
    r.restart(later, now + duration::seconds(1), each);
    CHECK(r.deadline() == later + each);
    // What is left of the connect's time bounds it.
    r.restart(later, now + duration::millis(400), each);
    CHECK(r.deadline() == now + duration::millis(400));

    CHECK(r.next(a, later, now + duration::seconds(1), each));
    CHECK(asked(r, a) == "s3:26379");
    CHECK_FALSE(r.next(a, later, now + duration::seconds(1), each));  // every one asked
    CHECK_FALSE(r.asking());
    CHECK(r.deadline().is_never());
    CHECK_FALSE(r.expired(now + duration::seconds(100)));

    SECTION("begin bounds the first by the connect's deadline") {
        r.begin(now, now + duration::millis(100), each);
        CHECK(r.deadline() == now + duration::millis(100));
        CHECK(asked(r, a) == "s1:26379");  // none answered: the front stays
    }
    SECTION("no time left: no next one") {
        r.begin(now, now + duration::seconds(1), each);
        CHECK_FALSE(r.next(a, now + duration::seconds(1), now + duration::seconds(1), each));
        CHECK_FALSE(r.asking());
    }
    SECTION("stop") {
        r.begin(now, now + duration::seconds(1), each);
        r.stop();
        CHECK_FALSE(r.asking());
        CHECK(r.deadline().is_never());
    }
    SECTION("one sentinel: no next") {
        const node_address one = parse("redis-sentinel://s1/m");
        sentinel_resolver solo;
        solo.begin(now, now + duration::seconds(1), each);
        CHECK_FALSE(solo.next(one, now, now + duration::seconds(1), each));
    }
}

TEST_CASE("sentinel resolver: the one that answered is asked first next time", "[sentinel_parts]") {
    const node_address a = parse(three);
    sentinel_resolver r;
    const instant now{5000000};
    const instant end = now + duration::seconds(1);
    const duration each = duration::millis(100);
    r.begin(now, end, each);
    REQUIRE(r.next(a, now, end, each));
    peer master;
    CHECK(on_reply(r, sentinel_resolver::tag_master, "*2\r\n$8\r\n10.0.0.7\r\n$4\r\n6380\r\n", a,
                   master) == answer::found);
    CHECK(text(master.host_view()) == "10.0.0.7");
    CHECK(master.port == 6380);
    CHECK(r.front() == 1);
    CHECK_FALSE(r.asking());  // found: asking ends
    CHECK(r.deadline().is_never());

    // From s2, round to s1.
    r.begin(now, end, each);
    CHECK(asked(r, a) == "s2:26380");
    REQUIRE(r.next(a, now, end, each));
    CHECK(asked(r, a) == "s3:26379");
    REQUIRE(r.next(a, now, end, each));
    CHECK(asked(r, a) == "s1:26379");
    CHECK(on_reply(r, sentinel_resolver::tag_master, "*2\r\n$1\r\nh\r\n$1\r\n1\r\n", a, master) ==
          answer::found);
    CHECK(r.front() == 0);  // (1 + 2) % 3
    r.begin(now, end, each);
    CHECK(asked(r, a) == "s1:26379");
    CHECK(r.next(a, now, end, each));
    CHECK(r.next(a, now, end, each));
    CHECK_FALSE(r.next(a, now, end, each));  // three, not four
}

TEST_CASE("sentinel resolver: the question with and without the sentinels' credentials",
          "[sentinel_parts]") {
    const node_address a = parse("redis-sentinel://:masterpw@s1/mymaster");
    char buf[512];
    bool auth = true;
    SECTION("none: the question alone (the URL's password is the master's)") {
        client_options o;
        const std::size_t size = sentinel_resolver::write_question(buf, sizeof buf, a, o, auth);
        CHECK_FALSE(auth);
        CHECK(commands(buf, size) ==
              std::vector<std::string>{"SENTINEL get-master-addr-by-name mymaster"});
    }
    SECTION("a password") {
        client_options o;
        o.sentinel_password = "spw";
        const std::size_t size = sentinel_resolver::write_question(buf, sizeof buf, a, o, auth);
        CHECK(auth);
        CHECK(commands(buf, size) ==
              (std::vector<std::string>{"AUTH spw", "SENTINEL get-master-addr-by-name mymaster"}));
    }
    SECTION("a user and a password") {
        client_options o;
        o.sentinel_username = "watcher";
        o.sentinel_password = "spw";
        const std::size_t size = sentinel_resolver::write_question(buf, sizeof buf, a, o, auth);
        CHECK(auth);
        CHECK(commands(buf, size) ==
              (std::vector<std::string>{"AUTH watcher spw",
                                        "SENTINEL get-master-addr-by-name mymaster"}));
    }
    SECTION("a user without a password sends no AUTH") {
        client_options o;
        o.sentinel_username = "watcher";
        const std::size_t size = sentinel_resolver::write_question(buf, sizeof buf, a, o, auth);
        CHECK_FALSE(auth);
        CHECK(commands(buf, size).size() == 1);
    }
}

TEST_CASE("sentinel resolver: a question that does not fit is not written at all",
          "[sentinel_parts]") {
    const node_address a = parse("redis-sentinel://s1/mymaster");
    client_options o;
    const std::string password(100, 'p');
    o.sentinel_password = str_view(password.c_str());
    char buf[512];
    bool auth = false;
    const std::size_t whole = sentinel_resolver::write_question(buf, sizeof buf, a, o, auth);
    REQUIRE(auth);
    for (std::size_t cap = 0; cap < whole; ++cap) {
        CAPTURE(cap);
        auth = false;
        const std::size_t size = sentinel_resolver::write_question(buf, cap, a, o, auth);
        // Nothing: never past the end, never the question without its AUTH.
        CHECK(size == 0);
        CHECK(size <= cap);
    }
}

TEST_CASE("sentinel resolver: what each answer means", "[sentinel_parts]") {
    const node_address a = parse(three);
    sentinel_resolver r;
    const instant now{1000000};
    r.begin(now, now + duration::seconds(1), duration::millis(100));
    peer master;

    SECTION("AUTH's +OK: wait for the address") {
        CHECK(on_reply(r, sentinel_resolver::tag_auth, "+OK\r\n", a, master) == answer::wait);
        CHECK(r.asking());
        CHECK(master.port == 0);
    }
    SECTION("AUTH refused: refused with the sentinel's words") {
        CHECK(on_reply(r, sentinel_resolver::tag_auth,
                       "-WRONGPASS invalid username-password pair\r\n", a,
                       master) == answer::refused);
        CHECK(text(r.why()) == "WRONGPASS invalid username-password pair");
    }
    SECTION("[host, port]: found, in RESP2 and RESP3") {
        CHECK(on_reply(r, sentinel_resolver::tag_master, "*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6379\r\n",
                       a, master) == answer::found);
        CHECK(text(master.host_view()) == "127.0.0.1");
        CHECK(master.port == 6379);
        CHECK(r.front() == 0);
        peer m2;
        CHECK(on_reply(r, sentinel_resolver::tag_master, "*2\r\n+::1\r\n+65535\r\n", a, m2) ==
              answer::found);
        CHECK(text(m2.host_view()) == "::1");
        CHECK(m2.port == 65535);
    }
    SECTION("null: this sentinel does not know the master") {
        for (const char* null : {"*-1\r\n", "$-1\r\n", "_\r\n"}) {
            CAPTURE(null);
            CHECK(on_reply(r, sentinel_resolver::tag_master, null, a, master) == answer::refused);
            CHECK(text(r.why()).find("does not know") != std::string::npos);
        }
        CHECK(master.port == 0);
    }
    SECTION("an error: refused with its text") {
        CHECK(on_reply(r, sentinel_resolver::tag_master,
                       "-NOPERM this user has no permissions to run the 'sentinel' command\r\n", a,
                       master) == answer::refused);
        CHECK(text(r.why()) == "NOPERM this user has no permissions to run the 'sentinel' command");
        CHECK(on_reply(r, sentinel_resolver::tag_master, "!9\r\nERR nope!\r\n", a, master) ==
              answer::refused);
        CHECK(text(r.why()) == "ERR nope!");
        // The next answer's reason replaces it.
        CHECK(on_reply(r, sentinel_resolver::tag_master, ":1\r\n", a, master) == answer::refused);
        CHECK(text(r.why()) == "a sentinel answer that is not [host, port]");
    }
    SECTION("not [host, port]") {
        const std::string host_max(edgelock::node_url_max_host, 'h');
        const std::string host_long(edgelock::node_url_max_host + 1, 'h');
        const std::string shapes[] = {
            "+OK\r\n",
            ":6379\r\n",
            "*0\r\n",
            "*1\r\n$1\r\nh\r\n",
            "*3\r\n$1\r\nh\r\n$4\r\n6379\r\n$1\r\nx\r\n",
            "*2\r\n$0\r\n\r\n$4\r\n6379\r\n",         // no host
            "*2\r\n$1\r\nh\r\n$1\r\n0\r\n",           // port 0
            "*2\r\n$1\r\nh\r\n$5\r\n65536\r\n",       // port too big
            "*2\r\n$1\r\nh\r\n$4\r\n63x9\r\n",        // not a number
            "*2\r\n$1\r\nh\r\n$0\r\n\r\n",            // no port
            "*2\r\n$1\r\nh\r\n:6379\r\n",             // an integer port: Sentinel sends text
            "*2\r\n*1\r\n$1\r\nh\r\n$4\r\n6379\r\n",  // host an array
            "*2\r\n" + bulk(host_long) + "$4\r\n6379\r\n",
        };
        for (const std::string& s : shapes) {
            CAPTURE(s);
            CHECK(on_reply(r, sentinel_resolver::tag_master, s, a, master) == answer::refused);
            CHECK(text(r.why()) == "a sentinel answer that is not [host, port]");
            CHECK(master.port == 0);
        }
        CHECK(r.asking());  // refusals leave the asking to the caller
        CHECK(on_reply(r, sentinel_resolver::tag_master, "*2\r\n" + bulk(host_max) + "$1\r\n1\r\n",
                       a, master) == answer::found);
        CHECK(text(master.host_view()) == host_max);
    }
    SECTION("a reply too large to read") {
        CHECK(r.on_reply(sentinel_resolver::tag_master, nullptr, 0, a, master) == answer::refused);
        CHECK(text(r.why()) == "a sentinel answer that is not [host, port]");
    }
}

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
        CHECK(w.watch.next_deadline(true, port::now()).is_never());
        CHECK(w.tell(fd, switch_subscribed) == edgelock::detail::watch_none);
        CHECK(w.watch.phase() == watch_phase::listening);
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
