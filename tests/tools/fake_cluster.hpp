// fake_redis's cluster mode (fake_redis.cpp): two loopback ports, A (printed
// first) and B, answering as the masters of a Redis Cluster that misroutes
// the way a broken or half-aborted resharding can. The set-up is answered as
// moved_chain's RESP2 Redis 7 (moved_chain.hpp); CLUSTER SLOTS gives every
// slot to A; a command with a key is answered as --behave says:
//
//   moved-self        A: MOVED to A itself, every time
//   wrong-slot        A: MOVED to B naming another slot than the key's
//   ask-moved         A: ASK to B; B: MOVED back to A, ASKING or not
//   grant-then-moved  A: the first acquire is granted, every later command
//                     with a key (renew, release) is answered MOVED to A
//   ask-grant         A: ASK to B; B behind ASKING: a master importing the
//                     slot that takes the lock's requests (SET NX GET, the
//                     acquire, renew and release scripts), whose WAIT says
//                     no replica has them (so a client with min_replicas
//                     fails the round after B took the key); B without
//                     ASKING: MOVED to A
//
// GET and EXISTS on either port answer from what that port holds, whatever
// the slot: a test asks B whether a lock's key was left there. Keys expire
// with the ttl the requests gave.
//
//   edgelock_test::fake_cluster::server s;   // s.option("--behave", "ask-grant")
//   s.start(ports);                          // the listening ports, A first
//   out += s.reply(args, session, now);      // each command of a connection
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "edgelock/lock_scripts.hpp"
#include "tools/moved_chain.hpp"
#include "tools/resp_text.hpp"

namespace edgelock_test {
namespace fake_cluster {

enum class behaviour { none, moved_self, wrong_slot, ask_moved, grant_then_moved, ask_grant };

// What the server knows of one connection.
struct session {
    std::size_t port = 0;  // index of the port it came to: 0 is A
    std::int64_t id = 0;   // its CLIENT ID
    bool asking = false;   // ASKING came: the next command is served here
};

enum class script { unknown, acquire, release, renew };

// Which lock script an EVAL's text or an EVALSHA's digest is: the library's
// own (lock_scripts.cpp is built into this program).
inline script script_of(const std::string& name, const std::string& text) {
    const bool sha = name == "EVALSHA";
    const auto is = [&](const edgelock::lock_script& s) {
        const edgelock::str_view v = sha ? s.sha1 : s.text;
        return text == std::string(v.data, v.size);
    };
    return is(edgelock::script_acquire)   ? script::acquire
           : is(edgelock::script_release) ? script::release
           : is(edgelock::script_renew)   ? script::renew
                                          : script::unknown;
}

inline std::string digest_of(script k) {
    const edgelock::lock_script* s = k == script::acquire   ? &edgelock::script_acquire
                                     : k == script::release ? &edgelock::script_release
                                     : k == script::renew   ? &edgelock::script_renew
                                                            : nullptr;
    return s == nullptr ? std::string(40, '0') : std::string(s->sha1.data, s->sha1.size);
}

class server {
public:
    // --behave NAME; false for anything else.
    bool option(const char* name, const char* value) {
        if (std::strcmp(name, "--behave") != 0 || behave_ != behaviour::none) {
            return false;
        }
        const std::pair<const char*, behaviour> names[] = {
            {"moved-self", behaviour::moved_self},
            {"wrong-slot", behaviour::wrong_slot},
            {"ask-moved", behaviour::ask_moved},
            {"grant-then-moved", behaviour::grant_then_moved},
            {"ask-grant", behaviour::ask_grant}};
        for (const auto& n : names) {
            if (std::strcmp(value, n.first) == 0) {
                behave_ = n.second;
            }
        }
        return behave_ != behaviour::none;
    }
    bool ready() const { return behave_ != behaviour::none; }
    void start(const std::vector<std::uint16_t>& ports) { ports_ = ports; }

