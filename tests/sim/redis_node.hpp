// A simulated Redis node: keyspaces with expiry on virtual time (sim/keyspace.hpp),
// the lock scripts (sim/redis_scripts.hpp), a script cache, and what a
// client's connection set-up talks to: AUTH, HELLO, SELECT, CLIENT SETNAME,
// CONFIG GET maxmemory*, INFO and SCRIPT LOAD, each answering per connection
// (a session).
//
// A node can be made to refuse any command with an error of the test's choice
// (an ACL denial, LOADING, a wrong password...), to be a replica, or to run
// with an evicting maxmemory policy, so every set-up step can fail.
//
// EVALSHA looks the digest up in the node's script cache (empty after every
// restart, as on a real server, so NOSCRIPT happens); EVAL and SCRIPT LOAD
// find the script by its exact text and cache its digest.
//
// Its clients (sim/client_table.hpp): CLIENT ID, SUBSCRIBE and, when
// `tracking` is set, CLIENT TRACKING (default, OPTIN and BCAST modes:
// sim/client_tracking.hpp) and CLIENT CACHING, with invalidations
// pushed or published as Redis 7 does; unset, tracking is refused as by an
// ACL and waiters must poll. A replica refuses writes with READONLY (unless
// it is made writable, as replica-read-only no does). A
// Sentinel or a Cluster (sim/sentinel.hpp, sim/slot_cluster.hpp) takes
// commands first through `intercept`.
//
// Test code: allocates and throws freely.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/client_table.hpp"
#include "sim/client_tracking.hpp"
#include "sim/keyspace.hpp"
#include "sim/redis_scripts.hpp"

namespace sim {

class redis_node : public keyspace {
public:
    static std::int64_t time_us(std::uint64_t now) { return server_time_us(now); }

    using session = sim::session;

    // --- what the server is -------------------------------------------------
    std::string password;          // requirepass; empty: none (the default user has nopass)
    std::string user = "default";  // the ACL user the password belongs to
    bool speaks_resp3 = true;      // false: HELLO is an unknown command (Redis before 6)
    // INFO server's redis_version. Before 7, SET takes NX and GET only apart:
    // together they are a syntax error, as on a real 6.2.
    std::string version = "7.0.15";
    bool replica = false;             // INFO replication says role:slave; writes answer READONLY
    bool replica_writable = false;    // a replica that takes writes (replica-read-only no)
    bool tracking = false;            // CLIENT TRACKING accepted; false: refused (NOPERM)
    std::string mode = "standalone";  // INFO server's redis_mode, HELLO's mode
    std::string master_host = "10.0.0.99";
    std::string master_port = "6379";
    std::uint64_t maxmemory = 0;
    std::string maxmemory_policy = "noeviction";
    std::size_t info_padding = 0;  // bytes of filler fields in every INFO reply
    // An error reply forced on a command, keyed by its name ("SELECT") or its
    // name and subcommand ("CLIENT SETNAME", "INFO MEMORY", "SCRIPT LOAD").
    std::map<std::string, std::string> refusals;
    // Sees every command of an authenticated client first; true: it answered
    // (in `reply`) and the node does nothing more.
    std::function<bool(session&, const std::vector<std::string>&, std::uint64_t now,
                       std::string& reply)>
        intercept;

    // --- state and counters -------------------------------------------------
    std::set<std::string> script_cache;
    std::map<std::uint32_t, keyspace> other_dbs;  // SELECTed 1..15; db 0 is this keyspace
    std::uint64_t commands = 0;
    std::uint64_t noscripts = 0;
    std::uint64_t evals = 0;
    std::map<std::string, std::uint64_t> calls;  // by command name, upper case
    client_table clients;

    // A restart always empties the script cache; the keyspaces survive only
    // with persistence (AOF, appendfsync always).
    void restart(bool keep_data) {
        script_cache.clear();
        clients.clear();
        if (!keep_data) {
            data.clear();
            other_dbs.clear();
        }
    }

