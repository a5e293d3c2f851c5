// RESP2 waiters told over TLS: the node's subscription takes the transport's
// second session (N + i). With room for it, a waiter is told of the release
// over TLS; without (a tls_mbedtls<N> for a client<N>), the node stays ready
// and its waiters poll.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "edgelock/client.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "integration/tls_helpers.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

lock_options waiting_options() {
    lock_options o = edgelock_test::options(5000, 500);
    o.retry_min = duration::millis(3000);  // a waiter that acquires sooner was told
    o.retry_max = duration::millis(3000);
    return o;
}

client_options resp2_via(transport& t) {
    client_options o;
    o.resp3 = false;
    o.via = &t;
    return o;
}

}  // namespace

TEST_CASE("tls notify: a RESP2 waiter is told over its TLS subscription", "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    redis_client peek(srv.unix_path());
    tls_mbedtls<2> tls;  // the lock connection and the subscription
    trust_ca(tls, certs);
    const url_list urls({tls_url(srv.port())});
    client<1> c;
    configure(c, urls, resp2_via(tls));
    client_lock l;
    REQUIRE(l.attach(c, "tls-notify", waiting_options(), no_watchdog()) == client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    const instant t0 = port::now();
    while (!c.node(0).tracking && ms_since(t0) < 3000) {
        REQUIRE(c.run_for(duration::millis(10)) == client_errc::ok);
    }
    INFO(what(c.node(0)));
    REQUIRE(c.node(0).tracking);
    CHECK(peek.command({"CLIENT", "LIST", "TYPE", "pubsub"}).text.find("id=") != std::string::npos);

    REQUIRE(peek.command({"SET", key_of("tls-notify"), "other", "PX", "10000"}).text == "OK");
    const instant t1 = port::now();
    op_result r;
    {
        std::thread releaser([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            redis_client other(srv.unix_path());
            other.command(marked_release("tls-notify", "other"));
        });
        r = l.acquire(duration::seconds(6));
        releaser.join();
    }
    INFO(what(r));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(ms_since(t1) < 1500);  // the retry delay is 3000 ms
    must_release(l);
}

TEST_CASE("tls notify: no session for the subscription, the waiters poll", "[client][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    redis_client peek(srv.unix_path());
    tls_mbedtls<1> tls;  // the lock connection's only
    trust_ca(tls, certs);
    const url_list urls({tls_url(srv.port())});
    client<1> c;
    configure(c, urls, resp2_via(tls));
    client_lock l;
    REQUIRE(l.attach(c, "tls-notify-none", edgelock_test::options(5000, 500), no_watchdog()) ==
            client_errc::ok);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    REQUIRE(c.run_for(duration::millis(500)) == client_errc::ok);
    INFO(what(c.node(0)));
    CHECK(c.node(0).state == node_state::ready);
    CHECK_FALSE(c.node(0).tracking);
    CHECK(peek.command({"CLIENT", "LIST", "TYPE", "pubsub"}).text.empty());
    must_acquire(l);
    must_release(l);
}
