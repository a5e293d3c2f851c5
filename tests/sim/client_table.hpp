// A simulated server's clients: what it knows of each connection (a
// session), and what it sends them unasked: pub/sub messages and the
// invalidations of CLIENT TRACKING, as Redis 7 sends them.
//
// Tracking: a session with tracking on remembers the keys its commands read
// (with OPTIN, only those of the command after CLIENT CACHING yes, the reads
// inside a script included). When such a key changes (written, deleted,
// expired) every session that read it is told once and forgotten: a RESP3
// session gets the push [invalidate, [key]] on its own connection; a
// session with REDIRECT has it sent to the session named there, as a push
// when that one speaks RESP3, as a message on __redis__:invalidate when it
// is a RESP2 subscriber of that channel, and not at all otherwise. NOLOOP:
// a session is not told of its own writes. A flush tells every tracking
// session, with a null key list.
//
// BCAST (CLIENT TRACKING ON BCAST [PREFIX p]...): a session reads nothing
// into the table; it hears of every key that starts with one of its
// prefixes (none given: the empty one, every key). Redis gathers the keys
// changed in one turn of its event loop and, before sleeping, sends each such
// session one message per prefix holding all of them, deduplicated and in
// byte order, prefixes in byte order too; here one command (a script
// included) or one active-expiry pass is one turn. BCAST sessions are never
// forgotten: they keep hearing until tracking is off. NOLOOP: the keys the
// session's own command changed last are left out (an expiry, lazy or
// active, has no writer: a key its command found expired is told).
//
// The net (sim/net.cpp) gives every connection its session and its id (the
// CLIENT ID), and delivers what waits in the outbox after each command and
// each fault; replies go first on the connection that sent the command.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/keyspace.hpp"

namespace sim {

// The server side of one client connection.
struct session {
    std::uint64_t id = 0;  // CLIENT ID
    bool alive = true;     // false once the connection is gone
    int protocol = 2;
    bool authenticated = false;
    std::uint32_t db = 0;
    std::string name;
    // CLIENT TRACKING ON [REDIRECT id] [BCAST [PREFIX p]...] [OPTIN] [NOLOOP];
    // CLIENT CACHING yes.
    bool tracking = false;
    bool bcast = false;              // broadcasting mode
    std::set<std::string> prefixes;  // BCAST: never overlapping ("" alone: every key)
    bool optin = false;
    bool noloop = false;
    bool caching = false;
    std::uint64_t redirect = 0;
    std::set<std::string> channels;  // SUBSCRIBE
    bool asking = false;             // ASKING: the next command only (Cluster)
};

inline const std::string& invalidation_channel() {
    static const std::string name = "__redis__:invalidate";
    return name;
}

class client_table {
public:
    std::map<std::uint64_t, session*> sessions;                 // by id, alive or not
    std::map<std::string, std::set<std::uint64_t>> tracked;     // key -> sessions that read it
    std::vector<std::pair<std::uint64_t, std::string>> outbox;  // (session id, bytes)
    std::uint64_t invalidations = 0;                            // queued, by any route
    std::uint64_t published = 0;                                // messages queued

    void add(session& s) { sessions[s.id] = &s; }
    session* find(std::uint64_t id) const {
        const auto it = sessions.find(id);
        return it == sessions.end() || !it->second->alive ? nullptr : it->second;
    }
    // A restart: every connection is gone, and what they read with them.
    void clear() {
        for (auto& kv : sessions) {
            kv.second->alive = false;
        }
        sessions.clear();
        tracked.clear();
        outbox.clear();
    }

    // After a command of `s`: what it read is remembered, and what it (or
    // an expiry on the way) changed is told.
    void after_command(session& s, keyspace& ks, bool client_command) {
        if (s.tracking && !s.bcast && (!s.optin || s.caching)) {
            for (const std::string& k : ks.read_keys) {
                tracked[k].insert(s.id);
            }
        }
        if (!client_command) {
            s.caching = false;  // CLIENT CACHING yes holds for one command
        }
        ks.read_keys.clear();
        changed(ks, &s);
    }
    // The keys `ks` noted as changed by `writer`'s command (nullptr: no
    // command, an active expiry), told as one turn of the event loop.
    void changed(keyspace& ks, const session* writer) {
        std::vector<keyspace::change> changes;
        changes.swap(ks.changed_keys);
        changed(changes, writer);
    }
    void changed(const std::vector<keyspace::change>& changes, const session* writer) {
        for (const keyspace::change& c : changes) {
            invalidate(c.key, writer);
        }
        broadcast(changes, writer);
    }

