// The chaos checker's worker processes (chaos.hpp):
//
//   library worker - the library itself: client<N> + client_lock in fenced
//                    mode, with the watchdog; loops acquire / section / release.
//   agent worker   - loops `edgelock run --fencing KEY -- edgelock_chaos section`,
//                    so the agent's renewals and its SIGTERM on a lost lock are
//                    under test too; in a link-delay run without --fencing, and
//                    with --permits P for a semaphore.
//   section        - the command the agent runs: one critical section. Without
//                    fencing it has no token (0 in its records) and writes
//                    nothing to the storage.
//
// A section lasts a few milliseconds mostly, sometimes close to or beyond the
// ttl (so the watchdog renews under faults), and writes its token to the
// fenced storage at a random point inside. In a link-delay run it lasts 150
// to 700 ms and writes nothing.
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "chaos/chaos.hpp"
#include "edgelock/client.hpp"
#include "node_list.hpp"
#include "tools/clock.hpp"
#include "tools/proc.hpp"

namespace edgelock_chaos {

using edgelock_test::sleep_ms;

namespace {

volatile sig_atomic_t g_stop = 0;

void on_stop(int) {
    g_stop = 1;
}

void catch_stop() {
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a wait in progress returns early
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
}

std::map<std::string, std::string> parse_args(int argc, char** argv) {
    std::map<std::string, std::string> out;
    for (int i = 2; i + 1 < argc; i += 2) {
        out[argv[i]] = argv[i + 1];
    }
    return out;
}

std::string arg(const std::map<std::string, std::string>& a, const char* name) {
    const auto it = a.find(name);
    if (it == a.end()) {
        std::fprintf(stderr, "edgelock_chaos: missing %s\n", name);
        std::exit(70);
    }
    return it->second;
}

// Mostly short sections; now and then one near or past the ttl.
std::int64_t pick_hold_ms(std::mt19937_64& rng) {
    if (std::uniform_int_distribution<int>(0, 9)(rng) < 8) {
        return std::uniform_int_distribution<std::int64_t>(1, 20)(rng);
    }
    return std::uniform_int_distribution<std::int64_t>(ttl_ms * 3 / 10, ttl_ms * 3 / 2)(rng);
}

std::int64_t uniform_ms(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

std::string n(std::int64_t v) {
    return std::to_string(v);
}

struct worker_log {
    std::string path;
    void op(const char* kind, std::int64_t seq, std::int64_t start, std::int64_t end,
            std::int64_t bound_ms, const std::string& result) const {
        append_line(path, std::string("op ") + kind + " " + n(seq) + " " + n(start) + " " + n(end) +
                              " " + n(ms_to_ns(bound_ms)) + " " + result);
    }
    void enter(std::int64_t seq, std::uint64_t token) const {
        append_line(path, "enter " + n(seq) + " " + std::to_string(token) + " " + n(mono_ns()));
    }
    void write(std::int64_t seq, std::uint64_t token, bool accepted) const {
        append_line(path, "write " + n(seq) + " " + std::to_string(token) + " " + n(mono_ns()) +
                              (accepted ? " accepted" : " rejected"));
    }
    // `at`: the instant the section ended, the last moment it acted as holder.
    void exit(std::int64_t seq, std::uint64_t token, std::int64_t at, const char* outcome) const {
        append_line(path,
                    "exit " + n(seq) + " " + std::to_string(token) + " " + n(at) + " " + outcome);
    }
};

// One word for the log: spaces in a description become '_'.
std::string op_outcome(const edgelock::op_result& r) {
    std::string s;
    if (r.error == edgelock::client_errc::lock_rejected) {
        s = std::string("rejected:") + edgelock::describe(r.lock_error);
    } else if (r.error != edgelock::client_errc::ok) {
        s = std::string("error:") + edgelock::describe(r.error);
    } else {
        s = edgelock::describe(r.event.kind);
    }
    for (char& ch : s) {
        ch = ch == ' ' ? '_' : ch;
    }
    return s;
}

}  // namespace

int library_worker_main(int argc, char** argv) {
    const auto a = parse_args(argc, argv);
    const int id = std::atoi(arg(a, "--id").c_str());
    const std::string dir = arg(a, "--dir");
    std::vector<std::string> urls;
    if (!edgelock_cli::split_nodes(arg(a, "--urls"), urls)) {
        std::fprintf(stderr, "edgelock_chaos: worker %d: an empty URL in --urls\n", id);
        return 64;
    }
    const int workers = std::atoi(arg(a, "--workers").c_str());
    std::mt19937_64 rng(std::strtoull(arg(a, "--seed").c_str(), nullptr, 10));
    catch_stop();

    holders table;
    if (!table.open(dir, workers, false)) {
        std::fprintf(stderr, "edgelock_chaos: worker %d: cannot map the holder table\n", id);
        return 70;
    }
    const worker_log log{dir + "/worker-" + std::to_string(id) + ".log"};

    std::vector<edgelock::str_view> views;
    for (const std::string& u : urls) {
        views.emplace_back(u.data(), u.size());
    }
    static edgelock::client<edgelock::lock_max_nodes> c;
    edgelock::client_options co;
    co.client_name = "edgelock-chaos";
    if (c.configure(views.data(), views.size(), co) != edgelock::client_errc::ok) {
        std::fprintf(stderr, "edgelock_chaos: worker %d: bad node list\n", id);
        return 70;
    }
    edgelock::lock_options lo;
    lo.mode = edgelock::lock_mode::fenced;
    lo.ttl = edgelock::duration::millis(ttl_ms);
    lo.node_timeout = edgelock::duration::millis(node_timeout_ms);
    static edgelock::client_lock l;
    if (l.attach(c, edgelock::str_view(lock_name), lo) != edgelock::client_errc::ok) {
        std::fprintf(stderr, "edgelock_chaos: worker %d: attach refused\n", id);
        return 70;
    }

    for (std::int64_t seq = 1; g_stop == 0; ++seq) {
        const std::int64_t t0 = mono_ns();
        const edgelock::op_result r = l.acquire(edgelock::duration::millis(wait_ms));
        const std::int64_t t1 = mono_ns();
        log.op("acquire", seq, t0, t1, acquire_bound_ms, op_outcome(r));
        if (r.error != edgelock::client_errc::ok || !l.held()) {
            if (r.error != edgelock::client_errc::ok) {
                sleep_ms(20);  // not a contention outcome: do not spin on it
            }
            continue;
        }

        // The critical section: driven in small steps so the watchdog renews,
        // left the moment the lock is not known to be ours.
        const std::uint64_t token = l.fence();
        const std::int64_t enter = mono_ns();
        table.enter(id);
        log.enter(seq, token);
        const std::int64_t hold = ms_to_ns(pick_hold_ms(rng));
        const std::int64_t write_at =
            enter + std::uniform_int_distribution<std::int64_t>(0, hold - 1)(rng);
        const char* outcome = "done";
        bool wrote = false;
        // The section ends at the last instant the lock was known to be ours:
        // nothing is done as holder after it. The write is issued after a
        // check; when it lands is the storage's affair, judged by its token. A
        // writer the scheduler stopped inside the storage's own lock delays it,
        // as a stalled storage server would: the section must not seem to last
        // while this worker waits there, or a later holder looks like a second
        // one.
        std::int64_t last_held = enter;
        for (;;) {
            if (!l.held()) {
                outcome = "lost";
                break;
            }
            const std::int64_t now = mono_ns();
            last_held = now;
            if (!wrote && now >= write_at) {
                log.write(seq, token, storage_write(dir, token, id));
                wrote = true;
                continue;  // check held() again before leaving
            }
            if (now >= enter + hold) {
                break;
            }
            const std::int64_t step = std::min<std::int64_t>(
                ms_to_ns(5), std::min(enter + hold, wrote ? enter + hold : write_at) - now);
            c.run_for(edgelock::duration::micros(static_cast<std::uint64_t>(step / 1000 + 1)));
        }
        log.exit(seq, token, last_held, outcome);
        table.leave(id);

        const std::int64_t t2 = mono_ns();
        const edgelock::op_result rr = l.release();
        log.op("release", seq, t2, mono_ns(), release_bound_ms, op_outcome(rr));
        sleep_ms(std::uniform_int_distribution<std::int64_t>(0, 30)(rng));
    }
    l.detach();
    return 0;
}

int agent_worker_main(int argc, char** argv) {
    const auto a = parse_args(argc, argv);
    const int id = std::atoi(arg(a, "--id").c_str());
    const std::string dir = arg(a, "--dir");
    const std::string urls = arg(a, "--urls");
    const std::string workers = arg(a, "--workers");
    const std::string cli = arg(a, "--cli");
    const std::string self = arg(a, "--self");
    const std::string fenced = arg(a, "--fenced");
    const std::string permits = arg(a, "--permits");
    std::mt19937_64 rng(std::strtoull(arg(a, "--seed").c_str(), nullptr, 10));
    catch_stop();
    const worker_log log{dir + "/worker-" + std::to_string(id) + ".log"};
    const std::string err_path = dir + "/agent-" + std::to_string(id) + ".err";

    for (std::int64_t seq = 1; g_stop == 0; ++seq) {
        const std::int64_t hold =
            fenced == "1" ? pick_hold_ms(rng) : uniform_ms(rng, link_hold_min_ms, link_hold_max_ms);
        const std::int64_t write_at = std::uniform_int_distribution<std::int64_t>(0, hold - 1)(rng);
        std::vector<std::string> args = {cli, "run", "-q", "-N", urls};
        args.insert(args.end(), {"--ttl", n(ttl_ms) + "ms", "-w", n(wait_ms) + "ms", "--grace",
                                 n(grace_ms) + "ms"});
        if (fenced == "1") {
            args.push_back("--fencing");
        }
        if (permits != "0") {
            args.insert(args.end(), {"--permits", permits});
        }
        args.insert(args.end(), {lock_name, "--", self, "section", "--id", std::to_string(id),
                                 "--seq", n(seq), "--dir", dir, "--workers", workers, "--hold",
                                 n(hold), "--write-at", n(write_at), "--fenced", fenced});
        // Same process group as this worker: a paused holder is the whole group.
        edgelock_test::spawn_options so;
        so.own_group = false;
        so.dies_with_parent = false;
        so.stderr_fd = ::open(err_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        const std::int64_t t0 = mono_ns();
        const pid_t pid = edgelock_test::spawn(args, so);
        if (so.stderr_fd >= 0) {
            ::close(so.stderr_fd);
        }
        if (pid < 0) {
            sleep_ms(50);
            continue;
        }
        const int status = edgelock_test::wait_exit(pid);
        const std::int64_t t1 = mono_ns();
        const std::string result =
            WIFEXITED(status) ? "exit:" + n(WEXITSTATUS(status)) : "signal:" + n(WTERMSIG(status));
        log.op("agent", seq, t0, t1, 0, result);
        // In a link-delay run the pause is long enough for the scheduler to
        // see the job's end and slow the link before the next set-up.
        sleep_ms(fenced == "1" ? uniform_ms(rng, 0, 30) : uniform_ms(rng, 20, 50));
    }
    return 0;
}

int section_main(int argc, char** argv) {
    const auto a = parse_args(argc, argv);
    const int id = std::atoi(arg(a, "--id").c_str());
    const std::int64_t seq = std::atoll(arg(a, "--seq").c_str());
    const std::string dir = arg(a, "--dir");
    const int workers = std::atoi(arg(a, "--workers").c_str());
    const std::int64_t hold = ms_to_ns(std::atoll(arg(a, "--hold").c_str()));
    const std::int64_t write_after = ms_to_ns(std::atoll(arg(a, "--write-at").c_str()));
    const bool fenced = arg(a, "--fenced") == "1";
    catch_stop();  // the agent's SIGTERM when the lock is being lost
    const worker_log log{dir + "/worker-" + std::to_string(id) + ".log"};
    const char* fence = std::getenv("EDGELOCK_FENCING_TOKEN");
    if (fenced && (fence == nullptr || *fence == '\0')) {
        std::fprintf(stderr, "edgelock_chaos: section without EDGELOCK_FENCING_TOKEN\n");
        return 70;
    }
    const std::uint64_t token = fenced ? std::strtoull(fence, nullptr, 10) : 0;
    holders table;
    table.open(dir, workers, false);

    const std::int64_t enter = mono_ns();
    table.enter(id);
    log.enter(seq, token);
    bool wrote = false;
    const char* outcome = "done";
    for (;;) {
        if (g_stop != 0) {
            outcome = "terminated";
            break;
        }
        const std::int64_t now = mono_ns();
        if (fenced && !wrote && now >= enter + write_after) {
            log.write(seq, token, storage_write(dir, token, id));
            wrote = true;
            continue;
        }
        if (now >= enter + hold) {
            break;
        }
        sleep_ms(1);
    }
    log.exit(seq, token, mono_ns(), outcome);
    table.leave(id);
    return 0;
}

}  // namespace edgelock_chaos
