// Helpers for unit tests that drive an edgelock::lock by hand: a
// deterministic random source, default options, and taking a node's request
// or feeding it a reply written as RESP text.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "edgelock/lock.hpp"
#include "edgelock/resp_decoder.hpp"

namespace edgelock_test {

// Deterministic bytes: a lock and its twin configured alike draw the same tokens.
struct counter_random {
    unsigned char next = 1;
    bool fail = false;
    static bool fill(void* ctx, void* buf, std::size_t n) {
        auto* self = static_cast<counter_random*>(ctx);
        if (self->fail) {
            return false;
        }
        auto* p = static_cast<unsigned char*>(buf);
        for (std::size_t i = 0; i < n; ++i) {
            p[i] = self->next++;
        }
        return true;
    }
    edgelock::random_source source() { return {&counter_random::fill, this}; }
};

inline edgelock::lock_options lock_test_options(
    edgelock::lock_mode mode = edgelock::lock_mode::plain) {
    edgelock::lock_options o;
    o.mode = mode;
    o.ttl = edgelock::duration::millis(1000);
    o.node_timeout = edgelock::duration::millis(50);
    return o;
}

struct sent {
    std::string bytes;
    std::uint32_t tag = 0;
};

// The request the machine has for `node` (which must have one).
inline sent take(edgelock::lock& l, std::uint8_t node) {
    char buf[edgelock::lock_max_request];
    const edgelock::lock_transmit t = l.poll_transmit(node, buf, sizeof buf);
    REQUIRE(t.error == edgelock::lock_errc::ok);
    return sent{std::string(buf, t.size), t.tag};
}

// Feeds a RESP reply (text) to the machine.
inline void reply(edgelock::lock& l, std::uint8_t node, std::uint32_t tag, const std::string& resp,
                  edgelock::instant now) {
    edgelock::resp_node nodes[8];
    const edgelock::resp_result r = edgelock::resp_decode_whole(resp.data(), resp.size(), nodes, 8);
    REQUIRE(r.status == edgelock::resp_status::complete);
    REQUIRE(l.on_reply(node, tag, nodes, r.nodes, now) == edgelock::lock_errc::ok);
}

}  // namespace edgelock_test
