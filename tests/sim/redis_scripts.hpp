// The lock scripts, interpreted natively on a simulated keyspace.
//
// Each branch follows the Lua of lock_scripts.cpp line by line; the
// integration tests against redis-server check the Lua itself. EVAL and
// EVALSHA find the script by its exact text or digest: the simulator runs
// edgelock's scripts and nothing else.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/lock_scripts.hpp"
#include "sim/keyspace.hpp"
#include "sim/permit_scripts.hpp"

namespace sim {

// The server's TIME in microseconds: the simulated clock, from a realistic
// wall-clock epoch (fencing tokens never fall below it).
constexpr std::int64_t server_clock_base_us = 1700000000000000;
inline std::int64_t server_time_us(std::uint64_t now) {
    return server_clock_base_us + static_cast<std::int64_t>(now);
}

// The edgelock script with this text (EVAL) or digest (EVALSHA), or nullptr.
inline const edgelock::lock_script* script_by_text(const std::string& text) {
    for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
        if (text == to_std(edgelock::lock_scripts_all[i]->text)) {
            return edgelock::lock_scripts_all[i];
        }
    }
    return nullptr;
}
inline const edgelock::lock_script* script_by_sha(const std::string& sha) {
    for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
        if (sha == to_std(edgelock::lock_scripts_all[i]->sha1)) {
            return edgelock::lock_scripts_all[i];
        }
    }
    return nullptr;
}

