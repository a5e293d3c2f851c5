// Test fixture: a Sentinel deployment that speaks TLS only, on loopback, with
// the test CA of tls_fixture.hpp. A master and one replica of it with
// --tls-port (plain TCP off) and tls-replication yes, watched by three
// sentinels (monitoring "mymaster", quorum 2) with tls-port and
// tls-replication yes, so the sentinels reach the servers and each other
// over TLS too; ready when every sentinel knows the replica, its link and
// the other sentinels.
//
// Every host is named "localhost", the servers' certificate's DNS name: the
// sentinels monitor "localhost" (sentinel resolve-hostnames and
// announce-hostnames yes) and the servers announce it (replica-announce-ip),
// so what a sentinel says of the master, before and after a failover,
// verifies without server_name, with mbedTLS before 3.5 too. Every process
// listens on 127.0.0.1 and on ::1 where there is one, whichever "localhost"
// resolves to first. The unix sockets stay plain: inside() looks through them.
//
//   edgelock_test::tls_sentinel_deployment d;
//   d.url();   // rediss-sentinel://localhost:P1,localhost:P2,localhost:P3/mymaster
//   // trust d.certs.ca_file()
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "integration/redis_server.hpp"
#include "integration/sentinel_fixture.hpp"
#include "integration/tls_fixture.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/proc.hpp"

namespace edgelock_test {

// What every process of the deployment is started with besides its TLS files.
inline std::vector<std::string> tls_deployment_args(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--bind", "127.0.0.1 -::1", "--tls-replication", "yes"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// A master and one replica of it over TLS, linked.
struct tls_replicated_pair {
    tls_certs certs;
    redis_server master;
    redis_server replica;

    tls_replicated_pair()
        : master(certs.server_files(), tls_deployment_args({"--replica-announce-ip", "localhost"})),
          replica(certs.server_files(),
                  tls_deployment_args({"--replica-announce-ip", "localhost", "--replicaof",
                                       "127.0.0.1", std::to_string(master.port())})) {
        wait_linked(replica);
    }
};

struct tls_sentinel_deployment : tls_replicated_pair {
    std::vector<std::unique_ptr<redis_server>> sentinels;

    tls_sentinel_deployment() {
        for (int i = 0; i < 3; ++i) {
            sentinels.push_back(sentinel_with("server"));
        }
        // Every sentinel knows the replica and that its link is up (it will
        // not promote one it has not heard so from), and the other two
        // sentinels: they met over TLS.
        const double until = mono_s() + 15;
        for (auto& s : sentinels) {
            while (!knows_linked_replica(*s) ||
                   ask_sentinel(*s, {"SENTINEL", "sentinels", "mymaster"}).elements.size() !=
                       sentinels.size() - 1) {
                REQUIRE(mono_s() < until);
                sleep_ms(50);
            }
        }
    }

    // One more sentinel of "mymaster", presenting certificate `cert` of
    // tls_certs ("untrusted", "expired", "wrong-name"); it trusts the test
    // CA, so it reaches the master whatever it presents itself.
    std::unique_ptr<redis_server> sentinel_with(const std::string& cert) const {
        const std::vector<std::string> config = {
            "sentinel resolve-hostnames yes", "sentinel announce-hostnames yes",
            "sentinel monitor mymaster localhost " + std::to_string(master.port()) + " 2",
            "sentinel down-after-milliseconds mymaster 1000",
            "sentinel failover-timeout mymaster 5000"};
        return std::unique_ptr<redis_server>(new redis_server(
            redis_server::sentinel(certs.server_files(cert), config, tls_deployment_args())));
    }

    // The sentinels from `from` on, as "localhost:PORT,...".
    std::string hosts(std::size_t from = 0) const {
        std::string out;
        for (std::size_t i = from; i < sentinels.size(); ++i) {
            out += (out.empty() ? "" : ",") + std::string("localhost:") +
                   std::to_string(sentinels[i]->port());
        }
        return out;
    }

    std::string url(std::size_t from = 0, const std::string& name = "mymaster",
                    const std::string& scheme = "rediss-sentinel") const {
        return scheme + "://" + hosts(from) + "/" + name;
    }
};

// redis-cli over TLS to localhost:port, trusting the test CA: its output,
// or "" when it fails or has not ended within 10 s (then it is killed). A
// look at the deployment from outside the project's own code.
inline std::string tls_redis_cli(const tls_certs& certs, std::uint16_t port,
                                 const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"redis-cli", "--tls",     "--cacert", certs.ca_file(),
                                     "-h",        "localhost", "-p",       std::to_string(port)};
    argv.insert(argv.end(), args.begin(), args.end());
    const temp_dir dir("edgelock-cli-out");
    const std::string out = dir / "out";
    spawn_options o;
    o.stdin_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    o.stdout_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const pid_t pid = spawn(argv, o);
    for (int fd : {o.stdin_fd, o.stdout_fd}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    int status = -1;
    const double until = mono_s() + 10;
    while (pid > 0 && !reap(pid, &status)) {
        if (mono_s() > until) {
            kill_and_reap(pid);
            return "";
        }
        sleep_ms(10);
    }
    return pid > 0 && exit_status(status) == 0 ? read_file(out) : std::string();
}

}  // namespace edgelock_test