    // The script cache as an earlier client's EVALs left it: every lock script.
    void cache_scripts() {
        for (unsigned i = 0; i < edgelock::lock_scripts_count; ++i) {
            script_cache.insert(to_std(edgelock::lock_scripts_all[i]->sha1));
        }
    }

    keyspace& db(std::uint32_t index) {
        keyspace& ks = index == 0 ? *this : other_dbs[index];
        ks.noting = tracking;
        return ks;
    }

    // This node's data, as a replica holds it once synced with `master`.
    void copy_data_from(const redis_node& master) {
        data = master.data;
        other_dbs = master.other_dbs;
    }

    // Redis's active expiry of the keys some client tracks (read in default
    // or OPTIN mode, or matched by a BCAST prefix): the earliest such key's
    // expiry (0: none), and the deletion of those due, told as one pass.
    std::uint64_t next_tracked_expiry() {
        std::uint64_t at = 0;
        const auto earlier = [&at](const keyspace::entry& e) {
            if (e.expire_at != 0 && (at == 0 || e.expire_at < at)) {
                at = e.expire_at;
            }
        };
        const std::set<std::string> prefixes = clients.bcast_prefixes();
        for (keyspace* ks : all_dbs()) {
            for (const auto& kv : clients.tracked) {
                const auto it = ks->data.find(kv.first);
                if (it != ks->data.end()) {
                    earlier(it->second);
                }
            }
            for (const std::string& p : prefixes) {
                for (auto it = ks->data.lower_bound(p);
                     it != ks->data.end() && it->first.compare(0, p.size(), p) == 0; ++it) {
                    earlier(it->second);
                }
            }
        }
        return at;
    }
    void expire_tracked(std::uint64_t now) {
        std::vector<keyspace::change> keys;
        for (keyspace* ks : all_dbs()) {
            ks->noting = tracking;
            ks->expire_due(now);
            keys.insert(keys.end(), ks->changed_keys.begin(), ks->changed_keys.end());
            ks->changed_keys.clear();
        }
        clients.changed(keys, nullptr);
    }

    // Lock requests sent to this node (EVAL, EVALSHA and the SET acquire).
    std::uint64_t lock_requests() const {
        return count_of("EVALSHA") + count_of("EVAL") + count_of("SET");
    }
    std::uint64_t count_of(const std::string& command) const {
        const auto it = calls.find(command);
        return it == calls.end() ? 0 : it->second;
    }

    std::string execute(session& s, const std::vector<std::string>& argv, std::uint64_t now) {
        ++commands;
        std::string reply;
        try {
            reply = dispatch(s, argv, now);
        } catch (const redis_error& e) {
            reply = resp_err(e.what());
        }
        keyspace& ks = db(s.db);
        clients.after_command(s, ks, !argv.empty() && upper(argv[0]) == "CLIENT");
        return reply;
    }

    // A command outside any connection: authenticated, RESP2, db 0.
    std::string execute(const std::vector<std::string>& argv, std::uint64_t now) {
        session s;
        s.authenticated = true;
        return execute(s, argv, now);
    }

private:
    std::vector<keyspace*> all_dbs() {
        std::vector<keyspace*> out{this};
        for (auto& kv : other_dbs) {
            out.push_back(&kv.second);
        }
        return out;
    }

    static bool writes(const std::string& cmd) {
        static const std::set<std::string> w = {"EVAL",    "EVALSHA", "SET",     "DEL",
                                                "PEXPIRE", "INCR",    "HINCRBY", "FLUSHALL"};
        return w.count(cmd) != 0;
    }

    // CLIENT ID, TRACKING and CACHING (sim/client_tracking.hpp).
    std::string client_command(session& s, const std::string& sub,
                               const std::vector<std::string>& argv) {
        if (sub == "CLIENT ID" && argv.size() == 2) {
            return resp_int(static_cast<std::int64_t>(s.id));
        }
        if (sub == "CLIENT CACHING" && argv.size() == 3) {
            return client_caching(s, argv[2]);
        }
        if (!tracking) {
            throw redis_error(
                "NOPERM this user has no permissions to run the 'client|tracking' command");
        }
        return client_tracking(s, clients, argv);
    }

