// rediss-sentinel:// nodes against a Sentinel deployment that speaks TLS
// only (tls_sentinel_fixture.hpp): the sentinels are asked over TLS, verified
// as rediss:// nodes are (against the URL's host), and the master they name
// is reached over TLS and verified against the name they give. A lock is
// acquired, renewed and released on the master; after SENTINEL FAILOVER the
// watch, subscribed over TLS, moves the lock connection to the promoted
// replica; a sentinel whose certificate does not verify is skipped for the
// next, and when none verifies the node says why; a redis-sentinel:// URL
// against these sentinels fails with the reason, in time.
//
// First, the deployment itself, looked at with redis-cli --tls: the
// sentinels answer over TLS only, name the master, and fail over to the
// replica over TLS.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "edgelock/tls_mbedtls.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/sentinel_fixture.hpp"
#include "integration/tls_helpers.hpp"
#include "integration/tls_sentinel_fixture.hpp"
#include "tools/clock.hpp"

using namespace edgelock;
using namespace edgelock_test;

namespace {

// A lock connection, the watch and a subscription: sessions to spare.
using sentinel_tls = tls_mbedtls<8>;

// The sentinel's answer to get-master-addr-by-name, through redis-cli --tls.
std::string cli_master_addr(const tls_sentinel_deployment& d, const redis_server& sentinel) {
    return tls_redis_cli(d.certs, sentinel.port(),
                         {"SENTINEL", "get-master-addr-by-name", "mymaster"});
}

std::string addr(const redis_server& server) {
    return "localhost\n" + std::to_string(server.port()) + "\n";
}

// A command on a connection of its own: a server that changes role closes
// its clients' connections.
reply ask(const redis_server& server, const std::vector<std::string>& args) {
    return inside(server)->command(args);
}

std::size_t fds_wanted(const client_base& c) {
    port::wait_entry entries[16];
    return c.wanted(entries, 16);
}

// Drives the client until done() or `seconds` have passed (REQUIREs done).
template <class F>
void drive_until(client_base& c, F done, double seconds) {
    const double until = mono_s() + seconds;
    while (!done()) {
        REQUIRE(mono_s() < until);
        REQUIRE(c.run_for(duration::millis(20)) == client_errc::ok);
    }
}

// SENTINEL FAILOVER through the first sentinel (again while NOGOODSLAVE:
// it has not heard from the replica lately), then until every sentinel names
// the replica and the replica says it is a master. idle() runs between looks.
template <class F>
void fail_over(tls_sentinel_deployment& d, F idle) {
    const double until = mono_s() + 20;
    while (ask_sentinel(*d.sentinels[0], {"SENTINEL", "FAILOVER", "mymaster"}).text != "OK") {
        REQUIRE(mono_s() < until);
        idle();
    }
    for (auto& s : d.sentinels) {
        while (named_port(*s, "mymaster") != d.replica.port()) {
            REQUIRE(mono_s() < until);
            idle();
        }
    }
    while (role(d.replica) != "master") {
        REQUIRE(mono_s() < until);
        idle();
    }
}

// Whether one of the sentinels has a subscriber on its TLS port.
bool watched_over_tls(tls_sentinel_deployment& d) {
    for (auto& s : d.sentinels) {
        const std::string list = ask(*s, {"CLIENT", "LIST"}).text;
        const std::string laddr = "laddr=127.0.0.1:" + std::to_string(s->port());
        const std::string laddr6 = "laddr=[::1]:" + std::to_string(s->port());
        std::size_t from = 0;
        while (from < list.size()) {
            std::size_t end = list.find('\n', from);
            end = end == std::string::npos ? list.size() : end;
            const std::string line = list.substr(from, end - from);
            if (line.find("cmd=subscribe") != std::string::npos &&
                (line.find(laddr) != std::string::npos || line.find(laddr6) != std::string::npos)) {
                return true;
            }
            from = end + 1;
        }
    }
    return false;
}

client_options tls_client_options(transport& via) {
    client_options o;
    o.via = &via;
    o.connect_timeout = duration::millis(tls_connect_timeout_ms);
    return o;
}

}  // namespace

