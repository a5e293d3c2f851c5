// The command `edgelock run` starts, as a job the agent can stop whole, and
// the agent's own signal handling.
//
// The command runs in its own process group. Every signal the agent sends for
// the lock (SIGTERM, SIGKILL) and every signal it forwards goes to that whole
// group, so a shell's grandchildren stop with it; the agent waits until no
// process of the group is left. On Linux the agent is a child subreaper (it
// inherits the group's orphans and reaps them) and the command's leader dies
// with the agent (PR_SET_PDEATHSIG): a `kill -9` of the agent does not leave
// the command running without the lock. A process that leaves the group
// (setsid, setpgid) escapes all of this; the agent says so when it notices.
//
// The agent never dies of a signal it could survive: SIGPIPE, SIGTTIN and
// SIGTTOU are ignored; every other signal whose default action ends or stops
// a process, except the faults a program raises on itself (SEGV, BUS, FPE,
// ILL, TRAP, SYS, ABRT), is caught and reported through a pipe the agent's
// poll loop watches. A signal ignored when the agent started (nohup) stays
// ignored, for the agent and for the command.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace edgelock_cli {

// Sets up the signal handling above. False (with errno) when it cannot.
bool install_agent_signals();

// The read end of the pipe the handlers write to; poll it for reading.
int signal_fd();

// The next signal caught and not yet taken, or 0 when there is none.
int next_signal();

// True for a signal whose default action would end the agent (as opposed to
// SIGCHLD, SIGCONT and SIGTSTP).
bool ends_by_default(int signo);

// A change to the command's environment: set `name` to `value`, or remove it.
struct env_change {
    std::string name;
    std::string value;
    bool remove = false;
};

class job {
public:
    // Starts argv (looked up in PATH) in a new process group, with the
    // environment changes applied. When the agent owns the terminal, the
    // group becomes its foreground group (so it can read it, and the
    // terminal's signals reach it). False, with errno, when fork fails.
    bool start(std::vector<std::string>& argv, const std::vector<env_change>& env);

    // Sends signo to every process of the group.
    void signal(int signo) const;

    // Reaps every child that has ended: the leader, and the orphans of the
    // group this agent inherited. Call after SIGCHLD and before asking below.
    void reap();

    bool leader_running() const { return leader_running_; }
    // The leader's exit status, or 128 + the signal that ended it.
    int leader_status() const { return leader_status_; }
    // Whether any process is still in the group (the leader included).
    bool group_running() const;
    // Whether children of the agent are still running once the group is
    // gone: processes that left the group.
    bool escaped() const;
    // Takes the terminal back, when start() handed it to the group.
    void restore_terminal();

private:
    pid_t leader_ = -1;
    bool leader_running_ = false;
    int leader_status_ = 0;
    bool gave_terminal_ = false;
};

}  // namespace edgelock_cli
