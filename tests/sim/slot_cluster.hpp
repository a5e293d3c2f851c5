// A Redis Cluster on a sim::net: masters sharing the 16384 hash slots
// (edgelock::key_slot), each with its own view of who serves which slot, and
// the migration of a slot in the steps redis-cli takes.
//
// A master answers CLUSTER SLOTS from its view, in Redis 7's shape
// ([first, last, [ip, port, id, {}]] per range), and a command on keys:
//   - of one slot only (else CROSSSLOT);
//   - where it serves the slot: runs it, unless the slot is migrating and a
//     key is missing: -ASK slot ip:port when none is here, -TRYAGAIN when
//     some are;
//   - where the slot is importing and the command follows ASKING: runs it
//     (a command on several keys with any missing: -TRYAGAIN);
//   - anywhere else: -MOVED slot ip:port of the master its view names.
//
// A migration (begin, move_keys, hand_over) is what redis-cli --cluster
// does: SETSLOT IMPORTING on the target and MIGRATING on the source, MIGRATE
// of the slot's keys (atomic, with their ttls), SETSLOT NODE on the target,
// then on the source; other masters learn last. The test puts time between
// the steps, so requests meet ASK and MOVED.
//
// Faults (misroute): for a while, a master answers every command on keys
// with a redirect that leads nowhere, as a broken or half-aborted resharding
// can: MOVED to itself; MOVED naming another slot; or ASK to a master that
// does not import the slot, which answers MOVED back (ASK ping-pong), for
// keys it does not have, as a migration half aborted. None runs anything, so a client that follows
// them without end only wastes its rounds; one that caps them counts the master's "no".
//
//   sim::net n(seed);
//   sim::slot_cluster k(n, 3);
//   url = k.url({0, 1});                        // redis-cluster://M0,M1
//   n.at(t, [&] { k.begin(slot, 2); });  ... k.move_keys(slot);  ... k.hand_over(slot);
//   k.misroute(1, sim::slot_cluster::fault::moved_self, from_us, until_us);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "edgelock/key_slot.hpp"
#include "sim/net.hpp"

namespace sim {

class slot_cluster {
public:
    slot_cluster(net& n, int count) : net_(n) {
        for (int i = 0; i < count; ++i) {
            masters.push_back(net_.add_node());
        }
        for (int i = 0; i < count; ++i) {
            view v;
            v.owner.resize(edgelock::key_slot_count);
            for (std::size_t s = 0; s < v.owner.size(); ++s) {
                v.owner[s] = static_cast<int>(s * static_cast<std::size_t>(count) /
                                              edgelock::key_slot_count);
            }
            views.push_back(v);
            faults_.push_back(window{});
            redis_node& r = net_.node(masters[static_cast<std::size_t>(i)]);
            r.mode = "cluster";
            r.intercept = [this, i](session& s, const std::vector<std::string>& argv,
                                    std::uint64_t now,
                                    std::string& reply) { return route(i, s, argv, now, reply); };
        }
    }
    slot_cluster(const slot_cluster&) = delete;
    slot_cluster& operator=(const slot_cluster&) = delete;

    // "redis-cluster://[userinfo@]M,M..." with masters `seeds` (indices into masters).
    std::string url(const std::vector<int>& seeds, const std::string& userinfo = "") const {
        std::string u = "redis-cluster://" + (userinfo.empty() ? "" : userinfo + "@");
        for (std::size_t i = 0; i < seeds.size(); ++i) {
            u += (i == 0 ? "" : ",") + net_.address(masters[static_cast<std::size_t>(seeds[i])]);
        }
        return u;
    }

    static int slot_of(const std::string& key) {
        return edgelock::key_slot(edgelock::str_view(key.data(), key.size()));
    }
    // The master (index into masters) that serves `slot`, as the source of a
    // migration sees it.
    int owner(int slot) const { return source_.count(slot) ? source_.at(slot) : agreed(slot); }
    // A lock name ("job-N") whose slot master `master` serves.
    std::string name_on(int master) const {
        for (int i = 0;; ++i) {
            const std::string name = "job-" + std::to_string(i);
            if (owner(slot_of(name)) == master) {
                return name;
            }
        }
    }

