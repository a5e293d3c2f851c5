// fake_redis's push-flood mode (fake_redis.cpp): a Redis 7 master speaking
// RESP3 where the lock is held by someone else, with a ttl of 3 s renewed
// every second, and whose connections are told the key changed without end
// (not just at each renewal): once a
// connection turned tracking on and named a key, it gets `rate` pushes a
// second, ["invalidate", [KEY]], or with --flush ["invalidate", null] (what a
// FLUSHALL sends). A waiter that tries again finds the same holder.
//
// Set-up is answered as Redis 7.2 would (HELLO 3's map, INFO, CLIENT
// TRACKING, SCRIPT LOAD); an acquire as a busy key does: SET ... NX GET with
// the holder's token, an acquire script (EVALSHA or EVAL) with [0, pttl].
//
//   edgelock_test::push_flood::server s;   // s.option("--flush", "yes")
//   s.start(now);
//   out += s.reply(args, session, now);    // each command of a connection
//   out += s.pushes(session, now);         // before each wait
//   wait until s.next_due(now) at the latest
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/resp_text.hpp"

namespace edgelock_test {
namespace push_flood {

struct session {
    bool tracking = false;
    std::string key;       // the last key an acquire named
    double next_push = 0;  // when the next push is due
};

class server {
public:
    // --flush yes|no, --rate N (pushes a second per connection, 1 to 100000).
    bool option(const char* name, const char* value) {
        if (std::strcmp(name, "--flush") == 0) {
            flush_ = std::strcmp(value, "yes") == 0;
            return flush_ || std::strcmp(value, "no") == 0;
        }
        if (std::strcmp(name, "--rate") == 0) {
            char* end = nullptr;
            rate_ = std::strtod(value, &end);
            return end != value && *end == '\0' && rate_ >= 1 && rate_ <= 100000;
        }
        return false;
    }
    void start(double now) { started_ = now; }

    std::string reply(const std::vector<std::string>& args, session& s, double now) const {
        using resp_text::bulk;
        const std::string name = args.empty() ? std::string() : resp_text::upper(args[0]);
        const std::string sub = args.size() > 1 ? resp_text::upper(args[1]) : std::string();
        if (name == "HELLO") {
            return "%7\r\n" + bulk("server") + bulk("redis") + bulk("version") + bulk("7.2.4") +
                   bulk("proto") + ":3\r\n" + bulk("id") + ":7\r\n" + bulk("mode") +
                   bulk("standalone") + bulk("role") + bulk("master") + bulk("modules") + "*0\r\n";
        }
        if (name == "INFO") {
            return bulk(
                "# Server\r\nredis_version:7.2.4\r\n# Replication\r\nrole:master\r\n"
                "connected_slaves:0\r\n# Memory\r\nmaxmemory:0\r\n"
                "maxmemory_policy:noeviction\r\n");
        }
        if (name == "CLIENT" && sub == "TRACKING") {
            s.tracking = true;
            return "+OK\r\n";
        }
        if (name == "PING") {
            return "+PONG\r\n";
        }
        if (name == "SCRIPT" && sub == "LOAD") {
            return bulk(std::string(40, '0'));
        }
        if (name == "SET" && args.size() > 2) {
            s.key = args[1];
            return bulk(holder_token);
        }
        if (name == "EVALSHA" || name == "EVAL") {
            if (args.size() > 3 && args[2] != "0") {
                s.key = args[3];
            }
            // 3 s, renewed every second: 2 to 3 s left.
            const double since = now - started_;
            const long left_ms =
                3000 - static_cast<long>((since - static_cast<long>(since)) * 1000);
            return "*2\r\n:0\r\n:" + std::to_string(left_ms) + "\r\n";
        }
        if (name == "WAIT" || name == "DEL" || name == "EXISTS") {
            return ":0\r\n";
        }
        return "+OK\r\n";
    }

    // The pushes due on a connection at `now`.
    std::string pushes(session& s, double now) const {
        if (!s.tracking || s.key.empty()) {
            return std::string();
        }
        if (s.next_push == 0) {
            s.next_push = now;
        }
        const std::string one = ">2\r\n" + resp_text::bulk("invalidate") +
                                (flush_ ? std::string("_\r\n") : "*1\r\n" + resp_text::bulk(s.key));
        std::string out;
        for (int n = 0; s.next_push <= now && n < 1000; ++n) {
            out += one;
            s.next_push += 1.0 / rate_;
        }
        if (s.next_push <= now) {
            s.next_push = now;  // a reader that fell behind is not paid back
        }
        return out;
    }

    // When the next push is due on any connection: at most 1/rate from now.
    double next_due(double now) const { return now + 1.0 / rate_; }

private:
    static constexpr const char* holder_token = "0123456789abcdef0123456789abcdef";
    bool flush_ = false;
    double rate_ = 6000;
    double started_ = 0;
};

}  // namespace push_flood
}  // namespace edgelock_test
