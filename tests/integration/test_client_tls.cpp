// TLS against real redis-servers started with --tls-port and certificates
// made by the test (tls_fixture.hpp): locks over TLS, the transport by hand,
// plaintext and TLS crossed, handshake timeouts, configuration errors.
// Verification: test_client_tls_verify.cpp.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <mbedtls/version.h>

#include "edgelock/client.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "integration/tls_helpers.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::lock_event_kind;
using edgelock::node_error;
using edgelock::node_state;
using edgelock::str_view;
using edgelock::tls_errc;
using edgelock::tls_options;
using edgelock::port::net_result;
using edgelock::port::net_status;
using edgelock_test::attempt;
using edgelock_test::check_ready;
using edgelock_test::check_refused;
using edgelock_test::connect_once;
using edgelock_test::lock_cycle;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::str;
using edgelock_test::tls_certs;
using edgelock_test::tls_url;
using edgelock_test::trust_ca;
using edgelock_test::url_list;
using edgelock_test::view;

TEST_CASE("tls: verified by CA file, a lock cycle, a new session after a disconnect",
          "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    redis_client peek(srv.unix_path());
    edgelock::tls_mbedtls<1> tls;
    trust_ca(tls, certs);
    const url_list urls({tls_url(srv.port())});
    edgelock::client_options o;
    o.via = &tls;
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.data(), 1, o) == client_errc::ok);
    lock_cycle(c, peek, "tls-cycle");
    INFO(edgelock_test::what(c.node(0)));
    CHECK(c.node(0).state == node_state::ready);
    const long long id = edgelock_test::connection_id(c, 0);
    c.disconnect();
    lock_cycle(c, peek, "tls-cycle");
    CHECK(edgelock_test::connection_id(c, 0) != id);
}

