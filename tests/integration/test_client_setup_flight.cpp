// The first lock request in the flight of the connection's set-up where a
// topology says where to go, against real servers: on the master a real
// sentinel names, and on a real Cluster node. A fault proxy in front of that
// server holds every byte it sends for a few seconds; the acquire's key shows
// on the server while none of its replies (HELLO's first) has reached the
// client, so the acquire went out behind the set-up, not after its replies.
// The round trips this saves are counted in the simulator
// (tests/driver/test_client_setup_topology.cpp) and by `make bench`. And a
// set-up in flight that a proxy resets is not taken for a TLS port.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <string>

#include "edgelock/client.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"
#include "tools/skip.hpp"

namespace {

using namespace edgelock;
using namespace edgelock_test;

// What the server says is held this long by the proxy.
constexpr int hold_ms = 3000;

// The bytes the proxy has delivered to its clients.
long long bytes_down(fault_proxy& proxy) {
    const std::string s = proxy.ask("status");
    const std::size_t at = s.find("bytes_down=");
    REQUIRE(at != std::string::npos);
    return std::atoll(s.c_str() + at + 11);
}

// Starts the proxy in front of target; false when this build has none.
bool start_proxy(fault_proxy& proxy, std::uint16_t target) {
#ifdef EDGELOCK_FAULT_PROXY_PATH
    REQUIRE(proxy.start(EDGELOCK_FAULT_PROXY_PATH, target, 13, 120));
    return true;
#else
    (void)proxy;
    (void)target;
    return false;
#endif
}

// A new client of `url` acquires `name` while the proxy holds the server's
// replies: the key is on the server (seen through `server`, not the proxy)
// before a byte of them reached the client. Then the lock is held and
// released as usual.
template <std::size_t Extra>
void acquires_before_replies(fault_proxy& proxy, redis_client& server, const std::string& url,
                             const char* name) {
    const url_list urls({url});
    client_options o;
    o.connect_timeout = duration::seconds(30);
    o.stall_timeout = duration::seconds(30);
    client<1, Extra> c;
    configure(c, urls, o);
    client_lock l;
    recorder rec;
    rec.listen(l);
    REQUIRE(l.attach(c, name, options(60000, 30000), no_watchdog()) == client_errc::ok);

    REQUIRE(proxy.command("delay down " + std::to_string(hold_ms)));
    const long long before = bytes_down(proxy);
    REQUIRE(l.start_acquire(1, duration::seconds(30)) == client_errc::ok);
    bool taken = false;
    const double give_up = mono_s() + 20;
    while (!taken && mono_s() < give_up) {
        REQUIRE(c.run_for(duration::millis(5)) == client_errc::ok);
        taken = server.command({"EXISTS", key_of(name)}).integer == 1;
    }
    REQUIRE(taken);
    CHECK(bytes_down(proxy) == before);  // nothing of the server's replies yet
    CHECK(rec.events.empty());

    // The replies come once the proxy lets them go: the lock is held.
    while (rec.events.empty() && mono_s() < give_up) {
        REQUIRE(c.run_for(duration::millis(20)) == client_errc::ok);
    }
    INFO("events: " << rec.list());
    REQUIRE(rec.count(lock_event_kind::acquired) == 1);
    CHECK(server.command({"GET", key_of(name)}).text == hex(l.token()));
    REQUIRE(proxy.command("pass"));
    must_release(l);
    CHECK(server.command({"EXISTS", key_of(name)}).integer == 0);
}

}  // namespace

TEST_CASE("setup flight: a Sentinel node's acquire goes with the set-up of the master named",
          "[integration][sentinel]") {
    redis_server master;
    fault_proxy proxy;
    if (!start_proxy(proxy, master.port())) {
        skip("no fault proxy in this build");
        return;
    }
    // The sentinel names the master at the proxy's port, and watches it
    // through the proxy too: down only after a minute without a reply.
    redis_server sentinel = redis_server::sentinel(
        {"sentinel monitor mymaster 127.0.0.1 " + std::to_string(proxy.port()) + " 1",
         "sentinel down-after-milliseconds mymaster 60000"});
    redis_client peek(master.port());
    acquires_before_replies<0>(
        proxy, peek, "redis-sentinel://127.0.0.1:" + std::to_string(sentinel.port()) + "/mymaster",
        "flight-sentinel");
}

TEST_CASE(
    "setup flight: a Cluster seed that serves the slot takes the acquire sent with its "
    "set-up, and no slot map is read",
    "[integration][cluster]") {
    redis_server node({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                       "--cluster-port", std::to_string(free_port())});
    redis_client peek(node.port());
    REQUIRE(peek.command({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"}).text == "OK");
    const double until = mono_s() + 15;
    while (peek.command({"CLUSTER", "INFO"}).text.find("cluster_state:ok") == std::string::npos) {
        REQUIRE(mono_s() < until);
        sleep_ms(20);
    }
    fault_proxy proxy;
    if (!start_proxy(proxy, node.port())) {
        skip("no fault proxy in this build");
        return;
    }
    REQUIRE(peek.command({"CONFIG", "RESETSTAT"}).text == "OK");
    acquires_before_replies<1>(
        proxy, peek, "redis-cluster://127.0.0.1:" + std::to_string(proxy.port()), "flight-cluster");
    const std::string stats = peek.command({"INFO", "commandstats"}).text;
    CHECK(stats.find("cmdstat_cluster|slots") == std::string::npos);
    CHECK(stats.find("cmdstat_set:") != std::string::npos);
}

TEST_CASE(
    "setup flight: a plaintext node reset long after its set-up went is not called a TLS port",
    "[integration]") {
    // A TLS port hangs up on plaintext one round trip after its first bytes;
    // the client takes a hang-up within two connect round trips plus a tenth
    // of connect_timeout (here 500 ms) for one. The proxy holds the set-up,
    // and resets the connection at least 800 ms after it went out (later
    // still on a slow machine, never sooner): a plaintext node whose link
    // broke, which the message must not send looking for TLS.
    redis_server srv;
    fault_proxy proxy;
    if (!start_proxy(proxy, srv.port())) {
        skip("no fault proxy in this build");
        return;
    }
    const url_list urls({redis_url(proxy.port())});
    client_options o;
    o.connect_timeout = duration::seconds(5);
    client<1> c;
    configure(c, urls, o);
    REQUIRE(proxy.command("delay up 10000"));
    REQUIRE(c.open(port::now() + duration::seconds(5), 1) == 1);  // the set-up is written
    REQUIRE(wait_for(
        [&] {
            const std::string s = proxy.ask("status");
            const std::size_t at = s.find(" queued_up=");
            return at != std::string::npos && std::atoll(s.c_str() + at + 11) > 0;
        },
        5.0));
    sleep_ms(800);
    REQUIRE(proxy.command("reset"));
    const double give_up = mono_s() + 10;
    while (c.node(0).state == node_state::handshake && mono_s() < give_up) {
        REQUIRE(c.run_for(duration::millis(5)) == client_errc::ok);
    }
    const node_info n = c.node(0);
    INFO(what(n));
    REQUIRE(n.state == node_state::backoff);
    CHECK((n.error == node_error::reset || n.error == node_error::closed));
    CHECK(str(n.message) == "before any reply to the set-up");
}
