// The command `edgelock run` starts, as a job the agent can stop whole, and
// the agent's own signal handling.
//
// The job is the command's process group plus, on Linux, every process that
// left it: the agent is a child subreaper, so when a process of the job dies
// its orphans become the agent's children, whatever group or session they
// moved to (setsid, a daemon's double fork). Every signal the agent sends for
// the lock (SIGTERM, SIGKILL) and every signal it forwards goes to the group
// and to each of those children, and the job has ended only when the group
// is empty and the agent has no child left: as flock(1) holds its lock while
// any process keeps the descriptor, the agent holds it while any process of
// the job runs, the leader gone or not. The command's leader dies with
// the agent (PR_SET_PDEATHSIG), so a `kill -9` of the agent does not leave it
// running without the lock; its descendants then lose their leader, not
// their lives (a service manager's cgroup covers them).
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
    job() = default;
    ~job();
    job(const job&) = delete;
    job& operator=(const job&) = delete;

    // Starts argv (looked up in PATH) in a new process group, with the
    // environment changes applied. When the agent is in the foreground of
    // its controlling terminal, the group becomes the terminal's foreground
    // group (it reads the terminal and gets Ctrl-C itself). False, with
    // errno, when fork fails.
    bool start(std::vector<std::string>& argv, const std::vector<env_change>& env);

    // Sends signo to the group and to every process the agent adopted from it.
    void signal(int signo) const;

    // Reaps every child that has ended, and notes a stop of the leader.
    // Call after SIGCHLD and before asking below.
    void reap();

    bool leader_running() const { return leader_running_; }
    pid_t leader() const { return leader_; }
    // The leader's exit status, or 128 + the signal that ended it.
    int leader_status() const { return leader_status_; }
    // Whether any process of the job is left: the group or an adopted child.
    bool running() const;
    // Whether running() must be asked now and then rather than after a
    // SIGCHLD: once the leader is gone, where the agent is no subreaper.
    bool needs_polling() const;

    // True once after the leader was stopped by job control (TSTP, TTIN,
    // TTOU) while the agent has a controlling terminal: like a shell's job,
    // the agent should then stop too (see stop_with_terminal).
    bool take_job_control_stop();
    // Takes the terminal back, stops the agent (SIGSTOP) until a shell
    // continues it, and hands the terminal to the group again when the
    // agent is then in the foreground. Does not continue the group.
    void stop_with_terminal();

    // Takes the terminal back, when start() handed it to the group.
    void restore_terminal();

private:
    bool in_foreground() const;

    pid_t leader_ = -1;
    bool leader_running_ = false;
    int leader_status_ = 0;
    int stopped_by_ = 0;  // the job-control signal that stopped the leader, not yet taken
    int tty_ = -1;        // the controlling terminal, when the agent has one
    bool gave_terminal_ = false;
};

}  // namespace edgelock_cli
