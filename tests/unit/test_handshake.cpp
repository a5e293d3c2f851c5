// The set-up sequence as a machine, without a socket: which requests go out
// for which options, what each reply means (a failure at every step, the
// replica and eviction checks), and a send buffer too small for the next one.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/detail/handshake.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp_decoder.hpp"

using edgelock::client_options;
using edgelock::node_address;
using edgelock::node_error;
using edgelock::node_warning;
using edgelock::resp_node;
using edgelock::detail::handshake;
using edgelock::detail::handshake_status;

namespace {

struct request {
    std::uint8_t id = 0;
    std::vector<std::string> args;
};

// Every request the machine has to send now, decoded back into arguments.
std::vector<request> drain(handshake& h) {
    std::vector<request> out;
    char buf[4096];
    std::uint8_t id = 0;
    for (std::size_t size; (size = h.poll_request(buf, sizeof buf, id)) > 0;) {
        resp_node nodes[16];
        const edgelock::resp_result r = edgelock::resp_decode_whole(buf, size, nodes, 16);
        REQUIRE(r.status == edgelock::resp_status::complete);
        REQUIRE(r.size == size);
        request q;
        q.id = id;
        for (std::size_t i = 1; i < r.nodes; ++i) {
            q.args.emplace_back(nodes[i].text.data, nodes[i].text.size);
        }
        out.push_back(q);
    }
    return out;
}

handshake_status reply(handshake& h, std::uint8_t id, const std::string& wire,
                       edgelock::detail::node_report& report) {
    resp_node nodes[32];
    const edgelock::resp_result r =
        edgelock::resp_decode_whole(wire.data(), wire.size(), nodes, 32);
    REQUIRE(r.status == edgelock::resp_status::complete);
    return h.on_reply(id, nodes, r.nodes, report);
}

std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

const std::string master_info = bulk("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n");
const std::string memory_info = bulk("# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n");
const std::string server_info =
    bulk("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n");

// The good reply to each request.
std::string good_reply(const request& q) {
    if (q.id == handshake::info_replication) {
        return master_info;
    }
    if (q.id == handshake::info_memory) {
        return memory_info;
    }
    if (q.id == handshake::info_server) {
        return server_info;
    }
    if (q.id >= handshake::script) {
        return bulk(
            std::string(edgelock::lock_scripts_all[q.id - handshake::script]->sha1.data, 40));
    }
    return "+OK\r\n";
}

node_address parse(const char* url) {
    node_address a;
    REQUIRE(edgelock::parse_node_url(url, a) == edgelock::url_errc::ok);
    return a;
}

std::string joined(const request& q) {
    std::string s;
    for (const std::string& a : q.args) {
        s += (s.empty() ? "" : " ") + a;
    }
    return s;
}

}  // namespace

TEST_CASE("handshake: RESP2 without a password sends SETNAME, INFO and the scripts",
          "[handshake]") {
    const node_address a = parse("redis://10.0.0.1:6379");
    client_options o;
    o.resp3 = false;
    handshake h;
    h.start(a, o);
    const std::vector<request> sent = drain(h);
    REQUIRE(sent.size() == 4 + edgelock::lock_scripts_count);
    CHECK(joined(sent[0]) == "CLIENT SETNAME edgelock");
    CHECK(joined(sent[1]) == "INFO replication");
    CHECK(joined(sent[2]) == "INFO memory");
    CHECK(joined(sent[3]) == "INFO server");
    for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
        CHECK(sent[4 + i].args.at(0) == "SCRIPT");
        CHECK(sent[4 + i].id == handshake::script + i);
    }
    edgelock::detail::node_report report;
    for (std::size_t i = 0; i < sent.size(); ++i) {
        const handshake_status s = reply(h, sent[i].id, good_reply(sent[i]), report);
        CHECK(s == (i + 1 == sent.size() ? handshake_status::ready : handshake_status::pending));
    }
    CHECK(report.error == node_error::none);
    CHECK(report.warning == node_warning::none);
    CHECK(std::string(report.policy, report.policy_size) == "noeviction");
    CHECK(std::string(report.version, report.version_size) == "7.0.15");
    CHECK(report.set_nx_get);
}

