// Helpers for unit tests that drive an edgelock::lock by hand: default
// options, and taking a node's request or feeding it a reply written as RESP
// text. The deterministic random source is tools/random.hpp's counter_random.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp_decoder.hpp"
#include "tools/random.hpp"

namespace edgelock_test {

inline edgelock::lock_options lock_test_options(
    edgelock::lock_mode mode = edgelock::lock_mode::plain) {
    edgelock::lock_options o;
    o.mode = mode;
    o.ttl = edgelock::duration::millis(1000);
    o.node_timeout = edgelock::duration::millis(50);
    return o;
}

// Node capabilities as a driver would set them.
inline edgelock::lock_node_caps speaks_set(bool yes) {
    edgelock::lock_node_caps c;
    c.set_nx_get = yes;
    return c;
}
inline edgelock::lock_node_caps told_caps() {
    edgelock::lock_node_caps c;
    c.told = true;
    return c;
}

struct sent {
    std::string bytes;
    std::uint32_t tag = 0;
    std::uint8_t following = 0;  // a WAIT after the request (min_replicas)
    std::uint32_t following_tag = 0;
};

// The request the machine has for `node` (which must have one).
inline sent take(edgelock::lock& l, std::uint8_t node) {
    char buf[edgelock::lock_max_request];
    const edgelock::lock_transmit t = l.poll_transmit(node, buf, sizeof buf);
    REQUIRE(t.error == edgelock::lock_errc::ok);
    return sent{std::string(buf, t.size), t.tag, t.following, t.following_tag};
}

// Feeds a RESP reply (text) to the machine.
inline void reply(edgelock::lock& l, std::uint8_t node, std::uint32_t tag, const std::string& resp,
                  edgelock::instant now) {
    edgelock::resp_node nodes[8];
    const edgelock::resp_result r = edgelock::resp_decode_whole(resp.data(), resp.size(), nodes, 8);
    REQUIRE(r.status == edgelock::resp_status::complete);
    REQUIRE(l.on_reply(node, tag, nodes, r.nodes, now) == edgelock::lock_errc::ok);
}

inline std::string text(edgelock::str_view v) {
    return std::string(v.data, v.size);
}

// A request's words, decoded from the bytes, which must be exactly one command.
inline std::vector<std::string> words(const std::string& bytes) {
    edgelock::resp_node nodes[64];
    const edgelock::resp_result r =
        edgelock::resp_decode_whole(bytes.data(), bytes.size(), nodes, 64);
    REQUIRE(r.status == edgelock::resp_status::complete);
    REQUIRE(r.size == bytes.size());
    REQUIRE(nodes[0].type == edgelock::resp_type::array);
    std::vector<std::string> out;
    for (std::size_t i = 1; i < r.nodes; ++i) {
        REQUIRE(nodes[i].type == edgelock::resp_type::bulk_string);
        out.push_back(text(nodes[i].text));
    }
    REQUIRE(out.size() == nodes[0].count);
    return out;
}

// EVALSHA sha1 numkeys keys... args... (EVAL and the script's text with eval):
// what a script request must read.
inline std::vector<std::string> evalsha(const edgelock::lock_script& s,
                                        const std::vector<std::string>& keys,
                                        const std::vector<std::string>& args, bool eval = false) {
    std::vector<std::string> want = {eval ? "EVAL" : "EVALSHA", text(eval ? s.text : s.sha1),
                                     std::to_string(keys.size())};
    want.insert(want.end(), keys.begin(), keys.end());
    want.insert(want.end(), args.begin(), args.end());
    return want;
}

}  // namespace edgelock_test
