// A RESP2 node's subscription alone, over loopback TCP with the test as the
// server: its set-up, what each answer makes of it, invalidations to the
// push sink, its deadline and backoff, a message cut byte by byte and one
// longer than its buffer.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/detail/subscription.hpp"
#include "part_server.hpp"

using edgelock::client_options;
using edgelock::duration;
using edgelock::instant;
using edgelock::node_address;
using edgelock::resp_node;
using edgelock::detail::sub_link;
using edgelock::detail::sub_phase;
using edgelock::detail::subscription;
using edgelock_test::part_server;
using edgelock_test::pump;
namespace port = edgelock::port;

namespace {

const std::string subscribed = "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n";

std::string invalidation(const std::vector<std::string>& keys) {
    std::string s = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*" +
                    std::to_string(keys.size()) + "\r\n";
    for (const std::string& k : keys) {
        s += "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
    }
    return s;
}

// The push sink: the text nodes of every message it was given.
struct pushes {
    std::vector<std::vector<std::string>> got;

    static void take(void* ctx, std::uint8_t, const resp_node* nodes, std::size_t count, instant) {
        std::vector<std::string> texts;
        for (std::size_t i = 0; i < count; ++i) {
            if (nodes[i].has_text()) {
                texts.emplace_back(nodes[i].text.data, nodes[i].text.size);
            }
        }
        static_cast<pushes*>(ctx)->got.push_back(texts);
    }
};

// A subscription's client: the options, the node, the link.
struct rig {
    part_server server;
    std::string url;
    node_address address;
    client_options options;
    edgelock::random_source random = edgelock::client_base::system_random();
    resp_node nodes[EDGELOCK_CLIENT_REPLY_NODES];
    pushes sink;
    sub_link link;
    subscription sub;

    explicit rig(const char* credentials = "") {
        url = std::string("redis://") + credentials + "127.0.0.1:" + server.port_text();
        REQUIRE(edgelock::parse_node_url(edgelock::str_view(url.c_str()), address) ==
                edgelock::url_errc::ok);
        options.resp3 = false;
        options.connect_timeout = duration::millis(200);
        options.reconnect_min = duration::millis(40);
        options.reconnect_max = duration::millis(400);
        link.via = &edgelock::plain_transport();
        link.options = &options;
        link.address = &address;
        link.where.host = "127.0.0.1";
        link.where.port = server.port();
        link.named = "127.0.0.1";
        link.random = &random;
        link.nodes = nodes;
        link.node_capacity = EDGELOCK_CLIENT_REPLY_NODES;
        link.push.fn = pushes::take;
        link.push.ctx = &sink;
    }

    std::vector<std::string> sent;

    // Connects and takes the set-up at the server: the server's end.
    int set_up(std::size_t commands = 2) {
        CHECK(sub.service(true, link, port::now()) == edgelock::detail::sub_none);
        pump(sub, link, true, [&] { return sub.phase() == sub_phase::setup; });
        const int fd = server.accept();
        REQUIRE(fd >= 0);
        sent = server.commands(fd, commands);
        CHECK(sent.at(commands - 2) == "CLIENT ID");
        CHECK(sent.at(commands - 1) == "SUBSCRIBE __redis__:invalidate");
        return fd;
    }

    // The set-up answered: listening as client 42.
    int listening() {
        const int fd = set_up();
        part_server::send(fd, ":42\r\n" + subscribed);
        const std::uint8_t e = pump(sub, link, true, [&] { return sub.id() != 0; });
        REQUIRE(e == edgelock::detail::sub_listening);
        REQUIRE(sub.phase() == sub_phase::listening);
        return fd;
    }

    ~rig() { sub.shut(edgelock::plain_transport()); }

    // Reads what the server sent until it stops listening.
    std::uint8_t hear() {
        return pump(sub, link, false, [&] { return sub.phase() != sub_phase::listening; });
    }
};

// Reads once the fd is readable; the events of that read.
std::uint8_t read_now(rig& r) {
    port::wait_entry e;
    e.fd = r.sub.fd();
    e.want = port::want_read;
    REQUIRE(port::wait(&e, 1, port::now() + duration::millis(edgelock_test::part_wait_ms)) == 1);
    return r.sub.on_ready(e.ready, r.link, port::now());
}

}  // namespace

