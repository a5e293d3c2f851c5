// A slow, lossy IP link between two network namespaces, for tests and
// benchmarks that run real programs over the kernel's own TCP (this kernel
// has no netem). Root only.
//
//   link_emu [--subnet N] [--seed S] [--max-seconds S] [--reorder]
//
// Two fresh network namespaces, "client" and "server", each with its
// loopback up and a TUN device elink0 (IFF_TUN | IFF_NO_PI, IPv6 off):
// 10.77.N.1/30 in the client's, 10.77.N.2/30 in the server's. Each namespace
// is held by a child process that does nothing else; programs run in one with
// `nsenter --net=/proc/PID/ns/net PROGRAM...`. Every IP packet one TUN device
// sends is read here and written to the other after the direction's one-way
// delay plus a uniform jitter in [-JITTER, +JITTER] ms (never below 0), or
// dropped with the direction's loss probability. By default a packet never
// overtakes an earlier one of its direction (a packet that drew a short delay
// waits behind a slow one), as on cellular links that deliver in order; with
// --reorder each keeps its own time, as netem's jitter does.
//
// N defaults to 1 + pid % 250; instances never clash whatever their N, since
// each has namespaces of its own. Randomness comes from --seed (default 1),
// one generator per direction: the same packets get the same fates. The
// namespaces vanish with their holders: when this program exits (quit, end
// of stdin, SIGTERM, SIGINT, --max-seconds (default 900), its parent's
// death), and with the last program still running in them.
//
// Once ready, one line goes to stdout:
//   READY client_pid=P server_pid=P client=10.77.N.1 server=10.77.N.2
// or, when the link cannot be made here (not root, no /dev/net/tun, no
// namespaces), "unavailable: REASON" and exit 69; 64 on a bad command line.
//
// Control: text lines on stdin, one answer line each on stdout, "OK[ ...]" or
// "ERR message" (an ERR changes nothing). Times in ms, 0..600000.
//   profile DIR MS JITTER LOSS  DIR up (client->server), down or both; LOSS
//                               in permille (0..1000); applies to packets
//                               read from now on
//   outage MS                   every packet, both ways, is dropped for MS ms
//                               from now (when read, and when due); 0 heals
//   status                      OK up_in= up_out= up_lost= up_cut= up_queued=
//                               up_bytes= down_... outage_ms= (bytes: IP
//                               bytes delivered; lost: drawn as lost; cut:
//                               dropped by an outage or a full queue)
//   quit                        OK, then exit 0
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
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
#include <utility>
#include <vector>

