// edgelock_chaos: the chaos safety checker (make chaos).
//
//   edgelock_chaos [--nodes N] [--seconds T] [--workers K] [--seed S] [--dir D] [--keep]
//
// Starts N redis-servers on free loopback ports with a fault proxy in front of
// each, and K worker processes (half on the library, half through the agent)
// contending for one fenced key. For T seconds a seeded scheduler injects
// faults into a minority of the nodes at a time: kill -9 with a restart
// delayed past the ttl (as Redlock requires of nodes without persistence),
// SIGSTOP / SIGCONT, proxy delay, blackhole, reset and split; and it stops a
// lock holder's processes past the ttl. Then the workers are told to stop,
// every fault is healed, and once ttl has passed the nodes must hold no lock.
// The verifier (verify.cpp) prints the report; the exit status is 0 only when
// every "must be 0" is 0.
//
//   edgelock_chaos --self-test   checks the verifier on made-up logs
//
// Internal modes (the same binary, exec'ed): worker, agent-worker, section.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "chaos/chaos.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/proc.hpp"
#include "tools/url.hpp"

#ifndef EDGELOCK_CLI_PATH
#error "EDGELOCK_CLI_PATH must name the edgelock agent"
#endif
#ifndef EDGELOCK_FAULT_PROXY_PATH
#error "EDGELOCK_FAULT_PROXY_PATH must name the fault proxy"
#endif

namespace edgelock_chaos {

using edgelock_test::sleep_ms;

namespace {

volatile sig_atomic_t g_interrupted = 0;
void on_interrupt(int) {
    g_interrupted = 1;
}

struct options {
    int nodes = 5;
    int seconds = 60;
    int workers = 8;
    std::uint64_t seed = 0;
    std::string dir;
    bool keep = false;
};

bool parse(int argc, char** argv, options& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--keep") {
            o.keep = true;
        } else if (a == "--nodes" && has_value) {
            o.nodes = std::atoi(argv[++i]);
        } else if (a == "--seconds" && has_value) {
            o.seconds = std::atoi(argv[++i]);
        } else if (a == "--workers" && has_value) {
            o.workers = std::atoi(argv[++i]);
        } else if (a == "--seed" && has_value) {
            o.seed = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--dir" && has_value) {
            o.dir = argv[++i];
        } else {
            return false;
        }
    }
    return o.nodes >= 1 && o.nodes <= 7 && o.seconds >= 1 && o.seconds <= 86400 && o.workers >= 2 &&
           o.workers <= 64;
}

// One injected fault, from start until it is healed.
struct active_fault {
    std::string kind;
    int target = 0;   // a node, or a worker for holder_pause
    int section = 0;  // holder_pause: the section's own process group, when not the worker's
    std::int64_t start = 0;
    std::int64_t end = 0;  // when it is healed
    std::string detail;
};

class chaos_run {
public:
    explicit chaos_run(const options& o) : o_(o), rng_(o.seed) {}
    int run();

private:
    bool node_faulty(int n) const {
        for (const active_fault& f : active_) {
            if (f.kind != "holder_pause" && f.target == n) {
                return true;
            }
        }
        return false;
    }
    int faulty_nodes() const {
        int count = 0;
        for (int n = 0; n < o_.nodes; ++n) {
            count += node_faulty(n) ? 1 : 0;
        }
        return count;
    }
    std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
    }
    void inject();
    void heal(active_fault& f);
    void log_fault(const active_fault& f, std::int64_t end);
    void reap(bool stopping);

    options o_;
    std::mt19937_64 rng_;
    std::vector<std::unique_ptr<edgelock_test::redis_server>> servers_;
    std::vector<std::unique_ptr<edgelock_test::fault_proxy>> proxies_;
    std::vector<pid_t> workers_;
    std::vector<active_fault> active_;
    holders table_;
    run_facts facts_;
};

void chaos_run::log_fault(const active_fault& f, std::int64_t end) {
    append_line(o_.dir + "/faults.log", "fault " + f.kind + " " + std::to_string(f.target) + " " +
                                            std::to_string(f.start) + " " + std::to_string(end) +
                                            " " + (f.detail.empty() ? "-" : f.detail));
}