TEST_CASE("tls: the transport by hand: a session, then configure() under it", "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    edgelock::tls_mbedtls<2> tls;
    trust_ca(tls, certs);
    const int fd = edgelock_test::connect_loopback(srv.port());
    REQUIRE(fd >= 0);
    REQUIRE(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
    edgelock::node_address address;
    REQUIRE(edgelock::parse_node_url("rediss://localhost", address) == edgelock::url_errc::ok);

    // The handshake, driven as the client drives it: wait for what wants() says.
    edgelock::session_peer peer;
    peer.host = address.host;
    peer.tls = address.tls;
    edgelock::session_id other = edgelock::no_session;
    edgelock::session_id id = edgelock::no_session;
    // A session handle is the transport's: a first one taken, the next is another.
    REQUIRE(tls.open(fd, edgelock::session_peer{}, other).status == net_status::ok);
    net_result r = tls.open(fd, peer, id);
    REQUIRE(id != edgelock::no_session);
    CHECK(id != other);
    edgelock::session_id none = 0;
    CHECK(tls.open(fd, peer, none).status == net_status::bad_argument);  // both taken
    CHECK(none == edgelock::no_session);
    tls.close(other);
    const double deadline = edgelock_test::mono_s() + 5;
    while (r.status == net_status::in_progress && edgelock_test::mono_s() < deadline) {
        const std::uint8_t want = tls.wants(id);
        REQUIRE(want != 0);
        const short events =
            static_cast<short>(((want & edgelock::port::want_read) != 0 ? POLLIN : 0) |
                               ((want & edgelock::port::want_write) != 0 ? POLLOUT : 0));
        edgelock_test::wait_fd(fd, events, deadline);
        r = tls.proceed(id, fd);
    }
    REQUIRE(r.status == net_status::ok);
    CHECK(tls.failure(id) == node_error::none);
    CHECK(tls.wants(id) == 0);

    // A PING through the session, its reply out of it.
    const std::string ping = "*1\r\n$4\r\nPING\r\n";
    REQUIRE(tls.send(id, fd, ping.data(), ping.size()).size == ping.size());
    char buf[64];
    std::string got;
    while (got.size() < 7 && edgelock_test::mono_s() < deadline) {
        edgelock_test::wait_fd(fd, POLLIN, deadline);
        const net_result in = tls.recv(id, fd, buf, sizeof buf);
        if (in.status == net_status::ok) {
            got.append(buf, in.size);
        } else {
            REQUIRE(in.status == net_status::would_block);
        }
    }
    CHECK(got == "+PONG\r\n");
    CHECK(tls.buffered(id) == 0);

    // configure() again while the session is open: the connection must not
    // carry on in clear; it fails, and the driver would make a new one.
    trust_ca(tls, certs);
    CHECK(tls.send(id, fd, ping.data(), ping.size()).status == net_status::error);
    CHECK(tls.recv(id, fd, buf, sizeof buf).status == net_status::error);
    tls.close(id);
    ::close(fd);
}

TEST_CASE("tls: plaintext and TLS crossed fail fast and say so", "[client][tls]") {
    tls_certs certs;
    edgelock::tls_mbedtls<1> tls;
    trust_ca(tls, certs);
    SECTION("TLS to a plaintext port that answers: at once") {
        // A full server answers every connection with an error line.
        redis_server plain({"--maxclients", "1"});
        redis_client hold(plain.port());
        REQUIRE(hold.command({"PING"}).text == "PONG");
        check_refused(connect_once(tls_url(plain.port()), tls), node_error::tls_not_tls);
    }
    SECTION("TLS to a plaintext Redis: it never answers a hello, so connect_timeout says so") {
        redis_server plain;
        const attempt a = connect_once(tls_url(plain.port()), tls, 500);
        INFO(a.what);
        CHECK(a.info.error == node_error::connect_timeout);
        CHECK(a.message.find("TLS handshake") == 0);
        CHECK(a.message.find("plaintext") != std::string::npos);
        CHECK(a.ms >= 450);
        CHECK(a.ms < 1500);
    }
    SECTION("plaintext to a TLS port") {
        redis_server srv(certs.server_files(), {});
        const attempt a =
            connect_once(edgelock_test::redis_url(srv.port()), edgelock::plain_transport());
        INFO(a.what);
        CHECK(a.info.state == node_state::backoff);
        // The server hangs up on bytes that are not TLS, before any reply.
        CHECK((a.info.error == node_error::closed || a.info.error == node_error::reset));
        CHECK(a.message.find("a TLS port?") != std::string::npos);
        CHECK(a.ms < edgelock_test::tls_connect_timeout_ms / 3);
    }
}

TEST_CASE("tls: a handshake the server never answers ends at connect_timeout, named",
          "[client][tls]") {
    // A listening socket nobody accepts on: TCP connects, TLS hears nothing.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    const std::uint16_t port = ntohs(a.sin_port);

    tls_certs certs;
    edgelock::tls_mbedtls<1> tls;
    trust_ca(tls, certs);
    const url_list urls({tls_url(port, "127.0.0.1")});
    edgelock::client_options o;
    o.via = &tls;
    o.connect_timeout = duration::millis(300);
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.data(), 1, o) == client_errc::ok);
    const edgelock::instant start = edgelock::port::now();
    c.connect(start + duration::seconds(5));
    const double ms = edgelock_test::ms_since(start);
    ::close(fd);
    INFO(edgelock_test::what(c.node(0)) << " after " << ms << " ms");
    CHECK(c.node(0).error == node_error::connect_timeout);
    CHECK(str(c.node(0).message).find("TLS handshake") == 0);
    CHECK(ms >= 250);
    CHECK(ms < 2000);
}

TEST_CASE("tls: a fenced Redlock over three TLS nodes", "[client][tls]") {
    tls_certs certs;
    redis_server a(certs.server_files(), {}), b(certs.server_files(), {}),
        d(certs.server_files(), {});
    redis_client peek_a(a.unix_path()), peek(b.unix_path()), peek_d(d.unix_path());
    edgelock::tls_mbedtls<3> tls;
    trust_ca(tls, certs);
    const url_list urls({tls_url(a.port()), tls_url(b.port()), tls_url(d.port())});
    edgelock::client_options o;
    o.via = &tls;
    edgelock::client<3> c;
    REQUIRE(c.configure(urls.data(), 3, o) == client_errc::ok);
    REQUIRE(c.connect(edgelock::port::now() + duration::seconds(5)) == 3);
    edgelock::client_lock l;
    const char* name = "tls-redlock";
    REQUIRE(l.attach(c, name, edgelock_test::options(5000, 1000, edgelock::lock_mode::fenced)) ==
            client_errc::ok);
    std::uint64_t last = 0;
    for (int i = 0; i < 3; ++i) {
        const edgelock::op_result r = l.try_acquire();
        INFO(edgelock_test::what(r));
        REQUIRE(r.event.kind == lock_event_kind::acquired);
        CHECK(r.event.fence > last);
        last = r.event.fence;
        // A quorum holds the key. (A node whose NOSCRIPT came after the
        // quorum had decided gets no EVAL: it counted as "no".)
        const std::string key = edgelock_test::key_of(name);
        CHECK(peek_a.command({"EXISTS", key}).integer + peek.command({"EXISTS", key}).integer +
                  peek_d.command({"EXISTS", key}).integer >=
              2);
        edgelock_test::must_release(l);
    }
    CHECK(peek.command({"EXISTS", edgelock_test::key_of(name)}).integer == 0);
    CHECK(c.ready_count() == 3);
}

