// A hostile fake Redis server for the agent's tests: it listens on a free
// loopback port, prints that port on stdout (one line) and answers every
// command it reads the way MODE says, for --seconds N (default 30), then exits.
//
//   fake_redis MODE [--seconds N] [--tally FILE]
//   fake_redis moved-chain [--ports K] [--moved-host NAME] [--seconds N]
//   fake_redis sentinel --master HOST:PORT [--switch-to HOST:PORT
//              --switch-after MS] [--seconds N]
//   fake_redis push-flood [--rate N] [--flush yes|no] [--seconds N]
//   fake_redis cluster --behave NAME [--seconds N]
//
// Modes: silent, reset, close, trickle, garbage, huge-length, length-2-63,
// negative-length, deep, no-cr, big-error, wrong-type, ok-then-garbage, random
// (see usage()), and moved-chain: K free loopback ports (default 10), printed
// on one line in ring order, separated by spaces, where a key's request on
// one is answered MOVED to the next (moved_chain.hpp); sentinel: a Redis
// Sentinel naming one master, which it may announce moved (fake_sentinel.hpp);
// push-flood: a RESP3 Redis where the lock is busy and every tracking
// connection is told it changed, N times a second (push_flood.hpp).
// cluster: two ports, the masters of a Redis Cluster that misroute the lock's
// requests as NAME says (fake_cluster.hpp).
//
// Commands are split from the input as RESP arrays of bulk strings, or as
// inline lines when the input is not that (resp_text.hpp); each counts as one
// command. Many clients may be connected at once (one poll() loop); a client
// that goes away is dropped, never a reason to stop.
//
// --tally FILE (any mode): FILE says what the server was asked, one line per
// kind, "NAME COUNT", rewritten (write, then rename) at most every 20 ms
// while it changes and once at the end: each command by its name in upper
// case, with its subcommand for CLIENT, SCRIPT, SENTINEL and CLUSTER
// ("SCRIPT LOAD"), and "accepted P" for the connections accepted on the
// P-th port printed (0 first). A test reads it to count what a client sent.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tools/clock.hpp"
#include "tools/fake_cluster.hpp"
#include "tools/fake_sentinel.hpp"
#include "tools/moved_chain.hpp"
#include "tools/push_flood.hpp"
#include "tools/resp_text.hpp"

namespace {

enum class mode {
    silent,
    reset,
    close,
    trickle,
    garbage,
    huge_length,
    length_2_63,
    negative_length,
    deep,
    no_cr,
    big_error,
    wrong_type,
    ok_then_garbage,
    random,
    moved_chain,
    sentinel,
    push_flood,
    cluster,
};

struct mode_name {
    const char* name;
    mode m;
};

const mode_name modes[] = {
    {"silent", mode::silent},
    {"reset", mode::reset},
    {"close", mode::close},
    {"trickle", mode::trickle},
    {"garbage", mode::garbage},
    {"huge-length", mode::huge_length},
    {"length-2-63", mode::length_2_63},
    {"negative-length", mode::negative_length},
    {"deep", mode::deep},
    {"no-cr", mode::no_cr},
    {"big-error", mode::big_error},
    {"wrong-type", mode::wrong_type},
    {"ok-then-garbage", mode::ok_then_garbage},
    {"random", mode::random},
    {"moved-chain", mode::moved_chain},
    {"sentinel", mode::sentinel},
    {"push-flood", mode::push_flood},
    {"cluster", mode::cluster},
};

// Set-up commands ok-then-garbage answers properly before turning hostile.
constexpr int ok_commands = 12;
// Replies wait in a connection's buffer up to this; more are dropped.
constexpr std::size_t max_pending = 16u << 20;
constexpr int max_clients = 64;
// moved-chain: ports of the ring by default, and at most. Ten is the agent's
// node's own connection and its nine extra Cluster connections.
constexpr int chain_ports = 10;
constexpr int max_chain_ports = 64;
// random: bytes queued per connection at a time, refilled as they go out.
constexpr std::size_t random_chunk = 4096;

// moved-chain: the host its MOVED answers name. sentinel: its settings from
// the command line, and the switch's time.
std::string moved_host = "127.0.0.1";
edgelock_test::fake_sentinel::server sentinel;
edgelock_test::push_flood::server flood;
edgelock_test::fake_cluster::server cluster;

// --tally: where, what was counted, and whether FILE is behind.
std::string tally_path;
std::map<std::string, long> tally;
bool tally_dirty = false;
double tally_written = 0;
constexpr double tally_every = 0.02;

void count(const std::string& what) {
    if (!tally_path.empty()) {
        ++tally[what];
        tally_dirty = true;
    }
}

void count_command(const std::vector<std::string>& args) {
    if (args.empty()) {
        return;
    }
    const std::string name = edgelock_test::resp_text::upper(args[0]);
    const bool has_sub =
        name == "CLIENT" || name == "SCRIPT" || name == "SENTINEL" || name == "CLUSTER";
    count(has_sub && args.size() > 1 ? name + " " + edgelock_test::resp_text::upper(args[1])
                                     : name);
}

// FILE rewritten whole: a reader sees the old counts or the new, never half.
void write_tally(double now) {
    if (tally_path.empty() || !tally_dirty) {
        return;
    }
    const std::string tmp = tally_path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr) {
        return;
    }
    for (const auto& kv : tally) {
        std::fprintf(f, "%s %ld\n", kv.first.c_str(), kv.second);
    }
    if (std::fclose(f) == 0 && std::rename(tmp.c_str(), tally_path.c_str()) == 0) {
        tally_dirty = false;
        tally_written = now;
    }
}