// Every instant is read after the action it times: a fault's start is never
// earlier than the fault, and a killed node's delay counts from its death.
void chaos_run::inject() {
    // Node faults touch a minority at a time (on one node: that node).
    const int max_faulty = o_.nodes == 1 ? 1 : (o_.nodes - 1) / 2;
    std::vector<int> healthy;
    for (int n = 0; n < o_.nodes; ++n) {
        if (!node_faulty(n)) {
            healthy.push_back(n);
        }
    }
    static const char* const kinds[] = {"node_kill",       "node_pause",   "proxy_delay",
                                        "proxy_blackhole", "proxy_split",  "proxy_reset",
                                        "proxy_reset",     "holder_pause", "holder_pause"};
    const std::string kind = kinds[uniform(0, sizeof kinds / sizeof kinds[0] - 1)];
    active_fault f;
    f.kind = kind;

    if (kind == "holder_pause") {
        std::vector<int> inside;
        for (int w = 0; w < o_.workers; ++w) {
            bool paused = false;
            for (const active_fault& a : active_) {
                paused = paused || (a.kind == "holder_pause" && a.target == w);
            }
            if (table_.inside(w) && !paused && workers_[static_cast<std::size_t>(w)] > 0) {
                inside.push_back(w);
            }
        }
        if (inside.empty()) {
            return;
        }
        f.target = inside[static_cast<std::size_t>(
            uniform(0, static_cast<std::int64_t>(inside.size()) - 1))];
        const pid_t worker = workers_[static_cast<std::size_t>(f.target)];
        const int section = table_.group(f.target);
        ::kill(-worker, SIGSTOP);
        if (section > 0 && section != worker) {
            ::kill(-section, SIGSTOP);  // an agent's command: a group of its own
            f.section = section;
        }
        f.start = mono_ns();
        f.end = f.start + ms_to_ns(uniform(ttl_ms * 3 / 2, ttl_ms * 5 / 2));
        active_.push_back(f);
        return;
    }
    if (kind == "proxy_reset") {
        // One-shot: every connection through one node's proxy breaks.
        f.target = static_cast<int>(uniform(0, o_.nodes - 1));
        f.start = mono_ns();
        if (!proxies_[static_cast<std::size_t>(f.target)]->command("reset")) {
            ++facts_.harness_errors;
        }
        log_fault(f, mono_ns());
        return;
    }
    if (healthy.empty() || faulty_nodes() >= max_faulty) {
        return;
    }
    f.target = healthy[static_cast<std::size_t>(
        uniform(0, static_cast<std::int64_t>(healthy.size()) - 1))];
    auto& server = *servers_[static_cast<std::size_t>(f.target)];
    auto& px = *proxies_[static_cast<std::size_t>(f.target)];
    if (kind == "node_kill") {
        // Down for longer than the ttl: a restarted node comes back empty, so
        // it must not come back while a lock it granted could still be valid.
        server.kill();
        f.start = mono_ns();
        const std::int64_t down_ms = ttl_ms + uniform(50, 1000);
        f.end = f.start + ms_to_ns(down_ms);
        f.detail = "restart_after_ms=" + std::to_string(down_ms);
    } else if (kind == "node_pause") {
        server.pause();
        f.start = mono_ns();
        f.end = f.start + ms_to_ns(uniform(200, 3000));
    } else {
        std::string cmd = kind == "proxy_blackhole" ? "blackhole" : "split";
        std::int64_t span_ms = kind == "proxy_blackhole" ? uniform(200, 3000) : uniform(1000, 3000);
        if (kind == "proxy_delay") {
            const std::int64_t d = uniform(5, 60);
            const std::int64_t j = uniform(0, 20);
            cmd = "delay both " + std::to_string(d) + " " + std::to_string(j);
            span_ms = uniform(1000, 4000);
            f.detail = "delay_ms=" + std::to_string(d) + "+" + std::to_string(j);
        }
        if (!px.command(cmd)) {
            ++facts_.harness_errors;
        }
        f.start = mono_ns();
        f.end = f.start + ms_to_ns(span_ms);
    }
    active_.push_back(f);
}