    // Step 1: the target imports the slot, the owner migrates it.
    void begin(int slot, int to) {
        const int from = agreed(slot);
        source_[slot] = from;
        views[static_cast<std::size_t>(to)].importing[slot] = from;
        views[static_cast<std::size_t>(from)].migrating[slot] = to;
    }
    // Step 2: MIGRATE of every key of the slot, with its ttl.
    void move_keys(int slot) {
        const auto it = source_.find(slot);
        if (it == source_.end()) {
            return;
        }
        const int from = it->second;
        const int to = views[static_cast<std::size_t>(from)].migrating.at(slot);
        redis_node& a = master(from);
        redis_node& b = master(to);
        for (auto k = a.data.begin(); k != a.data.end();) {
            if (slot_of(k->first) == slot) {
                b.data[k->first] = k->second;
                const std::string key = k->first;
                k = a.data.erase(k);
                a.clients.invalidate(key, nullptr);  // deleted here, as MIGRATE does
            } else {
                ++k;
            }
        }
        ++migrations;
    }
    // Step 3: SETSLOT NODE on the target, the source, then everyone else.
    void hand_over(int slot) {
        const auto it = source_.find(slot);
        if (it == source_.end()) {
            return;
        }
        const int from = it->second;
        const int to = views[static_cast<std::size_t>(from)].migrating.at(slot);
        views[static_cast<std::size_t>(to)].importing.erase(slot);
        views[static_cast<std::size_t>(from)].migrating.erase(slot);
        for (view& v : views) {
            v.owner[static_cast<std::size_t>(slot)] = to;
        }
        source_.erase(it);
    }

    // Master i misroutes commands on keys from `from` until `until` (net
    // time, us).
    enum class fault : std::uint8_t { moved_self, wrong_slot, ask_away };
    void misroute(int i, fault how, std::uint64_t from, std::uint64_t until) {
        faults_[static_cast<std::size_t>(i)] = window{how, from, until};
    }

    struct view {
        std::vector<int> owner;        // by slot: index into masters
        std::map<int, int> migrating;  // slot -> to
        std::map<int, int> importing;  // slot -> from
    };
    std::vector<int> masters;  // net node indices
    std::vector<view> views;
    std::uint64_t moved = 0;
    std::uint64_t asks = 0;
    std::uint64_t tryagain = 0;
    std::uint64_t slot_maps = 0;  // CLUSTER SLOTS answered
    std::uint64_t migrations = 0;
    std::uint64_t misrouted = 0;  // answers of a misroute fault

private:
    struct window {
        fault how = fault::moved_self;
        std::uint64_t from = 0;
        std::uint64_t until = 0;
    };

    // Master i's answer while it misroutes; false when it does not now.
    // ASK only for keys it does not have, as a migrating master: one that
    // has them runs the command, or the ASK'd master, should it begin
    // importing the slot before the request arrives, would take a key held
    // here (no Redis asks away a key it holds).
    bool misrouting(int i, int slot, bool none_here, std::uint64_t now, std::string& reply) {
        const window& w = faults_[static_cast<std::size_t>(i)];
        if (now < w.from || now >= w.until || (w.how == fault::ask_away && !none_here)) {
            return false;
        }
        const int count = static_cast<int>(masters.size());
        int other = (i + 1) % count;
        if (w.how == fault::ask_away) {
            // Never to a master importing the slot: it would run the request
            // while the keys may be here, which no Redis does.
            for (int k = 1;
                 k < count && views[static_cast<std::size_t>(other)].importing.count(slot); ++k) {
                other = (i + 1 + k) % count;
            }
            if (views[static_cast<std::size_t>(other)].importing.count(slot) != 0 || other == i) {
                other = i;
            }
        }
        ++misrouted;
        const std::string s = std::to_string(slot);
        switch (w.how) {
        case fault::moved_self:
            reply = resp_err("MOVED " + s + " " + where(i));
            break;
        case fault::wrong_slot:
            reply = resp_err("MOVED " + std::to_string((slot + 1) % edgelock::key_slot_count) +
                             " " + where(other));
            break;
        case fault::ask_away:
            reply = resp_err((other == i ? "MOVED " : "ASK ") + s + " " + where(other));
            break;
        }
        return true;
    }

    redis_node& master(int i) { return net_.node(masters[static_cast<std::size_t>(i)]); }
    int agreed(int slot) const { return views[0].owner[static_cast<std::size_t>(slot)]; }

    std::string where(int i) const { return net_.address(masters[static_cast<std::size_t>(i)]); }