TEST_CASE("subscription: set-up is CLIENT ID and SUBSCRIBE and the answers make it listen",
          "[subscription]") {
    rig r;
    CHECK(r.sub.phase() == sub_phase::off);
    const instant now = port::now();
    CHECK(r.sub.next_deadline(true, now) == now);
    CHECK(r.sub.next_deadline(false, now).is_never());
    CHECK(r.sub.service(false, r.link, now) == edgelock::detail::sub_none);
    CHECK(r.sub.phase() == sub_phase::off);  // not wanted: nothing made

    const int fd = r.set_up();
    CHECK(r.sub.id() == 0);
    const instant during = port::now();
    CHECK(r.sub.next_deadline(true, during) > during);  // the connect's deadline
    part_server::send(fd, ":42\r\n");
    std::uint8_t e = read_now(r);
    CHECK(e == edgelock::detail::sub_none);  // SUBSCRIBE's answer is still due
    CHECK(r.sub.phase() == sub_phase::setup);
    part_server::send(fd, subscribed);
    e = read_now(r);
    CHECK(e == edgelock::detail::sub_listening);
    CHECK(r.sub.phase() == sub_phase::listening);
    CHECK(r.sub.id() == 42);
    CHECK(r.sub.next_deadline(true, port::now()).is_never());
    CHECK(r.sub.wants(*r.link.via) == port::want_read);
    // A listening one has nothing left to time out.
    CHECK(r.sub.service(true, r.link, port::now() + duration::seconds(10)) ==
          edgelock::detail::sub_none);
    CHECK(r.sub.phase() == sub_phase::listening);
}

// The socket itself (port::send and port::recv, as the plain transport), except
// that the first send of each session would block. Written against the port,
// not by calling into the library's transport: the library is built without
// RTTI, and a sanitizer's vptr check would not know its object.
class first_send_blocks final : public edgelock::transport {
public:
    port::net_result open(int, const edgelock::session_peer&,
                          edgelock::session_id& out) noexcept override {
        blocked_ = false;
        out = 1;
        return done(port::net_status::ok);
    }
    port::net_result proceed(edgelock::session_id, int) noexcept override {
        return done(port::net_status::ok);
    }
    std::uint8_t wants(edgelock::session_id) const noexcept override { return 0; }
    port::net_result send(edgelock::session_id, int fd, const void* data,
                          std::size_t size) noexcept override {
        if (!blocked_) {
            blocked_ = true;
            return done(port::net_status::would_block);
        }
        return port::send(fd, data, size);
    }
    port::net_result recv(edgelock::session_id, int fd, void* buf,
                          std::size_t capacity) noexcept override {
        return port::recv(fd, buf, capacity);
    }
    std::size_t buffered(edgelock::session_id) const noexcept override { return 0; }
    void close(edgelock::session_id) noexcept override {}

private:
    static port::net_result done(port::net_status s) {
        port::net_result r;
        r.status = s;
        return r;
    }
    bool blocked_ = false;
};

TEST_CASE("subscription: a first send that would block asks for writability, then sends",
          "[subscription]") {
    rig r;
    first_send_blocks blocking;
    r.link.via = &blocking;
    CHECK(r.sub.service(true, r.link, port::now()) == edgelock::detail::sub_none);
    pump(r.sub, r.link, true, [&] { return r.sub.phase() == sub_phase::setup; });
    // Nothing went: it waits to write, not to read replies to nothing.
    CHECK((r.sub.wants(blocking) & port::want_write) != 0);
    pump(r.sub, r.link, true, [&] { return (r.sub.wants(blocking) & port::want_write) == 0; });
    const int fd = r.server.accept();
    REQUIRE(fd >= 0);
    const std::vector<std::string> sent = r.server.commands(fd, 2);
    CHECK(sent.at(0) == "CLIENT ID");
    CHECK(sent.at(1) == "SUBSCRIBE __redis__:invalidate");
    part_server::send(fd, ":42\r\n" + subscribed);
    const std::uint8_t e = pump(r.sub, r.link, true, [&] { return r.sub.id() != 0; });
    CHECK(e == edgelock::detail::sub_listening);
    r.sub.shut(blocking);
}

TEST_CASE("subscription: with credentials AUTH goes first", "[subscription]") {
    rig r("app:s3cret@");
    r.set_up(3);
    CHECK(r.sent.at(0) == "AUTH app s3cret");
    rig plain;
    plain.options.username = "bob";
    plain.options.password = "pw";
    plain.sub.service(true, plain.link, port::now());
    pump(plain.sub, plain.link, true, [&] { return plain.sub.phase() == sub_phase::setup; });
    const int fd2 = plain.server.accept();
    REQUIRE(fd2 >= 0);
    CHECK(plain.server.commands(fd2, 3) ==
          (std::vector<std::string>{"AUTH bob pw", "CLIENT ID", "SUBSCRIBE __redis__:invalidate"}));
    // AUTH's +OK is one of the answers it waits for.
    part_server::send(fd2, "+OK\r\n:7\r\n");
    CHECK(read_now(plain) == edgelock::detail::sub_none);
    part_server::send(fd2, subscribed);
    CHECK(read_now(plain) == edgelock::detail::sub_listening);
    CHECK(plain.sub.id() == 7);
}