TEST_CASE("handshake: credentials, database and RESP3 shape the first requests", "[handshake]") {
    SECTION("AUTH with the URL's user and escaped password, then SELECT") {
        const node_address a = parse("redis://app:p%40ss@10.0.0.1/3");
        client_options o;
        o.resp3 = false;
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        CHECK(joined(sent.at(0)) == "AUTH app p@ss");
        CHECK(joined(sent.at(1)) == "SELECT 3");
        CHECK(sent.at(1).id == handshake::select);
    }
    SECTION("the options' password wins over the URL's") {
        const node_address a = parse("redis://:old@10.0.0.1");
        client_options o;
        o.resp3 = false;
        o.password = "new";
        o.client_name = "";
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        CHECK(joined(sent.at(0)) == "AUTH new");
        CHECK(joined(sent.at(1)) == "INFO replication");  // no SETNAME asked for
    }
    SECTION("RESP3: one HELLO carries AUTH and SETNAME") {
        const node_address a = parse("redis://:pw@10.0.0.1");
        client_options o;
        o.resp3 = true;
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        CHECK(joined(sent.at(0)) == "HELLO 3 AUTH default pw SETNAME edgelock");
        CHECK(sent.size() == 1);  // the rest waits for its answer (see the RESP2 case)
    }
}

TEST_CASE("handshake: a refusal at each step fails the node with its reason", "[handshake]") {
    struct step_case {
        const char* url;
        bool resp3;
        std::uint8_t fails;
        const char* error_reply;
        node_error expected;
    };
    const step_case cases[] = {
        {"redis://:pw@h", false, handshake::auth, "-WRONGPASS invalid username-password pair\r\n",
         node_error::auth_failed},
        {"redis://:pw@h", false, handshake::auth, "-ERR AUTH <password> called without any\r\n",
         node_error::auth_failed},
        {"redis://:pw@h", false, handshake::auth, "-LOADING Redis is loading\r\n",
         node_error::setup_failed},
        {"redis://h/7", false, handshake::select, "-ERR DB index is out of range\r\n",
         node_error::select_failed},
        {"redis://h", false, handshake::setname, "-NOAUTH Authentication required.\r\n",
         node_error::auth_failed},
        {"redis://h", false, handshake::info_replication, "-NOAUTH Authentication required.\r\n",
         node_error::auth_failed},
    };
    for (const step_case& c : cases) {
        CAPTURE(c.url, c.resp3, int(c.fails), c.error_reply);
        const node_address a = parse(c.url);
        client_options o;
        o.resp3 = c.resp3;
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        handshake_status s = handshake_status::pending;
        for (const request& q : sent) {
            if (q.id == c.fails) {
                s = reply(h, q.id, c.error_reply, report);
                break;
            }
            s = reply(h, q.id, good_reply(q), report);
            REQUIRE(s == handshake_status::pending);
        }
        CHECK(s == handshake_status::failed);
        CHECK(h.status() == handshake_status::failed);
        CHECK(report.error == c.expected);
        // The server's own words, for node(i).message.
        const std::string text(c.error_reply + 1, std::string(c.error_reply).size() - 3);
        CHECK(std::string(report.message, report.message_size) == text);
        // Nothing more goes out, and later replies change nothing.
        CHECK(drain(h).empty());
        CHECK(reply(h, sent.back().id, good_reply(sent.back()), report) ==
              handshake_status::failed);
    }
}

