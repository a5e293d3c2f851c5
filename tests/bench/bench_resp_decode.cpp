// Decoding speed of the RESP decoder on the replies a lock client actually sees.
//
// Builds an in-memory stream of typical lock replies in a fixed pseudo-random
// mix, then decodes it reply by reply, over and over, for about 1.5 s per mode
// (with a node array, then validate-only). Prints one line per mode:
//
//   resp_decode: 12345678 replies/s, 456.7 MB/s (stream 4096 bytes, 300 replies)
//
// Every reply must decode completely, and the stream must be consumed to the
// byte, or the program exits with status 1; every pass also feeds a checksum
// that must match the first pass, so the compiler cannot drop the work.
// MB = 10^6 bytes.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "edgelock/resp_decoder.hpp"

namespace {

using edgelock::resp_decoder;
using edgelock::resp_node;
using edgelock::resp_result;
using edgelock::resp_status;

struct reply_kind {
    const char* wire;
    unsigned weight;  // out of the sum of weights
};

std::string token_bulk(std::uint32_t seed) {
    static const char hex[] = "0123456789abcdef";
    std::string out = "$32\r\n";
    for (int i = 0; i < 32; ++i) {
        seed = seed * 1664525u + 1013904223u;
        out += hex[seed >> 28];
    }
    return out + "\r\n";
}

// A stream of `replies` replies: acquires (+OK / $-1), releases and renewals
// (:1 / :0), GETs of a token, NOSCRIPT on the first EVALSHA, RESP3 maps.
std::string build_stream(std::size_t replies) {
    const reply_kind kinds[] = {
        {"+OK\r\n", 30},
        {":1\r\n", 20},
        {":0\r\n", 8},
        {"$-1\r\n", 12},
        {nullptr, 15},  // a token bulk
        {"-NOSCRIPT No matching script. Please use EVAL.\r\n", 3},
        {"%2\r\n$5\r\nvalid\r\n:29874\r\n$5\r\nfence\r\n:1042\r\n", 7},
        {"%1\r\n$5\r\nproto\r\n:3\r\n", 2},
        {"*2\r\n:1\r\n:1043\r\n", 3},
    };
    unsigned total_weight = 0;
    for (const reply_kind& k : kinds) {
        total_weight += k.weight;
    }
    std::string stream;
    std::uint32_t rng = 12345;
    for (std::size_t i = 0; i < replies; ++i) {
        rng = rng * 1664525u + 1013904223u;
        unsigned pick = (rng >> 8) % total_weight;
        for (const reply_kind& k : kinds) {
            if (pick < k.weight) {
                stream += k.wire != nullptr ? std::string(k.wire) : token_bulk(rng);
                break;
            }
            pick -= k.weight;
        }
    }
    return stream;
}

struct pass_result {
    bool ok = true;
    std::size_t replies = 0;
    std::uint64_t checksum = 0;
};

// Decodes the whole stream once, reply by reply.
pass_result decode_stream(resp_decoder& decoder, const std::string& stream, resp_node* nodes,
                          std::size_t capacity) {
    pass_result p;
    const char* data = stream.data();
    std::size_t start = 0;
    while (start < stream.size()) {
        const resp_result r = decoder.decode(data + start, stream.size() - start, nodes, capacity);
        if (r.status != resp_status::complete || r.size == 0) {
            p.ok = false;
            return p;
        }
        p.checksum += r.nodes + r.size;
        if (nodes != nullptr) {
            p.checksum += static_cast<std::uint64_t>(nodes[0].integer) + nodes[0].text.size;
        }
        start += r.size;
        ++p.replies;
    }
    p.ok = start == stream.size();
    return p;
}

bool run(const char* name, const std::string& stream, std::size_t expected_replies,
         bool keep_nodes) {
    using clock = std::chrono::steady_clock;
    resp_decoder decoder;
    resp_node nodes[16];
    resp_node* const node_array = keep_nodes ? nodes : nullptr;

    const pass_result first = decode_stream(decoder, stream, node_array, 16);
    if (!first.ok || first.replies != expected_replies) {
        std::fprintf(stderr, "%s: the stream did not decode (%zu of %zu replies)\n", name,
                     first.replies, expected_replies);
        return false;
    }

    const auto budget = std::chrono::milliseconds(1500);
    const auto begin = clock::now();
    auto now = begin;
    std::uint64_t passes = 0;
    std::uint64_t checksum = 0;
    while (now - begin < budget) {
        for (int i = 0; i < 64; ++i) {
            const pass_result p = decode_stream(decoder, stream, node_array, 16);
            if (!p.ok || p.replies != expected_replies) {
                std::fprintf(stderr, "%s: a pass failed to decode\n", name);
                return false;
            }
            checksum += p.checksum;
            ++passes;
        }
        now = clock::now();
    }
    if (checksum != first.checksum * passes) {
        std::fprintf(stderr, "%s: passes disagree\n", name);
        return false;
    }

    const double seconds = std::chrono::duration<double>(now - begin).count();
    const double replies = static_cast<double>(passes) * static_cast<double>(expected_replies);
    const double bytes = static_cast<double>(passes) * static_cast<double>(stream.size());
    std::printf("%s: %.0f replies/s, %.1f MB/s (stream %zu bytes, %zu replies)\n", name,
                replies / seconds, bytes / seconds / 1e6, stream.size(), expected_replies);
    return true;
}

}  // namespace

int main() {
    const std::size_t replies = 300;
    const std::string stream = build_stream(replies);
    bool ok = run("resp_decode", stream, replies, true);
    ok = run("resp_validate", stream, replies, false) && ok;
    return ok ? 0 : 1;
}
