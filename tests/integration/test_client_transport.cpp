// The transport seam against a real redis-server: every byte of a lock's
// life goes through the configured transport; an open() that takes several
// rounds, one that fails, and bytes the transport holds back (as a TLS
// session does with a record decrypted in part) all work without the
// handshake, pipeline or scheduler knowing.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>

#include "edgelock/client.hpp"
#include "edgelock/transport.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/lock_key.hpp"

using edgelock::client_errc;
using edgelock::lock_event_kind;
using edgelock::node_error;
using edgelock::port::net_result;
using edgelock::port::net_status;

namespace {

net_result status(net_status s) {
    net_result r;
    r.status = s;
    return r;
}

// The plain socket underneath, with every call counted. open() may take
// `open_rounds` proceed() calls, or fail; recv() may hand out at most
// `dribble` bytes at a time from what it read, holding back the rest.
class test_transport final : public edgelock::transport {
public:
    int open_rounds = 0;
    bool fail_open = false;
    std::size_t dribble = 0;

    int opens = 0;
    int proceeds = 0;
    int closes = 0;
    std::size_t sent = 0;
    std::size_t received = 0;
    std::string first_request;

    net_result open(int fd, const edgelock::session_peer& peer,
                    edgelock::session_id& out) noexcept override {
        ++opens;
        CHECK(fd >= 0);
        CHECK(!peer.host.empty());
        CHECK(!peer.tls);
        out = 7;  // any handle: the driver hands it back on every call
        left_ = open_rounds;
        held_ = 0;
        if (fail_open) {
            return status(net_status::reset);
        }
        return left_ > 0 ? status(net_status::in_progress) : status(net_status::ok);
    }
    net_result proceed(edgelock::session_id s, int) noexcept override {
        CHECK(s == 7);
        ++proceeds;
        return --left_ > 0 ? status(net_status::in_progress) : status(net_status::ok);
    }
    std::uint8_t wants(edgelock::session_id) const noexcept override {
        return edgelock::port::want_write;
    }
    net_result send(edgelock::session_id s, int fd, const void* data,
                    std::size_t size) noexcept override {
        CHECK(s == 7);
        const net_result r = edgelock::port::send(fd, data, size);
        if (r.status == net_status::ok) {
            if (sent == 0) {
                first_request.assign(static_cast<const char*>(data), r.size);
            }
            sent += r.size;
        }
        return r;
    }
    net_result recv(edgelock::session_id s, int fd, void* buf,
                    std::size_t capacity) noexcept override {
        CHECK(s == 7);
        if (dribble == 0) {
            const net_result r = edgelock::port::recv(fd, buf, capacity);
            received += r.status == net_status::ok ? r.size : 0;
            return r;
        }
        if (held_ == 0) {
            const net_result r = edgelock::port::recv(fd, store_, sizeof store_);
            if (r.status != net_status::ok) {
                return r;
            }
            received += r.size;
            held_ = r.size;
            at_ = 0;
        }
        net_result r = status(net_status::ok);
        r.size = held_ < dribble ? held_ : dribble;
        r.size = r.size < capacity ? r.size : capacity;
        std::memcpy(buf, store_ + at_, r.size);
        at_ += r.size;
        held_ -= r.size;
        return r;
    }
    std::size_t buffered(edgelock::session_id) const noexcept override { return held_; }
    void close(edgelock::session_id s) noexcept override {
        CHECK(s == 7);
        ++closes;
        held_ = 0;
    }

private:
    int left_ = 0;
    char store_[4096];
    std::size_t held_ = 0;
    std::size_t at_ = 0;
};

edgelock::op_result lock_cycle(edgelock::client_base& c, edgelock_test::redis_client& peek,
                               const char* name) {
    edgelock::client_lock l;
    REQUIRE(l.attach(c, name) == client_errc::ok);
    const edgelock::op_result r = l.try_acquire();
    if (r.error == client_errc::ok && r.event.kind == lock_event_kind::acquired) {
        CHECK(peek.command({"EXISTS", edgelock_test::key_of(name)}).integer == 1);
        const edgelock::op_result released = l.release();
        CHECK(released.event.kind == lock_event_kind::released);
    }
    CHECK(peek.command({"EXISTS", edgelock_test::key_of(name)}).integer == 0);
    return r;
}

}  // namespace

TEST_CASE("client transport: every byte goes through the configured transport",
          "[client][transport]") {
    edgelock_test::redis_server srv;
    edgelock_test::redis_client peek(srv.port());
    const edgelock_test::url_list urls({edgelock_test::redis_url(srv)});
    test_transport t;
    edgelock::client_options o;
    o.via = &t;
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.views.data(), 1, o) == client_errc::ok);
    const edgelock::op_result r = lock_cycle(c, peek, "transport-all");
    CHECK(r.event.kind == lock_event_kind::acquired);
    CHECK(t.opens == 1);
    CHECK(t.proceeds == 0);
    // The set-up went through it too: its first request is the first byte out.
    CHECK(t.first_request.rfind("*4\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$7\r\nSETNAME\r\n", 0) == 0);
    CHECK(t.sent > 0);
    CHECK(t.received > 0);
    c.disconnect();
    CHECK(t.closes == 1);
}

TEST_CASE("client transport: an open that takes rounds, and one that fails",
          "[client][transport]") {
    edgelock_test::redis_server srv;
    edgelock_test::redis_client peek(srv.port());
    const edgelock_test::url_list urls({edgelock_test::redis_url(srv)});
    test_transport t;
    edgelock::client_options o;
    o.via = &t;
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.views.data(), 1, o) == client_errc::ok);

    SECTION("three rounds: nothing is sent before the session is open") {
        t.open_rounds = 3;
        const edgelock::op_result r = lock_cycle(c, peek, "transport-rounds");
        CHECK(r.event.kind == lock_event_kind::acquired);
        CHECK(t.opens == 1);
        CHECK(t.proceeds == 3);
        CHECK(c.node(0).state == edgelock::node_state::ready);
    }
    SECTION("a failed open is the node's reason; the socket is given back") {
        t.fail_open = true;
        const edgelock::op_result r = lock_cycle(c, peek, "transport-fails");
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(c.node(0).error == node_error::reset);
        CHECK(t.opens >= 1);
        CHECK(t.closes == t.opens);
        CHECK(t.sent == 0);
    }
}

TEST_CASE("client transport: bytes the transport holds are read without waiting",
          "[client][transport]") {
    edgelock_test::redis_server srv;
    edgelock_test::redis_client peek(srv.port());
    const edgelock_test::url_list urls({edgelock_test::redis_url(srv)});
    test_transport t;
    // Three bytes at a time: every reply is split, and what the socket gave
    // at once stays in the transport, where no readiness report finds it.
    t.dribble = 3;
    edgelock::client_options o;
    o.via = &t;
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.views.data(), 1, o) == client_errc::ok);
    for (int i = 0; i < 3; ++i) {
        const edgelock::op_result r = lock_cycle(c, peek, "transport-dribble");
        CHECK(r.event.kind == lock_event_kind::acquired);
    }
    CHECK(c.node(0).state == edgelock::node_state::ready);
    CHECK(t.opens == 1);
}
