// The link emulator (tests/tools/link_emu.cpp) driven from a test or a
// benchmark, and a redis-server on its far side.
//
//   edgelock_test::link_emulator link;
//   const std::string why = link.start(EDGELOCK_LINK_EMU_PATH, seed, 120);
//   if (!why.empty()) { edgelock_test::skip(why.c_str()); return; }
//   REQUIRE(link.command("profile both 150 50 50"));   // one way 150 ms +-50, 5% loss
//   edgelock_test::netns_redis server(link);           // redis-server in the server's namespace
//   spawn(link.in_client({agent, "run", server.url(), "k", "--", "true"}));
//   edgelock_test::redis_client inside(server.unix_path());  // no link in between
//
// The server's unix socket is a file, reachable from any namespace: checks of
// what the server holds do not cross the link. Sockets a test makes with
// socket_in() belong to a namespace, whichever thread uses them.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/proc.hpp"

namespace edgelock_test {

// One direction's counters (link_emu's `status`).
struct link_counts {
    long long in = 0;      // packets read from the sending side
    long long out = 0;     // delivered
    long long lost = 0;    // drawn as lost
    long long cut = 0;     // dropped by an outage
    long long queued = 0;  // in flight
    long long bytes = 0;   // IP bytes delivered
};

struct link_status {
    bool ok = false;
    link_counts up;  // client -> server
    link_counts down;
    long long outage_ms = 0;
};

// The number after "name=" in a status line; 0 when absent.
inline long long status_field(const std::string& line, const std::string& name) {
    const std::string field = " " + name + "=";
    const std::size_t at = line.find(field);
    return at == std::string::npos ? 0 : std::atoll(line.c_str() + at + field.size());
}

class link_emulator {
public:
    link_emulator() = default;
    link_emulator(const link_emulator&) = delete;
    link_emulator& operator=(const link_emulator&) = delete;
    ~link_emulator() { stop(); }

    // Starts the emulator; "" once its link is up, otherwise why it cannot
    // be here (the emulator's own "unavailable: ..." when it said one).
    std::string start(const std::string& program, std::uint64_t seed, int max_seconds) {
        int in[2];
        int out[2];
        if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
            return "pipe failed";
        }
        spawn_options o;
        o.stdin_fd = in[0];
        o.stdout_fd = out[1];
        pid_ = spawn(
            {program, "--seed", std::to_string(seed), "--max-seconds", std::to_string(max_seconds)},
            o);
        ::close(in[0]);
        ::close(out[1]);
        to_ = in[1];
        from_ = out[0];
        const std::string line = read_line(from_, 10000);
        if (line.compare(0, 6, "READY ") != 0) {
            stop();
            return line.empty() ? "link_emu did not start" : line.substr(0, line.size() - 1);
        }
        client_pid_ = static_cast<pid_t>(status_field(line, "client_pid"));
        server_pid_ = static_cast<pid_t>(status_field(line, "server_pid"));
        client_addr_ = word_after(line, "client=");
        server_addr_ = word_after(line, "server=");
        return std::string();
    }

    // One control command; its answer without the newline, "" when none came
    // within 2 s.
    std::string ask(const std::string& cmd) {
        const std::string line = cmd + "\n";
        if (to_ < 0 ||
            ::write(to_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
            return std::string();
        }
        std::string reply = read_line(from_, 2000);
        if (!reply.empty()) {
            reply.pop_back();
        }
        return reply;
    }
    bool command(const std::string& cmd) { return ask(cmd).compare(0, 2, "OK") == 0; }

    link_status status() {
        const std::string line = ask("status");
        link_status s;
        s.ok = line.compare(0, 2, "OK") == 0;
        for (link_counts* c : {&s.up, &s.down}) {
            const std::string d = c == &s.up ? "up_" : "down_";
            c->in = status_field(line, d + "in");
            c->out = status_field(line, d + "out");
            c->lost = status_field(line, d + "lost");
            c->cut = status_field(line, d + "cut");
            c->queued = status_field(line, d + "queued");
            c->bytes = status_field(line, d + "bytes");
        }
        s.outage_ms = status_field(line, "outage_ms");
        return s;
    }

    // argv run in the client's (or the server's) namespace.
    std::vector<std::string> in_client(const std::vector<std::string>& argv) const {
        return inside(client_pid_, argv);
    }
    std::vector<std::string> in_server(const std::vector<std::string>& argv) const {
        return inside(server_pid_, argv);
    }

    // A socket (AF_INET, `type`) in the client's or the server's namespace;
    // -1 on failure.
    int client_socket(int type) const { return socket_in(client_pid_, type); }
    int server_socket(int type) const { return socket_in(server_pid_, type); }

    // TCP sockets of the client's namespace whose data may still be on its
    // way (any state but FIN_WAIT2, TIME_WAIT, CLOSE): a program that exited
    // leaves its sends to the kernel, which keeps resending them.
    int client_tcp_in_flight() const {
        std::ifstream in("/proc/" + std::to_string(client_pid_) + "/net/tcp");
        std::string line;
        std::getline(in, line);  // the header
        int n = 0;
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state;
            fields >> slot >> local >> remote >> state;
            n += (state == "05" || state == "06" || state == "07") ? 0 : 1;
        }
        return n;
    }