void chaos_run::heal(active_fault& f) {
    if (f.kind == "holder_pause") {
        // A worker that ended was reaped and its group killed: nothing to wake.
        if (f.section > 0) {
            ::kill(-f.section, SIGCONT);
        }
        if (workers_[static_cast<std::size_t>(f.target)] > 0) {
            ::kill(-workers_[static_cast<std::size_t>(f.target)], SIGCONT);
        }
    } else if (f.kind == "node_kill") {
        auto& server = *servers_[static_cast<std::size_t>(f.target)];
        const std::uint16_t port = server.port();
        try {
            server.restart();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "edgelock_chaos: node %d did not restart: %s\n", f.target,
                         e.what());
            ++facts_.harness_errors;
        }
        if (server.port() != port) {
            std::fprintf(stderr, "edgelock_chaos: node %d came back on another port\n", f.target);
            ++facts_.harness_errors;
        }
    } else if (f.kind == "node_pause") {
        servers_[static_cast<std::size_t>(f.target)]->resume();
    } else if (!proxies_[static_cast<std::size_t>(f.target)]->command("pass")) {
        ++facts_.harness_errors;
    }
    log_fault(f, mono_ns());
}

void chaos_run::reap(bool stopping) {
    for (pid_t& pid : workers_) {
        if (pid <= 0) {
            continue;
        }
        int status = 0;
        if (edgelock_test::reap(pid, &status)) {
            if (!stopping || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                std::fprintf(stderr, "edgelock_chaos: worker pid %d ended early (status 0x%x)\n",
                             static_cast<int>(pid), static_cast<unsigned>(status));
                ++facts_.workers_crashed;
            }
            // Anything it left in its group (the group, not the reaped pid,
            // which may already name another process).
            ::kill(-pid, SIGKILL);
            pid = -pid;  // ended, keep the group id
        }
    }
}

