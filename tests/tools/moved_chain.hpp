// fake_redis's moved-chain mode (fake_redis.cpp): K loopback ports where
// every key's request on port i is answered MOVED to port i + 1, the last
// to the first. A redis-cluster:// client seeded with the first port chases
// the answers around the ring, one connection per port, and nothing is ever
// written. Kept apart from fake_redis.cpp, which only moves its bytes.
//
// The set-up of a connection is answered as a Redis 7 master without HELLO
// would (a RESP2 proxy, say): the client then speaks RESP2, which cannot
// push, and gives every connection a second one subscribed to
// __redis__:invalidate (CLIENT ID, SUBSCRIBE), to which the first one's
// CLIENT TRACKING is redirected. So a client holds two sockets per port of
// the ring: the node's own connection and its subscription, and each extra
// Cluster connection and its subscription.
//
// A redirection names the host the caller gives: 127.0.0.1, or a host name,
// as a Cluster with cluster-preferred-endpoint-type hostname names its
// masters. Every port listens on the loopback address whatever the name.
//
//   const std::string r =
//       edgelock_test::moved_chain::reply(args, "127.0.0.1", next_port, client_id);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/resp_text.hpp"

namespace edgelock_test {
namespace moved_chain {

// What INFO says, whatever the section: a master (a replica is refused by
// a client outside a Cluster, kept in one: either way, not what is tested),
// a version that tracks keys (6 and later), nothing evicted.
constexpr const char* info_text =
    "# Server\r\nredis_version:7.2.4\r\n"
    "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
    "# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n";

using resp_text::bulk;
using resp_text::upper;

// The Redis Cluster hash slot of a key: CRC16 (XMODEM) of its hash tag, the
// bytes between the first '{' and the first '}' after it when there are
// any, else of the whole key; modulo 16384. Written here, not taken from the
// library, so that a client and this server that got it wrong the same way
// cannot agree.
inline std::uint16_t key_slot(const std::string& key) {
    std::string hashed = key;
    const std::size_t open = key.find('{');
    if (open != std::string::npos) {
        const std::size_t close = key.find('}', open + 1);
        if (close != std::string::npos && close > open + 1) {
            hashed = key.substr(open + 1, close - open - 1);
        }
    }
    unsigned crc = 0;
    for (const char ch : hashed) {
        crc ^= static_cast<unsigned>(static_cast<unsigned char>(ch)) << 8;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 0x8000u) != 0 ? ((crc << 1) ^ 0x1021u) : (crc << 1);
            crc &= 0xffffu;
        }
    }
    return static_cast<std::uint16_t>(crc % 16384u);
}

// The slot a command's key is in: EVAL and friends name it after the script
// and the key count; the others first. 0 for a command without a key: the
// client routes those by its lock's slot anyway.
inline std::uint16_t command_slot(const std::vector<std::string>& args) {
    const std::string name = args.empty() ? std::string() : upper(args[0]);
    const bool script = name == "EVAL" || name == "EVALSHA" || name == "EVAL_RO" ||
                        name == "EVALSHA_RO" || name == "FCALL" || name == "FCALL_RO";
    if (script) {
        return args.size() > 3 && args[2] != "0" ? key_slot(args[3]) : 0;
    }
    return args.size() > 1 ? key_slot(args[1]) : 0;
}

// The reply to one command (its arguments) on a connection to a port of the
// ring: set-up and subscription as a RESP2-only server would answer them;
// anything else MOVED to `next_host`:`next_port`. `client_id` answers
// CLIENT ID.
inline std::string reply(const std::vector<std::string>& args, const std::string& next_host,
                         std::uint16_t next_port, std::int64_t client_id) {
    const std::string name = args.empty() ? std::string() : upper(args[0]);
    const std::string sub = args.size() > 1 ? upper(args[1]) : std::string();
    if (name == "HELLO") {
        return "-ERR unknown command 'HELLO'\r\n";
    }
    if (name == "AUTH" || name == "SELECT" || name == "PING" ||
        (name == "CLIENT" && (sub == "SETNAME" || sub == "TRACKING"))) {
        return name == "PING" ? "+PONG\r\n" : "+OK\r\n";
    }
    if (name == "CLIENT" && sub == "ID") {
        return ":" + std::to_string(client_id) + "\r\n";
    }
    if (name == "INFO") {
        return bulk(info_text);
    }
    if (name == "SCRIPT" && sub == "LOAD") {
        // Its digest is never used: every EVALSHA is sent on.
        return bulk(std::string(40, '0'));
    }
    if (name == "SUBSCRIBE") {
        std::string r;
        for (std::size_t i = 1; i < args.size(); ++i) {
            r += "*3\r\n" + bulk("subscribe") + bulk(args[i]) + ":" + std::to_string(i) + "\r\n";
        }
        return r;
    }
    return "-MOVED " + std::to_string(command_slot(args)) + " " + next_host + ":" +
           std::to_string(next_port) + "\r\n";
}

}  // namespace moved_chain
}  // namespace edgelock_test
