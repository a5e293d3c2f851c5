// The driver's read loop alone, over a transport that hands out chosen
// pieces: whole messages, a message cut anywhere, pushes, a message too long
// for the buffer, bytes that are not RESP, and a handler that closes the
// stream under it.
#include <catch2/catch.hpp>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "../../src/client/stream_read.hpp"
#include "edgelock/transport.hpp"

using edgelock::detail::read_end;
using edgelock::detail::stream_message;
namespace port = edgelock::port;

namespace {

// recv() gives the next piece (as much of it as fits), then would_block.
// `held`: the pieces left count as bytes the transport buffers.
class pieces final : public edgelock::transport {
public:
    std::deque<std::string> queue;
    bool held = false;

    port::net_result open(int, const edgelock::session_peer&,
                          edgelock::session_id& out) noexcept override {
        out = 1;
        return result(port::net_status::ok, 0);
    }
    port::net_result proceed(edgelock::session_id, int) noexcept override {
        return result(port::net_status::ok, 0);
    }
    std::uint8_t wants(edgelock::session_id) const noexcept override { return 0; }
    port::net_result send(edgelock::session_id, int, const void*,
                          std::size_t size) noexcept override {
        return result(port::net_status::ok, size);
    }
    port::net_result recv(edgelock::session_id, int, void* buf,
                          std::size_t capacity) noexcept override {
        if (queue.empty()) {
            return result(port::net_status::would_block, 0);
        }
        std::string& front = queue.front();
        const std::size_t n = front.size() < capacity ? front.size() : capacity;
        std::memcpy(buf, front.data(), n);
        front.erase(0, n);
        if (front.empty()) {
            queue.pop_front();
        }
        return result(port::net_status::ok, n);
    }
    std::size_t buffered(edgelock::session_id) const noexcept override {
        std::size_t n = 0;
        for (const std::string& p : queue) {
            n += held ? p.size() : 0;
        }
        return n;
    }
    void close(edgelock::session_id) noexcept override {}

private:
    static port::net_result result(port::net_status s, std::size_t size) {
        port::net_result r;
        r.status = s;
        r.size = size;
        return r;
    }
};

// What the loop handed over.
struct recorder {
    std::vector<std::string> messages;
    std::vector<bool> pushes;
    std::vector<std::size_t> counts;  // 0: no nodes
    std::size_t skip_size = 0;        // what oversize() answers
    int skips = 0;
    edgelock::detail::stream* close_on_first = nullptr;
    edgelock::transport* via = nullptr;

    void on_message(const stream_message& m) {
        messages.emplace_back(m.data, m.size);
        pushes.push_back(m.push);
        counts.push_back(m.nodes != nullptr ? m.count : 0);
        if (close_on_first != nullptr) {
            close_on_first->close(*via);
        }
    }
    std::size_t oversize(const char*, std::size_t) { return skip_size; }
    void skipped() { ++skips; }
};

struct rig {
    pieces via;
    edgelock::detail::buffered_stream<64> io;
    edgelock::resp_node nodes[16];
    recorder got;

    rig() {
        io.attach(-1, true);
        REQUIRE(io.open(via, edgelock::session_peer{}).status == port::net_status::ok);
        got.via = &via;
    }
    ~rig() { io.close(via); }

    read_end read(std::size_t node_capacity = 16) {
        port::net_result r;
        return io.read(via, nodes, node_capacity, got, r);
    }
};

const std::string three = "+OK\r\n:12\r\n*2\r\n$3\r\nabc\r\n$0\r\n\r\n";
const std::vector<std::string> three_split = {"+OK\r\n", ":12\r\n",
                                              "*2\r\n$3\r\nabc\r\n$0\r\n\r\n"};

}  // namespace

TEST_CASE("stream read: whole messages in one piece", "[stream]") {
    rig r;
    r.via.queue.push_back(three);
    CHECK(r.read() == read_end::drained);
    CHECK(r.got.messages == three_split);
    CHECK(r.got.counts == (std::vector<std::size_t>{1, 1, 3}));
    CHECK(r.io.held() == 0);
    CHECK(r.io.heard());
    // Nothing more: drained, nothing handed over.
    CHECK(r.read() == read_end::drained);
    CHECK(r.got.messages.size() == 3);
}