TEST_CASE("tls: redis:// passes through plain, unless TLS is always on", "[client][tls]") {
    tls_certs certs;
    redis_server plain;
    redis_server srv(certs.server_files(), {});
    edgelock::tls_mbedtls<1> tls;
    SECTION("redis:// to a plaintext server over the TLS transport") {
        trust_ca(tls, certs);
        check_ready(connect_once(edgelock_test::redis_url(plain.port()), tls));
    }
    SECTION("always: redis:// speaks TLS") {
        tls_options t;
        t.always = true;
        trust_ca(tls, certs, t);
        check_ready(connect_once("redis://localhost:" + std::to_string(srv.port()), tls));
        // A Unix socket stays plain: Redis has no TLS there.
        check_ready(connect_once("unix://" + srv.unix_path(), tls));
    }
}

TEST_CASE("tls: rediss:// needs a TLS transport, and the transport its files", "[client][tls]") {
    tls_certs certs;
    const url_list urls({"redis://127.0.0.1:1", "rediss://127.0.0.1:1"});
    edgelock::client<2> c;
    CHECK(c.configure(urls.data(), 2, {}) == client_errc::tls_not_built_in);
    CHECK(c.bad_url_index() == 1);
    CHECK(c.bad_url_error() == edgelock::url_errc::tls_not_built_in);
    edgelock::tls_mbedtls<2> tls;
    edgelock::client_options o;
    o.via = &tls;
    CHECK(c.configure(urls.data(), 2, o) == client_errc::ok);

    const std::string ca = certs.ca_file(), cert = certs.cert("client"), key = certs.key("client"),
                      other_key = certs.key("server"), missing = certs.ca_file() + ".missing";
    struct row {
        const char* what;
        tls_options options;
        tls_errc want;
    };
    tls_options t;
    const row rows[] = {
        {"a CA file that is not there",
         [&] {
             t = {};
             t.ca_file = view(missing);
             return t;
         }(),
         tls_errc::ca_file_unreadable},
        {"a key that is not a key",
         [&] {
             t = {};
             t.ca_file = view(ca);
             t.cert_file = view(cert);
             t.key_file = view(ca);
             return t;
         }(),
         tls_errc::key_unreadable},
        {"a CA directory that is not there",
         [&] {
             t = {};
             t.ca_dir = view(missing);
             return t;
         }(),
         tls_errc::ca_dir_unreadable},
        {"a certificate that is not there",
         [&] {
             t = {};
             t.ca_file = view(ca);
             t.cert_file = view(missing);
             t.key_file = view(key);
             return t;
         }(),
         tls_errc::cert_unreadable},
        {"a certificate without its key",
         [&] {
             t = {};
             t.ca_file = view(ca);
             t.cert_file = view(cert);
             return t;
         }(),
         tls_errc::cert_without_key},
        {"another certificate's key",
         [&] {
             t = {};
             t.ca_file = view(ca);
             t.cert_file = view(cert);
             t.key_file = view(other_key);
             return t;
         }(),
         tls_errc::key_mismatch},
    };
    for (const row& r : rows) {
        INFO(r.what);
        CHECK(tls.configure(r.options) == r.want);
        CHECK_FALSE(tls.configured());
        CHECK(std::string(edgelock::describe(r.want)).rfind("TLS: ", 0) == 0);
    }
    // Unconfigured, a rediss:// node fails its handshake, saying why.
    redis_server srv(certs.server_files(), {});
    const attempt a = connect_once(tls_url(srv.port()), tls);
    check_refused(a, node_error::tls_handshake_failed);
    CHECK(a.message == "TLS transport not configured");
}