int chaos_run::run() {
    const std::string self = edgelock_test::self_path();
    facts_.nodes = o_.nodes;
    facts_.workers = o_.workers;
    facts_.library_workers = o_.workers / 2;
    facts_.seconds = o_.seconds;
    facts_.seed = o_.seed;
    if (!table_.open(o_.dir, o_.workers, true)) {
        std::fprintf(stderr, "edgelock_chaos: cannot create the holder table in %s\n",
                     o_.dir.c_str());
        return 2;
    }

    std::vector<std::string> node_urls;
    const int proxy_seconds = o_.seconds + 300;  // the proxies stop by themselves
    for (int n = 0; n < o_.nodes; ++n) {
        servers_.push_back(std::make_unique<edgelock_test::redis_server>());
        proxies_.push_back(std::make_unique<edgelock_test::fault_proxy>());
        if (!proxies_.back()->start(EDGELOCK_FAULT_PROXY_PATH, servers_.back()->port(),
                                    o_.seed + static_cast<unsigned>(n), proxy_seconds)) {
            std::fprintf(stderr, "edgelock_chaos: the fault proxy did not start\n");
            return 2;
        }
        node_urls.push_back(edgelock_test::redis_url(proxies_.back()->port()));
    }
    const std::string urls = edgelock_test::node_list(node_urls);

    facts_.start_ns = mono_ns();
    for (int w = 0; w < o_.workers; ++w) {
        const bool library = w < facts_.library_workers;
        std::vector<std::string> argv = {
            self,        library ? "worker" : "agent-worker",
            "--id",      std::to_string(w),
            "--dir",     o_.dir,
            "--urls",    urls,
            "--workers", std::to_string(o_.workers),
            "--seed",    std::to_string(o_.seed * 1000 + static_cast<unsigned>(w))};
        if (!library) {
            argv.insert(argv.end(), {"--cli", EDGELOCK_CLI_PATH, "--self", self});
        }
        const pid_t pid = edgelock_test::spawn(argv);
        if (pid < 0) {
            std::fprintf(stderr, "edgelock_chaos: fork: %s\n", std::strerror(errno));
            return 2;
        }
        workers_.push_back(pid);
    }

    // The fault scheduler.
    const std::int64_t end = facts_.start_ns + ms_to_ns(std::int64_t{o_.seconds} * 1000);
    std::int64_t next_fault = facts_.start_ns + ms_to_ns(uniform(200, 1000));
    while (mono_ns() < end && g_interrupted == 0) {
        const std::int64_t now = mono_ns();
        for (std::size_t i = 0; i < active_.size();) {
            if (active_[i].end <= now) {
                heal(active_[i]);
                active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
        if (now >= next_fault) {
            inject();
            next_fault = now + ms_to_ns(uniform(300, 1500));
        }
        reap(false);
        sleep_ms(10);
    }

    // Wind down: heal everything (a killed node still waits out its delay),
    // then tell the workers to stop and give them time to finish a section.
    for (active_fault& f : active_) {
        if (f.kind == "node_kill") {
            while (mono_ns() < f.end) {
                sleep_ms(10);
            }
        }
        heal(f);
    }
    active_.clear();
    facts_.end_ns = mono_ns();
    for (pid_t pid : workers_) {
        if (pid > 0) {
            ::kill(pid, SIGTERM);
        }
    }
    const std::int64_t stop_deadline = mono_ns() + ms_to_ns(acquire_bound_ms + 2 * ttl_ms + 5000);
    for (;;) {
        reap(true);
        bool running = false;
        for (pid_t pid : workers_) {
            running = running || pid > 0;
        }
        if (!running) {
            break;
        }
        if (mono_ns() >= stop_deadline) {
            for (pid_t& pid : workers_) {
                if (pid > 0) {
                    std::fprintf(stderr, "edgelock_chaos: worker pid %d did not stop\n",
                                 static_cast<int>(pid));
                    ++facts_.workers_not_stopped;
                    edgelock_test::kill_group(pid, SIGKILL);
                    edgelock_test::wait_exit(pid);
                    pid = -pid;
                }
            }
            break;
        }
        sleep_ms(10);
    }

    // Every process has ended: once the ttl has passed, no node may hold the
    // lock, and no key may be without an expiry but the fencing counter.
    sleep_ms(ttl_ms + 200);
    for (int n = 0; n < o_.nodes; ++n) {
        try {
            edgelock_test::redis_client c(servers_[static_cast<std::size_t>(n)]->port());
            const edgelock_test::reply keys = c.command({"KEYS", "*"});
            for (const edgelock_test::reply& k : keys.elements) {
                const edgelock_test::reply pttl = c.command({"PTTL", k.text});
                const bool is_lock = k.text == edgelock_test::key_of(lock_name);
                const bool is_counter = k.text == edgelock_test::fence_key_of(lock_name);
                if (is_lock || (!is_counter && pttl.integer == -1)) {
                    std::fprintf(stderr, "edgelock_chaos: node %d still has %s (pttl %lld)\n", n,
                                 k.text.c_str(), pttl.integer);
                    ++facts_.locks_left;
                }
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "edgelock_chaos: node %d: %s\n", n, e.what());
            ++facts_.harness_errors;
        }
    }
    for (auto& p : proxies_) {
        p->stop();
    }

    std::string report;
    const bool ok = verify(o_.dir, facts_, report);
    std::fputs(report.c_str(), stdout);
    std::fflush(stdout);
    append_line(o_.dir + "/report.txt", report);
    return ok ? 0 : 1;
}

int orchestrate(int argc, char** argv) {
    options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: edgelock_chaos [--nodes 1..7] [--seconds T] [--workers 2..64] "
                     "[--seed S] [--dir D] [--keep]\n");
        return 64;
    }
    if (o.seed == 0) {
        o.seed = static_cast<std::uint64_t>(mono_ns()) % 1000000;
    }
    std::unique_ptr<edgelock_test::temp_dir> made_dir;
    if (o.dir.empty()) {
        try {
            made_dir = std::make_unique<edgelock_test::temp_dir>("edgelock-chaos");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "edgelock_chaos: %s\n", e.what());
            return 2;
        }
        o.dir = made_dir->path;
    }
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);

    int status = 2;
    try {
        chaos_run r(o);
        status = r.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "edgelock_chaos: %s\n", e.what());
    }
    if (status == 0 && made_dir && !o.keep) {
        made_dir.reset();  // removes the logs
    } else {
        if (made_dir) {
            made_dir->keep();
        }
        std::printf("logs kept in %s\n", o.dir.c_str());
    }
    return status;
}

}  // namespace
}  // namespace edgelock_chaos

int main(int argc, char** argv) {
    if (argc >= 2) {
        const std::string mode = argv[1];
        if (mode == "worker") {
            return edgelock_chaos::library_worker_main(argc, argv);
        }
        if (mode == "agent-worker") {
            return edgelock_chaos::agent_worker_main(argc, argv);
        }
        if (mode == "section") {
            return edgelock_chaos::section_main(argc, argv);
        }
        if (mode == "--self-test") {
            std::string failure;
            if (!edgelock_chaos::verify_self_test(failure)) {
                std::fprintf(stderr, "edgelock_chaos: verifier self-test failed: %s\n",
                             failure.c_str());
                return 1;
            }
            std::printf("edgelock_chaos: verifier self-test passed\n");
            return 0;
        }
    }
    return edgelock_chaos::orchestrate(argc, argv);
}