TEST_CASE("tls sentinel: the deployment answers over TLS only and fails over",
          "[client][tls][sentinel]") {
    tls_sentinel_deployment d;
    for (auto& s : d.sentinels) {
        CHECK(cli_master_addr(d, *s) == addr(d.master));
        CHECK(knows_linked_replica(*s));
    }
    CHECK(tls_redis_cli(d.certs, d.master.port(), {"ROLE"}).compare(0, 7, "master\n") == 0);
    CHECK(tls_redis_cli(d.certs, d.replica.port(), {"ROLE"}).compare(0, 6, "slave\n") == 0);
    // The sentinels know each other (over TLS: it is all they speak).
    CHECK(ask_sentinel(*d.sentinels[0], {"SENTINEL", "sentinels", "mymaster"}).elements.size() ==
          2);
    // No plain TCP anywhere: the TLS port hangs up on plain text.
    CHECK_THROWS(redis_client(d.sentinels[0]->port(), 2.0).command({"PING"}));
    CHECK_THROWS(redis_client(d.master.port(), 2.0).command({"PING"}));

    fail_over(d, [] { sleep_ms(100); });
    for (auto& s : d.sentinels) {
        CHECK(cli_master_addr(d, *s) == addr(d.replica));
    }
    CHECK(tls_redis_cli(d.certs, d.replica.port(), {"ROLE"}).compare(0, 7, "master\n") == 0);
}

TEST_CASE("tls sentinel: a rediss-sentinel:// node needs a TLS transport",
          "[client][tls][sentinel]") {
    const url_list urls({"redis://127.0.0.1:1", "rediss-sentinel://localhost:26379/mymaster"});
    client<2> c;
    CHECK(c.configure(urls.data(), urls.size(), client_options{}) == client_errc::tls_not_built_in);
    CHECK(c.bad_url_index() == 1);
}

TEST_CASE("tls sentinel: a lock acquired renewed and released on the master",
          "[client][tls][sentinel]") {
    tls_sentinel_deployment d;
    sentinel_tls tls;
    trust_ca(tls, d.certs);
    const url_list urls({d.url()});
    client<1> c;
    configure(c, urls, tls_client_options(tls));
    client_lock l;
    REQUIRE(l.attach(c, "tls-sentinel-lock", edgelock_test::options(5000, tls_request_timeout_ms),
                     no_watchdog()) == client_errc::ok);
    must_acquire(l);
    INFO(what(c.node(0)));
    CHECK(c.node(0).state == node_state::ready);
    const std::unique_ptr<redis_client> master = inside(d.master);
    CHECK(master->command({"GET", key_of("tls-sentinel-lock")}).text == hex(l.token()));

    master->command({"PEXPIRE", key_of("tls-sentinel-lock"), "1000"});
    const op_result r = l.renew();
    INFO(what(r));
    REQUIRE(r.event.kind == lock_event_kind::renewed);
    CHECK(master->command({"PTTL", key_of("tls-sentinel-lock")}).integer > 1000);
    CHECK(master->command({"GET", key_of("tls-sentinel-lock")}).text == hex(l.token()));

    must_release(l);
    CHECK(master->command({"EXISTS", key_of("tls-sentinel-lock")}).integer == 0);

    // The first sentinel of the list down: the next one says, over TLS too.
    d.sentinels[0]->kill();
    client<1> c2;
    configure(c2, urls, tls_client_options(tls));
    client_lock l2;
    REQUIRE(l2.attach(c2, "tls-sentinel-lock", edgelock_test::options(5000, tls_request_timeout_ms),
                      no_watchdog()) == client_errc::ok);
    must_acquire(l2);
    CHECK(master->command({"GET", key_of("tls-sentinel-lock")}).text == hex(l2.token()));
    must_release(l2);
}

