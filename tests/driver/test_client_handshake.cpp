// A connection's set-up through the real driver, failing at each step: the
// node reports why (node(i)), and a node whose set-up failed gets no lock
// request while the others carry the lock. Steps an ACL may deny without
// harm (CLIENT SETNAME, CONFIG, INFO) leave the node in use, and an
// evicting policy is a warning, not a failure. (tests/driver/
// test_client_setup_pipeline.cpp: lock requests behind the set-up.)
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "sim/net.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock::lock_event_kind;
using edgelock::node_error;
using edgelock::node_state;
using edgelock::node_warning;
using edgelock_test::node_urls;

namespace {

struct setup_case {
    const char* name;
    // Shapes node 1 (and the client's options) so that its set-up fails or warns.
    std::function<void(sim::net&, edgelock::client_options&)> arrange;
    std::string userinfo;  // for every node's URL
    std::string path;      // for node 1's URL
    node_error error;      // node(1).error afterwards
    const char* message;   // in node(1).message ("" : empty)
    bool used;             // node 1 carries the lock
    node_warning warning = node_warning::none;
    const char* policy = "";  // node(1).maxmemory_policy when used
};

const std::string wrongpass = "WRONGPASS invalid username-password pair or user is disabled.";
const std::string noperm = "NOPERM this user has no permissions to run the command";

void with_password(sim::net& n, edgelock::client_options&) {
    for (int i = 0; i < 3; ++i) {
        n.node(i).password = "right";
    }
}

const setup_case cases[] = {
    {"AUTH with a wrong password",
     [](sim::net& n, edgelock::client_options& o) {
         with_password(n, o);
         n.node(1).password = "other";
     },
     ":right", "", node_error::auth_failed, "WRONGPASS", false},
    {"no password for a server that wants one",
     [](sim::net& n, edgelock::client_options&) { n.node(1).password = "right"; }, "", "",
     node_error::auth_failed, "NOAUTH", false},
    {"HELLO's AUTH to a server without a password: the default user takes any",
     [](sim::net& n, edgelock::client_options& o) {
         o.resp3 = false;
         with_password(n, o);
         n.node(1).password.clear();
     },
     ":right", "", node_error::none, "", true, node_warning::none, "noeviction"},
    {"AUTH to a server without HELLO and without a password",
     [](sim::net& n, edgelock::client_options& o) {
         with_password(n, o);
         n.node(1).password.clear();
         n.node(1).speaks_resp3 = false;
     },
     ":right", "", node_error::auth_failed, "ERR AUTH", false},
    {"HELLO refused while the server loads its data",
     [](sim::net& n, edgelock::client_options& o) {
         o.resp3 = false;
         with_password(n, o);
         n.node(1).refusals["HELLO"] = "LOADING Redis is loading the dataset in memory";
     },
     ":right", "", node_error::setup_failed, "LOADING", false},
    {"HELLO 3 to a server before RESP3: RESP2 instead",
     [](sim::net& n, edgelock::client_options& o) {
         o.resp3 = true;
         n.node(1).speaks_resp3 = false;
     },
     "", "", node_error::none, "", true, node_warning::none, "noeviction"},
    {"HELLO 3 AUTH to a server before RESP3: AUTH instead",
     [](sim::net& n, edgelock::client_options& o) {
         o.resp3 = true;
         with_password(n, o);
         for (int i = 0; i < 3; ++i) {
             n.node(i).speaks_resp3 = false;
         }
     },
     ":right", "", node_error::none, "", true, node_warning::none, "noeviction"},
    {"HELLO 3 AUTH with a wrong password",
     [](sim::net& n, edgelock::client_options& o) {
         o.resp3 = true;
         with_password(n, o);
         n.node(1).password = "other";
     },
     ":right", "", node_error::auth_failed, "WRONGPASS", false},
    {"SELECT of a database the server does not have", [](sim::net&, edgelock::client_options&) {},
     "", "/99", node_error::select_failed, "ERR DB index is out of range", false},
    {"HELLO's role: a replica, INFO says whose",
     [](sim::net& n, edgelock::client_options&) { n.node(1).replica = true; }, "", "",
     node_error::replica, "replica of 10.0.0.99:6379", false},
    {"HELLO 3's role: a replica",
     [](sim::net& n, edgelock::client_options& o) {
         o.resp3 = true;
         n.node(1).replica = true;
     },
     "", "", node_error::replica, "replica of 10.0.0.99:6379", false},
    {"CLIENT SETNAME denied",
     [](sim::net& n, edgelock::client_options&) { n.node(1).refusals["CLIENT SETNAME"] = noperm; },
     "", "", node_error::none, "", true, node_warning::none, "noeviction"},
    {"CONFIG denied: INFO memory says",
     [](sim::net& n, edgelock::client_options&) { n.node(1).refusals["CONFIG"] = noperm; }, "", "",
     node_error::none, "", true, node_warning::none, "noeviction"},
    {"CONFIG and INFO denied",
     [](sim::net& n, edgelock::client_options&) {
         n.node(1).refusals["CONFIG"] = noperm;
         n.node(1).refusals["INFO"] = noperm;
     },
     "", "", node_error::none, "", true, node_warning::none, ""},
    {"CONFIG GET: an evicting policy",
     [](sim::net& n, edgelock::client_options&) {
         n.node(1).maxmemory = 1 << 30;
         n.node(1).maxmemory_policy = "allkeys-lru";
     },
     "", "", node_error::none, "", true, node_warning::may_evict, "allkeys-lru"},
    {"INFO longer than the receive buffer",
     [](sim::net& n, edgelock::client_options&) {
         n.node(1).refusals["CONFIG"] = noperm;
         n.node(1).info_padding = 3 * EDGELOCK_CLIENT_RX_BUFFER;
         n.node(1).maxmemory = 1 << 30;
         n.node(1).maxmemory_policy = "allkeys-lru";
     },
     "", "", node_error::none, "", true, node_warning::none, ""},
    {"connection refused", [](sim::net& n, edgelock::client_options&) { n.crash(1); }, "", "",
     node_error::refused, "", false},
    {"a connect that never completes",
     [](sim::net& n, edgelock::client_options&) { n.faults(1).connect_hangs = true; }, "", "",
     node_error::connect_timeout, "", false},
    {"a set-up that is never answered",
     [](sim::net& n, edgelock::client_options&) { n.pause(1, duration::seconds(60)); }, "", "",
     node_error::connect_timeout, "no reply to the set-up", false},
};

}  // namespace