namespace {

constexpr const char* device = "elink0";
constexpr std::size_t queue_limit = 4096;  // packets per direction
constexpr long max_ms = 600000;

volatile sig_atomic_t stop_signal = 0;
void on_signal(int sig) {
    stop_signal = sig;
}

std::int64_t now_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

void say(const std::string& line) {
    const std::string l = line + "\n";
    std::size_t done = 0;
    while (done < l.size()) {
        const ssize_t n = ::write(1, l.data() + done, l.size() - done);
        if (n <= 0 && errno != EINTR) {
            return;
        }
        done += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
}

[[noreturn]] void unavailable(const std::string& why) {
    say("unavailable: " + why);
    std::exit(69);
}

std::string errno_text(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
}

bool set_up(int s, const char* name) {
    ifreq r{};
    std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", name);
    if (::ioctl(s, SIOCGIFFLAGS, &r) != 0) {
        return false;
    }
    r.ifr_flags = static_cast<short>(r.ifr_flags | IFF_UP);
    return ::ioctl(s, SIOCSIFFLAGS, &r) == 0;
}

bool set_address(int s, unsigned request, const char* name, const std::string& dotted) {
    ifreq r{};
    std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", name);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, dotted.c_str(), &a.sin_addr);
    std::memcpy(&r.ifr_addr, &a, sizeof a);
    return ::ioctl(s, request, &r) == 0;
}

// In a new network namespace: loopback up, the TUN device with its address.
// The device's descriptor, or -1 with *why set.
int make_side(const std::string& address, std::string* why) {
    if (::unshare(CLONE_NEWNET) != 0) {
        *why = errno_text("unshare(CLONE_NEWNET)");
        return -1;
    }
    const int tun = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (tun < 0) {
        *why = errno_text("/dev/net/tun");
        return -1;
    }
    ifreq r{};
    r.ifr_flags = IFF_TUN | IFF_NO_PI;
    std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", device);
    if (::ioctl(tun, TUNSETIFF, &r) != 0) {
        *why = errno_text("TUNSETIFF");
        return -1;
    }
    // No IPv6 on the link: its neighbour discovery would be traffic no test sent.
    const std::string knob = std::string("/proc/sys/net/ipv6/conf/") + device + "/disable_ipv6";
    const int k = ::open(knob.c_str(), O_WRONLY | O_CLOEXEC);
    if (k >= 0) {
        (void)!::write(k, "1", 1);
        ::close(k);
    }
    const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || !set_up(s, "lo") || !set_address(s, SIOCSIFADDR, device, address) ||
        !set_address(s, SIOCSIFNETMASK, device, "255.255.255.252") || !set_up(s, device)) {
        *why = errno_text("configuring the namespace's interfaces");
        return -1;
    }
    ::close(s);
    return tun;
}

struct side {
    pid_t holder = -1;
    int tun = -1;
};

// A child that makes the namespace, hands its TUN descriptor over, and holds
// the namespace until this process is gone.
side start_side(const std::string& address) {
    int sp[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) {
        unavailable(errno_text("socketpair"));
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        unavailable(errno_text("fork"));
    }
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(0);
        }
        ::close(sp[0]);
        std::string why;
        const int tun = make_side(address, &why);
        char text[256];
        std::snprintf(text, sizeof text, "%s", tun >= 0 ? "ok" : why.c_str());
        iovec v{text, std::strlen(text)};
        msghdr m{};
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
        if (tun >= 0) {
            m.msg_control = control;
            m.msg_controllen = sizeof control;
            cmsghdr* c = CMSG_FIRSTHDR(&m);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            std::memcpy(CMSG_DATA(c), &tun, sizeof tun);
        }
        ::sendmsg(sp[1], &m, MSG_NOSIGNAL);
        if (tun >= 0) {
            ::close(tun);
        }
        char b;
        while (::read(sp[1], &b, 1) != 0 && errno == EINTR) {
        }
        ::_exit(0);
    }
    ::close(sp[1]);
    char text[256] = {};
    iovec v{text, sizeof text - 1};
    msghdr m{};
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    if (::recvmsg(sp[0], &m, MSG_CMSG_CLOEXEC) <= 0) {
        unavailable(errno_text("the namespace's holder"));
    }
    side s;
    s.holder = pid;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            std::memcpy(&s.tun, CMSG_DATA(c), sizeof s.tun);
        }
    }
    if (s.tun < 0) {
        unavailable(text);
    }
    ::fcntl(s.tun, F_SETFL, O_NONBLOCK);
    // sp[0] stays open: the holder reads it until this process is gone.
    return s;
}

struct profile {
    long delay_ms = 0;
    long jitter_ms = 0;
    long loss_permille = 0;
};

struct direction {
    const char* name;
    int from = -1;
    int to = -1;
    profile p;
    std::mt19937_64 rng;
    // Packets by (due time, arrival order).
    std::map<std::pair<std::int64_t, std::uint64_t>, std::vector<char>> queue;
    std::int64_t last_due = 0;
    std::uint64_t seq = 0;
    long long in = 0, out = 0, lost = 0, cut = 0, bytes = 0;
};

std::int64_t outage_until = 0;
bool reorder = false;