TEST_CASE("handshake: refusals a lock can live without do not fail the node", "[handshake]") {
    const node_address a = parse("redis://h");
    client_options o;
    o.resp3 = false;
    handshake h;
    h.start(a, o);
    const std::vector<request> sent = drain(h);
    edgelock::detail::node_report report;
    handshake_status s = handshake_status::pending;
    for (const request& q : sent) {
        // An ACL without +client, +info or +script: SETNAME, INFO and SCRIPT
        // LOAD refused. The scripts then go as EVAL; nothing is known of INFO.
        s = reply(h, q.id, "-NOPERM this user has no permissions\r\n", report);
    }
    CHECK(s == handshake_status::ready);
    CHECK(report.error == node_error::none);
    CHECK(report.policy_size == 0);
}

TEST_CASE("handshake: a replica fails the node, an evicting master warns", "[handshake]") {
    const node_address a = parse("redis://h");
    client_options o;
    SECTION("replica") {
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        REQUIRE(reply(h, sent.at(0).id, "+OK\r\n", report) == handshake_status::pending);
        const std::string info =
            bulk("# Replication\r\nrole:slave\r\nmaster_host:10.0.0.9\r\nmaster_port:6380\r\n");
        CHECK(reply(h, sent.at(1).id, info, report) == handshake_status::failed);
        CHECK(report.error == node_error::replica);
        CHECK(std::string(report.message, report.message_size) == "replica of 10.0.0.9:6380");
    }
    SECTION("allkeys-lru") {
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        handshake_status s = handshake_status::pending;
        for (const request& q : sent) {
            const std::string r =
                q.id == handshake::info_memory
                    ? bulk("maxmemory:1048576\r\nmaxmemory_policy:allkeys-lru\r\n")
                    : good_reply(q);
            s = reply(h, q.id, r, report);
        }
        CHECK(s == handshake_status::ready);
        CHECK(report.warning == node_warning::may_evict);
        CHECK(std::string(report.policy, report.policy_size) == "allkeys-lru");
    }
    SECTION("an INFO reply that was not kept tells nothing") {
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        handshake_status s = handshake_status::pending;
        for (const request& q : sent) {
            s = handshake::reply_optional(q.id) ? h.on_reply(q.id, nullptr, 0, report)
                                                : reply(h, q.id, good_reply(q), report);
        }
        CHECK(s == handshake_status::ready);
        CHECK(report.warning == node_warning::none);
        CHECK(report.policy_size == 0);
        CHECK(report.version_size == 0);
        CHECK_FALSE(report.set_nx_get);  // unknown: the acquire stays a script
    }
    SECTION("Redis 6.2 takes the acquire script, not SET NX GET") {
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        for (const request& q : sent) {
            const std::string r = q.id == handshake::info_server
                                      ? bulk("# Server\r\nredis_version:6.2.14\r\n")
                                      : good_reply(q);
            reply(h, q.id, r, report);
        }
        CHECK(h.status() == handshake_status::ready);
        CHECK(std::string(report.version, report.version_size) == "6.2.14");
        CHECK_FALSE(report.set_nx_get);
    }
}

TEST_CASE("handshake: a request that does not fit waits for room, none is lost", "[handshake]") {
    const node_address a = parse("redis://h");
    client_options o;
    o.resp3 = false;
    handshake h;
    h.start(a, o);
    char small[64];
    std::uint8_t id = 0;
    // CLIENT SETNAME and the INFOs fit; the first script does not.
    std::vector<std::uint8_t> ids;
    for (std::size_t size; (size = h.poll_request(small, sizeof small, id)) > 0;) {
        ids.push_back(id);
    }
    REQUIRE(ids.size() == 4);
    CHECK(h.status() == handshake_status::pending);
    const std::vector<request> rest = drain(h);
    REQUIRE(rest.size() == edgelock::lock_scripts_count);
    CHECK(rest.front().id == handshake::script);
}

