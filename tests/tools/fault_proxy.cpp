// A loopback TCP proxy for tests, whose faults a test switches while it runs:
// latency with jitter, a partition that heals, connections closed or reset
// under the client's feet, refused connections, a link that carries one byte
// at a time (trickle) or one byte per segment (split).
//
//   fault_proxy --target HOST:PORT [--listen PORT] [--control PORT]
//               [--max-seconds S] [--seed N]
//
// Clients connect to 127.0.0.1:--listen; each connection gets its own
// upstream connection to the target, which must be a numeric loopback address
// (127.0.0.0/8, or [::1]:PORT). Port 0 (the default) takes a free port. Once
// both sockets listen, one line "<listen_port> <control_port>" goes to stdout.
// The proxy exits 0 after --max-seconds (default 900), on SIGTERM or SIGINT,
// on `quit`, and when its parent dies; 64 on a bad command line.
//
// The control socket (TCP, 127.0.0.1:--control) takes text lines, one command
// each, any number of them on any number of connections; each is answered
// with one line, "OK[ detail]" or "ERR <message>" (an ERR changes nothing; a
// line over 256 bytes is an ERR that also closes the control connection).
// Times are in ms, 0..600000.
//
//   pass                  no fault, no delay: forward everything at once
//   delay DIR MS [JIT]    DIR up (client->server), down or both: every chunk
//                         read goes MS + uniform[0,JIT] ms after it was read,
//                         but never before an earlier chunk (order is kept);
//                         with split and trickle too. `delay both 0` clears it
//   deliver DIR           every chunk queued in DIR (up, down or both) is due
//                         now: a long delay held the bytes until the test says
//   blackhole             read nothing, send nothing, connect nothing upstream
//                         (TCP backpressure holds the data: nothing is lost);
//                         leaving it forwards everything held, in order
//   drop                  close every proxied connection (FIN), both sides
//   reset                 abort every proxied connection (RST), both sides
//   refuse                reset every new connection as soon as it is accepted
//   trickle MS            one byte per MS ms per direction per connection
//   split                 every byte in its own send() (TCP_NODELAY is always on)
//   status                OK mode=M delay_up=MS/JIT delay_down=MS/JIT conns=OPEN
//                         accepted=TOTAL ended=N bytes_up=N bytes_down=N
//                         queued_up=N queued_down=N
//   quit                  OK, then exit 0
//
// blackhole, refuse, trickle and split are modes (one at a time; pass clears
// them and the delays); drop and reset leave the mode as it is. accepted counts
// every connection accepted, refused ones too; ended those closed on both
// sides since (accepted = conns + ended); bytes_* count bytes delivered,
// queued_* bytes read and not yet delivered (a delay's bytes in flight). Data
// already queued keeps the schedule it was given when it was read.
//
// Bytes in flight outlive the socket that sent them, as on a real link: a
// client that closes or resets its connection (or cannot take what comes
// back) does not take back what it sent. A side's EOF reaches the other side
// (shutdown(SHUT_WR)) once what was queued for it is delivered. A side that
// fails (a RST, a failed send) is closed and what was queued for it dropped;
// what it sent and is still queued is delivered on its schedule, and then the
// other side gets a FIN (a RST could overtake bytes the proxy's own socket
// has not sent yet); with nothing of it queued, the other side is reset at
// once. Only drop and reset cut connections with bytes in flight. A failed
// upstream connect resets the client. Each direction of a connection queues up
// to 1 MB before its source is no longer read; beyond 256 connections, new
// ones are reset. One poll() loop, non-blocking sockets; it sleeps until the
// next delivery is due.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "tools/clock.hpp"