TEST_CASE("stream read: messages cut at every offset", "[stream]") {
    for (std::size_t cut = 1; cut < three.size(); ++cut) {
        CAPTURE(cut);
        rig r;
        r.via.queue.push_back(three.substr(0, cut));
        CHECK(r.read() == read_end::drained);
        r.via.queue.push_back(three.substr(cut));
        CHECK(r.read() == read_end::drained);
        CHECK(r.got.messages == three_split);
        CHECK(r.got.counts == (std::vector<std::size_t>{1, 1, 3}));
        CHECK(r.io.held() == 0);
    }
    rig bytes;
    for (std::size_t i = 0; i < three.size(); ++i) {
        bytes.via.queue.push_back(three.substr(i, 1));
        CHECK(bytes.read() == read_end::drained);
    }
    CHECK(bytes.got.messages == three_split);
}

TEST_CASE("stream read: pushes are flagged", "[stream]") {
    rig r;
    r.via.queue.push_back(">2\r\n$10\r\ninvalidate\r\n*-1\r\n*1\r\n:1\r\n");
    CHECK(r.read() == read_end::drained);
    CHECK(r.got.pushes == (std::vector<bool>{true, false}));
}

TEST_CASE("stream read: a message too long for the buffer", "[stream]") {
    const std::string big = "$100\r\n" + std::string(100, 'x') + "\r\n";
    SECTION("skipped when the handler gives its size") {
        rig r;
        r.got.skip_size = big.size();
        r.via.held = true;
        r.via.queue.push_back(big + "+after\r\n");
        CHECK(r.read() == read_end::drained);
        CHECK(r.got.skips > 0);
        CHECK(r.got.messages == std::vector<std::string>{"+after\r\n"});
    }
    SECTION("too_large when it does not") {
        rig r;
        r.via.queue.push_back("+first\r\n" + big);
        CHECK(r.read() == read_end::too_large);
        CHECK(r.got.messages == std::vector<std::string>{"+first\r\n"});
    }
    SECTION("more nodes than the array: whole, without nodes") {
        rig r;
        r.via.queue.push_back("*3\r\n:1\r\n:2\r\n:3\r\n+next\r\n");
        CHECK(r.read(2) == read_end::drained);
        REQUIRE(r.got.messages.size() == 2);
        CHECK(r.got.messages[0] == "*3\r\n:1\r\n:2\r\n:3\r\n");
        CHECK(r.got.counts == (std::vector<std::size_t>{0, 1}));
    }
}

TEST_CASE("stream read: bytes that are not RESP are malformed", "[stream]") {
    rig r;
    r.via.queue.push_back("+ok\r\n?what\r\n");
    CHECK(r.read() == read_end::malformed);
    CHECK(r.got.messages == std::vector<std::string>{"+ok\r\n"});
}

TEST_CASE("stream read: a handler that closes the stream stops the loop", "[stream]") {
    rig r;
    r.got.close_on_first = &r.io;
    r.via.queue.push_back(three);
    CHECK(r.read() == read_end::stopped);
    CHECK(r.got.messages.size() == 1);
    CHECK(r.io.phase() == edgelock::detail::stream_phase::closed);
    CHECK(r.io.held() == 0);
}

TEST_CASE("stream read: bytes the transport holds are read without waiting", "[stream]") {
    SECTION("held: every piece in one read") {
        rig r;
        r.via.held = true;
        for (const std::string& p : three_split) {
            r.via.queue.push_back(p);
        }
        CHECK(r.read() == read_end::drained);
        CHECK(r.got.messages == three_split);
        CHECK(r.via.queue.empty());
    }
    SECTION("not held: a short read ends the loop") {
        rig r;
        for (const std::string& p : three_split) {
            r.via.queue.push_back(p);
        }
        CHECK(r.read() == read_end::drained);
        CHECK(r.got.messages.size() == 1);
        CHECK(r.read() == read_end::drained);
        CHECK(r.read() == read_end::drained);
        CHECK(r.got.messages == three_split);
    }
}
