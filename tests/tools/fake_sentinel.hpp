// fake_redis's sentinel mode (fake_redis.cpp): one port answering as a Redis
// Sentinel that watches one master, as much of one as a redis-sentinel://
// node asks: AUTH and PING, SENTINEL get-master-addr-by-name (whatever the
// name) with the master's [host, port], SUBSCRIBE with its confirmation.
//
// With --switch-to, the master moves --switch-after ms after the server
// started: from then on get-master-addr-by-name answers the new address, and
// each connection subscribed to +switch-master is told once, with
// ["message", "+switch-master", "NAME old-host old-port new-host new-port"]
// (NAME the last master name asked about, "mymaster" before any). One that
// subscribes after the switch is told as well, so a client slow to
// subscribe (a sanitized one, a loaded machine) is tested all the same.
// Addresses are sent as given: a host name is what a Sentinel with
// announce-hostnames sends.
//
//   edgelock_test::fake_sentinel::server s;   // s.option("--master", "127.0.0.1:6379")
//   s.start(now);
//   out += s.reply(args, session, now);       // each command of a connection
//   out += s.announce(session, now);          // before each wait
//   wait until s.next_due(now) at the latest
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tools/resp_text.hpp"

namespace edgelock_test {
namespace fake_sentinel {

// What the sentinel knows of one connection.
struct session {
    bool subscribed = false;  // to +switch-master
    bool told = false;        // of the switch
};

struct address {
    std::string host;
    std::string port;
};

// "HOST:PORT", split at the last colon (an IPv6 address has more); false
// when either part is missing, the port is not one, or a byte would split
// the +switch-master message.
inline bool parse_address(const std::string& text, address& out) {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() ||
        text.find_first_of(" \r\n") != std::string::npos) {
        return false;
    }
    const std::string port = text.substr(colon + 1);
    char* end = nullptr;
    const long value = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || value < 1 || value > 65535) {
        return false;
    }
    out.host = text.substr(0, colon);
    out.port = port;
    return true;
}

class server {
public:
    // One command-line option and its value; false when it is not one of
    // this mode's or its value is wrong.
    bool option(const char* name, const char* value) {
        if (std::strcmp(name, "--master") == 0) {
            return parse_address(value, master_);
        }
        if (std::strcmp(name, "--switch-to") == 0) {
            switching_ = parse_address(value, switch_to_);
            return switching_;
        }
        if (std::strcmp(name, "--switch-after") == 0) {
            char* end = nullptr;
            switch_after_ms_ = std::strtod(value, &end);
            return end != value && *end == '\0' && switch_after_ms_ >= 0 && switch_after_ms_ <= 1e9;
        }
        return false;
    }
    // Whether the options make a sentinel: a master to name.
    bool ready() const { return !master_.host.empty(); }

    void start(double now) { switch_at_ = now + switch_after_ms_ / 1000; }

    // The reply to one command (its arguments) on a connection.
    std::string reply(const std::vector<std::string>& args, session& s, double now) {
        const std::string name = args.empty() ? std::string() : resp_text::upper(args[0]);
        const std::string sub = args.size() > 1 ? resp_text::upper(args[1]) : std::string();
        if (name == "AUTH") {
            return "+OK\r\n";
        }
        if (name == "PING") {
            return "+PONG\r\n";
        }
        if (name == "SENTINEL" && sub == "GET-MASTER-ADDR-BY-NAME" && args.size() == 3) {
            master_name_ = args[2];
            const address& a = master(now);
            return "*2\r\n" + resp_text::bulk(a.host) + resp_text::bulk(a.port);
        }
        if (name == "SUBSCRIBE" && args.size() > 1) {
            std::string r;
            for (std::size_t i = 1; i < args.size(); ++i) {
                s.subscribed = s.subscribed || args[i] == "+switch-master";
                r += "*3\r\n" + resp_text::bulk("subscribe") + resp_text::bulk(args[i]) + ":" +
                     std::to_string(i) + "\r\n";
            }
            return r;
        }
        return "-ERR unknown command '" + (args.empty() ? std::string() : args[0]) + "'\r\n";
    }

    // The switch, for a subscribed connection not yet told of it once it is
    // due; else nothing.
    std::string announce(session& s, double now) {
        if (!switched(now) || !s.subscribed || s.told) {
            return std::string();
        }
        s.told = true;
        const std::string text = master_name_ + " " + master_.host + " " + master_.port + " " +
                                 switch_to_.host + " " + switch_to_.port;
        return "*3\r\n" + resp_text::bulk("message") + resp_text::bulk("+switch-master") +
               resp_text::bulk(text);
    }

    // When announce() may next have something to say.
    double next_due(double now) const {
        return switching_ && now < switch_at_ ? switch_at_ : std::numeric_limits<double>::max();
    }

private:
    bool switched(double now) const { return switching_ && now >= switch_at_; }
    const address& master(double now) const { return switched(now) ? switch_to_ : master_; }

    address master_;
    address switch_to_;
    bool switching_ = false;
    double switch_after_ms_ = 0;
    double switch_at_ = 0;
    std::string master_name_ = "mymaster";
};

}  // namespace fake_sentinel
}  // namespace edgelock_test