TEST_CASE("subscription: an invalidation goes to the push sink with its keys", "[subscription]") {
    rig r;
    const int fd = r.listening();
    part_server::send(fd, invalidation({"lock:a", "lock:b"}));
    CHECK(read_now(r) == edgelock::detail::sub_none);
    REQUIRE(r.sink.got.size() == 1);
    CHECK(r.sink.got[0] ==
          (std::vector<std::string>{"message", "__redis__:invalidate", "lock:a", "lock:b"}));
    // Two in one read: both, in order. A flush's null goes too.
    part_server::send(fd, invalidation({"lock:c"}) +
                              "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*-1\r\n");
    CHECK(read_now(r) == edgelock::detail::sub_none);
    REQUIRE(r.sink.got.size() == 3);
    CHECK(r.sink.got[1].back() == "lock:c");
    CHECK(r.sink.got[2].size() == 2);
    CHECK(r.sub.phase() == sub_phase::listening);
}

TEST_CASE("subscription: an error while listening loses it and backs off", "[subscription]") {
    rig r;
    const int fd = r.listening();
    part_server::send(fd, "-ERR something went wrong\r\n");
    port::wait_entry w;
    w.fd = r.sub.fd();
    w.want = port::want_read;
    REQUIRE(port::wait(&w, 1, port::now() + duration::seconds(1)) == 1);
    const instant now = port::now();
    const std::uint8_t e = r.sub.on_ready(w.ready, r.link, now);
    CHECK(e == (edgelock::detail::sub_lost | edgelock::detail::sub_missed));
    CHECK(r.sub.phase() == sub_phase::backoff);
    CHECK(r.sub.fd() < 0);
    CHECK(r.sub.id() == 0);
    CHECK(part_server::closed_by_peer(fd));
    // The first failure since it listened: reconnect_min, jittered down to half.
    const instant again = r.sub.next_deadline(true, now);
    CHECK(again >= now + duration::millis(20));
    CHECK(again <= now + duration::millis(40));
    CHECK(r.sub.next_deadline(false, now).is_never());
    // Not before its time; then made anew.
    CHECK(r.sub.service(true, r.link, again) == edgelock::detail::sub_none);
    CHECK(r.sub.phase() == sub_phase::connecting);
    CHECK(r.server.accept() >= 0);
}

TEST_CASE("subscription: the first backoff lies between half of reconnect_min and reconnect_min",
          "[subscription]") {
    // Many draws: each first failure's wait lies in [min/2, min].
    for (int i = 0; i < 20; ++i) {
        rig r;
        const instant t0 = port::now();
        REQUIRE(r.sub.service(true, r.link, t0) == edgelock::detail::sub_none);
        // Not answered in time: the deadline, then the backoff.
        const instant late = t0 + r.options.connect_timeout;
        CHECK(r.sub.service(true, r.link, late) == edgelock::detail::sub_lost);
        REQUIRE(r.sub.phase() == sub_phase::backoff);
        const instant again = r.sub.next_deadline(true, late);
        CHECK(again >= late + duration::millis(20));
        CHECK(again <= late + duration::millis(40));
        // Still not before its end.
        CHECK(r.sub.service(true, r.link, late + duration::millis(19)) ==
              edgelock::detail::sub_none);
        CHECK(r.sub.phase() == sub_phase::backoff);
    }
}

TEST_CASE("subscription: a refused set-up is not tried again", "[subscription]") {
    const std::string answers[] = {
        "-NOPERM this user has no permissions to run the 'client|id' command\r\n",
        ":42\r\n-NOPERM this user has no permissions to access one of the channels\r\n",
        "-ERR unknown command 'CLIENT'\r\n",
        ":0\r\n" + subscribed,  // no id to redirect to
    };
    for (const std::string& a : answers) {
        CAPTURE(a);
        rig r;
        const int fd = r.set_up();
        part_server::send(fd, a);
        const std::uint8_t e = read_now(r);
        CHECK(e == edgelock::detail::sub_lost);
        CHECK(r.sub.phase() == sub_phase::refused);
        CHECK(r.sub.fd() < 0);
        CHECK(r.sub.next_deadline(true, port::now()).is_never());
        CHECK(r.sub.service(true, r.link, port::now() + duration::seconds(10)) ==
              edgelock::detail::sub_none);
        CHECK(r.sub.phase() == sub_phase::refused);
        // The lock connection made anew: off, made again at once.
        r.sub.shut(*r.link.via);
        CHECK(r.sub.phase() == sub_phase::off);
        const instant now = port::now();
        CHECK(r.sub.next_deadline(true, now) == now);
    }
}

