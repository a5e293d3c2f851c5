#include "job.hpp"

#include <dirent.h>
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

// Whether the agent is a child subreaper: then the last process of the job to
// end is always its child, and a SIGCHLD tells it the job is over.
bool subreaper = false;

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

// Calls f(pid) for every child of the agent outside the group `group`: the
// processes it adopted as a subreaper. Reads /proc (Linux); elsewhere, or
// without /proc, there are none to find.
template <class F>
void for_each_adopted(pid_t group, F f) {
#ifdef __linux__
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) {
        return;
    }
    const pid_t self = ::getpid();
    while (const dirent* d = ::readdir(proc)) {
        char* end = nullptr;
        const long pid = std::strtol(d->d_name, &end, 10);
        if (pid <= 0 || *end != '\0') {
            continue;
        }
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        char stat[512];
        const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        const ssize_t n = ::read(fd, stat, sizeof stat - 1);
        ::close(fd);
        if (n <= 0) {
            continue;
        }
        stat[n] = '\0';
        // "pid (comm) state ppid pgrp ...": comm may hold anything, even ')'.
        const char* paren = std::strrchr(stat, ')');
        long ppid = 0;
        long pgrp = 0;
        char state = 0;
        if (paren != nullptr && std::sscanf(paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 &&
            ppid == self && pgrp != group) {
            f(static_cast<pid_t>(pid));
        }
    }
    ::closedir(proc);
#else
    (void)group;
    (void)f;
#endif
}

bool is_job_control_stop(int signo) {
    return signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU;
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
        sa.sa_flags = SA_RESTART;  // SIGCHLD for stops too: job control
        sigemptyset(&sa.sa_mask);
        ok = ok && ::sigaction(s, &sa, nullptr) == 0;
    });
#ifdef __linux__
    // The group's orphans become the agent's children: it can reap them,
    // signal those that left the group, and hear of every end.
    subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
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

job::~job() {
    if (tty_ >= 0) {
        ::close(tty_);
    }
}

bool job::in_foreground() const {
    return tty_ >= 0 && ::tcgetpgrp(tty_) == ::getpgrp();
}

namespace {

// The command's environment: the agent's, with the changes applied.
std::vector<std::string> environment_with(const std::vector<env_change>& changes) {
    std::vector<std::string> out;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string entry(*e);
        const std::string name = entry.substr(0, entry.find('='));
        bool changed = false;
        for (const env_change& c : changes) {
            changed = changed || c.name == name;
        }
        if (!changed) {
            out.push_back(entry);
        }
    }
    for (const env_change& c : changes) {
        if (!c.remove) {
            out.push_back(c.name + "=" + c.value);
        }
    }
    return out;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) {
        out.push_back(&s[0]);
    }
    out.push_back(nullptr);
    return out;
}

// What the child says when the exec fails, written before the fork: between
// fork and exec the child of a process with threads (the agent's messages,
// its host name lookups) may call only async-signal-safe functions, which
// strerror() and stdio are not.
class exec_failure {
public:
    explicit exec_failure(const std::string& command) {
        const std::string head = "edgelock: cannot run '" + command + "': ";
        for (std::size_t i = 0; i < sizeof codes_ / sizeof codes_[0]; ++i) {
            texts_[i] = head + std::strerror(codes_[i]) + "\n";
        }
        other_ = head + "exec failed\n";
    }
    // In the child: says why, and ends it as a shell would (127: not found).
    [[noreturn]] void report(int err) const {
        const std::string* text = &other_;
        for (std::size_t i = 0; i < sizeof codes_ / sizeof codes_[0]; ++i) {
            text = codes_[i] == err ? &texts_[i] : text;
        }
        const ssize_t w = ::write(STDERR_FILENO, text->data(), text->size());
        (void)w;
        ::_exit(err == ENOENT ? 127 : 126);
    }

private:
    static constexpr int codes_[] = {ENOENT, EACCES, ENOEXEC, ENOTDIR, E2BIG,
                                     ENOMEM, ELOOP,  ETXTBSY, EPERM,   ENAMETOOLONG};
    std::string texts_[sizeof codes_ / sizeof codes_[0]];
    std::string other_;
};

}  // namespace

bool job::start(std::vector<std::string>& argv, const std::vector<env_change>& env) {
    const pid_t agent = ::getpid();
    // The controlling terminal itself, not fd 0: stdin may be a file while
    // the command still reads /dev/tty (a password prompt).
    tty_ = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    const bool terminal = in_foreground();
    // Everything the child needs, made here (see exec_failure).
    std::vector<std::string> environment = environment_with(env);
    std::vector<char*> envp = pointers_to(environment);
    const std::vector<char*> args = pointers_to(argv);
    const exec_failure failed(argv.empty() ? std::string() : argv[0]);
    const pid_t pid = ::fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        ::setpgid(0, 0);
        if (terminal) {
            ::tcsetpgrp(tty_, ::getpid());  // SIGTTOU is still ignored here
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
        // execvp() looks the command up in the PATH of this environment.
        environ = envp.data();
        ::execvp(args[0], args.data());
        failed.report(errno);
    }
    // Also here, so that no signal of ours can reach a group not yet made.
    ::setpgid(pid, pid);
    if (terminal) {
        ::tcsetpgrp(tty_, pid);
    }
    leader_ = pid;
    leader_running_ = true;
    gave_terminal_ = terminal;
    return true;
}

void job::signal(int signo) const {
    if (leader_ <= 0) {
        return;
    }
    ::kill(-leader_, signo);
    for_each_adopted(leader_, [signo](pid_t pid) { ::kill(pid, signo); });
}

void job::reap() {
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED);
        if (pid <= 0) {
            return;
        }
        if (pid != leader_) {
            continue;  // an adopted process ended (or stopped): nothing to keep
        }
        if (WIFSTOPPED(status)) {
            if (tty_ >= 0 && is_job_control_stop(WSTOPSIG(status))) {
                stopped_by_ = WSTOPSIG(status);
            }
            continue;
        }
        leader_running_ = false;
        if (WIFEXITED(status)) {
            leader_status_ = WEXITSTATUS(status);
        } else if (WIFSIGNALED(status)) {
            leader_status_ = 128 + WTERMSIG(status);
        }
    }
}

bool job::running() const {
    if (leader_ <= 0) {
        return false;
    }
    // EPERM: a member we may not signal (a set-uid program) is still a member.
    if (::kill(-leader_, 0) == 0 || errno == EPERM) {
        return true;
    }
    // A child of the agent, ended or not: an adopted process (reap() takes
    // the ended ones first).
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

bool job::needs_polling() const {
    // Without the subreaper, a member whose parent is not the agent ends
    // without a SIGCHLD to it, once the leader is gone.
    return !subreaper && !leader_running_;
}

bool job::take_job_control_stop() {
    const bool stopped = stopped_by_ != 0;
    stopped_by_ = 0;
    return stopped;
}

void job::stop_with_terminal() {
    restore_terminal();
    ::raise(SIGSTOP);  // the shell sees its job stop and takes the terminal
    // Continued (fg or bg).
    if (in_foreground()) {
        ::tcsetpgrp(tty_, leader_);
        gave_terminal_ = true;
    }
}

void job::restore_terminal() {
    // Only while the group has it: a background agent must not take it.
    if (gave_terminal_ && ::tcgetpgrp(tty_) == leader_) {
        ::tcsetpgrp(tty_, ::getpgrp());  // SIGTTOU is ignored in the agent
    }
    gave_terminal_ = false;
}

}  // namespace edgelock_cli