TEST_CASE("tls: describe() names every TLS code", "[client][tls]") {
    std::vector<std::string> seen;
    for (int e = 0; e <= static_cast<int>(tls_errc::init_failed); ++e) {
        CAPTURE(e);
        const std::string s = edgelock::describe(static_cast<tls_errc>(e));
        CHECK(s != "unknown TLS error");
        CHECK(std::find(seen.begin(), seen.end(), s) == seen.end());
        seen.push_back(s);
    }
    CHECK(std::string(edgelock::describe(static_cast<tls_errc>(200))) == "unknown TLS error");
    for (int e = static_cast<int>(node_error::tls_handshake_failed);
         e <= static_cast<int>(node_error::tls_session_failed); ++e) {
        CAPTURE(e);
        const std::string s = edgelock::describe(static_cast<node_error>(e));
        CHECK(s.find("TLS") != std::string::npos);
        CHECK(std::find(seen.begin(), seen.end(), s) == seen.end());
        seen.push_back(s);
    }
}

namespace {

// A loopback listener that answers one connection's ClientHello with fixed
// bytes, then hangs up: what a broken or hostile server might send.
class one_reply_server {
public:
    explicit one_reply_server(std::string reply) : reply_(std::move(reply)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0);
        REQUIRE(::listen(fd_, 4) == 0);
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~one_reply_server() {
        ::shutdown(fd_, SHUT_RDWR);  // ends an accept() still waiting
        thread_.join();
        ::close(fd_);
    }
    one_reply_server(const one_reply_server&) = delete;
    one_reply_server& operator=(const one_reply_server&) = delete;
    std::uint16_t port() const { return port_; }

private:
    void serve() {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) {
            return;
        }
        // The hello first (a server answers it), then the reply, then a
        // moment for it to be read before the hang-up.
        char hello[4096];
        if (edgelock_test::wait_fd(c, POLLIN, edgelock_test::mono_s() + 2)) {
            (void)::recv(c, hello, sizeof hello, 0);
        }
        if (!reply_.empty()) {
            (void)::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
        }
        edgelock_test::sleep_ms(100);
        ::close(c);
    }

    std::string reply_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

}  // namespace

TEST_CASE("tls: broken and hostile answers to the hello fail the node at once, named",
          "[client][tls]") {
    tls_certs certs;
    edgelock::tls_mbedtls<1> tls;
    trust_ca(tls, certs);
    std::string noise(200, '\0');
    std::uint32_t x = 12345;
    for (char& ch : noise) {
        x = x * 1103515245u + 12345u;
        ch = static_cast<char>(x >> 24);
    }
    noise[0] = '\x16';  // a handshake record type, then nonsense
    struct row {
        const char* what;
        std::string reply;
        node_error want;
    };
    const row rows[] = {
        {"a handshake record of junk", std::string("\x16\x03\x03\x00\x05hello", 10),
         node_error::tls_handshake_failed},
        {"a fatal alert", std::string("\x15\x03\x03\x00\x02\x02\x28", 7),
         node_error::tls_handshake_failed},
        {"a record longer than TLS allows", std::string("\x16\x03\x03\xff\xff\x01\x02", 7),
         node_error::tls_handshake_failed},
        {"application data before the handshake",
         std::string("\x17\x03\x03\x00\x04"
                     "abcd",
                     9),
         node_error::tls_handshake_failed},
        {"random bytes after a handshake type", noise, node_error::tls_handshake_failed},
        {"a RESP error line", "-ERR unknown command\r\n", node_error::tls_not_tls},
        {"a RESP status line", "+OK\r\n", node_error::tls_not_tls},
    };
    for (const row& r : rows) {
        INFO(r.what);
        one_reply_server srv(r.reply);
        const attempt a = connect_once(tls_url(srv.port(), "127.0.0.1"), tls);
        check_refused(a, r.want);
    }
    SECTION("a hang-up without a word: the socket's own reason, said to be in the handshake") {
        one_reply_server srv("");
        const attempt a = connect_once(tls_url(srv.port(), "127.0.0.1"), tls);
        INFO(a.what);
        CHECK((a.info.error == node_error::closed || a.info.error == node_error::reset));
        CHECK(a.message == "during the TLS handshake");
        CHECK(a.ms < edgelock_test::tls_connect_timeout_ms / 3);
    }
}
