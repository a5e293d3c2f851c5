// redis-sentinel:// nodes against real sentinels (redis-server --sentinel):
// a master with a replica, watched by three sentinels. A lock is taken on
// the master the sentinels name; with the first sentinel of the list down
// the next one is asked; after SENTINEL FAILOVER the client follows the
// promoted replica (the old master answers READONLY, the client asks again);
// an unknown master name or no sentinel at all fails the node with the
// reason, in bounded time; sentinels with a password. And the failover that
// loses a lock: the master dies before the key reaches its replica, the
// replica is promoted, a second holder takes the lock there, and the first
// holder's older fencing token is refused by the storage; with min_replicas
// the first acquisition fails instead.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/sentinel_fixture.hpp"
#include "tools/clock.hpp"
#include "tools/net.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

lock_options waiting(unsigned wait_ms) {
    lock_options o = edgelock_test::options(5000, 200);
    o.max_tries = 1000;
    o.wait = duration::millis(wait_ms);
    o.retry_min = duration::millis(50);
    o.retry_max = duration::millis(100);
    return o;
}

}  // namespace

TEST_CASE("sentinel: a lock on the master the sentinels name", "[integration][sentinel]") {
    sentinel_deployment d;
    redis_client master(d.master.port());
    const url_list urls({d.url()});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, "sentinel-lock", edgelock_test::options(5000, 200), no_watchdog()) ==
            client_errc::ok);
    must_acquire(l);
    INFO(what(c.node(0)));
    CHECK(c.node(0).state == node_state::ready);
    CHECK(master.command({"GET", key_of("sentinel-lock")}).text == hex(l.token()));
    must_release(l);

    // The first sentinel of the list down: the next one says.
    d.sentinels[0]->kill();
    client<1> c2;
    configure(c2, urls);
    client_lock l2;
    REQUIRE(l2.attach(c2, "sentinel-lock", edgelock_test::options(5000, 200), no_watchdog()) ==
            client_errc::ok);
    const instant t0 = port::now();
    must_acquire(l2);
    CHECK(ms_since(t0) < 2000);
    CHECK(master.command({"GET", key_of("sentinel-lock")}).text == hex(l2.token()));
    must_release(l2);
}

TEST_CASE("sentinel: after a failover the lock goes to the promoted replica",
          "[integration][sentinel]") {
    sentinel_deployment d;
    const url_list urls({d.url()});
    client<1> c;
    configure(c, urls);
    client_lock before;
    REQUIRE(before.attach(c, "sentinel-before", edgelock_test::options(5000, 200), no_watchdog()) ==
            client_errc::ok);
    must_acquire(before);
    must_release(before);

    const double until = mono_s() + 20;
    // NOGOODSLAVE while the sentinel has not refreshed what the replica
    // said lately: again, within the bound.
    while (ask_sentinel(*d.sentinels[0], {"SENTINEL", "FAILOVER", "mymaster"}).text != "OK") {
        REQUIRE(mono_s() < until);
        sleep_ms(200);
    }
    while (named_port(*d.sentinels[0], "mymaster") != d.replica.port()) {
        REQUIRE(mono_s() < until);
        sleep_ms(50);
    }
    // The promoted replica takes writes once it knows it is a master.
    while (role(d.replica) != "master") {
        REQUIRE(mono_s() < until);
        sleep_ms(50);
    }
    redis_client promoted(d.replica.port());

    // And the old master demoted (until then it takes writes that its
    // demotion throws away: the window min_replicas and fencing are for).
    while (role(d.master) != "slave") {
        REQUIRE(mono_s() < until);
        sleep_ms(50);
    }

    // The same client: its connection is to the old master, which answers
    // READONLY now, or was dropped; either way it asks the sentinels again.
    client_lock after;
    REQUIRE(after.attach(c, "sentinel-after", waiting(10000), no_watchdog()) == client_errc::ok);
    const op_result r = after.acquire(duration::seconds(10));
    INFO(what(r) << "; node: " << what(c.node(0)));
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(promoted.command({"GET", key_of("sentinel-after")}).text == hex(after.token()));
    must_release(after);
}

TEST_CASE("sentinel: no sentinel that knows the master fails the node with the reason",
          "[integration][sentinel]") {
    sentinel_deployment d;
    struct bad_case {
        const char* what;
        std::string url;
        const char* message;  // part of node(0).message
    };
    const std::uint16_t nobody = free_port();
    const bad_case cases[] = {
        {"an unknown master name", d.url(0, "nosuchmaster"), "does not know"},
        {"no sentinel listening",
         "redis-sentinel://127.0.0.1:" + std::to_string(nobody) + "/mymaster", "refused"},
    };
    for (const bad_case& k : cases) {
        INFO(k.what);
        const url_list urls({k.url});
        client<1> c;
        configure(c, urls);
        const instant t0 = port::now();
        CHECK(c.connect(port::now() + duration::seconds(3)) == 0);
        CHECK(ms_since(t0) < 2000);
        INFO(what(c.node(0)));
        CHECK(c.node(0).error == node_error::sentinel_failed);
        CHECK(str(c.node(0).message).find(k.message) != std::string::npos);
    }
}

