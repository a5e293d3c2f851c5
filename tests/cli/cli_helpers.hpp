// Test helper: runs a program (the edgelock agent, fake_redis) with a given
// argv and environment, its stdout and stderr captured through pipes.
//
//   edgelock_test::process p({path, "acquire", "k"}, {"EDGELOCK_NODES=..."});
//   edgelock_test::run_result r = p.finish(10.0);   // r.status, r.out, r.err, r.seconds
//
// The program runs in its own process group, which finish() (on timeout) and
// the destructor kill whole, so a child the program started does not outlive
// the test either; and it dies with the test process (PR_SET_PDEATHSIG).
// Nothing is inherited from the test's environment but PATH; and the agent
// reads no configuration file (EDGELOCK_CONFIG=none) unless the test names
// one, so that a /etc/edgelock.conf on the machine changes no test.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/clock.hpp"
#include "tools/proc.hpp"

namespace edgelock_test {

struct run_result {
    int status = -1;  // exit status 0-255, or 128 + signal; -1 while unknown
    std::string out;
    std::string err;
    double seconds = 0;  // from start to exit (or to the kill on timeout)
    bool timed_out = false;
};

class process {
public:
    process(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
        int out[2] = {-1, -1};
        int err[2] = {-1, -1};
        if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
            throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
        }
        std::vector<std::string> envs = env;
        bool config_named = false;
        for (const std::string& e : env) {
            config_named = config_named || e.compare(0, 16, "EDGELOCK_CONFIG=") == 0;
        }
        if (!config_named) {
            envs.push_back("EDGELOCK_CONFIG=none");
        }
        if (const char* path = std::getenv("PATH")) {
            envs.push_back(std::string("PATH=") + path);
        }
        const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        spawn_options o;
        o.env = &envs;
        o.stdin_fd = devnull;
        o.stdout_fd = out[1];
        o.stderr_fd = err[1];
        start_ = mono_s();
        pid_ = spawn(argv, o);
        const int spawn_errno = errno;
        if (devnull >= 0) {
            ::close(devnull);
        }
        ::close(out[1]);
        ::close(err[1]);
        out_fd_ = out[0];
        err_fd_ = err[0];
        if (pid_ < 0) {
            close_fds();
            throw std::runtime_error(std::string("fork: ") + std::strerror(spawn_errno));
        }
        ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
        ::fcntl(err_fd_, F_SETFL, O_NONBLOCK);
    }

    ~process() {
        kill_group(SIGKILL);
        reap(true);
        close_fds();
    }
    process(const process&) = delete;
    process& operator=(const process&) = delete;

    pid_t pid() const { return pid_; }
    bool running() {
        reap(false);
        return !exited_;
    }

    // Signals the program only (not its process group).
    void signal(int sig) {
        if (!exited_) {
            ::kill(pid_, sig);
        }
    }
    void kill_group(int sig) {
        if (!exited_) {
            edgelock_test::kill_group(pid_, sig);
        }
    }

    // The first line of stdout (without the newline), or "" when none came in
    // time or the program exited first.
    std::string read_line(double timeout_s) {
        const double deadline = mono_s() + timeout_s;
        for (;;) {
            const std::size_t nl = result_.out.find('\n');
            if (nl != std::string::npos) {
                std::string line = result_.out.substr(0, nl);
                result_.out.erase(0, nl + 1);
                return line;
            }
            if (mono_s() >= deadline || out_fd_ < 0) {
                return std::string();
            }
            pump(10);
        }
    }

    // Waits up to timeout_s for the program to exit; kills its group if it
    // does not (result.timed_out). stdout and stderr are what it wrote, read
    // until it exited (a grandchild holding the pipes open is not waited for).
    run_result finish(double timeout_s) {
        const double deadline = mono_s() + timeout_s;
        while (!exited_) {
            pump(10);
            reap(false);
            if (!exited_ && mono_s() >= deadline) {
                result_.timed_out = true;
                result_.seconds = mono_s() - start_;
                kill_group(SIGKILL);
                reap(true);
            }
        }
        // Whatever is still in the pipes.
        for (int i = 0; i < 20 && (out_fd_ >= 0 || err_fd_ >= 0); ++i) {
            if (!pump(5)) {
                break;
            }
        }
        close_fds();
        return result_;
    }

private:
    // Reads what is available (waiting up to wait_ms for something). False
    // when nothing came.
    bool pump(int wait_ms) {
        pollfd p[2];
        nfds_t n = 0;
        int* fds[2];
        std::string* bufs[2];
        if (out_fd_ >= 0) {
            p[n] = pollfd{out_fd_, POLLIN, 0};
            fds[n] = &out_fd_;
            bufs[n] = &result_.out;
            ++n;
        }
        if (err_fd_ >= 0) {
            p[n] = pollfd{err_fd_, POLLIN, 0};
            fds[n] = &err_fd_;
            bufs[n] = &result_.err;
            ++n;
        }
        if (n == 0) {
            return false;
        }
        if (::poll(p, n, wait_ms) <= 0) {
            return false;
        }
        bool got = false;
        for (nfds_t i = 0; i < n; ++i) {
            if (p[i].revents == 0) {
                continue;
            }
            char buf[65536];
            const ssize_t r = ::read(*fds[i], buf, sizeof buf);
            if (r > 0) {
                bufs[i]->append(buf, static_cast<std::size_t>(r));
                got = true;
            } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                ::close(*fds[i]);
                *fds[i] = -1;
                got = true;
            }
        }
        return got;
    }

    void reap(bool block) {
        if (exited_ || pid_ <= 0) {
            return;
        }
        int st = 0;
        if (block) {
            st = wait_exit(pid_);
        } else if (!edgelock_test::reap(pid_, &st)) {
            return;
        }
        exited_ = true;
        if (!result_.timed_out) {
            result_.seconds = mono_s() - start_;
        }
        result_.status = exit_status(st);
        // The program's group may hold its leftovers (a child it did not reap).
        ::kill(-pid_, SIGKILL);
    }

    void close_fds() {
        if (out_fd_ >= 0) {
            ::close(out_fd_);
            out_fd_ = -1;
        }
        if (err_fd_ >= 0) {
            ::close(err_fd_);
            err_fd_ = -1;
        }
    }

    pid_t pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    bool exited_ = false;
    double start_ = 0;
    run_result result_;
};

}  // namespace edgelock_test