void take(direction& d, std::int64_t now) {
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(d.from, buf, sizeof buf);
        if (n <= 0) {
            return;
        }
        ++d.in;
        // Both draws for every packet, whatever the profile: a packet's fate
        // depends only on the seed and its place in the sequence.
        const long draw = static_cast<long>(d.rng() % 1000);
        const std::int64_t span = d.p.jitter_ms * 1000000;
        const std::int64_t jitter =
            span == 0
                ? 0
                : static_cast<std::int64_t>(d.rng() % static_cast<std::uint64_t>(2 * span + 1)) -
                      span;
        if (span == 0) {
            d.rng();
        }
        if (now < outage_until || d.queue.size() >= queue_limit) {
            ++d.cut;
            continue;
        }
        if (draw < d.p.loss_permille) {
            ++d.lost;
            continue;
        }
        std::int64_t due = std::max(now, now + d.p.delay_ms * 1000000 + jitter);
        if (!reorder) {
            due = std::max(due, d.last_due);
            d.last_due = due;
        }
        d.queue.emplace(std::make_pair(due, d.seq++), std::vector<char>(buf, buf + n));
    }
}

void deliver(direction& d, std::int64_t now) {
    while (!d.queue.empty() && d.queue.begin()->first.first <= now) {
        const std::vector<char>& packet = d.queue.begin()->second;
        if (now < outage_until) {
            ++d.cut;
        } else if (::write(d.to, packet.data(), packet.size()) ==
                   static_cast<ssize_t>(packet.size())) {
            ++d.out;
            d.bytes += static_cast<long long>(packet.size());
        } else {
            ++d.cut;
        }
        d.queue.erase(d.queue.begin());
    }
}

bool parse_ms(const std::string& s, long limit, long* v) {
    char* end = nullptr;
    errno = 0;
    const long x = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || x < 0 || x > limit) {
        return false;
    }
    *v = x;
    return true;
}

std::string status(const direction& up, const direction& down, std::int64_t now) {
    std::string s = "OK";
    for (const direction* d : {&up, &down}) {
        char b[256];
        std::snprintf(
            b, sizeof b,
            " %s_in=%lld %s_out=%lld %s_lost=%lld %s_cut=%lld %s_queued=%zu %s_bytes=%lld", d->name,
            d->in, d->name, d->out, d->name, d->lost, d->name, d->cut, d->name, d->queue.size(),
            d->name, d->bytes);
        s += b;
    }
    const std::int64_t left = outage_until > now ? (outage_until - now) / 1000000 : 0;
    s += " outage_ms=" + std::to_string(left);
    return s;
}

// One control line; false on quit.
bool command(const std::string& line, direction& up, direction& down) {
    std::vector<std::string> w;
    std::size_t at = 0;
    while (at < line.size()) {
        const std::size_t end = line.find(' ', at);
        const std::string word = line.substr(at, end == std::string::npos ? end : end - at);
        if (!word.empty()) {
            w.push_back(word);
        }
        at = end == std::string::npos ? line.size() : end + 1;
    }
    const std::int64_t now = now_ns();
    if (w.size() == 5 && w[0] == "profile") {
        profile p;
        if ((w[1] != "up" && w[1] != "down" && w[1] != "both") ||
            !parse_ms(w[2], max_ms, &p.delay_ms) || !parse_ms(w[3], max_ms, &p.jitter_ms) ||
            !parse_ms(w[4], 1000, &p.loss_permille)) {
            say("ERR usage: profile up|down|both MS JITTER_MS LOSS_PERMILLE");
            return true;
        }
        if (w[1] != "down") {
            up.p = p;
        }
        if (w[1] != "up") {
            down.p = p;
        }
        say("OK");
    } else if (w.size() == 2 && w[0] == "outage") {
        long ms = 0;
        if (!parse_ms(w[1], max_ms, &ms)) {
            say("ERR usage: outage MS");
            return true;
        }
        outage_until = now + static_cast<std::int64_t>(ms) * 1000000;
        say("OK");
    } else if (w.size() == 1 && w[0] == "status") {
        say(status(up, down, now));
    } else if (w.size() == 1 && w[0] == "quit") {
        say("OK");
        return false;
    } else {
        say("ERR unknown command (profile, outage, status, quit)");
    }
    return true;
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: link_emu [--subnet N] [--seed S] [--max-seconds S] [--reorder]\n");
    std::exit(64);
}

}  // namespace

