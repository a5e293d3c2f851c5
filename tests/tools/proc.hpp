// Child processes for the test and benchmark harnesses: spawning a program
// that dies with its parent, and driving a fault proxy (fault_proxy.cpp)
// through its control port.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace edgelock_test {

// Forks and execs argv in a new process group, dying with this process
// (PR_SET_PDEATHSIG). stdout_fd, when >= 0, becomes the child's stdout.
// Returns the pid, or -1.
pid_t spawn(const std::vector<std::string>& argv, int stdout_fd = -1);

// One line (with its '\n') read from fd within timeout_ms; empty on EOF,
// error or timeout. Meant for fds on which only one line is pending at a
// time: anything read past the line is dropped.
std::string read_line(int fd, std::int64_t timeout_ms);

// A fault proxy process in front of a loopback port, and its control
// connection. The proxy exits by itself after max_seconds.
class fault_proxy {
public:
    fault_proxy() = default;
    fault_proxy(const fault_proxy&) = delete;
    fault_proxy& operator=(const fault_proxy&) = delete;
    ~fault_proxy() { stop(); }

    bool start(const std::string& program, std::uint16_t target, std::uint64_t seed,
               int max_seconds);
    // Sends one control command ("delay both 2", "pass", ...); true on "OK".
    // A reply that does not come in time closes the control connection, so a
    // late one cannot pair with the next command; later commands then fail.
    bool command(const std::string& cmd);
    void stop();
    std::uint16_t port() const { return port_; }

private:
    pid_t pid_ = -1;
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

}  // namespace edgelock_test