    std::string reply(const std::vector<std::string>& args, session& s, double now) {
        const std::string name = args.empty() ? std::string() : resp_text::upper(args[0]);
        const std::string sub = args.size() > 1 ? resp_text::upper(args[1]) : std::string();
        const bool asking = s.asking;
        s.asking = false;
        if (name == "ASKING") {
            s.asking = true;
            return "+OK\r\n";
        }
        if (name == "CLUSTER" && sub == "SLOTS") {
            return "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n" + resp_text::bulk("127.0.0.1") + ":" +
                   std::to_string(port(0)) + "\r\n";
        }
        if (name == "SCRIPT" && sub == "LOAD" && args.size() > 2) {
            return resp_text::bulk(digest_of(script_of("EVAL", args[2])));
        }
        if ((name == "GET" || name == "EXISTS") && args.size() > 1) {
            const entry* e = find(s.port, args[1], now);
            if (name == "EXISTS") {
                return e != nullptr ? ":1\r\n" : ":0\r\n";
            }
            return e != nullptr ? resp_text::bulk(e->value) : "$-1\r\n";
        }
        if (name == "WAIT") {
            return ":0\r\n";  // no replica: a client with min_replicas fails its round
        }
        const bool keyed = name == "SET" || name == "EVAL" || name == "EVALSHA";
        if (!keyed) {
            return moved_chain::reply(args, "127.0.0.1", port(0), s.id);
        }
        const std::uint16_t slot = moved_chain::command_slot(args);
        switch (behave_) {
        case behaviour::moved_self:
            return redirect("MOVED", slot, 0);
        case behaviour::wrong_slot:
            return redirect("MOVED", static_cast<std::uint16_t>((slot + 1) % 16384), 1);
        case behaviour::ask_moved:
            return s.port == 0 ? redirect("ASK", slot, 1) : redirect("MOVED", slot, 0);
        case behaviour::grant_then_moved:
            if (granted_) {
                return redirect("MOVED", slot, 0);
            }
            return run(name, args, s.port, now);
        case behaviour::ask_grant:
            if (s.port == 0) {
                return redirect("ASK", slot, 1);
            }
            return asking ? run(name, args, s.port, now) : redirect("MOVED", slot, 0);
        case behaviour::none:
            break;
        }
        return "-ERR no behaviour\r\n";
    }

private:
    struct entry {
        std::string value;
        double expires = 0;
    };

    std::uint16_t port(std::size_t i) const { return i < ports_.size() ? ports_[i] : 0; }

    std::string redirect(const char* kind, std::uint16_t slot, std::size_t to) const {
        return std::string("-") + kind + " " + std::to_string(slot) +
               " 127.0.0.1:" + std::to_string(port(to)) + "\r\n";
    }

    const entry* find(std::size_t p, const std::string& key, double now) {
        const auto it = keys_.find({p, key});
        if (it == keys_.end()) {
            return nullptr;
        }
        if (now >= it->second.expires) {
            keys_.erase(it);
            return nullptr;
        }
        return &it->second;
    }

    // SET key token NX PX ms GET, or a lock script, run on port p's keys.
    std::string run(const std::string& name, const std::vector<std::string>& args, std::size_t p,
                    double now) {
        const bool set = name == "SET";
        // A script's keys: the lock's, then any marks (ignored here).
        const std::size_t keys =
            set || args.size() < 3 ? 1 : std::strtoul(args[2].c_str(), nullptr, 10);
        if (set ? args.size() < 6 : keys < 1 || args.size() < 4 + keys) {
            return "-ERR wrong number of arguments\r\n";
        }
        const std::string& key = set ? args[1] : args[3];
        const std::string& token = set ? args[2] : args[3 + keys];
        const script k = set ? script::acquire : script_of(name, args[1]);
        const std::string ms = set ? args[5] : (args.size() > 4 + keys ? args[4 + keys] : "0");
        const double ttl = std::strtod(ms.c_str(), nullptr) / 1000.0;
        const entry* e = find(p, key, now);
        switch (k) {
        case script::acquire:
            if (e != nullptr && e->value != token) {
                const long long left = static_cast<long long>((e->expires - now) * 1000);
                return set ? resp_text::bulk(e->value)
                           : "*2\r\n:0\r\n:" + std::to_string(left) + "\r\n";
            }
            keys_[{p, key}] = entry{token, now + ttl};
            granted_ = true;
            if (set) {
                return e != nullptr ? resp_text::bulk(token) : "$-1\r\n";
            }
            return "*2\r\n:1\r\n:0\r\n";
        case script::renew:
            if (e == nullptr || e->value != token) {
                return ":0\r\n";
            }
            keys_[{p, key}].expires = now + ttl;
            return ":1\r\n";
        case script::release:
            if (e == nullptr || e->value != token) {
                return ":0\r\n";
            }
            keys_.erase({p, key});
            return ":1\r\n";
        case script::unknown:
            break;
        }
        return "-NOSCRIPT No matching script.\r\n";
    }

    behaviour behave_ = behaviour::none;
    std::vector<std::uint16_t> ports_;
    std::map<std::pair<std::size_t, std::string>, entry> keys_;
    bool granted_ = false;
};

}  // namespace fake_cluster
}  // namespace edgelock_test