int main(int argc, char** argv) {
    long subnet = 1 + ::getpid() % 250;
    long seed = 1;
    long max_seconds = 900;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        long* target = a == "--subnet"        ? &subnet
                       : a == "--seed"        ? &seed
                       : a == "--max-seconds" ? &max_seconds
                                              : nullptr;
        if (a == "--reorder") {
            reorder = true;
        } else if (target == nullptr || i + 1 >= argc ||
                   !parse_ms(argv[++i], a == "--subnet" ? 254 : 2147483647L, target)) {
            usage();
        }
    }
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) {
        return 0;
    }
    if (::geteuid() != 0) {
        unavailable("not root (network namespaces and TUN devices need CAP_NET_ADMIN)");
    }
    sigset_t block;
    sigemptyset(&block);
    for (const int sig : {SIGTERM, SIGINT, SIGALRM, SIGHUP}) {
        sigaddset(&block, sig);
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        ::sigaction(sig, &sa, nullptr);
    }
    ::sigprocmask(SIG_BLOCK, &block, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    ::alarm(static_cast<unsigned>(max_seconds));

    const std::string net = "10.77." + std::to_string(subnet) + ".";
    const side client = start_side(net + "1");
    const side server = start_side(net + "2");
    direction up{
        "up", client.tun, server.tun, {}, std::mt19937_64(static_cast<std::uint64_t>(seed) * 2 + 1),
        {},   0,          0};
    direction down{"down",
                   server.tun,
                   client.tun,
                   {},
                   std::mt19937_64(static_cast<std::uint64_t>(seed) * 2 + 2),
                   {},
                   0,
                   0};
    say("READY client_pid=" + std::to_string(client.holder) + " server_pid=" +
        std::to_string(server.holder) + " client=" + net + "1 server=" + net + "2");

    std::string input;
    bool running = true;
    sigset_t during_poll;
    sigemptyset(&during_poll);
    while (running && stop_signal == 0) {
        const std::int64_t now = now_ns();
        take(up, now);
        take(down, now);
        deliver(up, now);
        deliver(down, now);
        std::int64_t next = -1;
        for (const direction* d : {&up, &down}) {
            if (!d->queue.empty() && (next < 0 || d->queue.begin()->first.first < next)) {
                next = d->queue.begin()->first.first;
            }
        }
        pollfd fds[3] = {{0, POLLIN, 0}, {client.tun, POLLIN, 0}, {server.tun, POLLIN, 0}};
        timespec wait{};
        const std::int64_t left = next < 0 ? 0 : std::max<std::int64_t>(0, next - now_ns());
        wait.tv_sec = static_cast<time_t>(left / 1000000000);
        wait.tv_nsec = static_cast<long>(left % 1000000000);
        if (::ppoll(fds, 3, next < 0 ? nullptr : &wait, &during_poll) < 0) {
            continue;
        }
        if (fds[0].revents != 0) {
            char b[512];
            const ssize_t n = ::read(0, b, sizeof b);
            if (n <= 0) {
                break;  // stdin ended: whoever drove the link is gone
            }
            input.append(b, static_cast<std::size_t>(n));
            std::size_t nl;
            while (running && (nl = input.find('\n')) != std::string::npos) {
                running = command(input.substr(0, nl), up, down);
                input.erase(0, nl + 1);
            }
            if (input.size() > 256) {
                say("ERR line too long");
                input.clear();
            }
        }
    }
    for (const side& s : {client, server}) {
        ::kill(s.holder, SIGKILL);
        ::waitpid(s.holder, nullptr, 0);
    }
    return 0;
}
