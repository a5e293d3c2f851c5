// edgelock_chaos: the chaos safety checker (make chaos).
//
//   edgelock_chaos [--topology standalone|sentinel|cluster] [--nodes N] [--seconds T]
//                  [--workers K] [--seed S] [--dir D] [--keep]
//   edgelock_chaos --link-delays [--permits P] [--nodes N] [--seconds T] ...
//
// Starts redis-servers in the topology asked for (topology*.cpp; standalone,
// N of them, by default) with a fault proxy in front of each, and K worker
// processes (half on the library, half through the agent) contending for one
// fenced key. For T seconds a seeded scheduler injects faults: the
// topology's own (killed, paused and partitioned nodes; in the replicated
// topologies failovers, a sentinel down, a slot migrated) and, in every
// topology, a lock holder's processes stopped past the ttl. Then every fault
// is healed, the workers are told to stop, and once ttl has passed no node
// may serve the lock. The verifier (verify.cpp) prints the report; the exit
// status is 0 only when every "must be 0" is 0.
//
// --link-delays (standalone): every worker runs the agent, without fencing,
// on a lock or, with --permits P, a semaphore of P permits (by default P + 1
// workers, 2 for a lock), holding for 150 to 700 ms; the only faults are
// client-to-server delays of 400 to 800 ms on the links to one or more of
// the nodes, put on as a job ends (its worker starts a new agent) and lifted
// once a new connection's set-up is caught in them (issue 45: a set-up given
// up on, whose bytes arrive after the agent acquired on its next
// connection). The verdict is the jobs' own: never more of them inside at
// once than there are permits.
//
//   edgelock_chaos --self-test   checks the verifier on made-up logs
//
// Internal modes (the same binary, exec'ed): worker, agent-worker, section.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "chaos/chaos.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/proc.hpp"

#ifndef EDGELOCK_CLI_PATH
#error "EDGELOCK_CLI_PATH must name the edgelock agent"
#endif

namespace edgelock_chaos {

using edgelock_test::sleep_ms;

namespace {

volatile sig_atomic_t g_interrupted = 0;
void on_interrupt(int) {
    g_interrupted = 1;
}

struct options {
    topology_kind topology = topology_kind::standalone;
    bool nodes_given = false;
    int nodes = 5;
    int seconds = 60;
    int workers = 8;
    bool workers_given = false;
    bool link_delays = false;
    bool permits_given = false;
    int permits = 0;
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
        } else if (a == "--link-delays") {
            o.link_delays = true;
        } else if (a == "--permits" && has_value) {
            o.permits = std::atoi(argv[++i]);
            o.permits_given = true;
        } else if (a == "--topology" && has_value) {
            if (!parse_topology(argv[++i], o.topology)) {
                return false;
            }
        } else if (a == "--nodes" && has_value) {
            o.nodes = std::atoi(argv[++i]);
            o.nodes_given = true;
        } else if (a == "--seconds" && has_value) {
            o.seconds = std::atoi(argv[++i]);
        } else if (a == "--workers" && has_value) {
            o.workers = std::atoi(argv[++i]);
            o.workers_given = true;
        } else if (a == "--seed" && has_value) {
            o.seed = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--dir" && has_value) {
            o.dir = argv[++i];
        } else {
            return false;
        }
    }
    if (o.link_delays && !o.workers_given) {
        // One agent more than the permits: one waits whenever all are held,
        // and a new agent often finds the lock free, as a caught one must
        // for its late bytes to meet its own hold.
        o.workers = std::max(o.permits, 1) + 1;
    }
    // The replicated topologies have a fixed shape: --nodes is standalone's.
    const bool nodes_ok = o.topology == topology_kind::standalone || !o.nodes_given;
    // Link delays are standalone's; a semaphore is theirs (the library
    // workers and the fenced storage are a lock's).
    const bool delays_ok = !o.link_delays || o.topology == topology_kind::standalone;
    const bool permits_ok =
        !o.permits_given || (o.link_delays && o.permits >= 1 && o.permits <= 16);
    return nodes_ok && delays_ok && permits_ok && o.nodes >= 1 && o.nodes <= 7 && o.seconds >= 1 &&
           o.seconds <= 86400 && o.workers >= 2 && o.workers <= 64;
}

class chaos_run {
public:
    explicit chaos_run(const options& o) : o_(o), rng_(o.seed) {}
    int run();

private:
    std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
    }
    bool start_topology();
    void inject();
    void pause_holder(active_fault& f);
    bool advance(active_fault& f);
    void finish(active_fault& f);
    void reap(bool stopping);

    options o_;
    std::mt19937_64 rng_;
    std::unique_ptr<topology> topology_;
    std::vector<pid_t> workers_;
    std::vector<active_fault> active_;
    holders table_;
    run_facts facts_;
};