void usage() {
    std::fprintf(stderr,
                 "usage: fake_redis MODE [--seconds N] [--tally FILE]\n"
                 "       fake_redis moved-chain [--ports K] [--moved-host NAME] [--seconds N]\n"
                 "       fake_redis sentinel --master HOST:PORT [--switch-to HOST:PORT\n"
                 "                  --switch-after MS | --flip-every MS] [--no-confirm 1]\n"
                 "                  [--stale 1] [--seconds N]\n"
                 "       fake_redis push-flood [--rate N] [--flush yes|no] [--seconds N]\n"
                 "       fake_redis cluster --behave NAME [--seconds N]\n"
                 "  silent           read everything, never answer\n"
                 "  reset            close with a TCP RST on the first bytes received\n"
                 "  close            close every connection as soon as it is accepted\n"
                 "  trickle          +OK to every command, one byte per second\n"
                 "  garbage          random bytes to every command\n"
                 "  huge-length      $9223372036854775807 to every command\n"
                 "  length-2-63      $9223372036854775808 (2^63) to every command\n"
                 "  negative-length  $-5 to every command\n"
                 "  deep             100000 nested *1 to the first command, then nothing\n"
                 "  no-cr            +OK without the CR to every command\n"
                 "  big-error        a 1000000-byte error to every command\n"
                 "  wrong-type       the array [foo, bar] to every command\n"
                 "  ok-then-garbage  +OK to the first %d commands, then random bytes\n"
                 "  random           seeded random bytes from the moment a connection is\n"
                 "                   accepted, without end, whatever the client sends\n"
                 "  moved-chain      K ports (default %d, at most %d), printed on one line;\n"
                 "                   set-up answered as a Redis 7 without HELLO (RESP2),\n"
                 "                   subscriptions made; anything else on port i MOVED to\n"
                 "                   port i+1 (at NAME, default 127.0.0.1), the last to the first\n"
                 "  sentinel         a sentinel whose master is HOST:PORT, until MS after it\n"
                 "                   started: then +switch-master to the new one\n"
                 "  push-flood       RESP3 Redis 7 where the lock is busy; a tracking\n"
                 "                   connection told N times a second (default 6000) that the\n"
                 "                   key changed, or with --flush yes that all keys did\n"
                 "  cluster          two ports, A and B, printed on one line: Cluster masters\n"
                 "                   answering the lock's requests as NAME says: moved-self,\n"
                 "                   wrong-slot, ask-moved, grant-then-moved, ask-grant\n",
                 ok_commands, chain_ports, max_chain_ports);
}