TEST_CASE("handshake: RESP3 asks for key tracking, and a refusal fails nothing", "[handshake]") {
    const node_address a = parse("redis://10.0.0.1");
    client_options o;
    o.resp3 = true;
    SECTION("accepted") {
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        REQUIRE(sent.size() == 5 + edgelock::lock_scripts_count);
        CHECK(joined(sent.at(3)) == "INFO server");
        CHECK(joined(sent.at(4)) == "CLIENT TRACKING ON OPTIN NOLOOP");
        CHECK(sent.at(4).id == handshake::tracking);
        edgelock::detail::node_report report;
        for (const request& q : sent) {
            reply(h, q.id, good_reply(q), report);
        }
        CHECK(h.status() == handshake_status::ready);
        CHECK(report.tracking);
    }
    SECTION("refused (an ACL, an old server): the node is used, its waiters poll") {
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        for (const request& q : sent) {
            reply(h, q.id,
                  q.id == handshake::tracking
                      ? std::string("-NOPERM this user has no permissions to run the "
                                    "'client|tracking' command\r\n")
                      : good_reply(q),
                  report);
        }
        CHECK(h.status() == handshake_status::ready);
        CHECK(report.error == node_error::none);
        CHECK_FALSE(report.tracking);
    }
    SECTION("not asked: notify off, or RESP2 (no pushes on the connection)") {
        o.notify = false;
        handshake h;
        h.start(a, o);
        for (const request& q : drain(h)) {
            CHECK(q.id != handshake::tracking);
        }
        client_options resp2;
        resp2.resp3 = false;
        handshake h2;
        h2.start(a, resp2);
        for (const request& q : drain(h2)) {
            CHECK(q.id != handshake::tracking);
        }
    }
}

TEST_CASE("handshake: a server without HELLO is spoken to in RESP2", "[handshake]") {
    client_options o;  // resp3 by default
    const std::string no_hello = "-ERR unknown command 'HELLO', with args beginning with: '3' \r\n";
    SECTION("no password: the rest is already out; CLIENT SETNAME follows") {
        const node_address a = parse("redis://10.0.0.1");
        handshake h;
        h.start(a, o);
        std::vector<request> sent = drain(h);
        REQUIRE(joined(sent.at(0)) == "HELLO 3 SETNAME edgelock");
        edgelock::detail::node_report report;
        CHECK(reply(h, sent.at(0).id, no_hello, report) == handshake_status::pending);
        CHECK(report.resp2);
        const std::vector<request> late = drain(h);
        REQUIRE(late.size() == 1);
        CHECK(joined(late.at(0)) == "CLIENT SETNAME edgelock");
        sent.erase(sent.begin());
        sent.push_back(late.at(0));
        handshake_status s = handshake_status::pending;
        for (const request& q : sent) {
            // Redis 5 has no CLIENT TRACKING either.
            s = reply(h, q.id,
                      q.id == handshake::tracking
                          ? std::string("-ERR Unknown subcommand or wrong number of arguments\r\n")
                          : good_reply(q),
                      report);
        }
        CHECK(s == handshake_status::ready);
        CHECK(report.error == node_error::none);
        CHECK_FALSE(report.tracking);
    }
    SECTION("HELLO renamed away on Redis 6 or later: tracking on, but never told here") {
        const node_address a = parse("redis://10.0.0.1");
        handshake h;
        h.start(a, o);
        std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        CHECK(reply(h, sent.at(0).id, no_hello, report) == handshake_status::pending);
        sent.erase(sent.begin());
        const std::vector<request> late = drain(h);
        sent.insert(sent.end(), late.begin(), late.end());
        handshake_status s = handshake_status::pending;
        bool asked = false;
        for (const request& q : sent) {
            asked = asked || q.id == handshake::tracking;  // pipelined behind HELLO
            s = reply(h, q.id, good_reply(q), report);
        }
        CHECK(asked);
        CHECK(s == handshake_status::ready);
        // A RESP2 connection is told only through a redirect: its
        // subscription's job, not the handshake's.
        CHECK_FALSE(report.tracking);
        CHECK(report.resp2);
        CHECK(report.tracks_keys);
    }
    SECTION("a password: nothing goes until HELLO is answered, then AUTH") {
        const node_address a = parse("redis://:pw@10.0.0.1");
        handshake h;
        h.start(a, o);
        const std::vector<request> first = drain(h);
        REQUIRE(first.size() == 1);  // held: a server without HELLO says NOAUTH to the rest
        CHECK(joined(first.at(0)) == "HELLO 3 AUTH default pw SETNAME edgelock");
        edgelock::detail::node_report report;
        CHECK(reply(h, first.at(0).id, no_hello, report) == handshake_status::pending);
        const std::vector<request> rest = drain(h);
        REQUIRE(rest.size() == 5 + edgelock::lock_scripts_count);
        CHECK(joined(rest.at(0)) == "AUTH pw");
        CHECK(joined(rest.at(1)) == "CLIENT SETNAME edgelock");
        CHECK(joined(rest.at(4)) == "INFO server");
        for (const request& q : rest) {
            CHECK(q.id != handshake::tracking);  // no pushes over RESP2
        }
        handshake_status s = handshake_status::pending;
        for (const request& q : rest) {
            s = reply(h, q.id, good_reply(q), report);
        }
        CHECK(s == handshake_status::ready);
        CHECK(report.resp2);
    }
    SECTION("a password and a server with HELLO: one round trip, then the rest") {
        const node_address a = parse("redis://:pw@10.0.0.1");
        handshake h;
        h.start(a, o);
        const std::vector<request> first = drain(h);
        REQUIRE(first.size() == 1);
        edgelock::detail::node_report report;
        CHECK(reply(h, first.at(0).id, "%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n", report) ==
              handshake_status::pending);
        const std::vector<request> rest = drain(h);
        REQUIRE(rest.size() == 4 + edgelock::lock_scripts_count);
        CHECK(joined(rest.at(0)) == "INFO replication");
        CHECK_FALSE(report.resp2);
    }
}