    std::string subscribe(session& s, const std::vector<std::string>& argv) {
        if (argv.size() < 2) {
            throw redis_error("ERR wrong number of arguments for 'subscribe' command");
        }
        std::string out;
        for (std::size_t i = 1; i < argv.size(); ++i) {
            s.channels.insert(argv[i]);
            out += (s.protocol == 3 ? ">3\r\n" : "*3\r\n") + resp_bulk("subscribe") +
                   resp_bulk(argv[i]) + resp_int(static_cast<std::int64_t>(s.channels.size()));
        }
        return out;
    }

    bool credentials_ok(const std::string& u, const std::string& p) const {
        if (password.empty()) {
            return u == "default";  // nopass: any password works
        }
        return u == user && p == password;
    }

    std::string info(const std::string& section, int protocol) const {
        const std::string which = upper(section);
        const bool all = which.empty() || which == "ALL" || which == "DEFAULT";
        std::string text;
        if (all || which == "REPLICATION") {
            text += "# Replication\r\n";
            if (replica) {
                text += "role:slave\r\nmaster_host:" + master_host +
                        "\r\nmaster_port:" + master_port + "\r\nmaster_link_status:up\r\n";
            } else {
                text += "role:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n";
            }
        }
        if (all || which == "SERVER") {
            text += "# Server\r\nredis_version:" + version + "\r\nredis_mode:" + mode + "\r\n";
        }
        if (all || which == "MEMORY") {
            text += "# Memory\r\nused_memory:1048576\r\nmaxmemory:" + std::to_string(maxmemory) +
                    "\r\nmaxmemory_policy:" + maxmemory_policy + "\r\n";
        }
        if (info_padding > 0) {
            text += "# Filler\r\n";
            for (std::size_t i = 0; text.size() < info_padding; ++i) {
                text += "filler_" + std::to_string(i) + ":" + std::string(40, 'x') + "\r\n";
            }
        }
        return resp_text(text, protocol);
    }

    // CONFIG GET of the memory settings, the one pattern the driver asks.
    std::string config_get(const std::string& pattern, int protocol) const {
        if (pattern != "maxmemory*") {
            throw redis_error("ERR the simulator knows only CONFIG GET maxmemory*");
        }
        const std::string pairs = resp_bulk("maxmemory") + resp_bulk(std::to_string(maxmemory)) +
                                  resp_bulk("maxmemory-policy") + resp_bulk(maxmemory_policy);
        return (protocol == 3 ? "%2\r\n" : "*4\r\n") + pairs;
    }

    std::string hello(session& s, const std::vector<std::string>& argv) {
        if (!speaks_resp3) {
            throw redis_error("ERR unknown command 'HELLO', with args beginning with: ");
        }
        int protocol = s.protocol;
        bool authenticated = s.authenticated;
        std::string name = s.name;
        if (argv.size() >= 2) {
            const std::int64_t v = parse_int(argv[1]);
            if (v != 2 && v != 3) {
                throw redis_error("NOPROTO unsupported protocol version");
            }
            protocol = static_cast<int>(v);
        }
        for (std::size_t i = 2; i < argv.size(); ++i) {
            const std::string opt = upper(argv[i]);
            if (opt == "AUTH" && i + 2 < argv.size()) {
                if (!credentials_ok(argv[i + 1], argv[i + 2])) {
                    throw redis_error(
                        "WRONGPASS invalid username-password pair or user is disabled.");
                }
                authenticated = true;
                i += 2;
            } else if (opt == "SETNAME" && i + 1 < argv.size()) {
                name = argv[++i];
            } else {
                throw redis_error("ERR Syntax error in HELLO option '" + argv[i] + "'");
            }
        }
        if (!authenticated && !password.empty()) {
            throw redis_error(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise "
                "the HELLO <proto> AUTH <user> <pass> option can be used");
        }
        s.protocol = protocol;
        s.authenticated = authenticated;
        s.name = name;
        const std::string fields = resp_bulk("server") + resp_bulk("redis") + resp_bulk("version") +
                                   resp_bulk(version) + resp_bulk("proto") + resp_int(protocol) +
                                   resp_bulk("id") + resp_int(static_cast<std::int64_t>(s.id)) +
                                   resp_bulk("mode") + resp_bulk(mode) + resp_bulk("role") +
                                   resp_bulk(replica ? "replica" : "master") +
                                   resp_bulk("modules") + "*0\r\n";
        return (protocol == 3 ? "%7\r\n" : "*14\r\n") + fields;
    }

