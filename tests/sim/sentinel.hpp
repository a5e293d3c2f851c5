// A Sentinel deployment on a sim::net: a master, its replicas and sentinel
// processes, each at an address of its own, and the failovers a test
// schedules.
//
// A sentinel answers AUTH (its node's password), PING, SENTINEL
// get-master-addr-by-name with the master it believes in ([host, port], or a
// null array for another name), and SUBSCRIBE; anything else is an unknown
// command. A sentinel is told of a failover when the test says (at once, or
// late: until then it answers stale), and then publishes "+switch-master
// NAME old-ip old-port new-ip new-port" to its subscribers. Down and slow
// sentinels are the net's faults on their nodes. Two hostile ones: a
// sentinel muted never confirms a SUBSCRIBE (nor answers a PING), so a
// watch on it hears nothing; one made to lie() announces a switch that did
// not happen, to a replica and back, as often as the test calls it (a
// flood), while it still answers get-master-addr-by-name with the truth.
//
// Replicas answer INFO replication with role:slave and refuse writes with
// READONLY. What a replica holds is what the test synced into it last
// (sync()): promote() with `exact` syncs it at that instant (nothing lost);
// without, it keeps an older copy, and the writes since are lost. The old
// master is killed, demoted at once (it answers READONLY from then on), or
// left a master that takes writes until demote() is called, as a real one
// does until the sentinels reconfigure it.
//
//   sim::net n(seed);
//   sim::sentinel_group g(n, 2, 3);     // master + 1 replica, 3 sentinels
//   url = g.url();                      // redis-sentinel://S1,S2,S3/mymaster
//   n.at(t, [&] { g.promote(g.replicas[0], true, sim::old_master::demoted); });
//
// Call promote() and tell() from net::at actions: what a sentinel publishes
// goes out when the action ends.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/net.hpp"

namespace sim {

enum class old_master : std::uint8_t {
    killed,   // crashed at the failover
    demoted,  // a replica of the new master at once: READONLY
    kept,     // still a master taking writes until demote()
};

class sentinel_group {
public:
    sentinel_group(net& n, int data_nodes, int sentinel_count, std::string master_name = "mymaster")
        : name(std::move(master_name)), net_(n) {
        for (int i = 0; i < data_nodes; ++i) {
            const int k = net_.add_node();
            if (i == 0) {
                master = k;
            } else {
                replicas.push_back(k);
            }
        }
        for (int r : replicas) {
            follow(r, master);
        }
        for (int i = 0; i < sentinel_count; ++i) {
            const int k = net_.add_node();
            sentinels.push_back(k);
            believed.push_back(master);
            redis_node& s = net_.node(k);
            muted.push_back(0);
            lies.push_back(0);
            s.intercept = [this, i](session&, const std::vector<std::string>& argv, std::uint64_t,
                                    std::string& reply) {
                const std::string cmd = argv.empty() ? std::string() : upper(argv[0]);
                if (muted[static_cast<std::size_t>(i)] != 0 &&
                    (cmd == "SUBSCRIBE" || cmd == "PING")) {
                    reply.clear();  // taken, never answered
                    return true;
                }
                reply = answer(i, argv);
                return !reply.empty();
            };
        }
    }
    sentinel_group(const sentinel_group&) = delete;
    sentinel_group& operator=(const sentinel_group&) = delete;

    // "redis-sentinel://[userinfo@]S1,S2.../NAME"
    std::string url(const std::string& userinfo = "") const {
        std::string u = "redis-sentinel://" + (userinfo.empty() ? "" : userinfo + "@");
        for (std::size_t i = 0; i < sentinels.size(); ++i) {
            u += (i == 0 ? "" : ",") + net_.address(sentinels[i]);
        }
        return u + "/" + name;
    }

    // The replica's copy becomes the master's as it is now.
    void sync(int replica) { net_.node(replica).copy_data_from(net_.node(master)); }

