// edgelock run: acquire, run the command as a job (job.hpp), renew while it
// runs, stop it whole when the lock is in doubt, release, and say whether the
// lock held for the whole job.
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "agent.hpp"
#include "edgelock/redlock.hpp"
#include "holder.hpp"
#include "job.hpp"
#include "messages.hpp"
#include "metrics_file.hpp"
#include "semaphore_view.hpp"
#include "service_status.hpp"

namespace edgelock_cli {

using namespace edgelock;

namespace {

// The command's environment: the lock's identity, and no secret of ours.
std::vector<env_change> child_environment(const client_lock& l) {
    std::vector<env_change> env;
    env.push_back({"EDGELOCK_KEY", opt.key, false});
    if (opt.fencing) {
        env.push_back({"EDGELOCK_FENCING_TOKEN", std::to_string(l.fence()), false});
    } else {
        env.push_back({"EDGELOCK_FENCING_TOKEN", std::string(), true});
    }
    if (opt.permits != 0) {
        env.push_back({"EDGELOCK_PERMIT", std::to_string(l.permit()), false});
    } else {
        env.push_back({"EDGELOCK_PERMIT", std::string(), true});
    }
    env.push_back({"REDISCLI_AUTH", std::string(), true});
    if (const char* list = std::getenv("EDGELOCK_NODES")) {
        env.push_back({"EDGELOCK_NODES", without_credentials(list), false});
    }
    return env;
}

// After the release: true when nodes enough to rule out a quorum answered
// that the key was not ours any more (evicted, deleted, expired), so the
// command may have run without the lock. Silent nodes prove nothing.
bool vanished_under_us(const client_lock& l, const op_result& r) {
    return r.error == client_errc::ok && r.event.kind == lock_event_kind::released &&
           r.event.nodes < l.machine().quorum() &&
           r.event.absent > driver.node_count() - l.machine().quorum();
}

// Signals that ask a job to end: a stopped job must be continued to see them.
bool asks_to_end(int signo) {
    return signo == SIGTERM || signo == SIGINT || signo == SIGHUP || signo == SIGQUIT;
}

// The unit's status line while the job runs under the lock (said again when
// renewals recover): since when, and what. In UTC: the local time zone would
// be a file to read (tzset), and nothing here waits on a file.
void say_holding(const client_lock& l, pid_t leader) {
    char since[24] = "?";
    const std::time_t t = std::time(nullptr);
    std::tm utc;
    if (gmtime_r(&t, &utc) != nullptr) {
        std::strftime(since, sizeof since, "%H:%M:%S UTC", &utc);
    }
    const std::string fence = opt.fencing ? ", fencing token " + std::to_string(l.fence()) : "";
    const std::string what =
        opt.permits != 0 ? "permit " + std::to_string(l.permit()) + " of " + opt.key : opt.key;
    service_status_holding_is("holding %s since %s%s, running %s (pid %d)", what.c_str(), since,
                              fence.c_str(), opt.child[0].c_str(), static_cast<int>(leader));
}

// The unit's status line while a try found the lock taken: who holds it,
// from the first node whose holder recorded itself. Looked up once, under
// the bound of one request (the lock's own requests go on meanwhile), and
// only under systemd: the line is for the unit's status.
// A semaphore's holders, as its waiting line names them: "gw-17 pid 4242
// (upload) for 3h12m, gw-9 pid 77 (upload) for 5m".
std::string semaphore_holders(const std::vector<key_view>& views, instant bound) {
    semaphore_view sem;
    std::string who;
    if (!inspect_semaphore(opt.key, views, bound, sem)) {
        return who;
    }
    const std::time_t now = std::time(nullptr);
    for (std::size_t p = 0; p < static_cast<std::size_t>(sem.limit); ++p) {
        for (const semaphore_node& n : sem.nodes) {
            if (p < n.permits.size() && n.permits[p].has_holder) {
                const holder_info& h = n.permits[p].holder;
                who += (who.empty() ? "" : ", ") + h.host + (h.pid.empty() ? "" : " pid " + h.pid) +
                       (h.label.empty() ? "" : " (" + h.label + ")");
                if (now > 0 && static_cast<std::uint64_t>(now) >= h.since_s) {
                    who += " for " + held_for(static_cast<std::uint64_t>(now) - h.since_s);
                }
                break;
            }
        }
    }
    return who;
}

void say_waiting(const client_lock& l) {
    std::string who = "another holder";
    if (service_status_wanted() && opt.permits != 0) {
        const instant bound = port::now() + l.machine().round_allowance();
        std::vector<key_view> views(driver.node_count());
        for (std::uint8_t i = 0; i < driver.node_count() && port::now() < bound; ++i) {
            inspect_key(i, opt.key, bound, views[i]);
        }
        const std::string holders = semaphore_holders(views, bound);
        service_status("waiting for a permit of %s, all %u held%s%s", opt.key.c_str(), opt.permits,
                       holders.empty() ? "" : " by ", holders.c_str());
        return;
    }
    if (service_status_wanted()) {
        const instant bound = port::now() + l.machine().round_allowance();
        for (std::uint8_t i = 0; i < driver.node_count() && port::now() < bound; ++i) {
            key_view k;
            inspect_key(i, opt.key, bound, k);
            if (k.has_holder) {
                const std::time_t now = std::time(nullptr);
                const std::uint64_t since = k.holder.since_s;
                who = k.holder.host + (k.holder.pid.empty() ? "" : " pid " + k.holder.pid) +
                      (k.holder.label.empty() ? "" : " (" + k.holder.label + ")");
                if (now > 0 && static_cast<std::uint64_t>(now) >= since) {
                    who += " for " + held_for(static_cast<std::uint64_t>(now) - since);
                }
                break;
            }
        }
    }
    service_status("waiting for %s, held by %s", opt.key.c_str(), who.c_str());
}

// When a run's stages happened, for --metrics-file.
struct run_times {
    instant start;
    instant decided;  // acquired, or given up
    bool acquired = false;
    double start_unix = 0;
};

double unix_now() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double seconds(duration d) {
    return static_cast<double>(d.us) / 1e6;
}

// The run's numbers into --metrics-file. A failure is said, and changes
// nothing else: the job's exit status matters more than its metrics.
void write_metrics(const client_lock& l, const run_times& t, int status) {
    const instant end = port::now();
    job_metrics m;
    m.key = opt.key;
    m.start_time_s = t.start_unix;
    m.end_time_s = unix_now();
    m.wait_s = seconds(t.decided - t.start);
    m.hold_s = t.acquired ? seconds(end - t.decided) : 0;
    m.exit_status = status;
    m.acquired = t.acquired;
    m.lost = t.acquired && (watch.lost || status == exit_lost);
    m.renewals_failed = l.stats().renewals_failed;
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        m.node_errors.emplace_back(node_shown(i), driver.node_stats(i).errors());
    }
    std::string error;
    bool waited_out = false;
    const bool ok = write_metrics_file(opt.metrics_file, m, error, waited_out);
    if (waited_out) {
        say(1, "metrics file %s: another agent kept it locked for 2 s; written anyway",
            opt.metrics_file.c_str());
    }
    if (!ok) {
        say(1, "metrics file not written: %s", error.c_str());
    }
}

// Waits for the acquisition; a signal that would end the agent ends it.
// Returns 0 when it ended (see ended_with()), else the exit status.
int await_acquisition(client_lock& l) {
    service_status("acquiring %s", opt.key.c_str());
    // With the retry policy the lock was attached with.
    if (l.start_acquire() != client_errc::ok) {
        return exit_software;
    }
    const instant bound = op_bound(opt.wait);
    int stop_signal = 0;
    bool said_waiting = false;
    while (!l.outcome().done && port::now() < bound && stop_signal == 0) {
        bool signalled = false;
        if (!turn(bound, true, signalled)) {
            return exit_software;
        }
        if (!said_waiting && !l.outcome().done && l.machine().contended()) {
            said_waiting = true;  // a try found it taken; the next is told
            say_waiting(l);
        }
        for (int s = next_signal(); s != 0; s = next_signal()) {
            stop_signal = ends_by_default(s) ? s : stop_signal;
        }
    }
    if (stop_signal != 0 || !l.outcome().done) {
        l.release();  // whatever is under way; not_held when nothing is
        return stop_signal != 0 ? 128 + stop_signal : unavailable(l);
    }
    return 0;
}

// SIGTERM to SIGKILL: --grace, or less where it would not fit. A job is
// stopped a grace before the validity ends unless a renewal extended it; a
// renew goes renew_every after the last one and must have room to come
// back, late on a slow link, before then: the grace takes at most half of
// what the validity has left when a renew goes. Said once when shortened
// (at -v only when the grace is the default).
duration fitted_grace(const client_lock& l) {
    const lock_options& o = l.machine().options();
    const duration every =
        opt.renew_every.us != 0 ? opt.renew_every : duration::micros(o.ttl.us / 3);
    const duration drift = redlock_drift(o.ttl, o.drift_ppm, o.drift_fixed);
    const std::uint64_t spent = every.us + drift.us;
    const duration fit = duration::micros(o.ttl.us > spent ? (o.ttl.us - spent) / 2 : 0);
    if (opt.grace <= fit) {
        return opt.grace;
    }
    say(opt.grace_given ? 1 : 2,
        "--grace %llu ms does not fit a renewal at this ttl: SIGKILL comes %llu ms after SIGTERM",
        static_cast<unsigned long long>(opt.grace.ms()), static_cast<unsigned long long>(fit.ms()));
    return fit;
}

int run_job(client_lock& l, run_times& t) {
    if (!install_agent_signals()) {
        say(0, "cannot set up signal handling: %s", std::strerror(errno));
        t.decided = port::now();
        return exit_software;
    }
    const int acquisition = await_acquisition(l);
    t.decided = port::now();
    if (acquisition != 0) {
        return acquisition;
    }
    if (ended_with(l).kind != lock_event_kind::acquired) {
        return not_acquired(l, ended_with(l));
    }
    t.acquired = true;
    warn_nodes(true);

    job j;
    if (!j.start(opt.child, child_environment(l))) {
        say(0, "fork: %s", std::strerror(errno));
        l.release();
        return exit_software;
    }
    say_holding(l, j.leader());
    const duration grace = fitted_grace(l);
    bool stopped_for_lock = false;  // SIGTERM went to the job for the lock's sake
    instant kill_at = instant::never();
    instant give_up_at = instant::never();
    // --max-hold: the job is stopped then, as for a lost lock, but with the
    // lock still held and renewed until the job is gone; then released.
    const instant max_hold_at =
        opt.max_hold.us != 0 ? port::now() + opt.max_hold : instant::never();
    for (;;) {
        // Unless a renewal extends the validity first (one failing, or one
        // not answered yet), the job gets its SIGTERM a grace before it
        // ends, so that SIGKILL, if needed, lands while the lock is still
        // ours, before anyone else can hold it.
        instant term_at = instant::never();
        if (!stopped_for_lock) {
            term_at = instant{watch.validity.us > grace.us ? watch.validity.us - grace.us : 0};
        }
        const instant recheck =
            j.needs_polling() ? port::now() + duration::millis(100) : instant::never();
        bool signalled = false;
        const instant hold_ends = stopped_for_lock ? instant::never() : max_hold_at;
        if (!turn(earliest(earliest(earliest(kill_at, term_at), recheck), hold_ends), true,
                  signalled)) {
            // Without a working wait the lock cannot be kept: end the job.
            say(0, "cannot wait for events: %s", std::strerror(errno));
            stopped_for_lock = true;
            kill_at = port::now();
            ::usleep(10000);
        }
        for (int s = next_signal(); s != 0; s = next_signal()) {
            if (s == SIGCHLD) {
                continue;
            }
            j.signal(s);  // the whole job decides what to do with it
            if (asks_to_end(s)) {
                j.signal(SIGCONT);
            }
        }
        j.reap();
        if (j.take_job_control_stop()) {
            // Ctrl-Z, or a background read of the terminal: stop as a shell's
            // job would. No renewal while stopped, so check the lock before
            // the job may go on.
            say(2, "the command was stopped; stopping too");
            j.stop_with_terminal();
            if (l.held()) {
                j.signal(SIGCONT);
            } else if (!stopped_for_lock) {
                say(1, "the lock's validity ended while stopped: stopping the command");
                stopped_for_lock = true;
                kill_at = port::now();
            }
        }
        if (!j.running()) {
            break;
        }
        const instant now = port::now();
        const bool risk_due = !watch.lost && term_at <= now;
        if ((watch.lost || risk_due) && !stopped_for_lock) {
            stopped_for_lock = true;
            const duration left = watch.validity > now ? watch.validity - now : duration{};
            const duration kill_in = left < grace ? left : grace;
            say(1, "stopping the command (SIGTERM, SIGKILL in %llu ms)%s",
                static_cast<unsigned long long>(kill_in.ms()),
                watch.lost      ? ""
                : watch.at_risk ? ": renewals failed, the lock may be lost by then"
                                : ": no renewal answered in time, the lock may be lost by then");
            service_status("stopping the command: %s %s", opt.key.c_str(),
                           watch.lost ? "lost" : "may be lost before it ends");
            j.signal(SIGTERM);
            j.signal(SIGCONT);
            kill_at = earliest(kill_at, now + kill_in);
        }
        if (now >= max_hold_at && !stopped_for_lock) {
            // The lock is still ours: SIGKILL lands within its validity.
            stopped_for_lock = true;
            const duration left = watch.validity > now ? watch.validity - now : duration{};
            const duration kill_in = left < grace ? left : grace;
            say(1, "'%s' held for --max-hold: stopping the command (SIGTERM, SIGKILL in %llu ms)",
                opt.key.c_str(), static_cast<unsigned long long>(kill_in.ms()));
            service_status("stopping the command: %s held for --max-hold", opt.key.c_str());
            j.signal(SIGTERM);
            j.signal(SIGCONT);
            kill_at = earliest(kill_at, now + kill_in);
        }
        if (now >= kill_at) {
            j.signal(SIGKILL);
            kill_at = now + duration::millis(50);  // again, until the job is gone
            give_up_at = earliest(give_up_at, now + duration::seconds(2));
        }
        if (now >= give_up_at) {
            // Unkillable (stuck in the kernel), or adopted where /proc cannot
            // show it: say so rather than wait for it past the lock.
            say(1,
                "warning: a process of the command outlived SIGKILL; it may still run, "
                "without the lock");
            break;
        }
    }
    j.restore_terminal();
    if (watch.lost || stopped_for_lock) {
        // Stopped for the lock's sake: whatever it exited with, the job did
        // not finish under the lock. Release what may still be held.
        l.release();  // not_held when it is already lost
        service_status("the command was stopped; %s let go", opt.key.c_str());
        return exit_lost;
    }
    const op_result r = l.release();
    if (watch.lost) {
        // Lost between the command's exit and the release: it ran without
        // the lock for a moment at most, but it did.
        return exit_lost;
    }
    if (vanished_under_us(l, r)) {
        say(1,
            "'%s' was no longer held by a quorum of nodes when the command ended (evicted, "
            "deleted or expired): it may have run without the lock",
            opt.key.c_str());
        service_status("%s was not held when the command ended", opt.key.c_str());
        return exit_lost;
    }
    service_status("released %s; the command exited %d", opt.key.c_str(), j.leader_status());
    return j.leader_status();
}

}  // namespace

// Every way a run ends, after the usage checks, writes the metrics file.
int run_command(client_lock& l) {
    run_times t;
    t.start = port::now();
    t.start_unix = unix_now();
    t.decided = t.start;
    const int status = run_job(l, t);
    if (!opt.metrics_file.empty()) {
        write_metrics(l, t, status);
    }
    return status;
}

}  // namespace edgelock_cli
