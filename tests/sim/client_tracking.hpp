// CLIENT CACHING and CLIENT TRACKING as Redis 7.0 takes them: the options of
// default, OPTIN and BCAST mode, their errors with Redis's texts, and what
// each leaves in the session (sim/client_table.hpp says what is then told).
//
// ON [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [NOLOOP]: a session already
// tracking may send ON again in the same mode; the flags and the redirect are
// then this command's, and BCAST prefixes add to those it has (none given:
// the empty prefix, every key). A new prefix must not overlap (start with,
// or be the start of) one the session has or another one given. OFF clears
// it all. A refused command changes nothing.
//
// Test code: allocates and throws freely (a redis_error becomes an error reply).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/client_table.hpp"
#include "sim/keyspace.hpp"

namespace sim {

// Redis's refusal of BCAST prefixes that overlap (one starts with the
// other) those the session has, or one another.
inline void check_bcast_prefixes(const session& s, const std::vector<std::string>& prefixes) {
    const auto overlap = [](const std::string& a, const std::string& b) {
        return a.compare(0, b.size(), b) == 0 || b.compare(0, a.size(), a) == 0;
    };
    for (std::size_t i = 0; i < prefixes.size(); ++i) {
        for (const std::string& old : s.prefixes) {
            if (overlap(prefixes[i], old)) {
                throw redis_error("ERR Prefix '" + prefixes[i] +
                                  "' overlaps with an existing prefix '" + old +
                                  "'. Prefixes for a single client must not overlap.");
            }
        }
        for (std::size_t j = i + 1; j < prefixes.size(); ++j) {
            if (overlap(prefixes[i], prefixes[j])) {
                throw redis_error("ERR Prefix '" + prefixes[i] +
                                  "' overlaps with another provided prefix '" + prefixes[j] +
                                  "'. Prefixes for a single client must not overlap.");
            }
        }
    }
}

// CLIENT CACHING <arg>: YES is for OPTIN mode only (NO would be OPTOUT's).
inline std::string client_caching(session& s, const std::string& arg) {
    if (!s.tracking) {
        throw redis_error(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode "
            "with OPTIN or OPTOUT mode enabled");
    }
    const std::string v = upper(arg);
    if (v != "YES" && v != "NO") {
        throw redis_error("ERR syntax error");
    }
    if (!s.optin) {  // default or BCAST mode
        throw redis_error("ERR CLIENT CACHING " + v +
                          " is only valid when tracking is enabled in " +
                          (v == "YES" ? "OPTIN" : "OPTOUT") + " mode.");
    }
    s.caching = v == "YES";
    return resp_ok();
}

// CLIENT TRACKING ON|OFF [options] (argv from "CLIENT"); `clients` knows the
// REDIRECT targets.
inline std::string client_tracking(session& s, const client_table& clients,
                                   const std::vector<std::string>& argv) {
    if (argv.size() < 3) {
        throw redis_error("ERR wrong number of arguments for 'client|tracking' command");
    }
    const std::string on = upper(argv[2]);
    if (on == "OFF") {
        s.tracking = s.bcast = s.optin = s.noloop = s.caching = false;
        s.redirect = 0;
        s.prefixes.clear();
        return resp_ok();
    }
    if (on != "ON") {
        throw redis_error("ERR syntax error");
    }
    std::uint64_t redirect = 0;
    bool bcast = false;
    bool optin = false;
    bool noloop = false;
    std::vector<std::string> prefixes;
    for (std::size_t i = 3; i < argv.size(); ++i) {
        const std::string opt = upper(argv[i]);
        if (opt == "REDIRECT" && i + 1 < argv.size()) {
            redirect = static_cast<std::uint64_t>(parse_int(argv[++i]));
            if (redirect == s.id) {
                throw redis_error("ERR A client can only redirect to a different client");
            }
            if (clients.find(redirect) == nullptr) {
                throw redis_error("ERR The client ID you want redirect to does not exist");
            }
        } else if (opt == "BCAST") {
            bcast = true;
        } else if (opt == "PREFIX" && i + 1 < argv.size()) {
            prefixes.push_back(argv[++i]);
        } else if (opt == "OPTIN") {
            optin = true;
        } else if (opt == "NOLOOP") {
            noloop = true;
        } else {
            throw redis_error("ERR syntax error");
        }
    }
    if (!bcast && !prefixes.empty()) {
        throw redis_error("ERR PREFIX option requires BCAST mode to be enabled");
    }
    if (s.tracking && s.bcast != bcast) {
        throw redis_error(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this "
            "client, and then re-enabling it with a different mode.");
    }
    if (bcast && optin) {
        throw redis_error("ERR OPTIN and OPTOUT are not compatible with BCAST");
    }
    if (bcast) {
        check_bcast_prefixes(s, prefixes);
    }
    // As Redis: the mode's flags and the redirect are this command's; the
    // prefixes add to those the session has.
    s.tracking = true;
    s.bcast = bcast;
    s.optin = optin;
    s.noloop = noloop;
    s.redirect = redirect;
    if (bcast && prefixes.empty()) {
        s.prefixes.insert(std::string());  // every key, with no overlap check
    }
    s.prefixes.insert(prefixes.begin(), prefixes.end());
    return resp_ok();
}

}  // namespace sim
