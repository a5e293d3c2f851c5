// Helpers for the TLS tests that drive the client: one connection attempt and
// how it ended, a transport trusting the test CA, a lock cycle seen from
// inside the server.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "edgelock/client.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "tools/lock_key.hpp"

namespace edgelock_test {

inline edgelock::str_view view(const std::string& s) {
    return {s.data(), s.size()};
}

inline std::string tls_url(std::uint16_t port, const std::string& host = "localhost") {
    return "rediss://" + host + ":" + std::to_string(port);
}

// One connection attempt of a one-node client: how it ended and how long it
// took (connect_timeout 3 s unless told: a refusal must come well before).
struct attempt {
    edgelock::node_info info;  // message cleared: see `message`
    std::string message;
    double ms = 0;
    std::string what;
};

constexpr unsigned tls_connect_timeout_ms = 3000;
// The node_timeout of lock requests over TLS in the tests: a reconnect's whole
// handshake fits in it, even emulated on a loaded machine.
constexpr unsigned tls_request_timeout_ms = 2000;

inline attempt connect_once(const std::string& url, edgelock::transport& via,
                            unsigned timeout_ms = tls_connect_timeout_ms) {
    const url_list urls({url});
    edgelock::client_options o;
    o.via = &via;
    o.connect_timeout = edgelock::duration::millis(timeout_ms);
    edgelock::client<1> c;
    REQUIRE(c.configure(urls.data(), 1, o) == edgelock::client_errc::ok);
    const edgelock::instant start = edgelock::port::now();
    c.connect(start + edgelock::duration::seconds(10));
    attempt a;
    a.ms = ms_since(start);
    a.info = c.node(0);
    a.message = str(a.info.message);
    a.what = what(a.info) + " after " + std::to_string(a.ms) + " ms";
    a.info.message = {};
    return a;
}

// Configured to trust the test CA (by file), or fails the test.
inline void trust_ca(edgelock::tls_mbedtls_base& tls, const tls_certs& certs,
                     edgelock::tls_options o = {}) {
    const std::string ca = certs.ca_file();
    o.ca_file = view(ca);
    REQUIRE(tls.configure(o) == edgelock::tls_errc::ok);
}

inline void check_ready(const attempt& a) {
    INFO(a.what);
    CHECK(a.info.state == edgelock::node_state::ready);
    CHECK(a.info.error == edgelock::node_error::none);
}

// Refused for `why`, with the TLS library's words, before connect_timeout:
// an answer, not a wait. (Some refusals come only after a whole handshake,
// about half a second of P-256 under qemu-arm and more on a loaded machine:
// the bound is the timeout itself, which a refusal never waits for.)
inline void check_refused(const attempt& a, edgelock::node_error why) {
    INFO(a.what);
    CHECK(a.info.state == edgelock::node_state::backoff);
    CHECK(a.info.error == why);
    CHECK_FALSE(a.message.empty());
    CHECK(a.ms < tls_connect_timeout_ms);
}

// A lock acquired and released over the client, seen from inside the server.
// node_timeout_ms 0: each round as long as the ttl allows (a trickle's).
inline void lock_cycle(edgelock::client_base& c, redis_client& peek, const char* name,
                       edgelock::lock_mode mode = edgelock::lock_mode::plain,
                       unsigned node_timeout_ms = 1000) {
    edgelock::client_lock l;
    REQUIRE(l.attach(c, name, options(5000, node_timeout_ms, mode)) == edgelock::client_errc::ok);
    must_acquire(l);
    CHECK(peek.command({"EXISTS", key_of(name)}).integer == 1);
    must_release(l);
    CHECK(peek.command({"EXISTS", key_of(name)}).integer == 0);
}

}  // namespace edgelock_test
