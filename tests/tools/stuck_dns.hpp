// A name server that never answers, for the tests of host name lookups: a
// UDP socket on port 53 of a loopback address that reads nothing, and a
// resolv.conf naming it (with an nsswitch.conf that sends host names to DNS
// after /etc/hosts), to be bind-mounted over the system's in a private mount
// namespace. Needs root (port 53, mount); ok() says whether it could be made.
//
//   edgelock_test::stuck_dns dns(5);   // glibc gives up on a query after 5 s
//   if (!dns.ok()) { edgelock_test::skip(dns.why().c_str()); return; }
//   process p(dns.wrap({agent, "run", ...}), env);   // under `unshare -m`
//   // or, in a child process of the test: dns.enter_here()
//
// The system's files are never touched: only the namespace sees the new ones,
// and it ends with the processes in it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tools/files.hpp"

namespace edgelock_test {

class stuck_dns {
public:
    // `timeout_s`: the resolver's wait for one answer (attempts: 1).
    explicit stuck_dns(int timeout_s = 5) : dir_("edgelock-dns") {
        if (::geteuid() != 0) {
            why_ = "a name server on port 53 and a private resolv.conf need root";
            return;
        }
        std::random_device rd;
        for (int i = 0; i < 16 && fd_ < 0; ++i) {
            // 127.53.x.y: away from 127.0.0.1 and 127.0.0.53 (a local resolver).
            address_ =
                "127.53." + std::to_string(1 + rd() % 250) + "." + std::to_string(1 + rd() % 250);
            fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(53);
            ::inet_pton(AF_INET, address_.c_str(), &a.sin_addr);
            if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
                why_ = std::string("bind to ") + address_ + ":53: " + std::strerror(errno);
                ::close(fd_);
                fd_ = -1;
            }
        }
        if (fd_ < 0) {
            return;
        }
        write_file(resolv_conf(), "nameserver " + address_ + "\noptions timeout:" +
                                      std::to_string(timeout_s) + " attempts:1\n");
        write_file(nsswitch_conf(), "hosts: files dns\n");
        if (::access("/etc/resolv.conf", F_OK) != 0 || ::access("/etc/nsswitch.conf", F_OK) != 0) {
            why_ = "no /etc/resolv.conf or /etc/nsswitch.conf to cover";
            ::close(fd_);
            fd_ = -1;
            return;
        }
        why_.clear();
    }
    ~stuck_dns() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    stuck_dns(const stuck_dns&) = delete;
    stuck_dns& operator=(const stuck_dns&) = delete;

    bool ok() const { return fd_ >= 0; }
    const std::string& why() const { return why_; }
    std::string resolv_conf() const { return dir_ / "resolv.conf"; }
    std::string nsswitch_conf() const { return dir_ / "nsswitch.conf"; }

    // argv run in a private mount namespace whose resolver asks this server.
    std::vector<std::string> wrap(const std::vector<std::string>& argv) const {
        std::vector<std::string> out{
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount --bind \"$1\" /etc/resolv.conf && mount --bind \"$2\" /etc/nsswitch.conf && "
            "shift 2 && exec \"$@\"",
            "sh",
            resolv_conf(),
            nsswitch_conf()};
        out.insert(out.end(), argv.begin(), argv.end());
        return out;
    }

    // In this process (a child of the test, say): the same namespace. False,
    // with errno, when it could not be made.
    bool enter_here() const {
        return ::unshare(CLONE_NEWNS) == 0 &&
               ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
               ::mount(resolv_conf().c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) == 0 &&
               ::mount(nsswitch_conf().c_str(), "/etc/nsswitch.conf", nullptr, MS_BIND, nullptr) ==
                   0;
    }

private:
    temp_dir dir_;
    int fd_ = -1;
    std::string address_;
    std::string why_ = "not made";
};

}  // namespace edgelock_test
