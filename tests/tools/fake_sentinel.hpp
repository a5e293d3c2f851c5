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
// Two hostile sentinels, for the watch's bounds:
//   --flip-every MS (with --switch-to): the master alternates between the two
//     addresses every MS ms from the start, and each subscribed connection is
//     told of each flip it has not heard of yet (one message per wait, the
//     latest): a sentinel flooding +switch-master.
//   --no-confirm: SUBSCRIBE is never answered, and nothing more is said on
//     that connection (its PINGs neither): a watch that hears nothing.
//   --stale 1 (with --switch-to): get-master-addr-by-name keeps naming the
//     first master after the switch it announces, as a sentinel that has
//     not caught up would: a client that asks again goes back there.
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
    long flips_told = 0;      // --flip-every: the flips told of
    bool mute = false;        // --no-confirm: SUBSCRIBE came, nothing more is said
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
        if (std::strcmp(name, "--flip-every") == 0) {
            char* end = nullptr;
            flip_ms_ = std::strtod(value, &end);
            return end != value && *end == '\0' && flip_ms_ > 0 && flip_ms_ <= 1e9;
        }
        if (std::strcmp(name, "--no-confirm") == 0) {
            no_confirm_ = std::strcmp(value, "1") == 0;
            return no_confirm_;
        }
        if (std::strcmp(name, "--stale") == 0) {
            stale_ = std::strcmp(value, "1") == 0;
            return stale_;
        }
        return false;
    }
    // Whether the options make a sentinel: a master to name.
    bool ready() const { return !master_.host.empty() && (flip_ms_ == 0 || switching_); }

    void start(double now) {
        started_ = now;
        switch_at_ = now + switch_after_ms_ / 1000;
    }

    // The reply to one command (its arguments) on a connection.
    std::string reply(const std::vector<std::string>& args, session& s, double now) {
        const std::string name = args.empty() ? std::string() : resp_text::upper(args[0]);
        const std::string sub = args.size() > 1 ? resp_text::upper(args[1]) : std::string();
        if (s.mute) {
            return std::string();
        }
        if (name == "AUTH") {
            return "+OK\r\n";
        }
        if (name == "PING") {
            // Subscribed (RESP2), Redis answers a PING as a message.
            return s.subscribed ? "*2\r\n" + resp_text::bulk("pong") + resp_text::bulk("")
                                : "+PONG\r\n";
        }
        if (name == "SENTINEL" && sub == "GET-MASTER-ADDR-BY-NAME" && args.size() == 3) {
            master_name_ = args[2];
            const address& a = stale_ ? master_ : master(now);
            return "*2\r\n" + resp_text::bulk(a.host) + resp_text::bulk(a.port);
        }
        if (name == "SUBSCRIBE" && args.size() > 1) {
            if (no_confirm_) {
                s.mute = true;
                return std::string();
            }
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
        if (flip_ms_ > 0) {
            const long k = flips(now);
            if (!s.subscribed || s.mute || k <= s.flips_told) {
                return std::string();
            }
            s.flips_told = k;
            const bool odd = (k % 2) != 0;
            return message(odd ? master_ : switch_to_, odd ? switch_to_ : master_);
        }
        if (!switched(now) || !s.subscribed || s.told) {
            return std::string();
        }
        s.told = true;
        return message(master_, switch_to_);
    }

    // When announce() may next have something to say.
    double next_due(double now) const {
        if (flip_ms_ > 0) {
            return started_ + static_cast<double>(flips(now) + 1) * flip_ms_ / 1000;
        }
        return switching_ && now < switch_at_ ? switch_at_ : std::numeric_limits<double>::max();
    }

private:
    bool switched(double now) const { return switching_ && now >= switch_at_; }
    // --flip-every: how many flips there have been by now.
    long flips(double now) const {
        return now <= started_ ? 0 : static_cast<long>((now - started_) * 1000 / flip_ms_);
    }
    const address& master(double now) const {
        if (flip_ms_ > 0) {
            return flips(now) % 2 != 0 ? switch_to_ : master_;
        }
        return switched(now) ? switch_to_ : master_;
    }
    std::string message(const address& from, const address& to) const {
        const std::string text =
            master_name_ + " " + from.host + " " + from.port + " " + to.host + " " + to.port;
        return "*3\r\n" + resp_text::bulk("message") + resp_text::bulk("+switch-master") +
               resp_text::bulk(text);
    }

    address master_;
    address switch_to_;
    bool switching_ = false;
    double switch_after_ms_ = 0;
    double switch_at_ = 0;
    double flip_ms_ = 0;
    bool no_confirm_ = false;
    bool stale_ = false;
    double started_ = 0;
    std::string master_name_ = "mymaster";
};

}  // namespace fake_sentinel
}  // namespace edgelock_test
