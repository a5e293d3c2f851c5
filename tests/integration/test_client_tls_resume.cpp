// TLS sessions resumed, against real redis-servers on --tls-port (OpenSSL,
// tls-session-caching on by default): a second connection to the same
// server makes an abbreviated handshake, a session is kept per peer (host as
// named and port) and never offered to another, a server restarted with new
// keys refuses it and the new one replaces it, a failed handshake forgets
// it, and kept sessions move between transports (import_session).
//
// The transport counts a handshake as resumed when mbedTLS verified no
// certificate in it; where the TLS library allows it, the tests also check
// with mbedTLS's own view that the kept session's master secret is the one
// the first handshake made (a full handshake makes a new one).
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include <mbedtls/ssl.h>
#include <mbedtls/version.h>

#include "edgelock/client.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "integration/tls_helpers.hpp"
#include "tools/net.hpp"

using edgelock::node_error;
using edgelock::tls_import;
using edgelock_test::check_ready;
using edgelock_test::connect_once;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::tls_certs;
using edgelock_test::tls_url;
using edgelock_test::trust_ca;
using edgelock_test::view;

namespace {

// What a transport keeps for one peer.
struct kept {
    bool found = false;
    std::string server_name;
    std::string data;
    bool used = false;
};

kept kept_for(const edgelock::tls_mbedtls_base& tls, const std::string& host, std::uint16_t port) {
    kept k;
    edgelock::tls_saved_session s;
    for (std::size_t i = 0; i < tls.saved_capacity(); ++i) {
        if (tls.saved_session(i, s) && edgelock_test::str(s.host) == host && s.port == port) {
            k.found = true;
            k.server_name = edgelock_test::str(s.server_name);
            k.data.assign(reinterpret_cast<const char*>(s.data), s.size);
            k.used = s.used;
        }
    }
    return k;
}

std::size_t kept_count(const edgelock::tls_mbedtls_base& tls) {
    edgelock::tls_saved_session s;
    std::size_t n = 0;
    for (std::size_t i = 0; i < tls.saved_capacity(); ++i) {
        if (tls.saved_session(i, s)) {
            ++n;
        }
    }
    return n;
}

// The master secret of a kept session as mbedTLS loads it: the same after an
// abbreviated handshake, a new one after a full one. Empty where the field is
// not public (mbedTLS 3: the counts alone say it there).
std::string master_of(const std::string& data) {
#if MBEDTLS_VERSION_NUMBER < 0x03000000
    REQUIRE(data.size() > edgelock::detail::tls_saved_header);
    mbedtls_ssl_session s;
    mbedtls_ssl_session_init(&s);
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    const int loaded = mbedtls_ssl_session_load(&s, bytes + edgelock::detail::tls_saved_header,
                                                data.size() - edgelock::detail::tls_saved_header);
    std::string master(reinterpret_cast<const char*>(s.master), sizeof s.master);
    mbedtls_ssl_session_free(&s);
    REQUIRE(loaded == 0);
    return master;
#else
    (void)data;
    return std::string();
#endif
}

std::string counts(const edgelock::tls_mbedtls_base& tls) {
    const edgelock::tls_handshake_counts c = tls.handshake_counts();
    return "handshakes " + std::to_string(c.done) + ", offered " + std::to_string(c.offered) +
           ", resumed " + std::to_string(c.resumed);
}

void connects(const std::string& url, edgelock::tls_mbedtls_base& tls) {
    INFO(url << ": " << counts(tls));
    check_ready(connect_once(url, tls));
}

// A plaintext server on `port` for one connection: whatever comes in is
// answered with a RESP error, then it hangs up. Where a TLS Redis stood, a
// client's handshake fails on it (tls_not_tls).
class plaintext_once {
public:
    explicit plaintext_once(std::uint16_t port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd_ >= 0);
        const int one = 1;
        ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(::listen(fd_, 4) == 0);
        thread_ = std::thread([this] { serve(); });
    }
    ~plaintext_once() {
        thread_.join();
        ::close(fd_);
    }
    plaintext_once(const plaintext_once&) = delete;
    plaintext_once& operator=(const plaintext_once&) = delete;

private:
    void serve() {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 10000) != 1) {
            return;
        }
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) {
            return;
        }
        pollfd q{c, POLLIN, 0};
        char buf[512];
        if (::poll(&q, 1, 5000) == 1) {
            (void)::read(c, buf, sizeof buf);
        }
        const char reply[] = "-ERR not a TLS port\r\n";
        (void)::write(c, reply, sizeof reply - 1);
        ::close(c);
    }

    int fd_ = -1;
    std::thread thread_;
};

}  // namespace