inline std::string run_script(keyspace& ks, const edgelock::lock_script* s,
                              const std::vector<std::string>& keys,
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
    const std::int64_t clock = server_time_us(now);

    // The renewal mark, with the key's ttl (what it holds, a holder record,
    // kept); the release mark, written and deleted, and the renewal mark
    // deleted.
    auto renewal_mark = [&] {
        if (keys.size() > 1 && ks.pexpire(key(1), parse_int(arg(1)), now) == 0) {
            ks.set(key(1), "");
            ks.pexpire(key(1), parse_int(arg(1)), now);
        }
    };
    // The holder record (ARGV[3]) into the mark, the last key: the owner,
    // the server's TIME in seconds, the text.
    auto holder_record = [&](std::size_t mark) {
        ks.set(key(mark), arg(0) + "\n" + std::to_string(clock / 1000000) + "\n" + arg(2));
        ks.pexpire(key(mark), parse_int(arg(1)), now);
    };
    const bool records = args.size() > 2;
    auto release_marks = [&] {
        if (keys.size() > 2) {
            ks.set(key(2), "");
            ks.del(key(1), now);
            ks.del(key(2), now);
        }
    };
    if (s == &script_acquire) {
        if (ks.set_nx_px(key(0), arg(0), parse_int(arg(1)), now) ||
            (ks.holds(key(0), arg(0), now) && ks.pexpire(key(0), parse_int(arg(1)), now) >= 0)) {
            if (records) {
                holder_record(1);
            } else {
                renewal_mark();
            }
            return resp_pair(1, 0);
        }
        return resp_pair(0, ks.pttl(key(0), now));
    }
    if (s == &script_release) {
        if (ks.holds(key(0), arg(0), now)) {
            release_marks();
            return resp_int(ks.del(key(0), now));
        }
        return resp_int(0);
    }
    if (s == &script_renew) {
        if (ks.holds(key(0), arg(0), now)) {
            renewal_mark();
            return resp_int(ks.pexpire(key(0), parse_int(arg(1)), now));
        }
        return resp_int(0);
    }
    // The reentrant scripts: ARGV[1] the owner, ARGV[3] the hold's field,
    // ARGV[4] the holder record.
    if (s == &script_reentrant_acquire) {
        if (ks.find(key(0), now) == nullptr || ks.has_field(key(0), arg(0), now)) {
            std::int64_t n = 0;
            std::string count;
            if (!ks.has_field(key(0), arg(2), now)) {
                ks.hset(key(0), arg(2), "1", now);
                n = ks.hincrby(key(0), arg(0), 1, now);
            } else if (ks.hget(key(0), arg(0), now, count)) {
                n = parse_int(count);
            }
            ks.pexpire(key(0), parse_int(arg(1)), now);
            if (args.size() > 3) {
                ks.set(key(1), arg(0) + "\n" + std::to_string(clock / 1000000) + "\n" + arg(3));
                ks.pexpire(key(1), parse_int(arg(1)), now);
            }
            return resp_pair(1, n);
        }
        return resp_pair(0, ks.pttl(key(0), now));
    }
    if (s == &script_reentrant_release) {
        if (!ks.has_field(key(0), arg(2), now)) {
            return resp_int(-1);
        }
        ks.hdel(key(0), arg(2), now);
        const std::int64_t n = ks.hincrby(key(0), arg(0), -1, now);
        if (n > 0) {
            renewal_mark();
            ks.pexpire(key(0), parse_int(arg(1)), now);
            return resp_int(n);
        }
        ks.del(key(0), now);
        release_marks();
        return resp_int(0);
    }
    if (s == &script_reentrant_renew) {
        if (ks.has_field(key(0), arg(2), now)) {
            renewal_mark();
            return resp_int(ks.pexpire(key(0), parse_int(arg(1)), now));
        }
        return resp_int(0);
    }
    if (s == &script_fenced_acquire) {
        if (ks.set_nx_px(key(0), arg(0), parse_int(arg(1)), now)) {
            if (ks.get_number(key(1), now) < clock) {  // never below the clock
                ks.set(key(1), std::to_string(clock));
            }
            if (records) {
                holder_record(2);
            }
            return resp_pair(1, ks.incr(key(1), now));
        }
        if (ks.holds(key(0), arg(0), now)) {
            ks.pexpire(key(0), parse_int(arg(1)), now);
            if (records) {
                holder_record(2);
            }
            return resp_pair(1, ks.get_number(key(1), now));
        }
        return resp_pair(0, ks.pttl(key(0), now));
    }
    if (s == &script_fenced_read) {
        if (ks.set_nx_px(key(0), arg(0), parse_int(arg(1)), now) || ks.holds(key(0), arg(0), now)) {
            ks.pexpire(key(0), parse_int(arg(1)), now);
            if (records) {
                holder_record(2);
            }
            return resp_pair(1, std::max(ks.get_number(key(1), now), clock));
        }
        return resp_pair(0, ks.pttl(key(0), now));
    }
    if (s == &script_fence_raise) {
        if (!ks.holds(key(0), arg(0), now)) {
            return resp_int(-1);
        }
        const std::int64_t c = ks.get_number(key(1), now);
        const std::int64_t t = parse_int(arg(1));
        if (c < t) {
            ks.set(key(1), arg(1));
            return resp_int(t);
        }
        return resp_int(-2);
    }
    const std::string permit =
        run_permit_script(ks, s, keys.size(), args.size(), key, arg, clock, now);
    if (!permit.empty()) {
        return permit;
    }
    throw redis_error("ERR unknown script");
}

// EVAL / EVALSHA's arguments after the script: numkeys, keys, then args.
inline std::string eval_script(keyspace& ks, const edgelock::lock_script* s,
                               const std::vector<std::string>& argv, std::uint64_t now) {
    if (argv.size() < 3) {
        throw redis_error("ERR wrong number of arguments");
    }
    const std::int64_t numkeys = parse_int(argv[2]);
    if (numkeys < 0 || static_cast<std::size_t>(numkeys) > argv.size() - 3) {
        throw redis_error("ERR Number of keys can't be greater than number of args");
    }
    const auto k0 = argv.begin() + 3;
    const auto kn = k0 + static_cast<std::ptrdiff_t>(numkeys);  // bounded above
    return run_script(ks, s, std::vector<std::string>(k0, kn),
                      std::vector<std::string>(kn, argv.end()), now);
}

}  // namespace sim