namespace {

constexpr int exit_usage = 64;
constexpr std::size_t max_conns = 256;
constexpr std::size_t max_controls = 16;
constexpr std::size_t max_queued = 1u << 20;       // per direction of a connection
constexpr std::size_t max_line = 256;              // control line, newline excluded
constexpr std::size_t max_control_out = 1u << 16;  // replies a control client leaves unread
constexpr std::size_t split_burst = 4096;          // split: sends per direction per pass
constexpr unsigned long long max_ms = 600000;
constexpr std::int64_t ns_per_ms = 1000000;

int sig_pipe_w = -1;

void on_signal(int) {
    const int saved = errno;
    const char b = 1;
    (void)!::write(sig_pipe_w, &b, 1);
    errno = saved;
}

void usage() {
    std::fprintf(stderr,
                 "usage: fault_proxy --target HOST:PORT [--listen PORT] [--control PORT] "
                 "[--max-seconds S] [--seed N]\n");
}

// Decimal digits only, at most `max`.
bool parse_uint(const std::string& s, unsigned long long max, unsigned long long& out) {
    if (s.empty() || s.size() > 20) {
        return false;
    }
    unsigned long long v = 0;
    for (const char ch : s) {
        if (ch < '0' || ch > '9') {
            return false;
        }
        const auto digit = static_cast<unsigned long long>(ch - '0');
        if (v > (max - digit) / 10) {
            return false;
        }
        v = v * 10 + digit;
    }
    out = v;
    return true;
}

// "127.x.y.z:PORT" or "[::1]:PORT": numeric loopback only.
bool parse_target(const std::string& s, sockaddr_storage& ss, socklen_t& len) {
    const std::size_t colon = s.rfind(':');
    unsigned long long port = 0;
    if (colon == std::string::npos || !parse_uint(s.substr(colon + 1), 65535, port) || port == 0) {
        return false;
    }
    const std::string host = s.substr(0, colon);
    sockaddr_in a4{};
    sockaddr_in6 a6{};
    a4.sin_family = AF_INET;
    a4.sin_port = a6.sin6_port = htons(static_cast<std::uint16_t>(port));
    a6.sin6_family = AF_INET6;
    const bool v6 = host.size() > 2 && host.front() == '[' && host.back() == ']';
    if (v6 ? ::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6.sin6_addr) != 1 ||
                 !IN6_IS_ADDR_LOOPBACK(&a6.sin6_addr)
           : ::inet_pton(AF_INET, host.c_str(), &a4.sin_addr) != 1 ||
                 (ntohl(a4.sin_addr.s_addr) >> 24) != 127) {
        return false;
    }
    ss = sockaddr_storage{};
    len = v6 ? sizeof a6 : sizeof a4;
    std::memcpy(&ss, v6 ? static_cast<const void*>(&a6) : static_cast<const void*>(&a4), len);
    return true;
}

// A non-blocking socket listening on 127.0.0.1:port; the bound port in `port`.
int listen_on(std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &alen) != 0) {
        ::close(fd);
        return -1;
    }
    port = ntohs(a.sin_port);
    return fd;
}

void set_nodelay(int fd) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void close_rst(int fd) {
    if (fd < 0) {
        return;
    }
    linger l{};
    l.l_onoff = 1;
    l.l_linger = 0;
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
}

// Closes with a FIN: unread input is discarded first, since closing a socket
// with unread data sends a RST instead.
void close_fin(int fd) {
    if (fd < 0) {
        return;
    }
    char buf[16384];
    for (int i = 0; i < 64 && ::recv(fd, buf, sizeof buf, 0) > 0; ++i) {
    }
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
}

enum class mode { pass, blackhole, refuse, trickle, split };
const char* const mode_names[] = {"pass", "blackhole", "refuse", "trickle", "split"};

// Directions: up is client -> target, down is target -> client.
constexpr int up = 0;
constexpr int down = 1;

struct chunk {
    std::int64_t due;  // when it may be sent
    std::string data;
};

// A connection's sides: side d is the source of direction d.
constexpr int client_side = up;
constexpr int upstream_side = down;

struct conn {
    int cfd = -1;  // the client's socket
    int ufd = -1;  // the upstream socket, -1 until its connect starts
    bool connecting = false;
    bool dead = false;
    std::deque<chunk> q[2];              // read from the source of a direction, not yet sent
    std::size_t off[2] = {0, 0};         // bytes of q[d].front() already sent
    std::size_t queued[2] = {0, 0};      // bytes in q[d] not yet sent
    bool eof[2] = {false, false};        // the source of d sent its FIN (or failed)
    bool shut[2] = {false, false};       // the destination of d was shut down for writing
    bool failed[2] = {false, false};     // side d failed: its socket is closed
    std::int64_t next_byte[2] = {0, 0};  // trickle: when d may send its next byte

