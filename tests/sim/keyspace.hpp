// One simulated Redis database: keys with expiry on virtual time and the
// primitive commands the lock scripts are made of, each behaving as the Redis
// command of the same name. Also the few RESP writers the simulator answers with.
//
// With `noting` set, the keys each command reads (GET, PTTL, HEXISTS, in a
// script too) and the keys it changes (written, deleted, expired) are noted,
// for the node's key tracking (sim/tracking.hpp), which takes them after the
// command.
//
// Test code: allocates and throws freely (a redis_error becomes an error reply).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "edgelock/str_view.hpp"

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
// RESP2's null bulk string; RESP3 has a null type of its own.
inline std::string resp_nil(int protocol = 2) {
    return protocol == 3 ? "_\r\n" : "$-1\r\n";
}
inline std::string resp_bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}
// RESP3 verbatim text (INFO's reply there); RESP2 sends a bulk string.
inline std::string resp_text(const std::string& s, int protocol) {
    if (protocol != 3) {
        return resp_bulk(s);
    }
    return "=" + std::to_string(s.size() + 4) + "\r\ntxt:" + s + "\r\n";
}
inline std::string resp_err(const std::string& s) {
    return "-" + s + "\r\n";
}

inline std::string to_std(edgelock::str_view v) {
    return std::string(v.data, v.size);
}

inline std::string upper(std::string s) {
    for (char& c : s) {
        if (c >= 'a' && c <= 'z') {
            c = static_cast<char>(c - 'a' + 'A');
        }
    }
    return s;
}

inline std::int64_t parse_int(const std::string& s) {
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

class keyspace {
public:
    struct entry {
        bool hash = false;
        std::string str;
        std::map<std::string, std::string> fields;
        std::uint64_t expire_at = 0;  // virtual us; 0: no expiry
    };

    std::map<std::string, entry> data;

    // What the commands since the last take read and changed (when noting).
    // A change is an expiry when the key was deleted for its time (lazily by
    // a command, or actively): Redis gives such a change no writer.
    struct change {
        std::string key;
        bool expired = false;
    };
    bool noting = false;
    std::vector<std::string> read_keys;
    std::vector<change> changed_keys;

    // The live entry at `key`, or nullptr; an expired one is deleted on the way.
    entry* find(const std::string& key, std::uint64_t now) {
        auto it = data.find(key);
        if (it == data.end()) {
            return nullptr;
        }
        if (it->second.expire_at != 0 && it->second.expire_at <= now) {
            data.erase(it);
            changed(key, true);
            return nullptr;
        }
        return &it->second;
    }

    // Deletes every key whose time has come (Redis's active expiry).
    void expire_due(std::uint64_t now) {
        for (auto it = data.begin(); it != data.end();) {
            if (it->second.expire_at != 0 && it->second.expire_at <= now) {
                changed(it->first, true);
                it = data.erase(it);
            } else {
                ++it;
            }
        }
    }

    bool get(const std::string& k, std::uint64_t now, std::string& out) {
        read(k);
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
    // Lua's redis.pcall('get', k) == v: a key of another type (another
    // client's hash) answers an error, a table, equal to no string.
    bool holds(const std::string& k, const std::string& v, std::uint64_t now) {
        read(k);
        const entry* e = find(k, now);
        return e != nullptr && !e->hash && e->str == v;
    }
    // Lua's redis.pcall('hexists', k, f) == 1, the same way for a string key.
    bool has_field(const std::string& k, const std::string& f, std::uint64_t now) {
        read(k);
        const entry* e = find(k, now);
        return e != nullptr && e->hash && e->fields.count(f) != 0;
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
        changed(k);
        return true;
    }
    void set(const std::string& k, const std::string& v) {
        entry e;
        e.str = v;
        data[k] = e;  // SET without options drops any ttl
        changed(k);
    }
    std::int64_t pexpire(const std::string& k, std::int64_t px, std::uint64_t now) {
        entry* e = find(k, now);
        if (e == nullptr) {
            return 0;
        }
        if (px <= 0) {
            data.erase(k);
            changed(k);
            return 1;
        }
        e->expire_at = now + static_cast<std::uint64_t>(px) * 1000;
        changed(k);
        return 1;
    }
    std::int64_t pttl(const std::string& k, std::uint64_t now) {
        read(k);
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
        changed(k);
        return 1;
    }
    std::int64_t incr(const std::string& k, std::uint64_t now) {
        std::string cur;
        std::int64_t v = get(k, now, cur) ? parse_int(cur) : 0;
        ++v;
        entry* e = find(k, now);
        if (e != nullptr) {
            e->str = std::to_string(v);  // INCR keeps the ttl
            changed(k);
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
    std::int64_t hexists(const std::string& k, const std::string& f, std::uint64_t now) {
        read(k);
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
        changed(k);
        return v;
    }

    // HGET: false when the key or the field is missing.
    bool hget(const std::string& k, const std::string& f, std::uint64_t now, std::string& out) {
        read(k);
        entry* e = hash_entry(k, now);
        if (e == nullptr || e->fields.count(f) == 0) {
            return false;
        }
        out = e->fields[f];
        return true;
    }
    void hset(const std::string& k, const std::string& f, const std::string& v, std::uint64_t now) {
        entry* e = hash_entry(k, now);
        if (e == nullptr) {
            entry fresh;
            fresh.hash = true;
            data[k] = fresh;
            e = &data[k];
        }
        e->fields[f] = v;
        changed(k);
    }
    void hdel(const std::string& k, const std::string& f, std::uint64_t now) {
        entry* e = hash_entry(k, now);
        if (e != nullptr && e->fields.erase(f) != 0) {
            if (e->fields.empty()) {
                data.erase(k);  // Redis deletes an empty hash
            }
            changed(k);
        }
    }
    // Lua's redis.pcall('get', k): nothing (false), a string, or (another
    // type) an error table, which is true and equal to no string.
    enum class lua_get { missing, string, other };
    lua_get pcall_get(const std::string& k, std::uint64_t now, std::string& out) {
        read(k);
        const entry* e = find(k, now);
        if (e == nullptr) {
            return lua_get::missing;
        }
        if (e->hash) {
            return lua_get::other;
        }
        out = e->str;
        return lua_get::string;
    }

private:
    void read(const std::string& k) {
        if (noting) {
            read_keys.push_back(k);
        }
    }
    void changed(const std::string& k, bool expired = false) {
        if (noting) {
            changed_keys.push_back(change{k, expired});
        }
    }
    static void wrongtype() {
        throw redis_error("WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    entry* hash_entry(const std::string& k, std::uint64_t now) {
        entry* e = find(k, now);
        if (e != nullptr && !e->hash) {
            wrongtype();
        }
        return e;
    }
};

}  // namespace sim