TEST_CASE("tls resume: a second connection to the same server resumes its session",
          "[client][tls][resume]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    redis_client peek(srv.unix_path());
    edgelock::tls_mbedtls<3, 1> tls;
    trust_ca(tls, certs);
    const std::string url = tls_url(srv.port());

    connects(url, tls);
    CHECK(tls.handshake_counts().done == 1);
    CHECK(tls.handshake_counts().offered == 0);
    CHECK(tls.handshake_counts().resumed == 0);
    const kept first = kept_for(tls, "localhost", srv.port());
    REQUIRE(first.found);
    CHECK(first.used);
    CHECK(first.server_name == "localhost");
    CHECK(first.data.size() > edgelock::detail::tls_saved_header);

    connects(url, tls);
    INFO(counts(tls));
    CHECK(tls.handshake_counts().done == 2);
    CHECK(tls.handshake_counts().offered == 1);
    CHECK(tls.handshake_counts().resumed == 1);
    const kept second = kept_for(tls, "localhost", srv.port());
    REQUIRE(second.found);
    CHECK(master_of(second.data) == master_of(first.data));
    CHECK(kept_count(tls) == 1);

    // Locks over resumed sessions, reconnect after reconnect.
    const edgelock_test::url_list urls({url});
    edgelock::client_options o;
    o.via = &tls;
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.data(), 1, o) == edgelock::client_errc::ok);
    for (int round = 0; round < 3; ++round) {
        edgelock_test::lock_cycle(c, peek, "tls-resume-cycle");
        c.disconnect();
    }
    CHECK(tls.handshake_counts().done == 5);
    CHECK(tls.handshake_counts().resumed == 5 - 1);
    CHECK(master_of(kept_for(tls, "localhost", srv.port()).data) == master_of(first.data));
}

TEST_CASE("tls resume: another server, or the same one named otherwise, is never offered it",
          "[client][tls][resume]") {
    tls_certs certs;
    redis_server a(certs.server_files(), {});
    redis_server b(certs.server_files(), {});
    edgelock::tls_mbedtls<3, 4> tls;
    // The certificate's DNS name for every host, so 127.0.0.1 verifies too.
    edgelock::tls_options o;
    o.server_name = "localhost";
    trust_ca(tls, certs, o);

    connects(tls_url(a.port()), tls);
    const kept on_a = kept_for(tls, "localhost", a.port());
    REQUIRE(on_a.found);

    connects(tls_url(b.port()), tls);
    CHECK(tls.handshake_counts().offered == 0);
    const kept on_b = kept_for(tls, "localhost", b.port());
    REQUIRE(on_b.found);
    CHECK(master_of(on_b.data) != master_of(on_a.data));

    // The same server, by address: another peer to the transport.
    connects(tls_url(a.port(), "127.0.0.1"), tls);
    CHECK(tls.handshake_counts().offered == 0);
    const kept by_address = kept_for(tls, "127.0.0.1", a.port());
    REQUIRE(by_address.found);
    CHECK(by_address.server_name == "localhost");
    CHECK(master_of(by_address.data) != master_of(on_a.data));
    CHECK(kept_count(tls) == 3);

    // Each peer gets its own back.
    connects(tls_url(a.port()), tls);
    connects(tls_url(b.port()), tls);
    INFO(counts(tls));
    CHECK(tls.handshake_counts().offered == 2);
    CHECK(tls.handshake_counts().resumed == 2);
    CHECK(master_of(kept_for(tls, "localhost", a.port()).data) == master_of(on_a.data));
    CHECK(master_of(kept_for(tls, "localhost", b.port()).data) == master_of(on_b.data));
}

