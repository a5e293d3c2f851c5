// A simulated Redis node for the lock machine's tests: a keyspace with expiry on
// virtual time, the handful of commands the lock uses, and a script cache.
//
// Scripts are interpreted natively: EVALSHA looks the digest up in the node's
// script cache (empty after every restart, as on a real server, so NOSCRIPT
// happens), EVAL finds the script by its exact text and caches its digest. The
// native code follows the Lua of lock_scripts.cpp line by line; the
// integration tests against redis-server check the Lua itself.
//
// Test code: allocates and throws freely.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "edgelock/lock_scripts.hpp"

namespace sim {

struct redis_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline std::string resp_int(std::int64_t v) {
    return ":" + std::to_string(v) + "\r\n";
}
inline std::string resp_pair(std::int64_t a, std::int64_t b) {
    return "*2\r\n" + resp_int(a) + resp_int(b);
}
inline std::string resp_ok() {
    return "+OK\r\n";
}
inline std::string resp_nil() {
    return "$-1\r\n";
}
inline std::string resp_bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}
inline std::string resp_err(const std::string& s) {
    return "-" + s + "\r\n";
}

inline std::string to_std(edgelock::str_view v) {
    return std::string(v.data, v.size);
}

class redis_node {
public:
    // The server's TIME in microseconds: the simulated clock, from a
    // realistic wall-clock epoch (fencing tokens never fall below it).
    static constexpr std::int64_t clock_base_us = 1700000000000000;
    static std::int64_t time_us(std::uint64_t now) {
        return clock_base_us + static_cast<std::int64_t>(now);
    }
    struct entry {
        bool hash = false;
        std::string str;
        std::map<std::string, std::string> fields;
        std::uint64_t expire_at = 0;  // virtual us; 0: no expiry
    };

    std::map<std::string, entry> data;
    std::set<std::string> script_cache;
    std::uint64_t commands = 0;
    std::uint64_t noscripts = 0;
    std::uint64_t evals = 0;

    // A restart always empties the script cache; the keyspace survives only
    // with persistence (AOF, appendfsync always).
    void restart(bool keep_data) {
        script_cache.clear();
        if (!keep_data) {
            data.clear();
        }
    }

    entry* find(const std::string& key, std::uint64_t now) {
        auto it = data.find(key);
        if (it == data.end()) {
            return nullptr;
        }
        if (it->second.expire_at != 0 && it->second.expire_at <= now) {
            data.erase(it);
            return nullptr;
        }
        return &it->second;
    }

    std::string execute(const std::vector<std::string>& argv, std::uint64_t now) {
        ++commands;
        try {
            return dispatch(argv, now);
        } catch (const redis_error& e) {
            return resp_err(e.what());
        }
    }

private:
    static std::int64_t parse_int(const std::string& s) {
        if (s.empty() || s.size() > 19) {
            throw redis_error("ERR value is not an integer or out of range");
        }
        std::size_t i = s[0] == '-' ? 1 : 0;
        if (i == s.size()) {
            throw redis_error("ERR value is not an integer or out of range");
        }
        std::int64_t v = 0;
        for (; i < s.size(); ++i) {
            if (s[i] < '0' || s[i] > '9') {
                throw redis_error("ERR value is not an integer or out of range");
            }
            v = v * 10 + (s[i] - '0');
        }
        return s[0] == '-' ? -v : v;
    }
    static std::string upper(std::string s) {
        for (char& c : s) {
            if (c >= 'a' && c <= 'z') {
                c = static_cast<char>(c - 'a' + 'A');
            }
        }
        return s;
    }
    static void wrongtype() {
        throw redis_error("WRONGTYPE Operation against a key holding the wrong kind of value");
    }