    int src(int d) const { return d == up ? cfd : ufd; }
    int dst(int d) const { return d == up ? ufd : cfd; }
    // Once a side failed (its fd is -1), the connection is still established
    // while the other side takes what is in flight.
    bool established() const { return (ufd >= 0 || failed[upstream_side]) && !connecting; }
};

struct control {
    int fd = -1;
    std::string in;
    std::string out;
    bool closing = false;  // close once `out` is sent
};

struct delay_spec {
    unsigned long long ms = 0;
    unsigned long long jitter = 0;
};

class proxy {
public:
    proxy(const sockaddr_storage& target, socklen_t target_len, std::uint64_t seed, int sig_fd,
          int listen_fd, int control_fd)
        : target_(target),
          target_len_(target_len),
          rng_(seed),
          sig_fd_(sig_fd),
          listen_fd_(listen_fd),
          control_fd_(control_fd) {}

    void run(std::int64_t end);

private:
    void service(conn& c, std::int64_t now, std::int64_t& wake);
    bool flush(conn& c, int d, std::int64_t now, std::int64_t& wake);
    void start_connect(conn& c);
    void finish_connect(conn& c);
    void read_side(conn& c, int d, std::int64_t now);
    bool reading(const conn& c, int d) const {
        return c.established() && !c.eof[d] && c.queued[d] < max_queued;
    }
    bool sendable(const conn& c, int d, std::int64_t now) const {
        return c.established() && !c.q[d].empty() && c.q[d].front().due <= now &&
               (mode_ != mode::trickle || c.next_byte[d] <= now);
    }
    void kill(conn& c, bool with_rst);
    void fail_side(conn& c, int side);
    void accept_clients(std::int64_t now);
    void accept_controls();
    void on_control(control& k, short revents);
    void flush_control(control& k);
    std::string execute(const std::string& line);
    std::size_t live() const;

    sockaddr_storage target_;
    socklen_t target_len_;
    std::mt19937_64 rng_;
    int sig_fd_;
    int listen_fd_;
    int control_fd_;
    mode mode_ = mode::pass;
    delay_spec delay_[2];
    unsigned long long trickle_ms_ = 0;
    unsigned long long accepted_ = 0;
    unsigned long long ended_ = 0;
    unsigned long long bytes_[2] = {0, 0};
    std::int64_t accept_pause_until_ = 0;  // out of fds: stop accepting a moment
    bool quit_ = false;
    std::vector<conn> conns_;
    std::vector<control> controls_;
};

std::size_t proxy::live() const {
    return static_cast<std::size_t>(
        std::count_if(conns_.begin(), conns_.end(), [](const conn& c) { return !c.dead; }));
}

void proxy::kill(conn& c, bool with_rst) {
    if (with_rst) {
        close_rst(c.cfd);
        close_rst(c.ufd);
    } else {
        close_fin(c.cfd);
        close_fin(c.ufd);
    }
    c.cfd = c.ufd = -1;
    c.dead = true;
    ++ended_;
}

// Side `side` failed (a RST, an error, a send it cannot take): it is closed and
// what was queued for it dropped. What it sent that is still queued goes on
// to the other side on its schedule, then a FIN (service()); with nothing of
// it queued, the other side is reset now, as the failed side was.
void proxy::fail_side(conn& c, int side) {
    const int other = 1 - side;
    int& fd = side == client_side ? c.cfd : c.ufd;
    close_rst(fd);
    fd = -1;
    c.failed[side] = true;
    c.eof[side] = true;  // nothing more comes from it
    c.q[other].clear();  // direction `other` goes to it
    c.off[other] = 0;
    c.queued[other] = 0;
    if (c.q[side].empty() || c.failed[other]) {
        kill(c, true);
    }
}

void proxy::start_connect(conn& c) {
    c.ufd = ::socket(target_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.ufd < 0) {
        kill(c, true);
        return;
    }
    set_nodelay(c.ufd);
    if (::connect(c.ufd, reinterpret_cast<const sockaddr*>(&target_), target_len_) == 0) {
        c.connecting = false;
    } else if (errno == EINPROGRESS || errno == EINTR) {
        c.connecting = true;
    } else {
        kill(c, true);
    }
}

