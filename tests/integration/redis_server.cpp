#include "integration/redis_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "edgelock/resp_decoder.hpp"
#include "edgelock/resp_encoder.hpp"

namespace edgelock_test {
namespace {

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
}

// A port the kernel just handed out for 127.0.0.1. Another process could take
// it before redis-server binds it; start() retries on a fresh port if so.
std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail("socket");
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        fail("bind");
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

bool wait_io(int fd, short events, double deadline) {
    for (;;) {
        const double left = deadline - now_s();
        if (left <= 0) {
            return false;
        }
        pollfd p{fd, events, 0};
        const int r = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
        if (r > 0) {
            return true;
        }
        if (r < 0 && errno != EINTR) {
            return false;
        }
    }
}

reply copy_out(const edgelock::resp_node* nodes, std::size_t& i) {
    using edgelock::resp_type;
    static const char types[] = "+-:$*_#,(!=%~|>";
    const edgelock::resp_node& n = nodes[i];
    reply r;
    r.type = types[static_cast<int>(n.type)];
    if (n.type == resp_type::null) {
        r.type = '_';
    }
    if (n.text.data != nullptr) {
        r.text.assign(n.text.data, n.text.size);
    }
    r.integer = static_cast<long long>(n.integer);
    const std::size_t end = n.end;
    ++i;
    while (i < end) {
        r.elements.push_back(copy_out(nodes, i));
    }
    return r;
}

}  // namespace

redis_server::redis_server(std::vector<std::string> extra_args)
    : extra_args_(std::move(extra_args)) {
    char tmpl[] = "/tmp/edgelock-redis-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
        fail("mkdtemp");
    }
    dir_ = tmpl;
    unix_path_ = dir_ + "/redis.sock";
    for (int attempt = 0;; ++attempt) {
        port_ = free_port();
        try {
            start();
            return;
        } catch (const std::exception&) {
            stop();
            if (attempt == 4) {
                std::string cmd = "rm -rf '" + dir_ + "'";
                (void)std::system(cmd.c_str());
                throw;
            }
        }
    }
}

redis_server::~redis_server() {
    stop();
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
}

void redis_server::start() {
    std::vector<std::string> args = {"redis-server",
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--unixsocket",
                                     unix_path_,
                                     "--unixsocketperm",
                                     "700",
                                     "--dir",
                                     dir_,
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--daemonize",
                                     "no",
                                     "--loglevel",
                                     "warning",
                                     "--logfile",
                                     dir_ + "/redis.log"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);

    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) {
        fail("fork");
    }
    if (pid_ == 0) {
        // Die with the test process, whatever kills it.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(127);
        }
        ::execvp(argv[0], argv.data());
        ::_exit(127);
    }
    // Ready when it answers PING over TCP (NOAUTH from a server started with
    // --requirepass is an answer too).
    const double deadline = now_s() + 10.0;
    while (now_s() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            errno = 0;
            fail("redis-server exited at start (is it installed? port taken?)");
        }
        try {
            redis_client c(port_, 1.0);
            const reply r = c.command({"PING"});
            if (r.text == "PONG" || (r.type == '-' && r.text.compare(0, 6, "NOAUTH") == 0)) {
                return;
            }
        } catch (const std::exception&) {
        }
        ::usleep(10000);
    }
    errno = 0;
    fail("redis-server did not answer PING within 10 s");
}

void redis_server::stop() {
    if (pid_ <= 0) {
        return;
    }
    ::kill(pid_, SIGCONT);  // a paused server cannot act on SIGTERM
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 300; ++i) {  // 3 s, then SIGKILL
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
            pid_ = -1;
            return;
        }
        ::usleep(10000);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
}

void redis_server::kill() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
}

void redis_server::pause() {
    if (pid_ > 0) {
        ::kill(pid_, SIGSTOP);
    }
}

void redis_server::resume() {
    if (pid_ > 0) {
        ::kill(pid_, SIGCONT);
    }
}

void redis_server::restart() {
    kill();
    ::unlink(unix_path_.c_str());
    start();
}

redis_client::redis_client(std::uint16_t port, double timeout_s) : timeout_s_(timeout_s) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        fail("socket");
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd_);
        fail("connect");
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

redis_client::redis_client(const std::string& unix_path, double timeout_s) : timeout_s_(timeout_s) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        fail("socket");
    }
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, unix_path.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd_);
        fail("connect unix");
    }
}

redis_client::~redis_client() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void redis_client::send_raw(const std::string& bytes) {
    const double deadline = now_s() + timeout_s_;
    std::size_t off = 0;
    while (off < bytes.size()) {
        if (!wait_io(fd_, POLLOUT, deadline)) {
            errno = 0;
            fail("send timed out");
        }
        const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            fail("send");
        }
        if (n > 0) {
            off += static_cast<std::size_t>(n);
        }
    }
}

reply redis_client::command(const std::vector<std::string>& args) {
    std::vector<edgelock::str_view> views;
    for (const auto& a : args) {
        views.emplace_back(a.data(), a.size());
    }
    const std::size_t need = edgelock::resp_command_size(views.data(), views.size());
    std::string out(need, '\0');
    const edgelock::resp_encoded e =
        edgelock::resp_encode_command(&out[0], out.size(), views.data(), views.size());
    if (e.error != edgelock::resp_encode_errc::ok) {
        errno = 0;
        fail(std::string("encode: ") + edgelock::describe(e.error));
    }
    send_raw(out);
    return read_reply();
}

reply redis_client::read_reply() {
    const std::string bytes = read_reply_bytes();
    std::vector<edgelock::resp_node> nodes(64);
    for (;;) {
        const edgelock::resp_result r =
            edgelock::resp_decode_whole(bytes.data(), bytes.size(), nodes.data(), nodes.size());
        if (r.status == edgelock::resp_status::complete) {
            std::size_t i = 0;
            return copy_out(nodes.data(), i);
        }
        if (r.error != edgelock::resp_errc::node_capacity) {
            errno = 0;
            fail(std::string("decode: ") + edgelock::describe(r.error));
        }
        nodes.resize(nodes.size() * 4);
    }
}

std::string redis_client::read_reply_bytes() {
    const double deadline = now_s() + timeout_s_;
    edgelock::resp_decoder dec;
    for (;;) {
        // Validate-only: the reply's size is all this needs.
        const edgelock::resp_result r =
            dec.decode(buf_.data() + start_, buf_.size() - start_, nullptr, 0);
        if (r.status == edgelock::resp_status::complete) {
            std::string out(buf_.data() + start_, r.size);
            start_ += r.size;
            if (start_ == buf_.size()) {
                buf_.clear();
                start_ = 0;
            }
            return out;
        }
        if (r.status == edgelock::resp_status::error) {
            errno = 0;
            fail(std::string("decode: ") + edgelock::describe(r.error));
        }
        if (!wait_io(fd_, POLLIN, deadline)) {
            errno = 0;
            fail("no reply within the deadline");
        }
        char tmp[16384];
        const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n == 0) {
            errno = 0;
            fail("connection closed by the server");
        }
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            fail("recv");
        }
        buf_.insert(buf_.end(), tmp, tmp + n);
    }
}

}  // namespace edgelock_test
