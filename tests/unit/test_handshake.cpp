// The set-up sequence as a machine, without a socket: which requests go out
// for which options, what each reply means (a failure at every step, the
// replica and eviction checks), and a send buffer too small for the next one.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/detail/handshake.hpp"
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

// HELLO's reply: a RESP3 map (HELLO 3) or a RESP2 array of pairs (HELLO 2).
std::string hello_reply(const std::string& role = "master", const std::string& version = "7.0.15",
                        bool resp3 = true) {
    const std::string pairs = bulk("server") + bulk("redis") + bulk("version") + bulk(version) +
                              bulk("proto") + (resp3 ? ":3\r\n" : ":2\r\n") + bulk("id") +
                              ":7\r\n" + bulk("mode") + bulk("standalone") + bulk("role") +
                              bulk(role) + bulk("modules") + "*0\r\n";
    return (resp3 ? "%7\r\n" : "*14\r\n") + pairs;
}

std::string config_reply(const std::string& maxmemory, const std::string& policy) {
    return "*6\r\n" + bulk("maxmemory") + bulk(maxmemory) + bulk("maxmemory-policy") +
           bulk(policy) + bulk("maxmemory-samples") + bulk("5");
}

const std::string master_info = bulk("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n");
const std::string memory_info = bulk("# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n");
const std::string server_info =
    bulk("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n");
const std::string no_hello = "-ERR unknown command 'HELLO', with args beginning with: '3' \r\n";

// The good reply to each request.
std::string good_reply(const request& q) {
    if (q.id == handshake::auth) {
        return q.args.at(0) == "HELLO" ? hello_reply("master", "7.0.15", q.args.at(1) == "3")
                                       : "+OK\r\n";
    }
    if (q.id == handshake::config_memory) {
        return config_reply("0", "noeviction");
    }
    if (q.id == handshake::info_replication) {
        return master_info;
    }
    if (q.id == handshake::info_memory) {
        return memory_info;
    }
    if (q.id == handshake::info_server) {
        return server_info;
    }
    return "+OK\r\n";
}