TEST_CASE("sentinel: sentinels with a password of their own", "[integration][sentinel]") {
    sentinel_deployment d("s3cret");
    const url_list urls({d.url()});
    {
        client<1> c;
        configure(c, urls);  // no sentinel password
        CHECK(c.connect(port::now() + duration::seconds(3)) == 0);
        INFO(what(c.node(0)));
        CHECK(c.node(0).error == node_error::sentinel_failed);
        CHECK(str(c.node(0).message).find("NOAUTH") != std::string::npos);
    }
    client_options o;
    o.sentinel_password = "s3cret";
    client<1> c;
    configure(c, urls, o);
    client_lock l;
    REQUIRE(l.attach(c, "sentinel-auth", edgelock_test::options(5000, 200), no_watchdog()) ==
            client_errc::ok);
    must_acquire(l);
    redis_client master(d.master.port());
    CHECK(master.command({"GET", key_of("sentinel-auth")}).text == hex(l.token()));
    must_release(l);
}

TEST_CASE("sentinel: the failover that loses a lock, and what fencing and min_replicas do",
          "[integration][sentinel]") {
    // A storage that takes a write only with a token at least the highest
    // it has seen: what a fenced resource does.
    struct fenced_store {
        std::uint64_t highest = 0;
        bool write(std::uint64_t token) {
            if (token < highest) {
                return false;
            }
            highest = token;
            return true;
        }
    } store;
    sentinel_deployment d;
    const url_list urls({d.url()});
    client<1> ca;
    configure(ca, urls);
    lock_options fenced = edgelock_test::options(30000, 300);  // A outlives the failover
    fenced.mode = lock_mode::fenced;

    // The replica stops (so it cannot reconnect) and the master drops its
    // link: what the master takes from now on reaches no replica.
    d.replica.pause();
    {
        redis_client m(d.master.port());
        REQUIRE(m.command({"CLIENT", "KILL", "TYPE", "replica"}).integer == 1);
    }

    // With min_replicas 1, A's acquisition fails instead of holding a key
    // that no replica has.
    {
        lock_options careful = fenced;
        careful.min_replicas = 1;
        careful.replica_timeout = duration::millis(100);
        client_lock a;
        REQUIRE(a.attach(ca, "seed-job", careful, no_watchdog()) == client_errc::ok);
        const op_result r = a.try_acquire();
        INFO(what(r));
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(r.event.reason == lock_failure::not_replicated);
    }

    // Without it, A holds the lock on the master alone, and writes.
    client_lock a;
    REQUIRE(a.attach(ca, "seed-job", fenced, no_watchdog()) == client_errc::ok);
    const op_result ra = a.try_acquire();
    INFO(what(ra));
    REQUIRE(ra.event.kind == lock_event_kind::acquired);
    const std::uint64_t token_a = ra.event.fence;
    REQUIRE(store.write(token_a));

    // The master dies; the replica, which never got the key, is promoted
    // (it was stopped for a moment only: the sentinels still count it).
    d.master.kill();
    d.replica.resume();
    const double killed = mono_s();
    const double until = killed + 30;
    while (named_port(*d.sentinels[0], "mymaster") != d.replica.port() ||
           role(d.replica) != "master") {
        REQUIRE(mono_s() < until);
        sleep_ms(50);
    }

    // B takes the same lock on the new master: two holders now.
    client<1> cb;
    configure(cb, urls);
    lock_options waiting = fenced;
    waiting.max_tries = 1000;
    waiting.retry_min = duration::millis(50);
    waiting.retry_max = duration::millis(100);
    client_lock b;
    REQUIRE(b.attach(cb, "seed-job", waiting, no_watchdog()) == client_errc::ok);
    const op_result rb = b.acquire(duration::seconds(10));
    INFO(what(rb));
    REQUIRE(rb.event.kind == lock_event_kind::acquired);
    INFO("failover and B's acquisition took " << mono_s() - killed << " s");
    CHECK(a.held());  // A still believes it holds the lock
    const std::uint64_t token_b = rb.event.fence;
    CHECK(token_b > token_a);
    CHECK(store.write(token_b));
    // A's next write, with its older token, is refused by the storage.
    CHECK_FALSE(store.write(token_a));
    must_release(b);
}

TEST_CASE("sentinel: a RESP2 node's subscription goes to the master, not a sentinel",
          "[integration][sentinel][notify]") {
    sentinel_deployment d;
    const url_list urls({d.url()});
    client_options o;
    o.resp3 = false;
    client<1> c;
    configure(c, urls, o);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    const instant t0 = port::now();
    while (!c.node(0).tracking && ms_since(t0) < 3000) {
        REQUIRE(c.run_for(duration::millis(10)) == client_errc::ok);
    }
    INFO(what(c.node(0)));
    CHECK(c.node(0).tracking);
    redis_client master(d.master.port());
    // Subscribed on the master itself (the sentinels' own subscriptions there
    // are to another channel).
    const reply numsub = master.command({"PUBSUB", "NUMSUB", "__redis__:invalidate"});
    REQUIRE(numsub.elements.size() == 2);
    CHECK(numsub.elements[1].integer == 1);
}
