// Test fixtures: a master with one replica, linked; and a Sentinel
// deployment on loopback, such a pair watched by three sentinels (monitoring
// "mymaster", quorum 2), ready when every sentinel knows both.
//
//   edgelock_test::sentinel_deployment d;
//   const std::string url = d.url();   // redis-sentinel://127.0.0.1:P1,...,P3/mymaster
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "integration/redis_server.hpp"
#include "tools/clock.hpp"

namespace edgelock_test {

// The sentinel's answer to `args`, AUTH first when it has a password (over
// its unix socket when it speaks TLS only).
inline reply ask_sentinel(redis_server& sentinel, const std::vector<std::string>& args,
                          const std::string& password = "") {
    const std::unique_ptr<redis_client> s = inside(sentinel);
    if (!password.empty()) {
        s->command({"AUTH", password});
    }
    return s->command(args);
}

// The port the sentinel names for `name`, or 0.
inline long long named_port(redis_server& sentinel, const std::string& name,
                            const std::string& password = "") {
    const reply r = ask_sentinel(sentinel, {"SENTINEL", "get-master-addr-by-name", name}, password);
    return r.elements.size() == 2 ? std::atoll(r.elements[1].text.c_str()) : 0;
}

// ROLE's first word, on a connection of its own (a server that changes role
// may close its clients' connections); "" when it cannot say.
inline std::string role(redis_server& server) {
    try {
        const reply r = inside(server)->command({"ROLE"});
        return r.elements.empty() ? "" : r.elements[0].text;
    } catch (const std::exception&) {
        return "";
    }
}

// Until the replica's link to its master is up (15 s at most).
inline void wait_linked(redis_server& replica) {
    const std::unique_ptr<redis_client> r = inside(replica);
    const double until = mono_s() + 15;
    while (r->command({"INFO", "replication"}).text.find("master_link_status:up") ==
           std::string::npos) {
        REQUIRE(mono_s() < until);
        sleep_ms(20);
    }
}

// Whether the sentinel knows a replica of "mymaster" and has heard from it
// that its link is up (a sentinel will not promote one it has not).
inline bool knows_linked_replica(redis_server& sentinel, const std::string& password = "") {
    const reply r = ask_sentinel(sentinel, {"SENTINEL", "replicas", "mymaster"}, password);
    for (const reply& one : r.elements) {
        std::string flags;
        std::string link;
        for (std::size_t i = 0; i + 1 < one.elements.size(); i += 2) {
            if (one.elements[i].text == "flags") {
                flags = one.elements[i + 1].text;
            } else if (one.elements[i].text == "master-link-status") {
                link = one.elements[i + 1].text;
            }
        }
        if (flags == "slave" && link == "ok") {
            return true;
        }
    }
    return false;
}

// A master and one replica of it, linked.
struct replicated_pair {
    redis_server master;
    redis_server replica;

    replicated_pair() : replica({"--replicaof", "127.0.0.1", std::to_string(master.port())}) {
        wait_linked(replica);
    }
};

struct sentinel_deployment : replicated_pair {
    std::vector<std::unique_ptr<redis_server>> sentinels;
    std::string password;  // the sentinels' own, if any

    // sentinel_password: the sentinels require it (requirepass), and give it
    // to each other.
    explicit sentinel_deployment(const std::string& sentinel_password = "")
        : password(sentinel_password) {
        std::vector<std::string> config = {
            "sentinel monitor mymaster 127.0.0.1 " + std::to_string(master.port()) + " 2",
            "sentinel down-after-milliseconds mymaster 1000",
            "sentinel failover-timeout mymaster 5000"};
        if (!password.empty()) {
            config.push_back("requirepass " + password);
            config.push_back("sentinel sentinel-pass " + password);
        }
        for (int i = 0; i < 3; ++i) {
            sentinels.emplace_back(new redis_server(redis_server::sentinel(config)));
        }
        // Every sentinel knows the replica, and has heard from it that its
        // link is up (a sentinel will not promote one it has not).
        const double until = mono_s() + 15;
        for (auto& s : sentinels) {
            while (!knows_linked_replica(*s)) {
                REQUIRE(mono_s() < until);
                sleep_ms(50);
            }
        }
    }

    bool knows_linked_replica(redis_server& sentinel) const {
        return edgelock_test::knows_linked_replica(sentinel, password);
    }

    std::string url(std::size_t from = 0, const std::string& name = "mymaster") const {
        std::string hosts;
        for (std::size_t i = from; i < sentinels.size(); ++i) {
            hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") +
                     std::to_string(sentinels[i]->port());
        }
        return "redis-sentinel://" + hosts + "/" + name;
    }
};

}  // namespace edgelock_test
