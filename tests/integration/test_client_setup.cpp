// The driver's set-up against real redis-servers: AUTH with requirepass, an
// ACL user, the URL's database, Unix sockets, RESP3 through HELLO 3, and
// configuration and misuse errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp_encoder.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

long long exists_in_db(redis_client& admin, int db, const std::string& key) {
    admin.command({"SELECT", std::to_string(db)});
    const long long n = admin.command({"EXISTS", key}).integer;
    admin.command({"SELECT", "0"});
    return n;
}

}  // namespace

TEST_CASE("client: AUTH with requirepass", "[integration][client]") {
    redis_server srv({"--requirepass", "s3cret"});
    const char* name = "client-auth";

    SECTION("the URL's password") {
        url_list urls({redis_url(srv, ":s3cret")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(c.node(0).state == node_state::ready);
        CHECK(c.node(0).error == node_error::none);
        must_release(l);
    }

    SECTION("a wrong password") {
        url_list urls({redis_url(srv, ":wrong")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        const op_result r = l.try_acquire();
        const node_info n = c.node(0);
        INFO(what(r) << "; node: " << what(n));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(r.event.reason == lock_failure::no_quorum);
        CHECK(n.error == node_error::auth_failed);
        CHECK_FALSE(n.message.empty());
        const std::string m = str(n.message);
        CHECK((m.find("WRONGPASS") != std::string::npos || m.find("invalid") != std::string::npos));
        CHECK_FALSE(l.held());
    }

    SECTION("no password at all") {
        url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        const op_result r = l.try_acquire();
        const node_info n = c.node(0);
        INFO(what(r) << "; node: " << what(n));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(n.error == node_error::auth_failed);
        CHECK_FALSE(n.message.empty());
    }

    SECTION("client_options.password overrides the URL") {
        url_list urls({redis_url(srv), redis_url(srv, ":wrong")});
        client_options o;
        o.password = "s3cret";
        for (std::size_t i = 0; i < urls.size(); ++i) {
            INFO("url " << urls.text[i]);
            client<1> c;
            REQUIRE(c.configure(urls.data() + i, 1, o) == client_errc::ok);
            client_lock l;
            REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
            must_acquire(l);
            must_release(l);
        }
    }
}

TEST_CASE("client: an ACL user", "[integration][client]") {
    redis_server srv({"--user", "gw", "on", ">gwpass", "~*", "&*", "+@all"});
    const char* name = "client-acl";
    {
        redis_client admin(srv.port());
        const edgelock_test::reply who = admin.command({"ACL", "WHOAMI"});
        REQUIRE(who.text == "default");
        REQUIRE(admin.command({"AUTH", "gw", "gwpass"}).text == "OK");
    }

    SECTION("user and password in the URL") {
        url_list urls({redis_url(srv, "gw:gwpass")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        redis_client admin(srv.port());
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
        const std::string clients = admin.command({"CLIENT", "LIST"}).text;
        CHECK(clients.find("user=gw") != std::string::npos);
        must_release(l);
    }

    SECTION("user and password over RESP3 (HELLO 3 AUTH)") {
        url_list urls({redis_url(srv, "gw:gwpass")});
        client_options o;
        o.resp3 = true;
        client<1> c;
        configure(c, urls, o);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        must_release(l);
    }

    SECTION("a wrong password") {
        url_list urls({redis_url(srv, "gw:nope")});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        const op_result r = l.try_acquire();
        const node_info n = c.node(0);
        INFO(what(r) << "; node: " << what(n));
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(n.error == node_error::auth_failed);
        CHECK_FALSE(n.message.empty());
    }
}

TEST_CASE("client: the URL's database is SELECTed", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "client-select";
    url_list urls({redis_url(srv, "", "/3")});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
    must_acquire(l);
    CHECK(exists_in_db(admin, 3, key_of(name)) == 1);
    CHECK(exists_in_db(admin, 0, key_of(name)) == 0);
    must_release(l);
    CHECK(exists_in_db(admin, 3, key_of(name)) == 0);
}

TEST_CASE("client: a Unix socket, with and without ?db=", "[integration][client]") {
    redis_server srv;
    redis_client admin(srv.unix_path());
    const char* name = "client-unix";

    SECTION("db 0") {
        url_list urls({"unix://" + srv.unix_path()});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
        must_release(l);
        CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    }

    SECTION("db 2") {
        url_list urls({"unix://" + srv.unix_path() + "?db=2"});
        client<1> c;
        configure(c, urls);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(exists_in_db(admin, 2, key_of(name)) == 1);
        CHECK(exists_in_db(admin, 0, key_of(name)) == 0);
        must_release(l);
        CHECK(exists_in_db(admin, 2, key_of(name)) == 0);
    }
}

TEST_CASE("client: RESP3 via HELLO 3", "[integration][client]") {
    client_options o;
    o.resp3 = true;

    SECTION("one node") {
        redis_server srv;
        redis_client admin(srv.port());
        const char* name = "client-resp3";
        url_list urls({redis_url(srv)});
        client<1> c;
        configure(c, urls, o);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200)) == client_errc::ok);
        must_acquire(l);
        CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
        const std::string clients = admin.command({"CLIENT", "LIST"}).text;
        INFO(clients);
        CHECK(clients.find("name=edgelock") != std::string::npos);
        CHECK(clients.find("resp=3") != std::string::npos);
        const op_result r = l.renew();
        CHECK(r.event.kind == lock_event_kind::renewed);
        must_release(l);
        CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    }

    SECTION("fenced Redlock over 3 nodes") {
        redis_server s0;
        redis_server s1;
        redis_server s2;
        const char* name = "client-resp3-fenced";
        url_list urls({redis_url(s0), redis_url(s1), redis_url(s2)});
        client<3> c;
        configure(c, urls, o);
        client_lock l;
        REQUIRE(l.attach(c, name, options(5000, 200, lock_mode::fenced)) == client_errc::ok);
        std::uint64_t last = 0;
        for (int i = 0; i < 3; ++i) {
            const op_result r = l.try_acquire();
            INFO("round " << i << ": " << what(r));
            REQUIRE(r.error == client_errc::ok);
            REQUIRE(r.event.kind == lock_event_kind::acquired);
            CHECK(r.event.fence > last);
            CHECK(l.fence() == r.event.fence);
            last = r.event.fence;
            must_release(l);
        }
        redis_client a0(s0.port());
        CHECK(a0.command({"EXISTS", key_of(name)}).integer == 0);
    }
}

TEST_CASE("client: configuration and misuse errors", "[integration][client]") {
    redis_server srv;
    const std::string good = redis_url(srv);

    client<2> c;
    {
        const str_view bad[] = {str_view(good.data(), good.size()), "http://127.0.0.1"};
        CHECK(c.configure(bad, 2, {}) == client_errc::bad_url);
        CHECK(c.bad_url_index() == 1);
        CHECK(c.bad_url_error() == url_errc::bad_scheme);
    }
    {
        const str_view bad[] = {"redis://127.0.0.1:99999"};
        CHECK(c.configure(bad, 1, {}) == client_errc::bad_url);
        CHECK(c.bad_url_index() == 0);
        CHECK(c.bad_url_error() == url_errc::bad_port);
    }
    {
        const str_view tls[] = {str_view(good.data(), good.size()), "rediss://127.0.0.1:6380"};
        CHECK(c.configure(tls, 2, {}) == client_errc::tls_not_built_in);
        CHECK(c.bad_url_index() == 1);
    }
    {
        const str_view user[] = {"redis://gw@127.0.0.1:6379"};
        CHECK(c.configure(user, 1, {}) == client_errc::user_without_password);
        client_options o;
        o.password = "pw";
        CHECK(c.configure(user, 1, o) == client_errc::ok);
    }
    {
        const str_view three[] = {"redis://a", "redis://b", "redis://c"};
        CHECK(c.configure(three, 3, {}) == client_errc::bad_node_count);
        CHECK(c.configure(three, 0, {}) == client_errc::bad_node_count);
        client_options o;
        o.connect_timeout = duration{};
        CHECK(c.configure(three, 1, o) == client_errc::bad_option);
        o = client_options{};
        o.client_name = "no spaces";
        CHECK(c.configure(three, 1, o) == client_errc::bad_option);
    }

    // Attach needs a configured client and a lock configuration it accepts.
    client<1> fresh;
    client_lock l;
    CHECK(l.attach(fresh, "client-config") == client_errc::not_configured);
    CHECK_FALSE(l.attached());

    const str_view one[] = {str_view(good.data(), good.size())};
    REQUIRE(c.configure(one, 1, {}) == client_errc::ok);
    lock_options bad_ttl = options(5000, 200);
    bad_ttl.ttl = duration::millis(lock_max_ttl_ms + 1000);
    CHECK(l.attach(c, "client-config", bad_ttl) == client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::bad_ttl);
    bad_ttl.ttl = duration{};
    CHECK(l.attach(c, "client-config", bad_ttl) == client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::bad_ttl);
    CHECK(l.attach(c, "client-config", options(100, 100)) == client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::bad_node_timeout);
    CHECK(l.attach(c, "", options(5000, 200)) == client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::empty_name);
    CHECK_FALSE(l.attached());

    // Unattached: every operation says so.
    CHECK(l.try_acquire().error == client_errc::not_attached);
    CHECK(l.acquire(duration::millis(10)).error == client_errc::not_attached);
    CHECK(l.renew().error == client_errc::not_attached);
    CHECK(l.release().error == client_errc::not_attached);
    CHECK(l.start_acquire(1, duration::millis(10)) == client_errc::not_attached);
    CHECK(l.start_renew() == client_errc::not_attached);
    CHECK(l.start_release() == client_errc::not_attached);
    CHECK_FALSE(l.held());

    REQUIRE(l.attach(c, "client-config", options(5000, 200)) == client_errc::ok);
    CHECK(l.attached());
    CHECK(l.attach(c, "client-config", options(5000, 200)) == client_errc::already_attached);
    CHECK(c.configure(one, 1, {}) == client_errc::in_use);
    CHECK(l.release().error == client_errc::not_held);
    CHECK(l.renew().error == client_errc::not_held);
    CHECK(l.start_release() == client_errc::not_held);
    CHECK(l.start_acquire(0, duration::millis(10)) == client_errc::bad_option);

    // None of that broke anything.
    must_acquire(l);
    must_release(l);
    l.detach();
    CHECK_FALSE(l.attached());
    CHECK(l.try_acquire().error == client_errc::not_attached);
    CHECK(c.configure(one, 1, {}) == client_errc::ok);
}