    // BCAST: each alive broadcasting session hears, per prefix of its own
    // that some changed keys start with, one [invalidate, [k1, k2, ...]].
    // NOLOOP drops the keys whose last change was its own (an expiry, even
    // one its command found, is nobody's).
    void broadcast(const std::vector<keyspace::change>& changes, const session* writer) {
        std::map<std::string, const session*> last;  // key -> its last writer, sorted
        for (const keyspace::change& c : changes) {
            last[c.key] = c.expired ? nullptr : writer;
        }
        if (last.empty()) {
            return;
        }
        // Prefix by prefix, as Redis walks its prefix table.
        std::map<std::string, std::vector<const session*>> by_prefix;
        for (const auto& kv : sessions) {
            const session& s = *kv.second;
            if (s.alive && s.tracking && s.bcast) {
                for (const std::string& p : s.prefixes) {
                    by_prefix[p].push_back(&s);
                }
            }
        }
        for (const auto& [prefix, listeners] : by_prefix) {
            for (const session* s : listeners) {
                std::string list;
                std::size_t count = 0;
                for (auto it = last.lower_bound(prefix);
                     it != last.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
                    if (!(s->noloop && it->second == s)) {
                        list += resp_bulk(it->first);
                        ++count;
                    }
                }
                if (count != 0) {
                    list = "*" + std::to_string(count) + "\r\n" + list;
                    tell(*s, list, list);
                }
            }
        }
    }

    // The prefixes of every alive broadcasting session.
    std::set<std::string> bcast_prefixes() const {
        std::set<std::string> out;
        for (const auto& kv : sessions) {
            const session& s = *kv.second;
            if (s.alive && s.tracking && s.bcast) {
                out.insert(s.prefixes.begin(), s.prefixes.end());
            }
        }
        return out;
    }
    // Whether a change to some key may be told to someone (the active
    // expiry runs only then).
    bool tracks_anything() const { return !tracked.empty() || !bcast_prefixes().empty(); }

    void invalidate(const std::string& key, const session* writer) {
        const auto it = tracked.find(key);
        if (it == tracked.end()) {
            return;
        }
        const std::set<std::uint64_t> readers = std::move(it->second);
        tracked.erase(it);
        for (const std::uint64_t id : readers) {
            const session* s = find(id);
            if (s == nullptr || !s->tracking || s->bcast || (s->noloop && s == writer)) {
                continue;
            }
            tell(*s, "*1\r\n" + resp_bulk(key), "*1\r\n" + resp_bulk(key));
        }
    }

    void flush() {
        tracked.clear();
        for (const auto& kv : sessions) {
            if (kv.second->alive && kv.second->tracking) {
                tell(*kv.second, "$-1\r\n", "_\r\n");
            }
        }
    }

    void publish(const std::string& channel, const std::string& payload) {
        for (const auto& kv : sessions) {
            const session& s = *kv.second;
            if (s.alive && s.channels.count(channel) != 0) {
                outbox.emplace_back(s.id, message(s.protocol, channel, resp_bulk(payload)));
                ++published;
            }
        }
    }

    static std::string message(int protocol, const std::string& channel,
                               const std::string& payload) {
        return (protocol == 3 ? ">3\r\n" : "*3\r\n") + resp_bulk("message") + resp_bulk(channel) +
               payload;
    }

private:
    // The invalidation of `s`'s keys, where its tracking says; `keys2` and
    // `keys3` are the key list as RESP2 and RESP3 write it.
    void tell(const session& s, const std::string& keys2, const std::string& keys3) {
        const session* to = s.redirect != 0 ? find(s.redirect) : &s;
        if (to == nullptr) {
            return;  // the redirect's client is gone
        }
        if (to->protocol == 3) {
            outbox.emplace_back(to->id, ">2\r\n" + resp_bulk("invalidate") + keys3);
        } else if (s.redirect != 0 && to->channels.count(invalidation_channel()) != 0) {
            outbox.emplace_back(to->id, message(2, invalidation_channel(), keys2));
        } else {
            return;  // RESP2 without a subscriber: nothing can carry it
        }
        ++invalidations;
    }
};

}  // namespace sim