    static std::vector<std::string> keys_of(const std::string& cmd,
                                            const std::vector<std::string>& argv) {
        if (cmd == "EVAL" || cmd == "EVALSHA") {
            if (argv.size() < 3) {
                return {};
            }
            const std::int64_t k = parse_int(argv[2]);
            if (k < 0 || static_cast<std::size_t>(k) > argv.size() - 3) {
                return {};  // the node says what is wrong
            }
            return std::vector<std::string>(argv.begin() + 3,
                                            argv.begin() + 3 + static_cast<std::ptrdiff_t>(k));
        }
        static const char* const one_key[] = {"SET",  "GET",     "DEL",     "PEXPIRE", "PTTL",
                                              "INCR", "HINCRBY", "HEXISTS", "EXISTS"};
        for (const char* c : one_key) {
            if (cmd == c && argv.size() >= 2) {
                return {argv[1]};
            }
        }
        return {};
    }

    std::string slots_reply(int i, int protocol) const {
        const view& v = views[static_cast<std::size_t>(i)];
        std::string ranges;
        std::size_t count = 0;
        for (std::size_t s = 0; s < v.owner.size();) {
            std::size_t e = s;
            while (e + 1 < v.owner.size() && v.owner[e + 1] == v.owner[s]) {
                ++e;
            }
            const int m = v.owner[s];
            const std::size_t node = static_cast<std::size_t>(masters[static_cast<std::size_t>(m)]);
            const std::string id(40, static_cast<char>('a' + node % 6));
            ranges += "*3\r\n" + resp_int(static_cast<std::int64_t>(s)) +
                      resp_int(static_cast<std::int64_t>(e)) + "*4\r\n" +
                      resp_bulk(net_.host(masters[static_cast<std::size_t>(m)])) +
                      resp_int(net_.port(masters[static_cast<std::size_t>(m)])) + resp_bulk(id) +
                      (protocol == 3 ? "%0\r\n" : "*0\r\n");
            ++count;
            s = e + 1;
        }
        return "*" + std::to_string(count) + "\r\n" + ranges;
    }

    bool route(int i, session& s, const std::vector<std::string>& argv, std::uint64_t now,
               std::string& reply) {
        const std::string cmd = upper(argv[0]);
        const bool asking = s.asking;
        s.asking = false;  // for the one command after ASKING
        if (cmd == "ASKING") {
            s.asking = true;
            reply = resp_ok();
            return true;
        }
        if (cmd == "CLUSTER" && argv.size() == 2 && upper(argv[1]) == "SLOTS") {
            ++slot_maps;
            reply = slots_reply(i, s.protocol);
            return true;
        }
        if (cmd == "SELECT") {
            reply = resp_err("ERR SELECT is not allowed in cluster mode");
            return true;
        }
        const std::vector<std::string> keys = keys_of(cmd, argv);
        if (keys.empty()) {
            return false;
        }
        const int slot = slot_of(keys[0]);
        for (const std::string& k : keys) {
            if (slot_of(k) != slot) {
                reply = resp_err("CROSSSLOT Keys in request don't hash to the same slot");
                return true;
            }
        }
        const view& v = views[static_cast<std::size_t>(i)];
        std::size_t missing = 0;
        for (const std::string& k : keys) {
            missing += master(i).find(k, now) == nullptr ? 1u : 0u;
        }
        if (misrouting(i, slot, missing == keys.size(), now, reply)) {
            return true;
        }
        const std::size_t present = keys.size() - missing;
        if (v.owner[static_cast<std::size_t>(slot)] == i) {
            const auto m = v.migrating.find(slot);
            if (m == v.migrating.end() || missing == 0) {
                return false;  // served here
            }
            if (present > 0) {
                ++tryagain;
                reply = resp_err("TRYAGAIN Multiple keys request during rehashing of slot");
                return true;
            }
            ++asks;
            reply = resp_err("ASK " + std::to_string(slot) + " " + where(m->second));
            return true;
        }
        if (asking && v.importing.count(slot) != 0) {
            if (keys.size() > 1 && missing > 0) {
                ++tryagain;
                reply = resp_err("TRYAGAIN Multiple keys request during rehashing of slot");
                return true;
            }
            return false;  // imported here
        }
        ++moved;
        reply = resp_err("MOVED " + std::to_string(slot) + " " +
                         where(v.owner[static_cast<std::size_t>(slot)]));
        return true;
    }

    net& net_;
    std::map<int, int> source_;   // slot -> the master it migrates from
    std::vector<window> faults_;  // by master
};

}  // namespace sim