void proxy::finish_connect(conn& c) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(c.ufd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        kill(c, true);
        return;
    }
    c.connecting = false;
}

void proxy::read_side(conn& c, int d, std::int64_t now) {
    char buf[65536];
    const ssize_t n = ::recv(c.src(d), buf, sizeof buf, 0);
    if (n == 0) {
        c.eof[d] = true;
    } else if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            fail_side(c, d);
        }
    } else if (c.failed[1 - d]) {
        // Its destination failed: nobody to deliver it to (read only to
        // see the source's end).
    } else {
        unsigned long long ms = delay_[d].ms;
        if (delay_[d].jitter > 0) {
            ms += std::uniform_int_distribution<unsigned long long>(0, delay_[d].jitter)(rng_);
        }
        const auto size = static_cast<std::size_t>(n);
        c.q[d].push_back(
            chunk{now + static_cast<std::int64_t>(ms) * ns_per_ms, std::string(buf, size)});
        c.queued[d] += size;
    }
}

// Sends what direction d may send now. False on a send error.
bool proxy::flush(conn& c, int d, std::int64_t now, std::int64_t& wake) {
    std::size_t burst = split_burst;
    while (!c.q[d].empty()) {
        chunk& ch = c.q[d].front();
        if (ch.due > now) {
            wake = std::min(wake, ch.due);
            return true;
        }
        std::size_t len = ch.data.size() - c.off[d];
        if (mode_ == mode::trickle) {
            if (c.next_byte[d] > now) {
                wake = std::min(wake, c.next_byte[d]);
                return true;
            }
            len = 1;
        } else if (mode_ == mode::split) {
            if (burst-- == 0) {
                wake = now;  // more at once, after a look at the other sockets
                return true;
            }
            len = 1;
        }
        const ssize_t n = ::send(c.dst(d), ch.data.data() + c.off[d], len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        const auto sent = static_cast<std::size_t>(n);
        c.off[d] += sent;
        c.queued[d] -= sent;
        bytes_[d] += sent;
        if (mode_ == mode::trickle) {
            c.next_byte[d] = now + static_cast<std::int64_t>(trickle_ms_) * ns_per_ms;
        }
        if (c.off[d] == ch.data.size()) {
            c.q[d].pop_front();
            c.off[d] = 0;
        }
    }
    return true;
}

// Everything a connection can do without waiting: its upstream connect, its
// deliveries, its half-closes, its end.
void proxy::service(conn& c, std::int64_t now, std::int64_t& wake) {
    if (c.ufd < 0 && !c.failed[upstream_side]) {
        start_connect(c);
    }
    if (c.dead || !c.established()) {
        return;
    }
    for (const int d : {up, down}) {
        const int to = 1 - d;  // the side direction d delivers to
        if (!c.failed[to] && !flush(c, d, now, wake)) {
            fail_side(c, to);
            if (c.dead) {
                return;
            }
        }
        if (c.eof[d] && c.q[d].empty() && !c.shut[d]) {
            if (!c.failed[to]) {
                ::shutdown(c.dst(d), SHUT_WR);
            }
            c.shut[d] = true;
        }
    }
    if (c.shut[up] && c.shut[down]) {
        if (c.cfd >= 0) {
            ::close(c.cfd);
        }
        if (c.ufd >= 0) {
            ::close(c.ufd);
        }
        c.cfd = c.ufd = -1;
        c.dead = true;
        ++ended_;
    }
}

void proxy::accept_clients(std::int64_t now) {
    for (int i = 0; i < 64; ++i) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                accept_pause_until_ = now + 100 * ns_per_ms;
            }
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            return;
        }
        ++accepted_;
        if (mode_ == mode::refuse || live() >= max_conns) {
            close_rst(fd);
            ++ended_;
            continue;
        }
        set_nodelay(fd);
        conn c;
        c.cfd = fd;
        conns_.push_back(std::move(c));  // service() connects it unless blackholed
    }
}

void proxy::accept_controls() {
    for (int i = 0; i < 16; ++i) {
        const int fd = ::accept4(control_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            return;
        }
        if (controls_.size() >= max_controls) {
            ::close(fd);
            continue;
        }
        control k;
        k.fd = fd;
        controls_.push_back(std::move(k));
    }
}

