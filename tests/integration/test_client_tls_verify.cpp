// TLS verification against real redis-servers started with --tls-port and
// certificates made by the test (tls_fixture.hpp): by CA file, CA directory
// or the system store; unknown CA, other name, expired, client certificates.
// Each refusal is per node, specific, and well within connect_timeout.
#include <catch2/catch.hpp>

#include <string>

#include <mbedtls/version.h>

#include "edgelock/client.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "integration/tls_helpers.hpp"

using edgelock::client_errc;
using edgelock::node_error;
using edgelock::node_state;
using edgelock::tls_errc;
using edgelock::tls_options;
using edgelock_test::attempt;
using edgelock_test::check_ready;
using edgelock_test::check_refused;
using edgelock_test::connect_once;
using edgelock_test::lock_cycle;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::tls_certs;
using edgelock_test::tls_url;
using edgelock_test::trust_ca;
using edgelock_test::url_list;
using edgelock_test::view;

TEST_CASE("tls: verified by a CA directory of hashed names", "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    edgelock::tls_mbedtls<1> tls;
    const std::string dir = certs.ca_dir();
    tls_options t;
    t.ca_dir = view(dir);
    REQUIRE(tls.configure(t) == tls_errc::ok);
    check_ready(connect_once(tls_url(srv.port()), tls));
}

TEST_CASE("tls: a server the trusted CAs did not sign is refused", "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files("untrusted"), {});
    edgelock::tls_mbedtls<1> tls;
    SECTION("by CA file") {
        trust_ca(tls, certs);
        check_refused(connect_once(tls_url(srv.port()), tls), node_error::tls_untrusted);
    }
    SECTION("insecure mode skips the check") {
        tls_options t;
        t.insecure_skip_verify = true;
        trust_ca(tls, certs, t);
        check_ready(connect_once(tls_url(srv.port()), tls));
    }
}

TEST_CASE("tls: neither CA file nor directory: the system store, which knows no test CA",
          "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    edgelock::tls_mbedtls<1> tls;
    const tls_errc e = tls.configure(tls_options{});
    if (e == tls_errc::ok) {
        check_refused(connect_once(tls_url(srv.port()), tls), node_error::tls_untrusted);
    } else {
        // No store on this system: refused at configure, unless nothing is checked.
        CHECK(e == tls_errc::no_ca);
        tls_options t;
        t.insecure_skip_verify = true;
        CHECK(tls.configure(t) == tls_errc::ok);
    }
}

TEST_CASE("tls: a certificate for another name is refused, unless that name is asked for",
          "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files("wrong-name"), {});
    edgelock::tls_mbedtls<1> tls;
    SECTION("the URL's host") {
        trust_ca(tls, certs);
        check_refused(connect_once(tls_url(srv.port()), tls), node_error::tls_name_mismatch);
    }
    SECTION("server_name: sent as SNI and verified") {
        tls_options t;
        t.server_name = "other.example";
        trust_ca(tls, certs, t);
        check_ready(connect_once(tls_url(srv.port()), tls));
    }
}

TEST_CASE("tls: a node given by address", "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    edgelock::tls_mbedtls<1> tls;
    SECTION("verified against server_name") {
        tls_options t;
        t.server_name = "localhost";
        trust_ca(tls, certs, t);
        check_ready(connect_once(tls_url(srv.port(), "127.0.0.1"), tls));
    }
    SECTION("verified against the certificate's IP address entry, from mbedTLS 3.5") {
        trust_ca(tls, certs);
        const attempt a = connect_once(tls_url(srv.port(), "127.0.0.1"), tls);
#if MBEDTLS_VERSION_NUMBER >= 0x03050000
        check_ready(a);
#else
        check_refused(a, node_error::tls_name_mismatch);
#endif
    }
}

TEST_CASE("tls: an expired certificate is refused", "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files("expired"), {});
    edgelock::tls_mbedtls<1> tls;
    trust_ca(tls, certs);
    check_refused(connect_once(tls_url(srv.port()), tls), node_error::tls_expired);
}

TEST_CASE("tls: a server that requires a client certificate", "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files("server", true), {});
    redis_client peek(srv.unix_path());
    edgelock::tls_mbedtls<1> tls;
    SECTION("without one: refused") {
        trust_ca(tls, certs);
        check_refused(connect_once(tls_url(srv.port()), tls), node_error::tls_handshake_failed);
    }
    SECTION("with one: accepted") {
        tls_options t;
        const std::string cert = certs.cert("client");
        const std::string key = certs.key("client");
        t.cert_file = view(cert);
        t.key_file = view(key);
        trust_ca(tls, certs, t);
        const url_list urls({tls_url(srv.port())});
        edgelock::client_options o;
        o.via = &tls;
        edgelock::client<1> c;
        REQUIRE(c.configure(urls.data(), 1, o) == client_errc::ok);
        lock_cycle(c, peek, "tls-mutual");
    }
}
