// One name, two lock clients: edgelock and redis-py's Lock (SET NX PX, then a
// compare-and-delete), as a fleet whose cloud side already locks with one of
// the usual Redis clients runs them. Each must see the other's hold and leave
// it alone, in every mode whose key is a string.
#include <catch2/catch.hpp>

#include <string>

#include "edgelock/client.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/lock_key.hpp"
#include "tools/redis_py.hpp"

namespace {

using namespace edgelock;
using namespace edgelock_test;

const char* const name = "nightly-upload";

// One redis-server, a look inside it, and a one-node client with a lock on
// `name` in the given mode (no watchdog: the test decides every request).
struct one_node {
    redis_server srv;
    redis_client peek{srv.port()};
    const url_list urls{{redis_url(srv)}};
    client<1> c;
    client_lock l;

    explicit one_node(lock_options o) {
        configure(c, urls);
        REQUIRE(l.attach(c, name, o, no_watchdog()) == client_errc::ok);
    }
};

}  // namespace

TEST_CASE("interop: the lock key is the name itself, as other clients keep it",
          "[client][interop]") {
    CHECK(key_of(name) == name);
    CHECK(key_of("{fleet}:upload") == "{fleet}:upload");
}

TEST_CASE("interop: redis-py's Lock and edgelock exclude each other on one name",
          "[client][interop]") {
    const lock_mode mode = GENERATE(lock_mode::plain, lock_mode::fenced);
    INFO("mode " << (mode == lock_mode::plain ? "plain" : "fenced"));
    one_node t(options(10000, 1000, mode));
    redis_server& srv = t.srv;
    redis_client& peek = t.peek;
    client_lock& l = t.l;

    // edgelock holds: redis-py is refused, and a release naming another
    // token leaves the lock where it is.
    must_acquire(l);
    CHECK(peek.command({"TYPE", name}).text == "string");
    CHECK(redis_py(srv.port(), name, {"holder"}) == "held");
    CHECK(redis_py(srv.port(), name, {"acquire", "10000"}) == "refused");
    CHECK(redis_py(srv.port(), name, {"release", "0123456789abcdef"}) == "not-owned");
    CHECK(peek.command({"EXISTS", name}).integer == 1);
    must_release(l);
    CHECK(redis_py(srv.port(), name, {"holder"}) == "free");

    // redis-py holds: edgelock is refused, and leaves the key alone, until
    // redis-py releases with its own script.
    const std::string got = redis_py(srv.port(), name, {"acquire", "10000"});
    REQUIRE(got.compare(0, 9, "acquired ") == 0);
    const std::string token = got.substr(9);
    const op_result busy = l.try_acquire();
    INFO(what(busy));
    CHECK(busy.error == client_errc::ok);
    CHECK(busy.event.kind == lock_event_kind::busy);
    CHECK_FALSE(l.held());
    CHECK(peek.command({"GET", name}).text == token);
    CHECK(peek.command({"PTTL", name}).integer > 5000);
    CHECK(redis_py(srv.port(), name, {"release", token}) == "released");
    must_acquire(l);
    CHECK(redis_py(srv.port(), name, {"acquire", "10000"}) == "refused");
    must_release(l);
    CHECK(peek.command({"EXISTS", name}).integer == 0);
}

TEST_CASE("interop: a lock in the other layout is another's: busy, never an error",
          "[client][interop]") {
    // Redisson keeps a hash (`name -> {owner: holds}`, edgelock's reentrant
    // layout); the others a string (edgelock's plain and fenced layout).
    const lock_mode mode = GENERATE(lock_mode::plain, lock_mode::fenced, lock_mode::reentrant);
    INFO("mode " << static_cast<int>(mode));
    lock_options o = options(10000, 1000, mode);
    o.owner = "gateway-7:1";
    one_node t(o);
    redis_server& srv = t.srv;
    redis_client& peek = t.peek;
    client_lock& l = t.l;

    if (mode == lock_mode::reentrant) {
        const std::string got = redis_py(srv.port(), name, {"acquire", "10000"});
        REQUIRE(got.compare(0, 9, "acquired ") == 0);
    } else {
        REQUIRE(
            peek.command({"HSET", name, "8743c9c0-0795-4907-87fd-6c719a6b4586:1", "1"}).integer ==
            1);
        REQUIRE(peek.command({"PEXPIRE", name, "10000"}).integer == 1);
    }
    const std::string type = peek.command({"TYPE", name}).text;
    const op_result busy = l.try_acquire();
    INFO(what(busy));
    CHECK(busy.error == client_errc::ok);
    CHECK(busy.event.kind == lock_event_kind::busy);
    CHECK(busy.event.holder_ttl_ms > 5000);
    // Nothing of it changed: type, content and ttl.
    CHECK(peek.command({"TYPE", name}).text == type);
    CHECK(peek.command({"PTTL", name}).integer > 5000);
    if (mode != lock_mode::reentrant) {
        CHECK(peek.command({"HLEN", name}).integer == 1);
    }
}
