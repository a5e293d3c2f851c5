// Child processes for the tests, the benchmarks and the chaos checker: the
// one place that forks, execs, waits and kills.
//
//   const pid_t pid = edgelock_test::spawn({"/path/to/program", "--flag"});
//   ...
//   edgelock_test::terminate(pid, 3.0);   // SIGTERM, SIGKILL after 3 s, reaped
//
// By default a child runs in a process group of its own (kill_group() reaches
// whatever it starts) and dies with this process (PR_SET_PDEATHSIG), so a
// test that fails or is killed leaves nothing running. It starts with no
// blocked signals and default dispositions, whatever this process set.
//
// Also here: whether a process is still alive (/proc), a line read with a
// deadline, and a fault proxy (fault_proxy.cpp) driven through its control
// port.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace edgelock_test {

struct spawn_options {
    // The child's whole environment ("NAME=value"); null: this process's.
    const std::vector<std::string>* env = nullptr;
    bool own_group = true;         // a process group of its own
    bool dies_with_parent = true;  // SIGKILL when this process dies
    // Descriptors made the child's stdin, stdout, stderr when >= 0.
    int stdin_fd = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
};

// Forks and execs argv (argv[0] is looked up in PATH when it has no '/').
// Returns the pid, or -1 with errno set. An exec that fails ends the child
// with status 127 and "exec failed" on its stderr.
pid_t spawn(const std::vector<std::string>& argv, const spawn_options& options = {});

// fork() for a child that runs code of this program: it dies with this
// process. 0 in the child, the pid in the parent, -1 on failure.
pid_t fork_dying_with_parent();

// Non-blocking: true once pid has exited (and is reaped), with its raw wait
// status in *wait_status when given.
bool reap(pid_t pid, int* wait_status = nullptr);
// Blocks until pid exits; its raw wait status, or -1 when it cannot be waited for.
int wait_exit(pid_t pid);
// A raw wait status as a shell shows it: the exit status 0-255, or 128 + the signal.
int exit_status(int wait_status);

// The signal to pid's process group and to pid itself (which may have left
// it). Only for a pid not yet reaped: once reaped, its number may be reused.
void kill_group(pid_t pid, int sig);
// SIGKILL, then reaped.
void kill_and_reap(pid_t pid);
// Asks pid to end (SIGCONT, so a stopped process can act, then SIGTERM); after
// grace_s, SIGKILL. Reaped either way.
void terminate(pid_t pid, double grace_s);

// The state letter of /proc/PID/stat (R, S, T, Z, ...), or 0 when it is gone.
char process_state(pid_t pid);
// Running, sleeping or stopped: not gone and not a zombie.
bool alive(pid_t pid);

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
    // The same, returning the reply line without its newline ("OK ...",
    // "ERR ..."); "" when none came. For `status`.
    std::string ask(const std::string& cmd);
    void stop();
    std::uint16_t port() const { return port_; }

private:
    pid_t pid_ = -1;
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

}  // namespace edgelock_test
