#include "integration/redis_server.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "edgelock/resp_decoder.hpp"
#include "edgelock/resp_encoder.hpp"
#include "tools/clock.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"

namespace edgelock_test {
namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
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

redis_server::redis_server(const redis_tls_files& tls, std::vector<std::string> extra_args)
    : redis_server(std::move(extra_args), &tls) {}

redis_server::redis_server(std::vector<std::string> extra_args)
    : redis_server(std::move(extra_args), nullptr) {}

redis_server redis_server::sentinel(const std::vector<std::string>& config) {
    return redis_server({}, nullptr, config);
}

redis_server redis_server::sentinel(const redis_tls_files& tls,
                                    const std::vector<std::string>& config,
                                    std::vector<std::string> extra_args) {
    return redis_server(std::move(extra_args), &tls, config);
}

redis_server::redis_server(std::vector<std::string> extra_args, const redis_tls_files* tls,
                           std::vector<std::string> sentinel_config)
    : extra_args_(std::move(extra_args)),
      sentinel_config_(std::move(sentinel_config)),
      tls_(tls != nullptr) {
    if (tls != nullptr) {
        tls_files_ = *tls;
    }
    unix_path_ = dir_ / "redis.sock";
    // free_port() is only a guess: another process may take the port before
    // redis-server binds it, so a failed start tries a fresh one.
    for (int attempt = 0;; ++attempt) {
        port_ = free_port();
        try {
            start();
            return;
        } catch (const std::exception&) {
            stop();
            if (attempt == 4) {
                throw;
            }
        }
    }
}

redis_server::~redis_server() {
    stop();
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
                                     dir_.path,
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--daemonize",
                                     "no",
                                     "--loglevel",
                                     "warning",
                                     "--logfile",
                                     dir_ / "redis.log"};
    if (!sentinel_config_.empty()) {
        // A sentinel rewrites its configuration file: one of its own, with
        // the monitoring lines; the rest as for a server.
        const std::string conf = dir_ / "sentinel.conf";
        std::string text;
        for (const std::string& line : sentinel_config_) {
            text += line + "\n";
        }
        write_file(conf, text);
        args = {
            "redis-server", conf,        "--sentinel",   "--port",          std::to_string(port_),
            "--bind",       "127.0.0.1", "--unixsocket", unix_path_,        "--unixsocketperm",
            "700",          "--dir",     dir_.path,      "--daemonize",     "no",
            "--loglevel",   "warning",   "--logfile",    dir_ / "redis.log"};
    }
    if (tls_) {
        for (std::size_t i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "--port") {
                args[i + 1] = "0";  // no plain TCP
            }
        }
        const std::vector<std::string> tls = {
            "--tls-port",         std::to_string(port_),
            "--tls-cert-file",    tls_files_.cert_file,
            "--tls-key-file",     tls_files_.key_file,
            "--tls-ca-cert-file", tls_files_.ca_file,
            "--tls-auth-clients", tls_files_.auth_clients ? "yes" : "no"};
        args.insert(args.end(), tls.begin(), tls.end());
    }
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    // In the test's process group (a Ctrl-C reaches it too), dying with the
    // test process, whatever kills it.
    spawn_options o;
    o.own_group = false;
    pid_ = spawn(args, o);
    if (pid_ < 0) {
        fail("fork");
    }
    // Ready when it answers PING over TCP, or over the unix socket for a TLS
    // server (NOAUTH from a server started with --requirepass is an answer too).
    const double deadline = mono_s() + 10.0;
    while (mono_s() < deadline) {
        if (reap(pid_)) {
            pid_ = -1;
            errno = 0;
            fail("redis-server exited at start (is it installed? port taken?)");
        }
        try {
            // Redis binds every port before it serves any: a TLS server
            // that answers on its unix socket listens on its TLS port.
            std::unique_ptr<redis_client> c;
            if (tls_) {
                c.reset(new redis_client(unix_path_, 1.0));
            } else {
                c.reset(new redis_client(port_, 1.0));
            }
            const reply r = c->command({"PING"});
            if (r.text == "PONG" || (r.type == '-' && r.text.compare(0, 6, "NOAUTH") == 0)) {
                return;
            }
        } catch (const std::exception&) {
        }
        sleep_ms(10);
    }
    errno = 0;
    fail("redis-server did not answer PING within 10 s");
}

void redis_server::stop() {
    terminate(pid_, 3.0);
    pid_ = -1;
}

void redis_server::kill() {
    kill_and_reap(pid_);
    pid_ = -1;
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
    fd_ = connect_loopback(port);
    if (fd_ < 0) {
        fail("connect");
    }
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
    const double deadline = mono_s() + timeout_s_;
    std::size_t off = 0;
    while (off < bytes.size()) {
        if (!wait_fd(fd_, POLLOUT, deadline)) {
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
    const double deadline = mono_s() + timeout_s_;
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
        if (!wait_fd(fd_, POLLIN, deadline)) {
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