    // Replica `to` becomes the master (synced first when `exact`); the old
    // one meets `fate`. Sentinels are told by tell() (all of them at once
    // unless `tell_now` is false).
    void promote(int to, bool exact, old_master fate, bool tell_now = true) {
        const int old = master;
        if (exact && net_.up(old)) {
            sync(to);
        }
        redis_node& r = net_.node(to);
        r.replica = false;
        replicas.erase(std::remove(replicas.begin(), replicas.end(), to), replicas.end());
        master = to;
        ++failovers;
        if (fate == old_master::killed) {
            if (net_.up(old)) {
                net_.crash(old);
            }
            replicas.push_back(old);
            follow(old, to);
        } else if (fate == old_master::demoted) {
            demote(old);
        } else {
            kept_master = old;
        }
        for (int k : replicas) {
            if (k != old) {
                follow(k, to);
            }
        }
        if (tell_now) {
            for (std::size_t i = 0; i < sentinels.size(); ++i) {
                tell(static_cast<int>(i));
            }
        }
    }

    // A master kept after a failover turns replica of the current one.
    void demote(int old) {
        if (old == master) {
            return;
        }
        if (std::find(replicas.begin(), replicas.end(), old) == replicas.end()) {
            replicas.push_back(old);
        }
        follow(old, master);
        if (kept_master == old) {
            kept_master = -1;
        }
    }

    // Sentinel i learns where the master is now and announces it.
    void tell(int i) {
        const int was = believed[static_cast<std::size_t>(i)];
        if (was == master) {
            return;
        }
        believed[static_cast<std::size_t>(i)] = master;
        const int s = sentinels[static_cast<std::size_t>(i)];
        if (!net_.up(s)) {
            return;  // it learns, and says nothing to clients it no longer has
        }
        net_.node(s).clients.publish("+switch-master", name + " " + net_.host(was) + " " +
                                                           std::to_string(net_.port(was)) + " " +
                                                           net_.host(master) + " " +
                                                           std::to_string(net_.port(master)));
        ++switches;
    }

    // Sentinel i announces a switch that did not happen: from the master to
    // `to` (a replica), and at the next call back again.
    void lie(int i, int to) {
        const std::size_t k = static_cast<std::size_t>(i);
        const int s = sentinels[k];
        if (!net_.up(s) || to == master) {
            return;
        }
        const bool back = (lies[k] % 2) != 0;
        const int from = back ? to : master;
        const int now_at = back ? master : to;
        ++lies[k];
        ++switches;
        net_.node(s).clients.publish("+switch-master", name + " " + net_.host(from) + " " +
                                                           std::to_string(net_.port(from)) + " " +
                                                           net_.host(now_at) + " " +
                                                           std::to_string(net_.port(now_at)));
    }

    std::string name;
    int master = -1;
    std::vector<int> replicas;
    std::vector<int> sentinels;
    std::vector<int> believed;        // per sentinel: the master it names
    std::vector<char> muted;          // per sentinel: SUBSCRIBE and PING never answered
    std::vector<std::uint64_t> lies;  // per sentinel: switches announced that did not happen
    int kept_master = -1;             // an old master still taking writes
    std::uint64_t failovers = 0;
    std::uint64_t switches = 0;  // +switch-master messages published
    std::uint64_t asked = 0;     // get-master-addr-by-name answered

private:
    void follow(int replica, int of) {
        redis_node& r = net_.node(replica);
        r.replica = true;
        r.master_host = net_.host(of);
        r.master_port = std::to_string(net_.port(of));
    }

    std::string answer(int i, const std::vector<std::string>& argv) {
        const std::string cmd = upper(argv[0]);
        if (cmd == "PING" || cmd == "SUBSCRIBE" || cmd == "AUTH" || cmd == "HELLO" ||
            cmd == "CLIENT") {
            return "";  // as any server
        }
        if (cmd == "SENTINEL" && argv.size() == 3 && upper(argv[1]) == "GET-MASTER-ADDR-BY-NAME") {
            if (argv[2] != name) {
                return "*-1\r\n";
            }
            ++asked;
            const int m = believed[static_cast<std::size_t>(i)];
            return "*2\r\n" + resp_bulk(net_.host(m)) + resp_bulk(std::to_string(net_.port(m)));
        }
        return resp_err("ERR unknown command '" + argv[0] + "', with args beginning with: ");
    }

    net& net_;
};

}  // namespace sim