    std::string auth(session& s, const std::vector<std::string>& argv) {
        if (argv.size() == 2 && password.empty()) {
            throw redis_error(
                "ERR AUTH <password> called without any password configured for the default "
                "user. Are you sure your configuration is correct?");
        }
        if (argv.size() != 2 && argv.size() != 3) {
            throw redis_error("ERR wrong number of arguments for 'auth' command");
        }
        const bool ok = argv.size() == 2 ? argv[1] == password && user == "default"
                                         : credentials_ok(argv[1], argv[2]);
        if (!ok) {
            throw redis_error("WRONGPASS invalid username-password pair or user is disabled.");
        }
        s.authenticated = true;
        return resp_ok();
    }

    std::string scripting(const std::string& cmd, keyspace& ks,
                          const std::vector<std::string>& argv, std::uint64_t now) {
        if (argv.size() < 2) {
            throw redis_error("ERR wrong number of arguments");
        }
        if (cmd == "EVALSHA") {
            const edgelock::lock_script* s = script_by_sha(argv[1]);
            if (s == nullptr || script_cache.count(argv[1]) == 0) {
                ++noscripts;
                return resp_err("NOSCRIPT No matching script. Please use EVAL.");
            }
            return eval_script(ks, s, argv, now);
        }
        const edgelock::lock_script* s = script_by_text(argv[1]);
        if (s == nullptr) {
            throw redis_error("ERR the simulator knows only edgelock's scripts");
        }
        ++evals;
        script_cache.insert(to_std(s->sha1));
        return eval_script(ks, s, argv, now);
    }