    const std::string& client_addr() const { return client_addr_; }
    const std::string& server_addr() const { return server_addr_; }

    void stop() {
        if (to_ >= 0) {
            ::close(to_);  // the emulator ends with its stdin
            to_ = -1;
        }
        if (pid_ > 0) {
            terminate(pid_, 3.0);
            pid_ = -1;
        }
        if (from_ >= 0) {
            ::close(from_);
            from_ = -1;
        }
    }

private:
    static std::string word_after(const std::string& line, const std::string& key) {
        const std::size_t at = line.find(" " + key);
        if (at == std::string::npos) {
            return std::string();
        }
        const std::size_t from = at + 1 + key.size();
        return line.substr(from, line.find_first_of(" \n", from) - from);
    }

    static std::vector<std::string> inside(pid_t holder, const std::vector<std::string>& argv) {
        std::vector<std::string> a{"nsenter", "--net=/proc/" + std::to_string(holder) + "/ns/net"};
        a.insert(a.end(), argv.begin(), argv.end());
        return a;
    }

    static int socket_in(pid_t holder, int type) {
        const int self = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        const std::string path = "/proc/" + std::to_string(holder) + "/ns/net";
        const int there = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        int s = -1;
        if (self >= 0 && there >= 0 && ::setns(there, CLONE_NEWNET) == 0) {
            s = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
            if (::setns(self, CLONE_NEWNET) != 0) {
                std::abort();  // this thread would stay in the wrong namespace
            }
        }
        for (const int fd : {self, there}) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
        return s;
    }

    pid_t pid_ = -1;
    int to_ = -1;
    int from_ = -1;
    pid_t client_pid_ = -1;
    pid_t server_pid_ = -1;
    std::string client_addr_;
    std::string server_addr_;
};

// A redis-server in the link's server namespace, on its address, port 6379,
// and on a unix socket for looking inside without crossing the link. Stopped
// by the destructor; it dies with the test process as well.
class netns_redis {
public:
    explicit netns_redis(const link_emulator& link) : addr_(link.server_addr()) {
        unix_path_ = dir_ / "redis.sock";
        spawn_options o;
        o.own_group = false;
        pid_ = spawn(link.in_server({"redis-server",
                                     "--port",
                                     "6379",
                                     "--bind",
                                     addr_,
                                     "--protected-mode",
                                     "no",
                                     "--unixsocket",
                                     unix_path_,
                                     "--unixsocketperm",
                                     "700",
                                     "--dir",
                                     dir_.path,
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--daemonize",
                                     "no",
                                     "--loglevel",
                                     "warning",
                                     "--logfile",
                                     dir_ / "redis.log"}),
                     o);
        const double deadline = mono_s() + 10.0;
        while (mono_s() < deadline) {
            if (pid_ < 0 || reap(pid_)) {
                pid_ = -1;
                throw std::runtime_error("redis-server in the server's namespace did not start");
            }
            try {
                redis_client c(unix_path_, 1.0);
                if (c.command({"PING"}).text == "PONG") {
                    return;
                }
            } catch (const std::exception&) {
            }
            sleep_ms(10);
        }
        terminate(pid_, 3.0);
        throw std::runtime_error("redis-server in the server's namespace did not answer in 10 s");
    }
    ~netns_redis() {
        if (pid_ > 0) {
            terminate(pid_, 3.0);
        }
    }
    netns_redis(const netns_redis&) = delete;
    netns_redis& operator=(const netns_redis&) = delete;

    std::string url() const { return "redis://" + addr_ + ":6379"; }
    const std::string& addr() const { return addr_; }
    const std::string& unix_path() const { return unix_path_; }

private:
    std::string addr_;
    temp_dir dir_{"edgelock-link-redis"};
    std::string unix_path_;
    pid_t pid_ = -1;
};

}  // namespace edgelock_test