TEST_CASE("subscription: a server that never answers is closed at connect_timeout",
          "[subscription]") {
    rig r;
    const instant t0 = port::now();
    REQUIRE(r.sub.service(true, r.link, t0) == edgelock::detail::sub_none);
    pump(r.sub, r.link, true, [&] { return r.sub.phase() == sub_phase::setup; });
    const int fd = r.server.accept();
    REQUIRE(fd >= 0);
    const instant deadline = t0 + r.options.connect_timeout;
    CHECK(r.sub.next_deadline(true, t0) == deadline);
    CHECK(r.sub.service(true, r.link, instant{deadline.us - 1}) == edgelock::detail::sub_none);
    CHECK(r.sub.phase() == sub_phase::setup);
    CHECK(r.sub.service(true, r.link, deadline) == edgelock::detail::sub_lost);
    CHECK(r.sub.phase() == sub_phase::backoff);
    CHECK(part_server::closed_by_peer(fd));

    // The same in real time, with a short timeout.
    rig quick;
    quick.options.connect_timeout = duration::millis(30);
    const instant start = port::now();
    REQUIRE(quick.sub.service(true, quick.link, start) == edgelock::detail::sub_none);
    const std::uint8_t e =
        pump(quick.sub, quick.link, true, [&] { return quick.sub.phase() == sub_phase::backoff; });
    CHECK(e == edgelock::detail::sub_lost);
    CHECK(port::now() >= start + duration::millis(30));
}

TEST_CASE("subscription: answers cut byte by byte still decode", "[subscription]") {
    rig r;
    const int fd = r.set_up();
    const std::string all = ":42\r\n" + subscribed;
    for (std::size_t i = 0; i < all.size(); ++i) {
        part_server::send(fd, all.substr(i, 1));
        const std::uint8_t e = read_now(r);
        CAPTURE(i);
        CHECK(e ==
              (i + 1 == all.size() ? edgelock::detail::sub_listening : edgelock::detail::sub_none));
    }
    CHECK(r.sub.id() == 42);
    const std::string message = invalidation({"lock:slow"});
    for (std::size_t i = 0; i < message.size(); ++i) {
        part_server::send(fd, message.substr(i, 1));
        CHECK(read_now(r) == edgelock::detail::sub_none);
        CHECK(r.sink.got.size() == (i + 1 == message.size() ? 1u : 0u));
    }
    REQUIRE(r.sink.got.size() == 1);
    CHECK(r.sink.got[0].back() == "lock:slow");
}

TEST_CASE("subscription: a message larger than its buffer or node array is missed",
          "[subscription]") {
    SECTION("longer than EDGELOCK_CLIENT_SUB_BUFFER") {
        rig r;
        const int fd = r.listening();
        part_server::send(fd, invalidation({std::string(EDGELOCK_CLIENT_SUB_BUFFER, 'k')}));
        const std::uint8_t e = r.hear();
        CHECK(e == (edgelock::detail::sub_lost | edgelock::detail::sub_missed));
        CHECK(r.sub.phase() == sub_phase::backoff);
        CHECK(r.sink.got.empty());
    }
    SECTION("more keys than the node array holds") {
        rig r;
        const int fd = r.listening();
        std::vector<std::string> keys;
        for (int i = 0; i < EDGELOCK_CLIENT_REPLY_NODES; ++i) {
            keys.push_back("k" + std::to_string(i));
        }
        const std::string m = invalidation(keys);
        REQUIRE(m.size() < EDGELOCK_CLIENT_SUB_BUFFER);
        part_server::send(fd, m);
        const std::uint8_t e = r.hear();
        CHECK(e == (edgelock::detail::sub_lost | edgelock::detail::sub_missed));
        CHECK(r.sub.phase() == sub_phase::backoff);
        CHECK(r.sink.got.empty());
    }
}

TEST_CASE("subscription: shut closes it and it is made anew without a backoff", "[subscription]") {
    rig r;
    const int fd = r.listening();
    r.sub.shut(*r.link.via);
    CHECK(r.sub.phase() == sub_phase::off);
    CHECK(r.sub.fd() < 0);
    CHECK(r.sub.id() == 0);
    CHECK(part_server::closed_by_peer(fd));
    const instant now = port::now();
    CHECK(r.sub.next_deadline(true, now) == now);
    CHECK(r.sub.service(true, r.link, now) == edgelock::detail::sub_none);
    CHECK(r.sub.phase() != sub_phase::off);
    CHECK(r.server.accept() >= 0);
    r.sub.shut(*r.link.via);
}