struct connection {
    int fd = -1;
    std::string in;
    std::string out;
    std::size_t out_off = 0;
    int commands = 0;
    std::uint16_t next_port = 0;  // moved-chain: where its port's MOVED points
    std::int64_t id = 0;          // moved-chain: its CLIENT ID
    edgelock_test::fake_sentinel::session sentinel;
    edgelock_test::push_flood::session flood;
    edgelock_test::fake_cluster::session cluster;
    bool answered_deep = false;
    double next_trickle = 0;  // trickle: when the next byte may go
    std::mt19937 rng;         // random: this connection's own stream
};

std::string random_bytes(std::mt19937& rng, std::size_t n) {
    std::string s(n, '\0');
    for (char& c : s) {
        c = static_cast<char>(rng() & 0xffu);
    }
    return s;
}

// The reply to one command, given how many came before it on this connection.
std::string reply_for(mode m, connection& c, const std::vector<std::string>& args,
                      std::mt19937& rng) {
    switch (m) {
    case mode::trickle:
        return "+OK\r\n";
    case mode::garbage:
        return random_bytes(rng, 64);
    case mode::huge_length:
        return "$9223372036854775807\r\n";
    case mode::length_2_63:
        return "$9223372036854775808\r\n";
    case mode::negative_length:
        return "$-5\r\n";
    case mode::deep: {
        if (c.answered_deep) {
            return std::string();
        }
        c.answered_deep = true;
        std::string s;
        s.reserve(100000 * 4);
        for (int i = 0; i < 100000; ++i) {
            s += "*1\r\n";
        }
        return s;
    }
    case mode::no_cr:
        return "+OK\n";
    case mode::big_error:
        return "-ERR " + std::string(1000000, 'x') + "\r\n";
    case mode::wrong_type:
        return "*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n";
    case mode::ok_then_garbage:
        return c.commands < ok_commands ? std::string("+OK\r\n") : random_bytes(rng, 64);
    case mode::moved_chain:
        return edgelock_test::moved_chain::reply(args, moved_host, c.next_port, c.id);
    case mode::sentinel:
        return sentinel.reply(args, c.sentinel, edgelock_test::mono_s());
    case mode::push_flood:
        return flood.reply(args, c.flood, edgelock_test::mono_s());
    case mode::cluster:
        return cluster.reply(args, c.cluster, edgelock_test::mono_s());
    case mode::silent:
    case mode::reset:
    case mode::close:
    case mode::random:  // its bytes do not answer anything: see main()
        break;
    }
    return std::string();
}

void close_with_rst(int fd) {
    linger l{};
    l.l_onoff = 1;
    l.l_linger = 0;
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
}

// Sends what the connection may send now. False when the peer is gone.
bool flush(mode m, connection& c, double now) {
    while (c.out_off < c.out.size()) {
        std::size_t len = c.out.size() - c.out_off;
        if (m == mode::trickle) {
            if (now < c.next_trickle) {
                return true;
            }
            len = 1;
        }
        const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        c.out_off += static_cast<std::size_t>(n);
        if (m == mode::trickle) {
            c.next_trickle = now + 1.0;
        }
    }
    c.out.clear();
    c.out_off = 0;
    return true;
}

// Reads what is there and queues the replies. False when the connection is
// to be closed.
bool on_readable(mode m, connection& c, std::mt19937& rng) {
    char buf[65536];
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0) {
        return false;
    }
    if (n < 0) {
        return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (m == mode::reset) {
        close_with_rst(c.fd);
        c.fd = -1;
        return false;
    }
    if (m == mode::silent || m == mode::random) {
        return true;
    }
    c.in.append(buf, static_cast<std::size_t>(n));
    if (c.in.size() > max_pending) {
        c.in.clear();  // not commands, whatever it is
    }
    std::size_t pos = 0;
    std::vector<std::string> args;
    while (edgelock_test::resp_text::take_command(c.in, pos, args)) {
        count_command(args);
        const std::string r = reply_for(m, c, args, rng);
        ++c.commands;
        if (c.out.size() - c.out_off + r.size() <= max_pending) {
            c.out += r;
        }
    }
    c.in.erase(0, pos);
    return true;
}