TEST_CASE("tls sentinel: the watch over TLS moves the lock to the promoted replica",
          "[client][tls][sentinel]") {
    tls_sentinel_deployment d;
    sentinel_tls tls;
    trust_ca(tls, d.certs);
    const url_list urls({d.url()});
    client<1> c;
    configure(c, urls, tls_client_options(tls));
    client_lock held;
    recorder rec;
    rec.listen(held);
    watchdog_options w;
    w.renew_every = duration::millis(300);
    REQUIRE(held.attach(c, "tls-switch-held", edgelock_test::options(4000, tls_request_timeout_ms),
                        w) == client_errc::ok);
    must_acquire(held);
    // The lock connection and the watch, subscribed on a sentinel's TLS port.
    INFO("waiting for the watch to subscribe over TLS; node: " << what(c.node(0)));
    drive_until(
        c, [&] { return fds_wanted(c) == 2; }, 5);
    drive_until(
        c, [&] { return watched_over_tls(d); }, 5);
    // The key has reached the replica before the failover begins.
    drive_until(
        c,
        [&] {
            return ask(d.replica, {"EXISTS", key_of("tls-switch-held")}).integer == 1;
        },
        5);

    fail_over(d, [&] { REQUIRE(c.run_for(duration::millis(100)) == client_errc::ok); });
    REQUIRE(c.run_for(duration::millis(200)) == client_errc::ok);

    // A new lock, one try: on the promoted replica, whatever the old master
    // says of itself by now.
    const std::string old_role = role(d.master);
    client_lock after;
    REQUIRE(after.attach(c, "tls-switch-after",
                         edgelock_test::options(3000, tls_request_timeout_ms),
                         no_watchdog()) == client_errc::ok);
    const op_result r = after.try_acquire();
    INFO("old master's role: " << old_role << "; " << what(r) << "; " << what(c.node(0)));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(ask(d.replica, {"GET", key_of("tls-switch-after")}).text == hex(after.token()));
    CHECK(ask(d.master, {"EXISTS", key_of("tls-switch-after")}).integer == 0);
    must_release(after);

    // The held lock went on being renewed on the new master.
    const int renewed_before = rec.count(lock_event_kind::renewed);
    REQUIRE(c.run_for(duration::millis(900)) == client_errc::ok);
    INFO(rec.list());
    CHECK(held.held());
    CHECK(rec.count(lock_event_kind::lost) == 0);
    CHECK(rec.count(lock_event_kind::renewed) > renewed_before);
    CHECK(ask(d.replica, {"GET", key_of("tls-switch-held")}).text == hex(held.token()));
    must_release(held);
}

TEST_CASE("tls sentinel: a sentinel whose certificate does not verify is skipped",
          "[client][tls][sentinel]") {
    tls_sentinel_deployment d;
    const std::unique_ptr<redis_server> untrusted = d.sentinel_with("untrusted");
    const std::unique_ptr<redis_server> wrong_name = d.sentinel_with("wrong-name");
    const std::string bad = "localhost:" + std::to_string(untrusted->port()) +
                            ",localhost:" + std::to_string(wrong_name->port());
    sentinel_tls tls;
    trust_ca(tls, d.certs);

    SECTION("the next sentinel names the master") {
        const url_list urls({"rediss-sentinel://" + bad + "," + d.hosts() + "/mymaster"});
        client<1> c;
        configure(c, urls, tls_client_options(tls));
        client_lock l;
        REQUIRE(l.attach(c, "tls-sentinel-skip",
                         edgelock_test::options(5000, tls_request_timeout_ms),
                         no_watchdog()) == client_errc::ok);
        const instant t0 = port::now();
        must_acquire(l);
        INFO(what(c.node(0)));
        CHECK(ms_since(t0) < tls_connect_timeout_ms);
        CHECK(ask(d.master, {"GET", key_of("tls-sentinel-skip")}).text == hex(l.token()));
        must_release(l);
    }
    SECTION("none verifies: the node fails with the certificate's reason, in time") {
        const url_list urls({"rediss-sentinel://" + bad + "/mymaster"});
        client<1> c;
        configure(c, urls, tls_client_options(tls));
        const instant t0 = port::now();
        CHECK(c.connect(port::now() + duration::seconds(10)) == 0);
        const double ms = ms_since(t0);
        INFO(what(c.node(0)) << " after " << ms << " ms");
        CHECK(ms < tls_connect_timeout_ms);
        CHECK(c.node(0).state == node_state::backoff);
        CHECK(c.node(0).error == node_error::sentinel_failed);
        CHECK(str(c.node(0).message).find("certificate") != std::string::npos);
    }
}

TEST_CASE("tls sentinel: a redis-sentinel:// URL against TLS sentinels fails with the reason",
          "[client][tls][sentinel]") {
    tls_sentinel_deployment d;
    const url_list urls({d.url(0, "mymaster", "redis-sentinel")});
    sentinel_tls tls;
    trust_ca(tls, d.certs);
    transport* const vias[] = {&tls, nullptr};
    for (transport* via : vias) {
        INFO((via != nullptr ? "over the TLS transport" : "over the plain one"));
        client_options o;
        o.via = via;
        o.connect_timeout = duration::millis(tls_connect_timeout_ms);
        client<1> c;
        configure(c, urls, o);
        const instant t0 = port::now();
        CHECK(c.connect(port::now() + duration::seconds(10)) == 0);
        const double ms = ms_since(t0);
        INFO(what(c.node(0)) << " after " << ms << " ms");
        CHECK(ms < tls_connect_timeout_ms);
        CHECK(c.node(0).state == node_state::backoff);
        CHECK(c.node(0).error == node_error::sentinel_failed);
        // Says what to do about it, as a plain URL to a TLS node does.
        CHECK(str(c.node(0).message).find("rediss-sentinel://") != std::string::npos);
    }
}
