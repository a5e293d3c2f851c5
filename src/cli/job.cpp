#include "job.hpp"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace edgelock_cli {

namespace {

int signal_pipe[2] = {-1, -1};

// Dispositions the agent found on start: a signal ignored then stays ignored.
bool ignored_at_start[NSIG];

// Ignored by the agent: a write to a closed pipe or a terminal it does not
// own must not stop or end it (the command gets them back at their default).
constexpr int agent_ignores[] = {SIGPIPE, SIGTTIN, SIGTTOU};

// Caught, in addition to SIGRTMIN..SIGRTMAX: everything whose default would
// end or stop the agent but for the faults a program raises on itself.
constexpr int agent_catches[] = {
    SIGCHLD,   SIGHUP,  SIGINT,  SIGQUIT,   SIGTERM, SIGUSR1, SIGUSR2, SIGALRM,
    SIGIO,     SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGTSTP, SIGCONT,
#ifdef SIGPWR
    SIGPWR,
#endif
#ifdef SIGSTKFLT
    SIGSTKFLT,
#endif
};

void on_signal(int signo) {
    const int saved = errno;
    ssize_t w = ::write(signal_pipe[1], &signo, sizeof signo);
    (void)w;  // a full pipe already holds a wake-up
    errno = saved;
}

template <class F>
void for_each_handled(F f) {
    for (int s : agent_ignores) {
        f(s, false);
    }
    for (int s : agent_catches) {
        f(s, true);
    }
    for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) {
        f(s, true);
    }
}

// In the command, before exec: the dispositions the agent started with.
void restore_dispositions() {
    for_each_handled([](int s, bool) {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_handler = ignored_at_start[s] ? SIG_IGN : SIG_DFL;
        sigemptyset(&sa.sa_mask);
        ::sigaction(s, &sa, nullptr);
    });
}

}  // namespace

bool install_agent_signals() {
    if (::pipe(signal_pipe) != 0) {
        return false;
    }
    for (int fd : signal_pipe) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    bool ok = true;
    for_each_handled([&ok](int s, bool catch_it) {
        struct sigaction old;
        if (::sigaction(s, nullptr, &old) != 0) {
            ok = false;
            return;
        }
        ignored_at_start[s] = old.sa_handler == SIG_IGN;
        if (ignored_at_start[s] && s != SIGCHLD) {
            return;  // nohup and friends: stays ignored
        }
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_handler = catch_it ? on_signal : SIG_IGN;
        sa.sa_flags = SA_RESTART | (s == SIGCHLD ? SA_NOCLDSTOP : 0);
        sigemptyset(&sa.sa_mask);
        ok = ok && ::sigaction(s, &sa, nullptr) == 0;
    });
#ifdef __linux__
    // The group's orphans become the agent's children: it can reap them and
    // see whether any outlived the group.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    return ok;
}

int signal_fd() {
    return signal_pipe[0];
}

int next_signal() {
    int signo = 0;
    if (signal_pipe[0] < 0 || ::read(signal_pipe[0], &signo, sizeof signo) != sizeof signo) {
        return 0;
    }
    return signo;
}

bool ends_by_default(int signo) {
    return signo != SIGCHLD && signo != SIGCONT && signo != SIGTSTP;
}

bool job::start(std::vector<std::string>& argv, const std::vector<env_change>& env) {
    const pid_t agent = ::getpid();
    const bool terminal = ::isatty(0) == 1 && ::tcgetpgrp(0) == ::getpgrp();
    const pid_t pid = ::fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        ::setpgid(0, 0);
        if (terminal) {
            ::tcsetpgrp(0, ::getpid());  // SIGTTOU is still ignored here
        }
#ifdef __linux__
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != agent) {
            ::_exit(127);  // the agent died before the line above
        }
#else
        (void)agent;
#endif
        restore_dispositions();
        for (const env_change& e : env) {
            if (e.remove) {
                ::unsetenv(e.name.c_str());
            } else {
                ::setenv(e.name.c_str(), e.value.c_str(), 1);
            }
        }
        std::vector<char*> args;
        for (std::string& a : argv) {
            args.push_back(&a[0]);
        }
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        const int err = errno;
        std::fprintf(stderr, "edgelock: cannot run '%s': %s\n", args[0], std::strerror(err));
        ::_exit(err == ENOENT ? 127 : 126);
    }
    // Also here, so that no signal of ours can reach a group not yet made.
    ::setpgid(pid, pid);
    if (terminal) {
        ::tcsetpgrp(0, pid);
    }
    leader_ = pid;
    leader_running_ = true;
    gave_terminal_ = terminal;
    return true;
}

void job::signal(int signo) const {
    if (leader_ > 0) {
        ::kill(-leader_, signo);
    }
}

void job::reap() {
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            return;
        }
        if (pid == leader_) {
            leader_running_ = false;
            if (WIFEXITED(status)) {
                leader_status_ = WEXITSTATUS(status);
            } else if (WIFSIGNALED(status)) {
                leader_status_ = 128 + WTERMSIG(status);
            }
        }
    }
}

bool job::group_running() const {
    if (leader_ <= 0) {
        return false;
    }
    // EPERM: a member we may not signal (a set-uid program) is still a member.
    return ::kill(-leader_, 0) == 0 || errno == EPERM;
}

bool job::escaped() const {
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    // Children, none of them ended: they run outside the group.
    return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

void job::restore_terminal() {
    if (gave_terminal_) {
        ::tcsetpgrp(0, ::getpgrp());  // SIGTTOU is ignored in the agent
        gave_terminal_ = false;
    }
}

}  // namespace edgelock_cli
