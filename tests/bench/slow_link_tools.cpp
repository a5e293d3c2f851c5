#include "bench/slow_link_tools.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>

#include "bench/bench_common.hpp"
#include "edgelock/resp_decoder.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/net.hpp"

namespace edgelock_slow_link {

namespace {

const char* const program = "bench_slow_link";

// The number after `name=` in a line of `key=value` words; -1 when absent.
long long field(const std::string& line, const std::string& name) {
    const std::string key = " " + name + "=";
    const std::size_t at = line.find(key);
    return at == std::string::npos ? -1 : std::atoll(line.c_str() + at + key.size());
}

std::string counts_text(const counts& c, double per) {
    std::string out;
    for (const auto& kv : c) {
        if (kv.second == 0) {
            continue;
        }
        const double v = static_cast<double>(kv.second) / per;
        out += (out.empty() ? "" : ", ") + kv.first + " " +
               (per == 1 ? std::to_string(kv.second) : edgelock_bench::format("%.2f", v));
    }
    return out.empty() ? "none" : out;
}

}  // namespace

long long requests::total() const {
    long long n = 0;
    for (const auto& kv : sent) {
        n += kv.second;
    }
    return n;
}

std::string requests::describe(double per) const {
    std::string out = counts_text(sent, per);
    bool scripts = false;
    for (const auto& kv : by_scripts) {
        scripts = scripts || kv.second != 0;
    }
    if (scripts) {
        out += "; scripts ran " + counts_text(by_scripts, per);
    }
    return out;
}

server_tally::server_tally(const edgelock_test::redis_server& server) {
    try {
        admin_ = edgelock_test::inside(server);
        monitor_ = edgelock_test::inside(server);
        if (monitor_->command({"MONITOR"}).text != "OK") {
            edgelock_bench::fail(program, "MONITOR refused");
        }
    } catch (const std::exception& e) {
        edgelock_bench::fail(program, std::string("server tally: ") + e.what());
    }
}

counts server_tally::stats() {
    counts c;
    const std::string text = admin_->command({"INFO", "commandstats"}).text;
    std::size_t at = 0;
    while ((at = text.find("cmdstat_", at)) != std::string::npos) {
        const std::size_t colon = text.find(':', at);
        if (colon == std::string::npos) {
            break;
        }
        const std::string name = text.substr(at + 8, colon - at - 8);
        if (text.compare(colon, 7, ":calls=") == 0) {
            c[name] = std::atoll(text.c_str() + colon + 7);
        }
        at = colon;
    }
    return c;
}

namespace {

// The arguments of a MONITOR line (`TIME [DB ADDR] "arg" "arg" ...`), with
// its escapes (\\, \", \n, \r, \t, \a, \b, \xHH) undone.
std::vector<std::string> monitor_args(const std::string& line) {
    std::vector<std::string> args;
    std::size_t at = line.find("] ");
    if (at == std::string::npos) {
        return args;
    }
    at += 2;
    while (at < line.size() && line[at] == '"') {
        std::string arg;
        ++at;
        while (at < line.size() && line[at] != '"') {
            char ch = line[at++];
            if (ch == '\\' && at < line.size()) {
                const char e = line[at++];
                ch = e == 'n'   ? '\n'
                     : e == 'r' ? '\r'
                     : e == 't' ? '\t'
                     : e == 'a' ? '\a'
                     : e == 'b' ? '\b'
                                : e;
                if (e == 'x' && at + 2 <= line.size()) {
                    ch = static_cast<char>(std::strtol(line.substr(at, 2).c_str(), nullptr, 16));
                    at += 2;
                }
            }
            arg.push_back(ch);
        }
        args.push_back(std::move(arg));
        at += 2;  // the closing quote and the space
    }
    return args;
}

}  // namespace

void server_tally::mark() {
    try {
        drain(nullptr);  // what MONITOR showed before the window is not in it
        before_ = stats();
    } catch (const std::exception& e) {
        edgelock_bench::fail(program, std::string("INFO commandstats: ") + e.what());
    }
}

requests server_tally::take() {
    requests r;
    try {
        drain(&r.by_scripts, &r.commands);
        const counts after = stats();
        for (const auto& kv : after) {
            const auto was = before_.find(kv.first);
            long long n = kv.second - (was == before_.end() ? 0 : was->second);
            if (kv.first == "info" || kv.first == "echo") {
                --n;  // mark()'s INFO, the marker's ECHO
            } else if (kv.first == "pexpiretime") {
                n = 0;  // expire_time()'s
            }
            const auto scripted = r.by_scripts.find(kv.first);
            n -= scripted == r.by_scripts.end() ? 0 : scripted->second;
            if (n > 0) {
                r.sent[kv.first] = n;
            }
        }
    } catch (const std::exception& e) {
        edgelock_bench::fail(program, std::string("server tally: ") + e.what());
    }
    return r;
}

// Reads what MONITOR shows up to a marker sent now, counting the commands
// scripts ran into `scripted` when given. (Throws on a silent MONITOR.)
void server_tally::drain(counts* scripted, std::vector<std::vector<std::string>>* commands) {
    const std::string marker = "slow-link-mark-" + std::to_string(++marker_);
    admin_->command({"ECHO", marker});
    for (;;) {
        const std::string line = monitor_->read_reply().text;
        if (line.find("\"" + marker + "\"") != std::string::npos) {
            return;
        }
        // 1795748418.915349 [0 lua] "get" "k"
        const std::size_t lua = line.find(" lua] \"");
        if (scripted != nullptr && lua == std::string::npos && commands != nullptr) {
            std::vector<std::string> args = monitor_args(line);
            if (!args.empty() && args[0] != "INFO" && args[0] != "ECHO" &&
                args[0] != "PEXPIRETIME") {
                commands->push_back(std::move(args));
            }
        }
        if (scripted == nullptr || lua == std::string::npos) {
            continue;
        }
        const std::size_t start = lua + 7;
        std::string name = line.substr(start, line.find('"', start) - start);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        ++(*scripted)[name];
    }
}

long long server_tally::expire_time(const std::string& key) {
    try {
        return admin_->command({"PEXPIRETIME", key}).integer;
    } catch (const std::exception& e) {
        edgelock_bench::fail(program, std::string("PEXPIRETIME: ") + e.what());
    }
}

wire wire_of(edgelock_test::fault_proxy& proxy) {
    const std::string line = proxy.ask("status");
    wire w;
    w.up = field(line, "bytes_up");
    w.down = field(line, "bytes_down");
    w.conns = field(line, "conns");
    if (w.up < 0 || w.down < 0 || w.conns < 0) {
        edgelock_bench::fail(program, "fault proxy status: '" + line + "'");
    }
    return w;
}

bool wait_idle(edgelock_test::fault_proxy& proxy, double timeout_s) {
    return edgelock_test::wait_for([&] { return wire_of(proxy).conns == 0; }, timeout_s);
}

timed_run run_timed(const std::vector<std::string>& argv, double timeout_s) {
    std::unique_ptr<edgelock_test::temp_dir> dir;
    try {
        dir = std::make_unique<edgelock_test::temp_dir>("edgelock-slow-link");
    } catch (const std::exception& e) {
        edgelock_bench::fail(program, e.what());
    }
    const std::string out_path = *dir / "out";
    const std::string err_path = *dir / "err";
    const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (out_fd < 0 || err_fd < 0) {
        edgelock_bench::fail(program, "cannot make output files");
    }
    edgelock_test::spawn_options o;
    o.stdout_fd = out_fd;
    o.stderr_fd = err_fd;
    timed_run r;
    const std::int64_t start = edgelock_test::mono_ns();
    const pid_t pid = edgelock_test::spawn(argv, o);
    ::close(out_fd);
    ::close(err_fd);
    if (pid < 0) {
        edgelock_bench::fail(program, "spawn of " + argv[0] + " failed");
    }
    const std::int64_t deadline = start + static_cast<std::int64_t>(timeout_s * 1e9);
    int st = 0;
    // Polled finely: the run's end is taken to within 0.2 ms.
    while (!edgelock_test::reap(pid, &st)) {
        if (edgelock_test::mono_ns() > deadline) {
            edgelock_test::kill_group(pid, SIGKILL);
            edgelock_test::wait_exit(pid);
            edgelock_bench::fail(program, argv[0] + " did not end within " +
                                              edgelock_bench::format("%.0f s", timeout_s));
        }
        edgelock_test::sleep_us(200);
    }
    r.wall_ns = edgelock_test::mono_ns() - start;
    r.status = edgelock_test::exit_status(st);
    r.out = edgelock_test::read_file(out_path);
    r.err = edgelock_test::read_file(err_path);
    return r;
}

std::size_t resp_request_size(const std::vector<std::string>& args) {
    std::size_t n = 1 + std::to_string(args.size()).size() + 2;  // *N\r\n
    for (const std::string& a : args) {
        n += 1 + std::to_string(a.size()).size() + 2 + a.size() + 2;  // $len\r\narg\r\n
    }
    return n;
}

std::string agent_from_args(int argc, char** argv, const char* program, const char* built) {
    if (argc == 3 && std::string(argv[1]) == "--agent") {
        return argv[2];
    }
    if (argc != 1) {
        edgelock_bench::fail(program, std::string("usage: ") + program + " [--agent PATH]");
    }
    return built;
}

double median(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return v[(v.size() - 1) / 2];
}

std::vector<byte_account> account_bytes(std::uint16_t port,
                                        const std::vector<std::vector<std::string>>& commands) {
    std::vector<byte_account> out;
    const int fd = edgelock_test::connect_loopback(port);
    if (fd < 0) {
        edgelock_bench::fail(program, "byte account: connect failed");
    }
    std::string in;
    for (const std::vector<std::string>& c : commands) {
        std::string req = "*" + std::to_string(c.size()) + "\r\n";
        for (const std::string& a : c) {
            req += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
        }
        if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
            edgelock_bench::fail(program, "byte account: send failed");
        }
        byte_account b;
        b.what = c[0] + (c.size() > 1 && c[0] != "EVALSHA" && c[0] != "SET" ? " " + c[1] : "");
        b.up = req.size();
        for (;;) {
            edgelock::resp_node nodes[128];
            const edgelock::resp_result r =
                edgelock::resp_decode_whole(in.data(), in.size(), nodes, 128);
            if (r.status == edgelock::resp_status::complete) {
                b.down = r.size;
                in.erase(0, r.size);
                break;
            }
            if (r.error != edgelock::resp_errc::truncated) {
                edgelock_bench::fail(program, "byte account: a reply that does not decode");
            }
            char buf[4096];
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) {
                edgelock_bench::fail(program, "byte account: the server hung up");
            }
            in.append(buf, static_cast<std::size_t>(n));
        }
        out.push_back(b);
    }
    ::close(fd);
    return out;
}

}  // namespace edgelock_slow_link