// A listening socket on a free loopback port: its fd, or -1.
int listen_loopback(std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd, 16) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &alen) != 0) {
        if (fd >= 0) {
            ::close(fd);
        }
        return -1;
    }
    port = ntohs(a.sin_port);
    return fd;
}

// A number of at least `min` and at most `max`, the whole of `s`.
bool parse_number(const char* s, double min, double max, double& out) {
    char* end = nullptr;
    out = std::strtod(s, &end);
    return end != s && *end == '\0' && out >= min && out <= max;
}

// A host to name in a reply: not empty, and no byte that would end its line.
bool parse_host(const char* s, std::string& out) {
    out = s;
    return !out.empty() && out.find_first_of(" \r\n") == std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
    const mode_name* chosen = nullptr;
    for (const mode_name& mn : modes) {
        if (argc >= 2 && std::strcmp(argv[1], mn.name) == 0) {
            chosen = &mn;
        }
    }
    double seconds = 30;
    double ports = chosen != nullptr && chosen->m == mode::moved_chain ? chain_ports
                   : chosen != nullptr && chosen->m == mode::cluster   ? 2
                                                                       : 1;
    bool ports_given = false;
    for (int i = 2; chosen != nullptr && i < argc; i += 2) {
        const bool ok = i + 1 < argc &&
                        ((std::strcmp(argv[i], "--seconds") == 0 &&
                          parse_number(argv[i + 1], 0.001, 1e6, seconds)) ||
                         (std::strcmp(argv[i], "--tally") == 0 && tally_path.empty() &&
                          argv[i + 1][0] != '\0' && (tally_path = argv[i + 1], true)) ||
                         (std::strcmp(argv[i], "--ports") == 0 && chosen->m == mode::moved_chain &&
                          !ports_given && parse_number(argv[i + 1], 1, max_chain_ports, ports) &&
                          ports == static_cast<double>(static_cast<int>(ports))) ||
                         (std::strcmp(argv[i], "--moved-host") == 0 &&
                          chosen->m == mode::moved_chain && parse_host(argv[i + 1], moved_host)) ||
                         (chosen->m == mode::sentinel && sentinel.option(argv[i], argv[i + 1])) ||
                         (chosen->m == mode::push_flood && flood.option(argv[i], argv[i + 1])) ||
                         (chosen->m == mode::cluster && cluster.option(argv[i], argv[i + 1])));
        ports_given = ports_given || std::strcmp(argv[i], "--ports") == 0;
        if (!ok) {
            chosen = nullptr;
        }
    }
    if (chosen != nullptr && ((chosen->m == mode::sentinel && !sentinel.ready()) ||
                              (chosen->m == mode::cluster && !cluster.ready()))) {
        chosen = nullptr;
    }
    if (chosen == nullptr) {
        usage();
        return 2;
    }
    const mode m = chosen->m;
    ::signal(SIGPIPE, SIG_IGN);

    std::vector<int> listeners;
    std::vector<std::uint16_t> listen_ports;
    for (int i = 0; i < static_cast<int>(ports); ++i) {
        std::uint16_t port = 0;
        const int fd = listen_loopback(port);
        if (fd < 0) {
            std::perror("fake_redis: listen");
            return 1;
        }
        listeners.push_back(fd);
        listen_ports.push_back(port);
    }
    // One line, whatever the mode: a reader takes the first line for the port.
    for (std::size_t i = 0; i < listen_ports.size(); ++i) {
        std::printf(i == 0 ? "%u" : " %u", static_cast<unsigned>(listen_ports[i]));
    }
    std::printf("\n");
    std::fflush(stdout);

    std::mt19937 rng(20240601u);  // seeded: the same garbage every run
    std::vector<connection> conns;
    std::uint32_t accepted = 0;
    const std::size_t lcount = listeners.size();
    const double deadline = edgelock_test::mono_s() + seconds;
    sentinel.start(edgelock_test::mono_s());
    flood.start(edgelock_test::mono_s());
    cluster.start(listen_ports);
    for (;;) {
        const double now = edgelock_test::mono_s();
        if (now >= deadline) {
            break;
        }
        if (tally_dirty && now >= tally_written + tally_every) {
            write_tally(now);
        }
        std::vector<pollfd> fds;
        for (const int lfd : listeners) {
            fds.push_back(pollfd{lfd, POLLIN, 0});
        }
        double wake = deadline;
        if (tally_dirty) {
            wake = std::min(wake, tally_written + tally_every);
        }
        if (m == mode::random) {
            for (connection& c : conns) {
                if (c.out_off >= c.out.size()) {
                    c.out = random_bytes(c.rng, random_chunk);
                    c.out_off = 0;
                }
            }
        }
        if (m == mode::sentinel) {
            for (connection& c : conns) {
                c.out += sentinel.announce(c.sentinel, now);
            }
            wake = std::min(wake, sentinel.next_due(now));
        }
        if (m == mode::push_flood) {
            for (connection& c : conns) {
                if (c.out.size() - c.out_off < max_pending) {
                    c.out += flood.pushes(c.flood, now);
                }
            }
            wake = std::min(wake, flood.next_due(now));
        }
        for (const connection& c : conns) {
            short ev = POLLIN;
            if (c.out_off < c.out.size()) {
                if (m != mode::trickle || now >= c.next_trickle) {
                    ev = static_cast<short>(ev | POLLOUT);
                } else if (c.next_trickle < wake) {
                    wake = c.next_trickle;
                }
            }
            fds.push_back(pollfd{c.fd, ev, 0});
        }
        const int timeout_ms = static_cast<int>((wake - now) * 1000) + 1;
        const int r = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), timeout_ms);
        if (r < 0 && errno != EINTR) {
            std::perror("fake_redis: poll");
            return 1;
        }
        const double t = edgelock_test::mono_s();
        // Connections first: fds[lcount + i] is conns[i] until the vector changes.
        for (std::size_t i = 0; i < conns.size() && r > 0; ++i) {
            connection& c = conns[i];
            const short rev = fds[lcount + i].revents;
            bool keep = true;
            if ((rev & (POLLIN | POLLHUP | POLLERR)) != 0) {
                keep = on_readable(m, c, rng);
            }
            if (keep) {
                keep = flush(m, c, t);
            }
            if (!keep) {
                if (c.fd >= 0) {
                    ::close(c.fd);
                }
                c.fd = -1;
            }
        }
        for (std::size_t i = conns.size(); i-- > 0;) {
            if (conns[i].fd < 0) {
                conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(i));
            }
        }
        for (std::size_t k = 0; k < lcount && r > 0; ++k) {
            if ((fds[k].revents & POLLIN) == 0) {
                continue;
            }
            for (;;) {
                const int cfd =
                    ::accept4(listeners[k], nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0) {
                    break;
                }
                if (m == mode::close || static_cast<int>(conns.size()) >= max_clients) {
                    ::close(cfd);
                    continue;
                }
                count("accepted " + std::to_string(k));
                connection c;
                c.fd = cfd;
                c.next_port = listen_ports[(k + 1) % lcount];
                c.id = static_cast<std::int64_t>(accepted) + 1;
                c.cluster.port = k;
                c.cluster.id = c.id;
                // Seeded per connection: the same bytes every run.
                c.rng.seed(20240601u + accepted++);
                conns.push_back(std::move(c));
            }
        }
    }
    write_tally(edgelock_test::mono_s());
    for (const connection& c : conns) {
        ::close(c.fd);
    }
    for (const int lfd : listeners) {
        ::close(lfd);
    }
    return 0;
}