// Answers every request with its good reply, or with `replace`'s where the
// request is `id`; returns the last status.
handshake_status answer_all(handshake& h, const std::vector<request>& sent,
                            edgelock::detail::node_report& report, std::uint8_t id = 0xff,
                            const std::string& replace = std::string()) {
    handshake_status s = handshake_status::pending;
    for (const request& q : sent) {
        s = reply(h, q.id, q.id == id ? replace : good_reply(q), report);
    }
    return s;
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

TEST_CASE("handshake: one flight of HELLO and CONFIG GET, no script, no tracking", "[handshake]") {
    const node_address a = parse("redis://10.0.0.1:6379");
    client_options o;
    SECTION("RESP3") {
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        REQUIRE(sent.size() == 2);
        CHECK(joined(sent[0]) == "HELLO 3 SETNAME edgelock");
        CHECK(joined(sent[1]) == "CONFIG GET maxmemory*");
        // Lock requests may follow before any reply, by SET NX GET.
        CHECK(h.sent_all());
        CHECK_FALSE(h.refused());
        CHECK_FALSE(h.hello_refused());
        edgelock::detail::node_report report;
        for (std::size_t i = 0; i < sent.size(); ++i) {
            const handshake_status s = reply(h, sent[i].id, good_reply(sent[i]), report);
            CHECK(s ==
                  (i + 1 == sent.size() ? handshake_status::ready : handshake_status::pending));
        }
        CHECK(report.error == node_error::none);
        CHECK(report.warning == node_warning::none);
        CHECK(std::string(report.policy, report.policy_size) == "noeviction");
        CHECK(std::string(report.version, report.version_size) == "7.0.15");
        CHECK(report.set_nx_get);
        CHECK(report.tracking);
        CHECK(report.tracks_keys);
        CHECK_FALSE(report.resp2);
    }
    SECTION("RESP2: HELLO 2, no tracking on this connection") {
        o.resp3 = false;
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        REQUIRE(sent.size() == 2);
        CHECK(joined(sent[0]) == "HELLO 2 SETNAME edgelock");
        CHECK(joined(sent[1]) == "CONFIG GET maxmemory*");
        edgelock::detail::node_report report;
        CHECK(answer_all(h, sent, report) == handshake_status::ready);
        CHECK(std::string(report.version, report.version_size) == "7.0.15");
        CHECK(report.set_nx_get);
        CHECK(report.tracks_keys);
        CHECK_FALSE(report.tracking);
    }
}

TEST_CASE("handshake: credentials and database shape the first requests", "[handshake]") {
    SECTION("HELLO AUTH with the URL's user and escaped password, then SELECT") {
        const node_address a = parse("redis://app:p%40ss@10.0.0.1/3");
        client_options o;
        o.resp3 = false;
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        CHECK(joined(sent.at(0)) == "HELLO 2 AUTH app p@ss SETNAME edgelock");
        CHECK(joined(sent.at(1)) == "SELECT 3");
        CHECK(sent.at(1).id == handshake::select);
    }
    SECTION("the options' password wins over the URL's") {
        const node_address a = parse("redis://:old@10.0.0.1");
        client_options o;
        o.password = "new";
        o.client_name = "";
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        CHECK(joined(sent.at(0)) == "HELLO 3 AUTH default new");  // no SETNAME asked for
    }
    SECTION("a password holds nothing back: the rest follows in the same flight") {
        const node_address a = parse("redis://:pw@10.0.0.1");
        client_options o;
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        REQUIRE(sent.size() == 2);
        CHECK(joined(sent.at(0)) == "HELLO 3 AUTH default pw SETNAME edgelock");
        CHECK(h.sent_all());
    }
}

TEST_CASE("handshake: a refusal at each step fails the node with its reason", "[handshake]") {
    struct step_case {
        const char* url;
        std::uint8_t fails;
        const char* error_reply;
        node_error expected;
    };
    const step_case cases[] = {
        {"redis://:pw@h", handshake::auth, "-WRONGPASS invalid username-password pair\r\n",
         node_error::auth_failed},
        {"redis://:pw@h", handshake::auth, "-LOADING Redis is loading\r\n",
         node_error::setup_failed},
        {"redis://h/7", handshake::select, "-ERR DB index is out of range\r\n",
         node_error::select_failed},
        {"redis://h", handshake::config_memory, "-NOAUTH Authentication required.\r\n",
         node_error::auth_failed},
    };
    for (const step_case& c : cases) {
        CAPTURE(c.url, int(c.fails), c.error_reply);
        const node_address a = parse(c.url);
        client_options o;
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
        CHECK(h.refused());
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
    handshake h;
    h.start(a, o);
    std::vector<request> sent = drain(h);
    edgelock::detail::node_report report;
    // An ACL without +config or +info: CONFIG GET refused asks INFO memory
    // instead, refused too; nothing is known of memory.
    const std::string noperm = "-NOPERM this user has no permissions\r\n";
    CHECK(reply(h, sent.at(0).id, good_reply(sent.at(0)), report) == handshake_status::pending);
    CHECK(reply(h, sent.at(1).id, noperm, report) == handshake_status::pending);
    CHECK_FALSE(h.sent_all());
    const std::vector<request> late = drain(h);
    REQUIRE(late.size() == 1);
    CHECK(joined(late.at(0)) == "INFO memory");
    CHECK(reply(h, late.at(0).id, noperm, report) == handshake_status::ready);
    CHECK(report.error == node_error::none);
    CHECK(report.policy_size == 0);
    CHECK(report.tracking);    // RESP3: whether a name may be tracked, a waiter finds out
    CHECK(report.set_nx_get);  // HELLO said 7.0.15
}

TEST_CASE("handshake: a replica fails the node, an evicting master warns", "[handshake]") {
    const node_address a = parse("redis://h");
    client_options o;
    SECTION("a replica: refused at HELLO's reply, failed once INFO says whose") {
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        REQUIRE(reply(h, sent.at(0).id, hello_reply("replica"), report) ==
                handshake_status::pending);
        CHECK(h.refused());  // a lock request behind counts for nothing
        CHECK(report.error == node_error::replica);
        const std::vector<request> late = drain(h);
        REQUIRE(late.size() == 1);
        CHECK(joined(late.at(0)) == "INFO replication");
        SECTION("INFO says its master") {
            const std::string info =
                bulk("# Replication\r\nrole:slave\r\nmaster_host:10.0.0.9\r\nmaster_port:6380\r\n");
            CHECK(reply(h, late.at(0).id, info, report) == handshake_status::failed);
            CHECK(report.error == node_error::replica);
            CHECK(std::string(report.message, report.message_size) == "replica of 10.0.0.9:6380");
        }
        SECTION("INFO refused") {
            CHECK(reply(h, late.at(0).id, "-NOPERM no\r\n", report) == handshake_status::failed);
            CHECK(std::string(report.message, report.message_size) == "role:replica");
        }
    }
    SECTION("allkeys-lru by CONFIG GET") {
        handshake h;
        h.start(a, o);
        edgelock::detail::node_report report;
        CHECK(answer_all(h, drain(h), report, handshake::config_memory,
                         config_reply("1048576", "allkeys-lru")) == handshake_status::ready);
        CHECK(report.warning == node_warning::may_evict);
        CHECK(std::string(report.policy, report.policy_size) == "allkeys-lru");
    }
    SECTION("allkeys-lru by INFO memory, CONFIG refused") {
        handshake h;
        h.start(a, o);
        edgelock::detail::node_report report;
        answer_all(h, drain(h), report, handshake::config_memory, "-NOPERM no\r\n");
        const std::vector<request> late = drain(h);
        REQUIRE(late.size() == 1);
        CHECK(reply(h, late.at(0).id, bulk("maxmemory:1048576\r\nmaxmemory_policy:allkeys-lru\r\n"),
                    report) == handshake_status::ready);
        CHECK(report.warning == node_warning::may_evict);
    }
    SECTION("maxmemory 0: no eviction, whatever the policy") {
        handshake h;
        h.start(a, o);
        edgelock::detail::node_report report;
        answer_all(h, drain(h), report, handshake::config_memory, config_reply("0", "allkeys-lru"));
        CHECK(report.warning == node_warning::none);
    }
    SECTION("an INFO reply that was not kept tells nothing") {
        handshake h;
        h.start(a, o);
        edgelock::detail::node_report report;
        answer_all(h, drain(h), report, handshake::config_memory, "-NOPERM no\r\n");
        const std::vector<request> late = drain(h);
        REQUIRE(late.size() == 1);
        CHECK(h.on_reply(late.at(0).id, nullptr, 0, report) == handshake_status::ready);
        CHECK(report.warning == node_warning::none);
        CHECK(report.policy_size == 0);
    }
    SECTION("Redis 6.2 takes the acquire script, not SET NX GET") {
        handshake h;
        h.start(a, o);
        edgelock::detail::node_report report;
        answer_all(h, drain(h), report, handshake::auth, hello_reply("master", "6.2.14"));
        CHECK(h.status() == handshake_status::ready);
        CHECK(std::string(report.version, report.version_size) == "6.2.14");
        CHECK_FALSE(report.set_nx_get);
    }
}

TEST_CASE("handshake: a request that does not fit waits for room, none is lost", "[handshake]") {
    const node_address a = parse("redis://h");
    client_options o;
    o.client_name = edgelock::str_view();
    handshake h;
    h.start(a, o);
    char small[30];
    std::uint8_t id = 0;
    // HELLO 3 fits (22 bytes); CONFIG GET maxmemory* (42) does not.
    std::vector<std::uint8_t> ids;
    for (std::size_t size; (size = h.poll_request(small, sizeof small, id)) > 0;) {
        ids.push_back(id);
    }
    REQUIRE(ids.size() == 1);
    CHECK(h.status() == handshake_status::pending);
    CHECK_FALSE(h.sent_all());  // no lock request ahead of it
    const std::vector<request> rest = drain(h);
    REQUIRE(rest.size() == 1);
    CHECK(rest.front().id == handshake::config_memory);
    CHECK(h.sent_all());
}

TEST_CASE("handshake: key tracking is a waiter's to ask, not the set-up's", "[handshake]") {
    const node_address a = parse("redis://10.0.0.1");
    client_options o;
    for (const bool notify : {true, false}) {
        o.notify = notify;
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        for (const request& q : sent) {
            CHECK(joined(q).find("TRACKING") == std::string::npos);
        }
        edgelock::detail::node_report report;
        CHECK(answer_all(h, sent, report) == handshake_status::ready);
        CHECK(report.tracking == notify);  // RESP3: the waiters can be told, if wanted
    }
}

TEST_CASE("handshake: a server without HELLO is spoken to in RESP2", "[handshake]") {
    client_options o;  // resp3 by default
    SECTION("no password: what went along stands; SETNAME and INFO follow") {
        const node_address a = parse("redis://10.0.0.1");
        handshake h;
        h.start(a, o);
        std::vector<request> sent = drain(h);
        REQUIRE(joined(sent.at(0)) == "HELLO 3 SETNAME edgelock");
        edgelock::detail::node_report report;
        CHECK(reply(h, sent.at(0).id, no_hello, report) == handshake_status::pending);
        CHECK(report.resp2);
        CHECK(h.hello_refused());
        const std::vector<request> late = drain(h);
        REQUIRE(late.size() == 3);
        CHECK(joined(late.at(0)) == "CLIENT SETNAME edgelock");
        CHECK(joined(late.at(1)) == "INFO replication");
        CHECK(joined(late.at(2)) == "INFO server");
        sent.erase(sent.begin());
        sent.insert(sent.end(), late.begin(), late.end());
        handshake_status s = handshake_status::pending;
        for (const request& q : sent) {
            s = reply(h, q.id,
                      q.id == handshake::info_server ? bulk("# Server\r\nredis_version:5.0.14\r\n")
                                                     : good_reply(q),
                      report);
        }
        CHECK(s == handshake_status::ready);
        CHECK(report.error == node_error::none);
        CHECK_FALSE(report.tracking);
        CHECK_FALSE(report.tracks_keys);
        CHECK_FALSE(report.set_nx_get);
        CHECK(std::string(report.version, report.version_size) == "5.0.14");
    }
    SECTION("a replica found by INFO") {
        const node_address a = parse("redis://10.0.0.1");
        handshake h;
        h.start(a, o);
        std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        reply(h, sent.at(0).id, no_hello, report);
        sent.erase(sent.begin());
        const std::vector<request> late = drain(h);
        sent.insert(sent.end(), late.begin(), late.end());
        CHECK(answer_all(h, sent, report, handshake::info_replication,
                         bulk("role:slave\r\nmaster_host:h2\r\nmaster_port:1\r\n")) ==
              handshake_status::failed);
        CHECK(report.error == node_error::replica);
        CHECK(std::string(report.message, report.message_size) == "replica of h2:1");
    }
    SECTION("a password: what followed HELLO was answered NOAUTH, and goes again after AUTH") {
        const node_address a = parse("redis://:pw@10.0.0.1");
        handshake h;
        h.start(a, o);
        const std::vector<request> first = drain(h);
        REQUIRE(first.size() == 2);
        edgelock::detail::node_report report;
        CHECK(reply(h, first.at(0).id, no_hello, report) == handshake_status::pending);
        CHECK_FALSE(h.sent_all());  // lock requests wait: a NOAUTH is still due
        const std::vector<request> rest = drain(h);
        REQUIRE(rest.size() == 5);
        CHECK(joined(rest.at(0)) == "AUTH pw");
        CHECK(joined(rest.at(1)) == "CLIENT SETNAME edgelock");
        CHECK(joined(rest.at(2)) == "CONFIG GET maxmemory*");
        CHECK(joined(rest.at(3)) == "INFO replication");
        CHECK(joined(rest.at(4)) == "INFO server");
        const std::string noauth = "-NOAUTH Authentication required.\r\n";
        CHECK(reply(h, first.at(1).id, noauth, report) == handshake_status::pending);
        CHECK(h.sent_all());
        CHECK(answer_all(h, rest, report) == handshake_status::ready);
        CHECK(report.error == node_error::none);
        CHECK(report.resp2);
    }
    SECTION("a password the server does not need: its AUTH says so") {
        const node_address a = parse("redis://:pw@10.0.0.1");
        o.resp3 = false;
        handshake h;
        h.start(a, o);
        const std::vector<request> first = drain(h);
        edgelock::detail::node_report report;
        CHECK(reply(h, first.at(0).id, no_hello, report) == handshake_status::pending);
        CHECK_FALSE(report.resp2);  // RESP2 was asked for
        const std::vector<request> rest = drain(h);
        REQUIRE(joined(rest.at(0)) == "AUTH pw");
        reply(h, first.at(1).id, "-NOAUTH Authentication required.\r\n", report);
        CHECK(reply(h, rest.at(0).id, "-ERR AUTH <password> called without any\r\n", report) ==
              handshake_status::failed);
        CHECK(report.error == node_error::auth_failed);
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

TEST_CASE("handshake: a HELLO answered with anything but its map fails the node", "[handshake]") {
    const node_address a = parse("redis://h");
    for (const char* wire : {"+OK\r\n", ":1\r\n", "$2\r\nhi\r\n", "_\r\n"}) {
        INFO(wire);
        client_options o;
        handshake h;
        h.start(a, o);
        const std::vector<request> sent = drain(h);
        edgelock::detail::node_report report;
        CHECK(reply(h, sent.at(0).id, wire, report) == handshake_status::failed);
        CHECK(h.refused());  // a lock request behind it counts for nothing
        CHECK(report.error == node_error::unexpected_reply);
        CHECK(std::string(report.message, report.message_size) ==
              "HELLO not answered with its map");
    }
}