void proxy::flush_control(control& k) {
    while (!k.out.empty()) {
        const ssize_t n = ::send(k.fd, k.out.data(), k.out.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                k.out.clear();
                k.closing = true;
            }
            break;
        }
        k.out.erase(0, static_cast<std::size_t>(n));
    }
    if ((k.closing && k.out.empty()) || k.out.size() > max_control_out) {
        ::close(k.fd);
        k.fd = -1;
    }
}

void proxy::on_control(control& k, short revents) {
    if (!k.closing && (revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        char buf[4096];
        const ssize_t n = ::recv(k.fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            ::close(k.fd);
            k.fd = -1;
            return;
        }
        if (n > 0) {
            k.in.append(buf, static_cast<std::size_t>(n));
        }
        std::size_t nl;
        while (!k.closing && !quit_ && (nl = k.in.find('\n')) != std::string::npos) {
            std::string line = k.in.substr(0, nl);
            k.in.erase(0, nl + 1);
            if (line.size() > max_line) {
                k.closing = true;
                k.out += "ERR line too long\n";
                break;
            }
            if (!line.empty() && line.back() == '\r') {
                line.pop_back();
            }
            k.out += execute(line) + "\n";
        }
        if (!k.closing && k.in.size() > max_line) {
            k.closing = true;
            k.out += "ERR line too long\n";
        }
    }
    flush_control(k);
}

std::string proxy::execute(const std::string& line) {
    std::vector<std::string> w;
    std::size_t i = 0;
    while (i < line.size()) {
        const std::size_t start = line.find_first_not_of(" \t", i);
        if (start == std::string::npos) {
            break;
        }
        const std::size_t stop = std::min(line.find_first_of(" \t", start), line.size());
        w.push_back(line.substr(start, stop - start));
        i = stop;
    }
    if (w.empty()) {
        return "ERR empty command";
    }
    const std::string& cmd = w[0];
    const std::size_t args = w.size() - 1;
    unsigned long long a = 0;
    unsigned long long b = 0;
    if (cmd == "delay") {
        if (args < 2 || args > 3) {
            return "ERR usage: delay up|down|both MS [JITTER]";
        }
        const int first = w[1] == "down" ? down : up;
        const int last = w[1] == "up" ? up : down;
        if (w[1] != "up" && w[1] != "down" && w[1] != "both") {
            return "ERR direction must be up, down or both";
        }
        if (!parse_uint(w[2], max_ms, a) || (args == 3 && !parse_uint(w[3], max_ms, b))) {
            return "ERR bad number (0.." + std::to_string(max_ms) + " ms)";
        }
        for (int d = first; d <= last; ++d) {
            delay_[d] = delay_spec{a, b};
        }
        return "OK";
    }
    if (cmd == "deliver") {
        if (args != 1 || (w[1] != "up" && w[1] != "down" && w[1] != "both")) {
            return "ERR usage: deliver up|down|both";
        }
        const int first = w[1] == "down" ? down : up;
        const int last = w[1] == "up" ? up : down;
        const std::int64_t now = edgelock_test::mono_ns();
        std::size_t n = 0;
        for (conn& c : conns_) {
            for (int d = first; d <= last; ++d) {
                for (chunk& ch : c.q[d]) {
                    ch.due = std::min(ch.due, now);
                    ++n;
                }
            }
        }
        return "OK chunks=" + std::to_string(n);
    }
    if (cmd == "trickle") {
        if (args != 1) {
            return "ERR usage: trickle MS";
        }
        if (!parse_uint(w[1], max_ms, a)) {
            return "ERR bad number (0.." + std::to_string(max_ms) + " ms)";
        }
        mode_ = mode::trickle;
        trickle_ms_ = a;
        for (conn& c : conns_) {
            c.next_byte[up] = c.next_byte[down] = 0;
        }
        return "OK";
    }
    static const char* const plain[] = {"pass", "blackhole", "refuse", "split",
                                        "drop", "reset",     "status", "quit"};
    if (std::find(std::begin(plain), std::end(plain), cmd) == std::end(plain)) {
        return "ERR unknown command: " + cmd;
    }
    if (args != 0) {
        return "ERR " + cmd + " takes no argument";
    }
    if (cmd == "pass") {
        mode_ = mode::pass;
        delay_[up] = delay_[down] = delay_spec{};
    } else if (cmd == "blackhole") {
        mode_ = mode::blackhole;
    } else if (cmd == "refuse") {
        mode_ = mode::refuse;
    } else if (cmd == "split") {
        mode_ = mode::split;
    } else if (cmd == "drop" || cmd == "reset") {
        std::size_t n = 0;
        for (conn& c : conns_) {
            if (!c.dead) {
                kill(c, cmd == "reset");
                ++n;
            }
        }
        return "OK " + cmd + "=" + std::to_string(n);
    } else if (cmd == "status") {
        std::size_t queued[2] = {0, 0};
        for (const conn& c : conns_) {
            for (const int d : {up, down}) {
                queued[d] += c.dead ? 0 : c.queued[d];
            }
        }
        char s[320];
        std::snprintf(s, sizeof s,
                      "OK mode=%s delay_up=%llu/%llu delay_down=%llu/%llu conns=%zu "
                      "accepted=%llu ended=%llu bytes_up=%llu bytes_down=%llu queued_up=%zu "
                      "queued_down=%zu",
                      mode_names[static_cast<int>(mode_)], delay_[up].ms, delay_[up].jitter,
                      delay_[down].ms, delay_[down].jitter, live(), accepted_, ended_, bytes_[up],
                      bytes_[down], queued[up], queued[down]);
        return s;
    } else if (cmd == "quit") {
        quit_ = true;
    }
    return "OK";
}

void proxy::run(std::int64_t end) {
    std::vector<pollfd> fds;
    while (!quit_) {
        std::int64_t now = edgelock_test::mono_ns();
        if (now >= end) {
            break;
        }
        std::int64_t wake = end;
        const bool held = mode_ == mode::blackhole;
        if (!held) {
            for (conn& c : conns_) {
                if (!c.dead) {
                    service(c, now, wake);
                }
            }
        }
        conns_.erase(
            std::remove_if(conns_.begin(), conns_.end(), [](const conn& c) { return c.dead; }),
            conns_.end());
        controls_.erase(std::remove_if(controls_.begin(), controls_.end(),
                                       [](const control& k) { return k.fd < 0; }),
                        controls_.end());

        now = edgelock_test::mono_ns();
        fds.clear();
        fds.push_back(pollfd{sig_fd_, POLLIN, 0});
        fds.push_back(pollfd{now >= accept_pause_until_ ? listen_fd_ : -1, POLLIN, 0});
        if (accept_pause_until_ > now) {
            wake = std::min(wake, accept_pause_until_);
        }
        fds.push_back(pollfd{control_fd_, POLLIN, 0});
        for (const control& k : controls_) {
            const short ev =
                static_cast<short>((k.closing ? 0 : POLLIN) | (k.out.empty() ? 0 : POLLOUT));
            fds.push_back(pollfd{k.fd, ev, 0});
        }
        const std::size_t base = fds.size();
        for (const conn& c : conns_) {
            short cev = 0;
            short uev = 0;
            if (!held && c.connecting) {
                uev = POLLOUT;
            } else if (!held) {
                cev = static_cast<short>((reading(c, up) ? POLLIN : 0) |
                                         (sendable(c, down, now) ? POLLOUT : 0));
                uev = static_cast<short>((reading(c, down) ? POLLIN : 0) |
                                         (sendable(c, up, now) ? POLLOUT : 0));
            }
            // A socket nothing is wanted from is left out: its errors wait.
            fds.push_back(pollfd{cev != 0 ? c.cfd : -1, cev, 0});
            fds.push_back(pollfd{uev != 0 ? c.ufd : -1, uev, 0});
        }
        const std::int64_t wait_ms =
            std::max<std::int64_t>(0, (wake - now + ns_per_ms - 1) / ns_per_ms);
        const int r = ::poll(fds.data(), static_cast<nfds_t>(fds.size()),
                             static_cast<int>(std::min<std::int64_t>(wait_ms, 86400000)));
        if (r < 0 && errno != EINTR) {
            std::perror("fault_proxy: poll");
            break;
        }
        if (r <= 0) {
            continue;
        }
        if (fds[0].revents != 0) {
            break;  // SIGTERM, SIGINT, or the parent's death
        }
        now = edgelock_test::mono_ns();
        const std::size_t polled = conns_.size();
        for (std::size_t i = 0; i < polled; ++i) {
            conn& c = conns_[i];
            const short cre = fds[base + 2 * i].revents;
            const short ure = fds[base + 2 * i + 1].revents;
            if (c.connecting) {
                if (ure != 0) {
                    finish_connect(c);
                }
                continue;
            }
            if (cre != 0 && !c.dead && reading(c, up)) {
                read_side(c, up, now);
            }
            if (ure != 0 && !c.dead && reading(c, down)) {
                read_side(c, down, now);
            }
        }
        if ((fds[1].revents & POLLIN) != 0) {
            accept_clients(now);
        }
        const std::size_t nk = controls_.size();
        if ((fds[2].revents & POLLIN) != 0) {
            accept_controls();
        }
        for (std::size_t i = 0; i < nk && !quit_; ++i) {
            if (fds[3 + i].revents != 0) {
                on_control(controls_[i], fds[3 + i].revents);
            }
        }
    }
    for (control& k : controls_) {
        if (k.fd >= 0) {
            flush_control(k);  // the answer to quit
            if (k.fd >= 0) {
                ::close(k.fd);
            }
        }
    }
    for (conn& c : conns_) {
        if (c.cfd >= 0) {
            ::close(c.cfd);
        }
        if (c.ufd >= 0) {
            ::close(c.ufd);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string target_text;
    unsigned long long listen_port = 0;
    unsigned long long control_port = 0;
    unsigned long long max_seconds = 900;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i += 2) {
        const std::string opt = argv[i];
        if (i + 1 >= argc) {
            usage();
            return exit_usage;
        }
        const std::string val = argv[i + 1];
        bool ok = true;
        if (opt == "--target") {
            target_text = val;
        } else if (opt == "--listen") {
            ok = parse_uint(val, 65535, listen_port);
        } else if (opt == "--control") {
            ok = parse_uint(val, 65535, control_port);
        } else if (opt == "--max-seconds") {
            ok = parse_uint(val, 86400, max_seconds) && max_seconds > 0;
        } else if (opt == "--seed") {
            ok = parse_uint(val, UINT64_MAX, seed);
        } else {
            ok = false;
        }
        if (!ok) {
            usage();
            return exit_usage;
        }
    }
    if (target_text.empty()) {
        usage();
        return exit_usage;
    }
    sockaddr_storage target{};
    socklen_t target_len = 0;
    if (!parse_target(target_text, target, target_len)) {
        std::fprintf(stderr,
                     "fault_proxy: --target must be a numeric loopback address "
                     "(127.x.y.z:PORT or [::1]:PORT), not '%s'\n",
                     target_text.c_str());
        return exit_usage;
    }

    // Signals arrive through a pipe the loop polls: no race with poll().
    int sig_pipe[2];
    if (::pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        std::perror("fault_proxy: pipe");
        return 1;
    }
    sig_pipe_w = sig_pipe[1];
    ::signal(SIGPIPE, SIG_IGN);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) {
        return 0;  // the parent died before the line above
    }

    auto lport = static_cast<std::uint16_t>(listen_port);
    auto cport = static_cast<std::uint16_t>(control_port);
    const int lfd = listen_on(lport);
    const int cfd = lfd < 0 ? -1 : listen_on(cport);
    if (cfd < 0) {
        std::perror("fault_proxy: listen");
        return 1;
    }
    std::printf("%u %u\n", static_cast<unsigned>(lport), static_cast<unsigned>(cport));
    std::fflush(stdout);

    const std::int64_t end =
        edgelock_test::mono_ns() + static_cast<std::int64_t>(max_seconds) * 1000000000;
    proxy p(target, target_len, seed, sig_pipe[0], lfd, cfd);
    p.run(end);
    ::close(lfd);
    ::close(cfd);
    ::close(sig_pipe[0]);
    ::close(sig_pipe[1]);
    return 0;
}