bool chaos_run::start_topology() {
    topology_options to;
    to.dir = o_.dir;
    to.nodes = o_.nodes;
    to.link_delays = o_.link_delays;
    to.seed = o_.seed;
    to.proxy_seconds = o_.seconds + 300;  // the proxies stop by themselves
    to.rng = &rng_;
    facts_.topology = o_.topology;
    if (o_.topology == topology_kind::sentinel) {
        topology_ = make_sentinel(to);
        facts_.nodes = 3;
        facts_.replicas = 2;
        facts_.sentinels = 3;
    } else if (o_.topology == topology_kind::cluster) {
        topology_ = make_cluster(to);
        facts_.nodes = 6;
        facts_.replicas = 3;
    } else {
        topology_ = make_standalone(to);
        facts_.nodes = o_.nodes;
    }
    return topology_->start();
}

// Every instant is read after the action it times: a fault's start is never
// earlier than the fault, and a killed node's delay counts from its death.
void chaos_run::inject() {
    const std::vector<std::string>& kinds = topology_->kinds();
    active_fault f;
    f.kind =
        kinds[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(kinds.size()) - 1))];
    if (f.kind == "holder_pause") {
        pause_holder(f);
        return;
    }
    switch (topology_->inject(f.kind, f, active_)) {
    case topology::started::one_shot:
        log_fault(o_.dir, f, mono_ns());
        break;
    case topology::started::active:
        active_.push_back(f);
        break;
    case topology::started::none:
        break;
    }
}

// Stops the processes of a worker inside its critical section past the ttl.
void chaos_run::pause_holder(active_fault& f) {
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
    f.target =
        inside[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(inside.size()) - 1))];
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
}

// f.end has come: true once f is healed (and logged).
bool chaos_run::advance(active_fault& f) {
    if (f.kind == "holder_pause") {
        // A worker that ended was reaped and its group killed: nothing to wake.
        if (f.section > 0) {
            ::kill(-f.section, SIGCONT);
        }
        if (workers_[static_cast<std::size_t>(f.target)] > 0) {
            ::kill(-workers_[static_cast<std::size_t>(f.target)], SIGCONT);
        }
    } else if (!topology_->advance(f)) {
        return false;
    }
    log_fault(o_.dir, f, mono_ns());
    return true;
}

void chaos_run::finish(active_fault& f) {
    if (f.kind == "holder_pause") {
        advance(f);
        return;
    }
    topology_->finish(f);
    log_fault(o_.dir, f, mono_ns());
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
    facts_.workers = o_.workers;
    facts_.library_workers = o_.link_delays ? 0 : o_.workers / 2;
    facts_.fenced = !o_.link_delays;
    facts_.permits = o_.permits;
    facts_.seconds = o_.seconds;
    facts_.seed = o_.seed;
    if (!table_.open(o_.dir, o_.workers, true)) {
        std::fprintf(stderr, "edgelock_chaos: cannot create the holder table in %s\n",
                     o_.dir.c_str());
        return 2;
    }
    if (!start_topology()) {
        return 2;
    }
    const std::string urls = topology_->node_list();

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
            argv.insert(argv.end(),
                        {"--cli", EDGELOCK_CLI_PATH, "--self", self, "--fenced",
                         facts_.fenced ? "1" : "0", "--permits", std::to_string(facts_.permits)});
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
    std::vector<bool> was_inside(static_cast<std::size_t>(o_.workers), false);
    while (mono_ns() < end && g_interrupted == 0) {
        const std::int64_t now = mono_ns();
        for (std::size_t i = 0; i < active_.size();) {
            if (active_[i].end <= now && advance(active_[i])) {
                active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
        // A worker whose job just ended starts its next agent in a moment
        // (its pause, 20 to 50 ms): a link delay goes on then, to catch
        // that agent's set-up.
        bool left = false;
        for (int w = 0; w < o_.workers; ++w) {
            const bool inside = table_.inside(w);
            left = left || (was_inside[static_cast<std::size_t>(w)] && !inside);
            was_inside[static_cast<std::size_t>(w)] = inside;
        }
        if (now >= next_fault && (!o_.link_delays || left)) {
            inject();
            next_fault = now + ms_to_ns(o_.link_delays ? uniform(100, 600) : uniform(300, 1500));
        }
        reap(false);
        sleep_ms(o_.link_delays ? 5 : 10);
    }

    // Wind down: heal everything (a killed node still waits out its delay),
    // then tell the workers to stop and give them time to finish a section.
    for (active_fault& f : active_) {
        finish(f);
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
    topology_->count_locks_left(facts_);
    topology_->stop_proxies();
    facts_.harness_errors += topology_->harness_errors;

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
                     "usage: edgelock_chaos [--topology standalone|sentinel|cluster] "
                     "[--nodes 1..7 (standalone)]\n"
                     "                      [--seconds T] [--workers 2..64] [--seed S] [--dir D] "
                     "[--keep]\n"
                     "       edgelock_chaos --link-delays [--permits 1..16] [--nodes 1..7] "
                     "[--seconds T] ...\n");
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
    // Every agent run here, in whatever mode, reads no configuration file:
    // a machine's /etc/edgelock.conf must not change what is being checked.
    ::setenv("EDGELOCK_CONFIG", "none", 1);
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