TEST_CASE("tls resume: a server restarted with new keys refuses it and the new session replaces it",
          "[client][tls][resume]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    edgelock::tls_mbedtls<3> tls;
    trust_ca(tls, certs);
    const std::string url = tls_url(srv.port());
    connects(url, tls);
    const kept before = kept_for(tls, "localhost", srv.port());
    REQUIRE(before.found);

    // A new process: new ticket keys, an empty session cache.
    srv.kill();
    srv.restart();
    connects(url, tls);
    INFO(counts(tls));
    CHECK(tls.handshake_counts().offered == 1);
    CHECK(tls.handshake_counts().resumed == 0);
    const kept after = kept_for(tls, "localhost", srv.port());
    REQUIRE(after.found);
    CHECK(after.data != before.data);
    CHECK(master_of(after.data) != master_of(before.data));

    connects(url, tls);
    CHECK(tls.handshake_counts().offered == 2);
    CHECK(tls.handshake_counts().resumed == 1);
    CHECK(master_of(kept_for(tls, "localhost", srv.port()).data) == master_of(after.data));
}

TEST_CASE("tls resume: a handshake that fails with a session offered forgets it",
          "[client][tls][resume]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    edgelock::tls_mbedtls<3> tls;
    trust_ca(tls, certs);
    const std::string url = tls_url(srv.port());
    connects(url, tls);
    REQUIRE(kept_for(tls, "localhost", srv.port()).found);

    srv.kill();
    {
        plaintext_once impostor(srv.port());
        const edgelock_test::attempt failed = connect_once(url, tls);
        INFO(failed.what);
        CHECK(failed.info.error == node_error::tls_not_tls);
    }
    CHECK(tls.handshake_counts().done == 1);
    CHECK_FALSE(kept_for(tls, "localhost", srv.port()).found);

    // Nothing is offered to the server when it is back: a full handshake.
    srv.restart();
    connects(url, tls);
    CHECK(tls.handshake_counts().offered == 0);
    CHECK(kept_for(tls, "localhost", srv.port()).found);
}

TEST_CASE("tls resume: the least recently used peer's session goes when the entries are full",
          "[client][tls][resume]") {
    tls_certs certs;
    redis_server a(certs.server_files(), {});
    redis_server b(certs.server_files(), {});
    redis_server c(certs.server_files(), {});
    edgelock::tls_mbedtls<3, 2> tls;
    trust_ca(tls, certs);
    connects(tls_url(a.port()), tls);
    connects(tls_url(b.port()), tls);
    connects(tls_url(a.port()), tls);  // a is used again: b is the older
    CHECK(tls.handshake_counts().resumed == 1);
    connects(tls_url(c.port()), tls);
    CHECK(kept_count(tls) == 2);
    CHECK(kept_for(tls, "localhost", a.port()).found);
    CHECK_FALSE(kept_for(tls, "localhost", b.port()).found);
    CHECK(kept_for(tls, "localhost", c.port()).found);
    connects(tls_url(a.port()), tls);
    connects(tls_url(b.port()), tls);  // a full handshake, kept again
    INFO(counts(tls));
    CHECK(tls.handshake_counts().offered == 2);
    CHECK(tls.handshake_counts().resumed == 2);

    // With no entries, nothing is kept or offered.
    edgelock::tls_mbedtls<1, 0> none;
    trust_ca(none, certs);
    connects(tls_url(a.port()), none);
    connects(tls_url(a.port()), none);
    CHECK(none.handshake_counts().done == 2);
    CHECK(none.handshake_counts().offered == 0);
    CHECK(kept_count(none) == 0);
}