    std::string dispatch(session& s, const std::vector<std::string>& argv, std::uint64_t now) {
        if (argv.empty()) {
            throw redis_error("ERR empty command");
        }
        const std::string cmd = upper(argv[0]);
        const std::string sub = argv.size() > 1 ? cmd + " " + upper(argv[1]) : cmd;
        ++calls[cmd];
        for (const std::string& k : {sub, cmd}) {
            const auto refused = refusals.find(k);
            if (refused != refusals.end()) {
                return resp_err(refused->second);
            }
        }
        if (cmd == "HELLO") {
            return hello(s, argv);
        }
        if (cmd == "AUTH") {
            return auth(s, argv);
        }
        if (!s.authenticated && !password.empty()) {
            throw redis_error("NOAUTH Authentication required.");
        }
        if (s.protocol == 2 && !s.channels.empty() && cmd != "SUBSCRIBE" && cmd != "PING") {
            throw redis_error("ERR Can't execute '" + argv[0] +
                              "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
                              "are allowed in this context");
        }
        if (intercept) {
            std::string reply;
            if (intercept(s, argv, now, reply)) {
                return reply;
            }
        }
        if (replica && !replica_writable && writes(cmd)) {
            throw redis_error("READONLY You can't write against a read only replica.");
        }
        keyspace& ks = db(s.db);
        if (cmd == "SELECT" && argv.size() == 2) {
            const std::int64_t index = parse_int(argv[1]);
            if (index < 0 || index > 15) {
                throw redis_error("ERR DB index is out of range");
            }
            s.db = static_cast<std::uint32_t>(index);
            return resp_ok();
        }
        if (sub == "CLIENT TRACKING" || sub == "CLIENT CACHING" || sub == "CLIENT ID") {
            return client_command(s, sub, argv);
        }
        if (cmd == "SUBSCRIBE") {
            return subscribe(s, argv);
        }
        if (cmd == "FLUSHALL" && argv.size() == 1) {
            for (keyspace* k : all_dbs()) {
                k->data.clear();
            }
            clients.flush();
            return resp_ok();
        }
        if (sub == "CLIENT SETNAME" && argv.size() == 3) {
            s.name = argv[2];
            return resp_ok();
        }
        if (sub == "CONFIG GET" && argv.size() == 3) {
            return config_get(argv[2], s.protocol);
        }
        if (cmd == "INFO" && argv.size() <= 2) {
            return info(argv.size() == 2 ? argv[1] : std::string(), s.protocol);
        }
        if (sub == "SCRIPT LOAD" && argv.size() == 3) {
            const edgelock::lock_script* script = script_by_text(argv[2]);
            if (script == nullptr) {
                throw redis_error("ERR the simulator knows only edgelock's scripts");
            }
            script_cache.insert(to_std(script->sha1));
            return resp_bulk(to_std(script->sha1));
        }
        if (sub == "SCRIPT FLUSH") {
            script_cache.clear();
            return resp_ok();
        }
        if (cmd == "EVALSHA" || cmd == "EVAL") {
            return scripting(cmd, ks, argv, now);
        }
        if (cmd == "PING") {
            return "+PONG\r\n";
        }
        if (cmd == "GET" && argv.size() == 2) {
            std::string v;
            return ks.get(argv[1], now, v) ? resp_bulk(v) : resp_nil(s.protocol);
        }
        if (cmd == "SET" && argv.size() == 6 && upper(argv[3]) == "NX" && upper(argv[4]) == "PX") {
            return ks.set_nx_px(argv[1], argv[2], parse_int(argv[5]), now) ? resp_ok()
                                                                           : resp_nil(s.protocol);
        }
        if (cmd == "SET" && argv.size() == 7 && upper(argv[3]) == "NX" && upper(argv[4]) == "PX" &&
            upper(argv[6]) == "GET") {
            if (parse_int(version.substr(0, version.find('.'))) < 7) {
                throw redis_error("ERR syntax error");
            }
            std::string old;
            if (ks.get(argv[1], now, old)) {  // WRONGTYPE for a hash, as on Redis
                return resp_bulk(old);
            }
            ks.set_nx_px(argv[1], argv[2], parse_int(argv[5]), now);
            return resp_nil(s.protocol);
        }
        if (cmd == "SET" && argv.size() == 3) {
            ks.set(argv[1], argv[2]);
            return resp_ok();
        }
        if (cmd == "DEL" && argv.size() == 2) {
            return resp_int(ks.del(argv[1], now));
        }
        if (cmd == "PEXPIRE" && argv.size() == 3) {
            return resp_int(ks.pexpire(argv[1], parse_int(argv[2]), now));
        }
        if (cmd == "PTTL" && argv.size() == 2) {
            return resp_int(ks.pttl(argv[1], now));
        }
        if (cmd == "INCR" && argv.size() == 2) {
            return resp_int(ks.incr(argv[1], now));
        }
        if (cmd == "HINCRBY" && argv.size() == 4) {
            return resp_int(ks.hincrby(argv[1], argv[2], parse_int(argv[3]), now));
        }
        if (cmd == "HEXISTS" && argv.size() == 3) {
            return resp_int(ks.hexists(argv[1], argv[2], now));
        }
        if (cmd == "EXISTS" && argv.size() == 2) {
            return resp_int(ks.find(argv[1], now) != nullptr ? 1 : 0);
        }
        throw redis_error("ERR unknown command '" + argv[0] + "'");
    }
};

}  // namespace sim
