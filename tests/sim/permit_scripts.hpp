// A semaphore's scripts (script_permit_*), interpreted natively on a
// simulated keyspace, line by line as redis_scripts.hpp does the lock's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/lock_scripts.hpp"
#include "sim/keyspace.hpp"

namespace sim {

inline std::string resp_triple(std::int64_t a, std::int64_t b, std::int64_t c) {
    return "*3\r\n" + resp_int(a) + resp_int(b) + resp_int(c);
}

// The reply of a permit script, or an empty string when s is none of them.
// key(i) and arg(i) throw as a script reading past KEYS or ARGV would fail.
template <typename Key, typename Arg>
std::string run_permit_script(keyspace& ks, const edgelock::lock_script* s, std::size_t key_count,
                              std::size_t arg_count, Key key, Arg arg, std::int64_t clock_us,
                              std::uint64_t now) {
    using namespace edgelock;
    if (s == &script_permit_acquire) {
        const std::int64_t n = parse_int(arg(2));
        const std::int64_t w = parse_int(arg(3));
        std::string limit;
        if (ks.hget(key(0), "limit", now, limit) && limit != arg(2)) {
            std::int64_t found = -1;
            try {
                found = parse_int(limit);
            } catch (const redis_error&) {
            }
            return resp_triple(-1, found, -1);
        }
        const bool only = arg(4).size() > 0 && arg(4)[0] == 'o';
        const char f = arg(4).size() > 1 ? arg(4)[1] : '\0';
        std::int64_t took = -1;
        std::int64_t free = -1;
        std::int64_t ttl = -1;
        for (std::int64_t j = 0; j < n; ++j) {
            const std::int64_t i = (w + j) % n;
            const std::string& k = key(static_cast<std::size_t>(i + 1));
            std::string v;
            const keyspace::lua_get got = ks.pcall_get(k, now, v);
            if (got == keyspace::lua_get::string && v == arg(0) && (i == w || !only)) {
                took = i;
                break;
            }
            if (got == keyspace::lua_get::missing) {
                if (free < 0) {
                    free = i;
                }
            } else {
                const std::int64_t p = ks.pttl(k, now);
                if (ttl < 0 || p < ttl) {
                    ttl = p;
                }
            }
        }
        if (took < 0 && free >= 0 && (free == w || !only)) {
            ks.set_nx_px(key(static_cast<std::size_t>(free + 1)), arg(0), parse_int(arg(1)), now);
            took = free;
        }
        if (took < 0) {
            return resp_triple(0, ttl, free);
        }
        ks.pexpire(key(static_cast<std::size_t>(took + 1)), parse_int(arg(1)), now);
        ks.hset(key(0), "limit", arg(2), now);
        if (arg_count > 5) {
            ks.hset(key(0), std::to_string(took),
                    arg(0) + "\n" + std::to_string(clock_us / 1000000) + "\n" + arg(5), now);
        }
        if (ks.pttl(key(0), now) < parse_int(arg(1))) {
            ks.pexpire(key(0), parse_int(arg(1)), now);
        }
        if (f == '-') {
            return resp_triple(1, 0, took);
        }
        const std::string& counter = key(static_cast<std::size_t>(n + 1));
        std::int64_t c = ks.get_number(counter, now);
        if (f == 'i') {
            if (c < clock_us) {
                ks.set(counter, std::to_string(clock_us));
            }
            return resp_triple(1, ks.incr(counter, now), took);
        }
        return resp_triple(1, c < clock_us ? clock_us : c, took);
    }
    if (s == &script_permit_renew) {
        if (!ks.holds(key(0), arg(0), now)) {
            return resp_int(0);
        }
        const std::int64_t extended = ks.pexpire(key(0), parse_int(arg(1)), now);
        if (ks.pttl(key(1), now) < parse_int(arg(1))) {
            ks.pexpire(key(1), parse_int(arg(1)), now);
        }
        return resp_int(extended);
    }
    if (s == &script_permit_release) {
        const std::int64_t n = parse_int(arg(1));
        bool deleted = false;
        bool left = false;
        for (std::int64_t i = 0; i < n; ++i) {
            const std::string& k = key(static_cast<std::size_t>(i + 1));
            std::string v;
            const keyspace::lua_get got = ks.pcall_get(k, now, v);
            if (got == keyspace::lua_get::string && v == arg(0)) {
                ks.del(k, now);
                ks.hdel(key(0), std::to_string(i), now);
                deleted = true;
            } else if (got != keyspace::lua_get::missing) {
                left = true;
            }
        }
        if (deleted) {
            if (!left) {
                ks.del(key(0), now);
            }
            if (key_count > static_cast<std::size_t>(n + 1)) {
                const std::string& mark = key(static_cast<std::size_t>(n + 1));
                ks.set(mark, "");
                ks.del(mark, now);
            }
        }
        return resp_int(deleted ? 1 : 0);
    }
    return std::string();
}

}  // namespace sim