TEST_CASE(
    "tls resume: a session carried to another transport resumes there and bad ones are refused",
    "[client][tls][resume]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    const std::string url = tls_url(srv.port());
    edgelock::tls_mbedtls<3> made;
    trust_ca(made, certs);
    connects(url, made);
    const kept k = kept_for(made, "localhost", srv.port());
    REQUIRE(k.found);
    auto import = [&](edgelock::tls_mbedtls_base& to, const std::string& host, std::uint16_t port,
                      const std::string& name, const std::string& data) {
        return to.import_session(view(host), port, view(name), data.data(), data.size());
    };

    // Another process's transport, configured alike.
    edgelock::tls_mbedtls<3> other;
    trust_ca(other, certs);
    REQUIRE(import(other, "localhost", srv.port(), "localhost", k.data) == tls_import::ok);
    const kept imported = kept_for(other, "localhost", srv.port());
    REQUIRE(imported.found);
    CHECK_FALSE(imported.used);
    CHECK(imported.data == k.data);
    connects(url, other);
    INFO(counts(other));
    CHECK(other.handshake_counts().offered == 1);
    CHECK(other.handshake_counts().resumed == 1);
    CHECK(kept_for(other, "localhost", srv.port()).used);

    // Refused, and nothing kept for it.
    edgelock::tls_mbedtls<3> fresh;
    CHECK(import(fresh, "localhost", srv.port(), "localhost", k.data) ==
          tls_import::not_configured);
    trust_ca(fresh, certs);
    std::string damaged = k.data;
    damaged[0] = 'x';
    CHECK(import(fresh, "localhost", srv.port(), "localhost", damaged) ==
          tls_import::not_a_session);
    CHECK(import(fresh, "localhost", srv.port(), "localhost", k.data.substr(0, 10)) ==
          tls_import::not_a_session);
    CHECK(import(fresh, "localhost", srv.port(), "localhost",
                 k.data + std::string(EDGELOCK_TLS_SESSION_BYTES, 'x')) ==
          tls_import::not_a_session);
    CHECK(import(fresh, "localhost", srv.port(), "localhost",
                 k.data.substr(0, k.data.size() - 9)) == tls_import::unusable);
    std::string other_fingerprint = k.data;
    other_fingerprint[7] = static_cast<char>(other_fingerprint[7] ^ 1);
    CHECK(import(fresh, "localhost", srv.port(), "localhost", other_fingerprint) ==
          tls_import::other_setup);
    CHECK(import(fresh, "", srv.port(), "", k.data) == tls_import::bad_peer);
    CHECK(import(fresh, "localhost", 0, "localhost", k.data) == tls_import::bad_peer);
    CHECK(import(fresh, "localhost", srv.port(), "other.example", k.data) ==
          tls_import::other_name);
    CHECK(kept_count(fresh) == 0);

    // Made under other trust settings: refused.
    edgelock::tls_mbedtls<3> insecure;
    edgelock::tls_options skip;
    skip.insecure_skip_verify = true;
    trust_ca(insecure, certs, skip);
    CHECK(import(insecure, "localhost", srv.port(), "localhost", k.data) ==
          tls_import::other_setup);
    edgelock::tls_mbedtls<3> other_ca;
    const std::string other_ca_file = certs.other_ca_file();
    edgelock::tls_options by_other;
    by_other.ca_file = view(other_ca_file);
    REQUIRE(other_ca.configure(by_other) == edgelock::tls_errc::ok);
    CHECK(import(other_ca, "localhost", srv.port(), "localhost", k.data) ==
          tls_import::other_setup);
    edgelock::tls_mbedtls<3> with_cert;
    const std::string cert = certs.cert("client");
    const std::string key = certs.key("client");
    edgelock::tls_options client_cert;
    client_cert.cert_file = view(cert);
    client_cert.key_file = view(key);
    trust_ca(with_cert, certs, client_cert);
    CHECK(import(with_cert, "localhost", srv.port(), "localhost", k.data) ==
          tls_import::other_setup);
    edgelock::tls_mbedtls<1, 0> none;
    trust_ca(none, certs);
    CHECK(import(none, "localhost", srv.port(), "localhost", k.data) == tls_import::no_room);

    // configure() again forgets what was kept.
    trust_ca(other, certs);
    CHECK(kept_count(other) == 0);
    CHECK(other.handshake_counts().done == 0);
}