    // Primitives, each as the Redis command of the same name behaves.
    bool get(const std::string& k, std::uint64_t now, std::string& out) {
        entry* e = find(k, now);
        if (e == nullptr) {
            return false;
        }
        if (e->hash) {
            wrongtype();
        }
        out = e->str;
        return true;
    }
    bool set_nx_px(const std::string& k, const std::string& v, std::int64_t px, std::uint64_t now) {
        if (px <= 0) {
            throw redis_error("ERR invalid expire time in 'set' command");
        }
        if (find(k, now) != nullptr) {
            return false;
        }
        entry e;
        e.str = v;
        e.expire_at = now + static_cast<std::uint64_t>(px) * 1000;
        data[k] = e;
        return true;
    }
    void set(const std::string& k, const std::string& v) {
        entry e;
        e.str = v;
        data[k] = e;  // SET without options drops any ttl
    }
    std::int64_t pexpire(const std::string& k, std::int64_t px, std::uint64_t now) {
        entry* e = find(k, now);
        if (e == nullptr) {
            return 0;
        }
        if (px <= 0) {
            data.erase(k);
            return 1;
        }
        e->expire_at = now + static_cast<std::uint64_t>(px) * 1000;
        return 1;
    }
    std::int64_t pttl(const std::string& k, std::uint64_t now) {
        entry* e = find(k, now);
        if (e == nullptr) {
            return -2;
        }
        if (e->expire_at == 0) {
            return -1;
        }
        return static_cast<std::int64_t>((e->expire_at - now + 999) / 1000);
    }
    std::int64_t del(const std::string& k, std::uint64_t now) {
        if (find(k, now) == nullptr) {
            return 0;
        }
        data.erase(k);
        return 1;
    }
    std::int64_t incr(const std::string& k, std::uint64_t now) {
        std::string cur;
        std::int64_t v = get(k, now, cur) ? parse_int(cur) : 0;
        ++v;
        entry* e = find(k, now);
        if (e != nullptr) {
            e->str = std::to_string(v);  // INCR keeps the ttl
        } else {
            set(k, std::to_string(v));
        }
        return v;
    }
    // Lua's tonumber(redis.call('get', k) or '0').
    std::int64_t get_number(const std::string& k, std::uint64_t now) {
        std::string cur;
        return get(k, now, cur) ? parse_int(cur) : 0;
    }
    entry* hash_entry(const std::string& k, std::uint64_t now) {
        entry* e = find(k, now);
        if (e != nullptr && !e->hash) {
            wrongtype();
        }
        return e;
    }
    std::int64_t hexists(const std::string& k, const std::string& f, std::uint64_t now) {
        entry* e = hash_entry(k, now);
        return e != nullptr && e->fields.count(f) != 0 ? 1 : 0;
    }
    std::int64_t hincrby(const std::string& k, const std::string& f, std::int64_t by,
                         std::uint64_t now) {
        entry* e = hash_entry(k, now);
        if (e == nullptr) {
            entry fresh;
            fresh.hash = true;
            data[k] = fresh;
            e = &data[k];
        }
        std::int64_t v = 0;
        auto it = e->fields.find(f);
        if (it != e->fields.end()) {
            v = parse_int(it->second);
        }
        v += by;
        e->fields[f] = std::to_string(v);
        return v;
    }

    std::string run_script(const edgelock::lock_script* s, const std::vector<std::string>& keys,
                           const std::vector<std::string>& args, std::uint64_t now) {
        using namespace edgelock;
        auto key = [&](std::size_t i) -> const std::string& {
            if (i >= keys.size()) {
                throw redis_error("ERR Error running script: KEYS index missing");
            }
            return keys[i];
        };
        auto arg = [&](std::size_t i) -> const std::string& {
            if (i >= args.size()) {
                throw redis_error("ERR Error running script: ARGV index missing");
            }
            return args[i];
        };
        std::string cur;
        if (s == &script_acquire) {
            if (set_nx_px(key(0), arg(0), parse_int(arg(1)), now)) {
                return resp_pair(1, 0);
            }
            if (get(key(0), now, cur) && cur == arg(0)) {
                pexpire(key(0), parse_int(arg(1)), now);
                return resp_pair(1, 0);
            }
            return resp_pair(0, pttl(key(0), now));
        }
        if (s == &script_release) {
            if (get(key(0), now, cur) && cur == arg(0)) {
                return resp_int(del(key(0), now));
            }
            return resp_int(0);
        }
        if (s == &script_renew) {
            if (get(key(0), now, cur) && cur == arg(0)) {
                return resp_int(pexpire(key(0), parse_int(arg(1)), now));
            }
            return resp_int(0);
        }
        if (s == &script_reentrant_acquire) {
            if (find(key(0), now) == nullptr || hexists(key(0), arg(0), now) == 1) {
                const std::int64_t n = hincrby(key(0), arg(0), 1, now);
                pexpire(key(0), parse_int(arg(1)), now);
                return resp_pair(1, n);
            }
            return resp_pair(0, pttl(key(0), now));
        }
        if (s == &script_reentrant_release) {
            if (hexists(key(0), arg(0), now) == 0) {
                return resp_int(-1);
            }
            const std::int64_t n = hincrby(key(0), arg(0), -1, now);
            if (n > 0) {
                pexpire(key(0), parse_int(arg(1)), now);
                return resp_int(n);
            }
            del(key(0), now);
            return resp_int(0);
        }
        if (s == &script_reentrant_renew) {
            if (hexists(key(0), arg(0), now) == 1) {
                return resp_int(pexpire(key(0), parse_int(arg(1)), now));
            }
            return resp_int(0);
        }
        if (s == &script_fenced_acquire) {
            if (set_nx_px(key(0), arg(0), parse_int(arg(1)), now)) {
                if (get_number(key(1), now) < time_us(now)) {  // never below the clock
                    set(key(1), std::to_string(time_us(now)));
                }
                return resp_pair(1, incr(key(1), now));
            }
            if (get(key(0), now, cur) && cur == arg(0)) {
                pexpire(key(0), parse_int(arg(1)), now);
                return resp_pair(1, get_number(key(1), now));
            }
            return resp_pair(0, pttl(key(0), now));
        }
        if (s == &script_fenced_read) {
            if (set_nx_px(key(0), arg(0), parse_int(arg(1)), now) ||
                (get(key(0), now, cur) && cur == arg(0))) {
                pexpire(key(0), parse_int(arg(1)), now);
                return resp_pair(1, std::max(get_number(key(1), now), time_us(now)));
            }
            return resp_pair(0, pttl(key(0), now));
        }
        if (s == &script_fence_raise) {
            if (!get(key(0), now, cur) || cur != arg(0)) {
                return resp_int(-1);
            }
            const std::int64_t c = get_number(key(1), now);
            const std::int64_t t = parse_int(arg(1));
            if (c < t) {
                set(key(1), arg(1));
                return resp_int(t);
            }
            return resp_int(c);
        }
        throw redis_error("ERR unknown script");
    }

