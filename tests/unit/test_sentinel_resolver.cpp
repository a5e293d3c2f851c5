// A redis-sentinel:// node's resolver alone (whom to ask, in what time, what
// to ask, what an answer means), without a socket.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/detail/sentinel_resolver.hpp"
#include "edgelock/resp_decoder.hpp"
#include "part_server.hpp"

using edgelock::client_options;
using edgelock::duration;
using edgelock::instant;
using edgelock::node_address;
using edgelock::resp_node;
using edgelock::str_view;
using edgelock::detail::peer;
using edgelock::detail::sentinel_resolver;
using edgelock_test::bulk;
using edgelock_test::parse;
using edgelock_test::text;
namespace port = edgelock::port;

namespace {

using answer = sentinel_resolver::answer;

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

    CHECK(r.next(a, now, now + duration::seconds(1)));
    CHECK(asked(r, a) == "s2:26380");
    // A new connection to it starts its own time.
    const instant later = now + duration::millis(300);
    r.restart(later, now + duration::seconds(1), each);
    CHECK(r.deadline() == later + each);
    // What is left of the connect's time bounds it.
    r.restart(later, now + duration::millis(400), each);
    CHECK(r.deadline() == now + duration::millis(400));

    CHECK(r.next(a, later, now + duration::seconds(1)));
    CHECK(asked(r, a) == "s3:26379");
    CHECK_FALSE(r.next(a, later, now + duration::seconds(1)));  // every one asked
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
        CHECK_FALSE(r.next(a, now + duration::seconds(1), now + duration::seconds(1)));
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
        CHECK_FALSE(solo.next(one, now, now + duration::seconds(1)));
    }
}

TEST_CASE("sentinel resolver: the one that answered is asked first next time", "[sentinel_parts]") {
    const node_address a = parse(three);
    sentinel_resolver r;
    const instant now{5000000};
    const instant end = now + duration::seconds(1);
    const duration each = duration::millis(100);
    r.begin(now, end, each);
    REQUIRE(r.next(a, now, end));
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
    REQUIRE(r.next(a, now, end));
    CHECK(asked(r, a) == "s3:26379");
    REQUIRE(r.next(a, now, end));
    CHECK(asked(r, a) == "s1:26379");
    CHECK(on_reply(r, sentinel_resolver::tag_master, "*2\r\n$1\r\nh\r\n$1\r\n1\r\n", a, master) ==
          answer::found);
    CHECK(r.front() == 0);  // (1 + 2) % 3
    r.begin(now, end, each);
    CHECK(asked(r, a) == "s1:26379");
    CHECK(r.next(a, now, end));
    CHECK(r.next(a, now, end));
    CHECK_FALSE(r.next(a, now, end));  // three, not four
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
