// A Cluster node's limits, against a real cluster: a client with no extra
// connection reaches only the master its node's own connection is on, so a
// lock whose slot is elsewhere fails as that node's "no", with node(0)
// saying why, and a lock on that master is unaffected; one extra connection
// per further master is enough, taken back from locks that moved away.
#include <catch2/catch.hpp>

#include <string>

#include "edgelock/client.hpp"
#include "integration/client_helpers.hpp"
#include "integration/cluster_fixture.hpp"
#include "integration/redis_server.hpp"

using namespace edgelock;
using namespace edgelock_test;

namespace {

str_view sv(const std::string& s) {
    return str_view(s.data(), s.size());
}

std::string message(const client_base& c) {
    const str_view m = c.node(0).message;
    return std::string(m.data, m.size);
}

}  // namespace

TEST_CASE("cluster limits: no extra connection left fails the lock with a reason",
          "[integration][cluster]") {
    running_cluster d;
    const auto masters = d.masters();
    REQUIRE(masters.size() == 3);
    // One seed, the first master: the node's own connection is there.
    const std::string url = "redis-cluster://127.0.0.1:" + std::to_string(masters[0]->port());
    const str_view urls[] = {sv(url)};
    client<1> c;  // no extra connection
    REQUIRE(c.configure(urls, 1, {}) == client_errc::ok);

    const std::string home = d.name_on(*masters[0], "home");
    const std::string away = d.name_on(*masters[1], "away");
    client_lock here;
    client_lock there;
    REQUIRE(here.attach(c, sv(home), options(5000, 500)) == client_errc::ok);
    REQUIRE(there.attach(c, sv(away), options(5000, 500)) == client_errc::ok);

    const op_result far = there.try_acquire();
    REQUIRE(far.error == client_errc::ok);
    CHECK(far.event.kind == lock_event_kind::failed);
    CHECK(message(c).find("no connection left") != std::string::npos);
    CHECK(d.where_is(key_of(away)) == nullptr);

    const op_result near = here.try_acquire();
    REQUIRE(near.error == client_errc::ok);
    CHECK(near.event.kind == lock_event_kind::acquired);
    CHECK(d.where_is(key_of(home)) == masters[0]);
    REQUIRE(here.release().error == client_errc::ok);
    CHECK(d.where_is(key_of(home)) == nullptr);
}

TEST_CASE("cluster limits: one extra connection serves the master each lock needs in turn",
          "[integration][cluster]") {
    running_cluster d;
    const auto masters = d.masters();
    REQUIRE(masters.size() == 3);
    const std::string url = "redis-cluster://127.0.0.1:" + std::to_string(masters[0]->port());
    const str_view urls[] = {sv(url)};
    client<1, 1> c;
    REQUIRE(c.configure(urls, 1, {}) == client_errc::ok);
    const std::string first = d.name_on(*masters[1], "first");
    const std::string second = d.name_on(*masters[2], "second");
    {
        client_lock l;
        REQUIRE(l.attach(c, sv(first), options(5000, 500)) == client_errc::ok);
        REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
        CHECK(d.where_is(key_of(first)) == masters[1]);
        REQUIRE(l.release().error == client_errc::ok);
    }
    // The first lock is gone: its master's connection is taken for the next.
    client_lock l;
    REQUIRE(l.attach(c, sv(second), options(5000, 500)) == client_errc::ok);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    CHECK(d.where_is(key_of(second)) == masters[2]);
    REQUIRE(l.release().error == client_errc::ok);
    CHECK(d.where_is(key_of(second)) == nullptr);
}