    std::string eval(const edgelock::lock_script* s, const std::vector<std::string>& argv,
                     std::uint64_t now) {
        if (argv.size() < 3) {
            throw redis_error("ERR wrong number of arguments");
        }
        const std::int64_t numkeys = parse_int(argv[2]);
        if (numkeys < 0 || static_cast<std::size_t>(numkeys) > argv.size() - 3) {
            throw redis_error("ERR Number of keys can't be greater than number of args");
        }
        const auto k0 = argv.begin() + 3;
        const auto kn = k0 + static_cast<std::ptrdiff_t>(numkeys);  // bounded above
        const std::vector<std::string> keys(k0, kn);
        const std::vector<std::string> args(kn, argv.end());
        return run_script(s, keys, args, now);
    }

    std::string dispatch(const std::vector<std::string>& argv, std::uint64_t now) {
        if (argv.empty()) {
            throw redis_error("ERR empty command");
        }
        const std::string cmd = upper(argv[0]);
        if (cmd == "EVALSHA" || cmd == "EVAL") {
            if (argv.size() < 2) {
                throw redis_error("ERR wrong number of arguments");
            }
            for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
                const edgelock::lock_script* s = edgelock::lock_scripts_all[i];
                if (cmd == "EVALSHA" && argv[1] == to_std(s->sha1)) {
                    if (script_cache.count(argv[1]) == 0) {
                        ++noscripts;
                        return resp_err("NOSCRIPT No matching script. Please use EVAL.");
                    }
                    return eval(s, argv, now);
                }
                if (cmd == "EVAL" && argv[1] == to_std(s->text)) {
                    ++evals;
                    script_cache.insert(to_std(s->sha1));
                    return eval(s, argv, now);
                }
            }
            if (cmd == "EVALSHA") {
                ++noscripts;
                return resp_err("NOSCRIPT No matching script. Please use EVAL.");
            }
            throw redis_error("ERR the simulator knows only edgelock's scripts");
        }
        if (cmd == "GET" && argv.size() == 2) {
            std::string v;
            return get(argv[1], now, v) ? resp_bulk(v) : resp_nil();
        }
        if (cmd == "SET" && argv.size() == 6 && upper(argv[3]) == "NX" && upper(argv[4]) == "PX") {
            return set_nx_px(argv[1], argv[2], parse_int(argv[5]), now) ? resp_ok() : resp_nil();
        }
        if (cmd == "SET" && argv.size() == 3) {
            set(argv[1], argv[2]);
            return resp_ok();
        }
        if (cmd == "DEL" && argv.size() == 2) {
            return resp_int(del(argv[1], now));
        }
        if (cmd == "PEXPIRE" && argv.size() == 3) {
            return resp_int(pexpire(argv[1], parse_int(argv[2]), now));
        }
        if (cmd == "PTTL" && argv.size() == 2) {
            return resp_int(pttl(argv[1], now));
        }
        if (cmd == "INCR" && argv.size() == 2) {
            return resp_int(incr(argv[1], now));
        }
        if (cmd == "HINCRBY" && argv.size() == 4) {
            return resp_int(hincrby(argv[1], argv[2], parse_int(argv[3]), now));
        }
        if (cmd == "HEXISTS" && argv.size() == 3) {
            return resp_int(hexists(argv[1], argv[2], now));
        }
        if (cmd == "EXISTS" && argv.size() == 2) {
            return resp_int(find(argv[1], now) != nullptr ? 1 : 0);
        }
        throw redis_error("ERR unknown command '" + argv[0] + "'");
    }
};

}  // namespace sim
