#include "tools/proc.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

namespace edgelock_test {
namespace {

std::int64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

pid_t spawn(const std::vector<std::string>& argv, int stdout_fd) {
    std::vector<std::string> args = argv;
    std::vector<char*> av;
    for (std::string& a : args) {
        av.push_back(&a[0]);
    }
    av.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(127);
        }
        if (stdout_fd >= 0) {
            ::dup2(stdout_fd, 1);
        }
        ::execv(av[0], av.data());
        ::_exit(127);
    }
    if (pid > 0) {
        ::setpgid(pid, pid);
    }
    return pid;
}

std::string read_line(int fd, std::int64_t timeout_ms) {
    std::string line;
    const std::int64_t deadline = monotonic_ns() + timeout_ms * 1000000;
    while (line.find('\n') == std::string::npos && monotonic_ns() < deadline) {
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
    pid_ = spawn({program, "--target", "127.0.0.1:" + std::to_string(target), "--max-seconds",
                  std::to_string(max_seconds), "--seed", std::to_string(seed)},
                 fds[1]);
    ::close(fds[1]);
    const std::string line = read_line(fds[0], 5000);
    ::close(fds[0]);
    unsigned listen = 0;
    unsigned control = 0;
    if (std::sscanf(line.c_str(), "%u %u", &listen, &control) != 2) {
        return false;
    }
    port_ = static_cast<std::uint16_t>(listen);
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(control));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
}

bool fault_proxy::command(const std::string& cmd) {
    const std::string line = cmd + "\n";
    if (fd_ < 0 ||
        ::send(fd_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
        return false;
    }
    const std::string reply = read_line(fd_, 2000);
    if (reply.empty()) {
        ::close(fd_);
        fd_ = -1;
        return false;
    }
    return reply.compare(0, 2, "OK") == 0;
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
        ::kill(pid_, SIGTERM);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
}

}  // namespace edgelock_test