TEST_CASE("a set-up failing at each step is reported and keeps the node out of the lock",
          "[client][sim][handshake]") {
    for (const setup_case& k : cases) {
        INFO(k.name);
        sim::net n(501);
        n.add_nodes(3);
        edgelock::client_options o;
        o.connect_timeout = duration::millis(300);
        k.arrange(n, o);
        // Node 1's URL may carry a database; the others use 0.
        node_urls urls(n, 3, k.userinfo);
        urls.text[1] = n.url(1, k.userinfo, k.path);
        urls.views[1] = edgelock::str_view(urls.text[1].data(), urls.text[1].size());
        edgelock::client<3> c;
        edgelock_test::configure(c, urls, o);
        REQUIRE(c.connect(n.now() + duration::seconds(1)) == (k.used ? 3 : 2));

        const edgelock::node_info info = c.node(1);
        INFO(edgelock_test::what(info));
        CHECK(info.error == k.error);
        CHECK(info.state == (k.used ? node_state::ready : node_state::backoff));
        if (*k.message == '\0') {
            CHECK(info.message.empty());
        } else {
            CHECK(edgelock_test::str(info.message).find(k.message) == 0);
        }
        CHECK(info.warning == k.warning);
        if (k.used) {
            CHECK(edgelock_test::str(info.maxmemory_policy) == k.policy);
        }
        for (const std::uint8_t i : {std::uint8_t{0}, std::uint8_t{2}}) {
            CHECK(c.node(i).state == node_state::ready);
            CHECK(c.node(i).error == node_error::none);
        }

        edgelock::client_lock l;
        REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
        const edgelock::op_result r = l.try_acquire();
        INFO(edgelock_test::what(r));
        REQUIRE(r.error == client_errc::ok);
        REQUIRE(r.event.kind == lock_event_kind::acquired);
        // A node that answers after the quorum (NOSCRIPT, then EVAL) gets the key too.
        REQUIRE(c.run_for(duration::millis(50)) == client_errc::ok);
        REQUIRE(l.held());
        const std::string token = edgelock_test::hex(l.token());
        CHECK(edgelock_test::value_at(n, 0, "jobs") == token);
        CHECK(edgelock_test::value_at(n, 2, "jobs") == token);
        if (k.used) {
            CHECK(n.node(1).lock_requests() >= 1);
            CHECK(edgelock_test::value_at(n, 1, "jobs") == token);
        } else {
            CHECK(n.node(1).lock_requests() == 0);
            for (std::uint32_t d : {0u, 99u}) {
                CHECK(n.node(1).db(d).find("jobs", n.now().us) == nullptr);
            }
            // Still the same reason: it was not replaced by the lock's traffic.
            CHECK(c.node(1).error == k.error);
        }
        CHECK(l.release().event.kind == lock_event_kind::released);
        CHECK(edgelock_test::value_at(n, 0, "jobs").empty());
    }
}

TEST_CASE(
    "scripts go as EVALSHA and a NOSCRIPT sends the EVAL that fills the cache, then "
    "the connection's other scripts go as EVAL once each",
    "[client][sim][handshake]") {
    sim::net n(502);
    n.add_nodes(1);
    n.node(0).version = "6.2.14";  // the acquire is a script too
    node_urls urls(n);
    edgelock::client<1> c;
    edgelock_test::configure(c, urls);
    edgelock::client_lock l;
    REQUIRE(l.attach(c, "jobs", edgelock_test::fast_lock_options()) == client_errc::ok);
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    CHECK(n.node(0).noscripts == 1);
    CHECK(n.node(0).evals == 1);
    // The connection found the cache empty: the renew's text goes at once,
    // with no NOSCRIPT first; then the renew is cached, and goes by digest.
    REQUIRE(l.renew().event.kind == lock_event_kind::renewed);
    CHECK(n.node(0).noscripts == 1);
    CHECK(n.node(0).evals == 2);
    REQUIRE(l.renew().event.kind == lock_event_kind::renewed);
    CHECK(n.node(0).noscripts == 1);
    CHECK(n.node(0).evals == 2);  // cached by the EVAL
    CHECK(l.release().event.kind == lock_event_kind::released);
    CHECK(n.node(0).noscripts == 1);
    CHECK(n.node(0).evals == 3);
    CHECK(c.node(0).error == node_error::none);
    // A SCRIPT FLUSH under the connection: the next script's NOSCRIPT is
    // answered by its text, and so is every other's first use after it.
    REQUIRE(l.try_acquire().event.kind == lock_event_kind::acquired);
    CHECK(n.node(0).evals == 3);     // the acquire is cached
    n.node(0).script_cache.clear();  // SCRIPT FLUSH
    REQUIRE(l.renew().event.kind == lock_event_kind::renewed);
    CHECK(n.node(0).noscripts == 2);
    CHECK(n.node(0).evals == 4);
    CHECK(l.release().event.kind == lock_event_kind::released);
    CHECK(n.node(0).noscripts == 2);
    CHECK(n.node(0).evals == 5);
}