TEST_CASE("handshake: a subscription's set-up", "[handshake]") {
    struct setup_case {
        const char* url;
        const char* user;      // client_options.username, or nullptr
        const char* password;  // client_options.password, or nullptr
        std::vector<std::string> want;
    };
    const setup_case cases[] = {
        {"redis://10.0.0.1", nullptr, nullptr, {"CLIENT ID", "SUBSCRIBE __redis__:invalidate"}},
        {"redis://:pw@10.0.0.1/3",
         nullptr,
         nullptr,
         {"AUTH pw", "CLIENT ID", "SUBSCRIBE __redis__:invalidate"}},
        {"redis://alice:pw@10.0.0.1",
         nullptr,
         nullptr,
         {"AUTH alice pw", "CLIENT ID", "SUBSCRIBE __redis__:invalidate"}},
        {"redis://10.0.0.1",
         "bob",
         "secret",
         {"AUTH bob secret", "CLIENT ID", "SUBSCRIBE __redis__:invalidate"}},
    };
    for (const setup_case& c : cases) {
        INFO(c.url);
        const node_address a = parse(c.url);
        client_options o;
        if (c.user != nullptr) {
            o.username = c.user;
        }
        if (c.password != nullptr) {
            o.password = c.password;
        }
        char buf[512];
        std::uint8_t replies = 0;
        const std::size_t size =
            edgelock::detail::subscription_setup(buf, sizeof buf, a, o, replies);
        REQUIRE(size > 0);
        CHECK(replies == c.want.size());
        std::vector<std::string> got;
        for (std::size_t at = 0; at < size;) {
            resp_node nodes[8];
            const edgelock::resp_result r =
                edgelock::resp_decode_whole(buf + at, size - at, nodes, 8);
            REQUIRE(r.status == edgelock::resp_status::complete);
            request q;
            for (std::size_t i = 1; i < r.nodes; ++i) {
                q.args.emplace_back(nodes[i].text.data, nodes[i].text.size);
            }
            got.push_back(joined(q));
            at += r.size;
        }
        CHECK(got == c.want);
        // No room: nothing, never a part.
        for (std::size_t cap = 0; cap < size; ++cap) {
            CHECK(edgelock::detail::subscription_setup(buf, cap, a, o, replies) == 0);
        }
    }
}
