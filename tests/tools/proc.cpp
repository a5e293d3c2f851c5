#include "tools/proc.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/net.hpp"

namespace edgelock_test {

pid_t fork_dying_with_parent() {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(127);  // the parent died before the request took hold
        }
    }
    return pid;
}

pid_t spawn(const std::vector<std::string>& argv, const spawn_options& o) {
    // Everything the child needs is built before fork(): nothing allocates after.
    std::vector<std::string> args = argv;
    std::vector<char*> av;
    for (std::string& a : args) {
        av.push_back(&a[0]);
    }
    av.push_back(nullptr);
    std::vector<std::string> envs = o.env != nullptr ? *o.env : std::vector<std::string>();
    std::vector<char*> ev;
    for (std::string& e : envs) {
        ev.push_back(&e[0]);
    }
    ev.push_back(nullptr);
    if (av.size() < 2) {
        errno = EINVAL;
        return -1;
    }

    const pid_t pid = o.dies_with_parent ? fork_dying_with_parent() : ::fork();
    if (pid != 0) {
        if (pid > 0 && o.own_group) {
            ::setpgid(pid, pid);  // also here: no race with a kill_group() right after
        }
        return pid;
    }
    if (o.own_group) {
        ::setpgid(0, 0);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) {
        ::signal(s, SIG_DFL);
    }
    if (o.stdin_fd >= 0) {
        ::dup2(o.stdin_fd, 0);
    }
    if (o.stdout_fd >= 0) {
        ::dup2(o.stdout_fd, 1);
    }
    if (o.stderr_fd >= 0) {
        ::dup2(o.stderr_fd, 2);
    }
    if (o.env != nullptr) {
        ::execvpe(av[0], av.data(), ev.data());
    } else {
        ::execvp(av[0], av.data());
    }
    const char msg[] = "exec failed\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
}

bool reap(pid_t pid, int* wait_status) {
    if (pid <= 0) {
        return false;
    }
    int st = 0;
    pid_t r;
    do {
        r = ::waitpid(pid, &st, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r != pid) {
        return false;
    }
    if (wait_status != nullptr) {
        *wait_status = st;
    }
    return true;
}

int wait_exit(pid_t pid) {
    if (pid <= 0) {
        return -1;
    }
    int st = 0;
    pid_t r;
    do {
        r = ::waitpid(pid, &st, 0);
    } while (r < 0 && errno == EINTR);
    return r == pid ? st : -1;
}

int exit_status(int wait_status) {
    if (WIFEXITED(wait_status)) {
        return WEXITSTATUS(wait_status);
    }
    if (WIFSIGNALED(wait_status)) {
        return 128 + WTERMSIG(wait_status);
    }
    return -1;
}

void kill_group(pid_t pid, int sig) {
    if (pid > 0) {
        ::kill(-pid, sig);
        ::kill(pid, sig);
    }
}

void kill_and_reap(pid_t pid) {
    if (pid > 0) {
        ::kill(pid, SIGKILL);
        wait_exit(pid);
    }
}

void terminate(pid_t pid, double grace_s) {
    if (pid <= 0) {
        return;
    }
    ::kill(pid, SIGCONT);  // a stopped process cannot act on SIGTERM
    ::kill(pid, SIGTERM);
    const double deadline = mono_s() + grace_s;
    while (mono_s() < deadline) {
        if (reap(pid)) {
            return;
        }
        sleep_ms(10);
    }
    kill_and_reap(pid);
}

char process_state(pid_t pid) {
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t paren = stat.rfind(')');
    return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

bool alive(pid_t pid) {
    const char state = pid > 0 ? process_state(pid) : 0;
    return state != 0 && state != 'Z' && state != 'X';
}

std::string read_line(int fd, std::int64_t timeout_ms) {
    std::string line;
    const std::int64_t deadline = mono_ns() + timeout_ms * 1000000;
    while (line.find('\n') == std::string::npos && mono_ns() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0) {
            char buf[256];
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n <= 0) {
                return std::string();
            }
            line.append(buf, static_cast<std::size_t>(n));
        }
    }
    return line.find('\n') == std::string::npos ? std::string() : line;
}

bool fault_proxy::start(const std::string& program, std::uint16_t target, std::uint64_t seed,
                        int max_seconds) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        return false;
    }
    spawn_options o;
    o.stdout_fd = fds[1];
    pid_ = spawn({program, "--target", "127.0.0.1:" + std::to_string(target), "--max-seconds",
                  std::to_string(max_seconds), "--seed", std::to_string(seed)},
                 o);
    ::close(fds[1]);
    const std::string line = read_line(fds[0], 5000);
    ::close(fds[0]);
    unsigned listen = 0;
    unsigned control = 0;
    if (std::sscanf(line.c_str(), "%u %u", &listen, &control) != 2) {
        return false;
    }
    port_ = static_cast<std::uint16_t>(listen);
    fd_ = connect_loopback(static_cast<std::uint16_t>(control));
    return fd_ >= 0;
}

bool fault_proxy::command(const std::string& cmd) {
    return ask(cmd).compare(0, 2, "OK") == 0;
}

std::string fault_proxy::ask(const std::string& cmd) {
    const std::string line = cmd + "\n";
    if (fd_ < 0 ||
        ::send(fd_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
        return std::string();
    }
    std::string reply = read_line(fd_, 2000);
    if (reply.empty()) {
        ::close(fd_);
        fd_ = -1;
        return std::string();
    }
    reply.pop_back();  // the newline
    return reply;
}

void fault_proxy::stop() {
    if (fd_ >= 0) {
        command("quit");  // closes fd_ itself if the proxy does not answer
    }
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    if (pid_ > 0) {
        terminate(pid_, 5.0);
        pid_ = -1;
    }
}

}  // namespace edgelock_test
