// The chaos checker's verifier on made-up logs (chaos.hpp): each known
// violation found, nothing in a clean log, under every topology's rules.
#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "chaos/chaos.hpp"
#include "tools/files.hpp"

namespace edgelock_chaos {

namespace {

// One made-up run: worker-0.log and worker-1.log, storage.log, faults.log,
// and worker-2.log when given.
struct fake_run {
    fake_run(std::string a, std::string b, std::string s, std::string f, std::string c = "")
        : w0(std::move(a)),
          w1(std::move(b)),
          storage(std::move(s)),
          faults(std::move(f)),
          w2(std::move(c)) {}
    std::string w0, w1, storage, faults, w2;
};

// permits: -1 judges a fenced run; 0 or more an unfenced link-delay run on a
// lock (0) or a semaphore.
bool judge(const fake_run& run, bool want_ok, long long verdict::*field, long long want,
           const char* what, std::string& failure,
           topology_kind topology = topology_kind::standalone, int permits = -1) {
    std::unique_ptr<edgelock_test::temp_dir> made;
    try {
        made = std::make_unique<edgelock_test::temp_dir>("edgelock-chaos-self");
    } catch (const std::exception& e) {
        failure = e.what();
        return false;
    }
    const std::string dir = made->path;
    edgelock_test::write_file(dir + "/worker-0.log", run.w0);
    edgelock_test::write_file(dir + "/worker-1.log", run.w1);
    edgelock_test::write_file(dir + "/storage.log", run.storage);
    edgelock_test::write_file(dir + "/faults.log", run.faults);
    if (!run.w2.empty()) {
        edgelock_test::write_file(dir + "/worker-2.log", run.w2);
    }
    run_facts facts;
    facts.topology = topology;
    facts.nodes = 1;
    facts.workers = run.w2.empty() ? 2 : 3;
    facts.library_workers = permits < 0 ? 2 : 0;
    facts.fenced = permits < 0;
    facts.permits = permits < 0 ? 0 : permits;
    facts.start_ns = 0;
    facts.end_ns = 10000000000;
    std::string report;
    verdict v;
    const bool ok = verify(dir, facts, report, &v);
    made.reset();
    if (ok != want_ok || v.*field != want) {
        failure = std::string(what) + " (" + topology_name(topology) + "): judged " +
                  (ok ? "PASS" : "FAIL") + ", count " + std::to_string(v.*field) + ", expected " +
                  (want_ok ? "PASS" : "FAIL") + " and " + std::to_string(want) + "\n" + report;
        return false;
    }
    return true;
}

// The sentinel and cluster rules: a lock lost in a failover (two holders, a
// stale write refused, tokens out of order) is reported but passes; a stale
// write accepted, or a token not above one of a section ended before the
// acquisition began, fails. `a` and `b`: clean logs of workers 0 and 1.
bool replicated_rules(const std::string& a, const std::string& b, const std::string& storage,
                      std::string& failure) {
    // Worker 1 takes the lock at 1.5 s on a promoted replica (a larger token)
    // while worker 0 holds it, and worker 0's write at 1.8 s is refused.
    const std::string a_late =
        "op acquire 1 900000000 1000000000 3000000000 acquired\n"
        "enter 1 5 1000000000\nwrite 1 5 1800000000 rejected\n"
        "exit 1 5 2000000000 done\n";
    const fake_run lost{a_late,
                        "op acquire 1 1400000000 1500000000 3000000000 acquired\n"
                        "enter 1 6 1500000000\nwrite 1 6 1600000000 accepted\n"
                        "exit 1 6 4000000000 done\n",
                        "accept 6 1600000000 1\nreject 5 6 1800000000 0\n", ""};
    // Worker 1's token came from before worker 0's: two holders, tokens out
    // of order, the later writer refused.
    const fake_run crossed{a,
                           "op acquire 1 1400000000 1500000000 3000000000 acquired\n"
                           "enter 1 4 1500000000\nwrite 1 4 1900000000 rejected\n"
                           "exit 1 4 2500000000 done\n",
                           "accept 5 1500000000 0\nreject 4 5 1900000000 1\n", ""};
    const fake_run stale{a, b, "accept 6 1500000000 1\naccept 5 3500000000 0\n", ""};
    // Worker 1 began acquiring at 2.5 s, after worker 0's section (token 5)
    // had ended at 2 s, and got token 5 again.
    const fake_run regressed{a,
                             "op acquire 1 2500000000 3000000000 3000000000 acquired\n"
                             "enter 1 5 3000000000\nexit 1 5 4000000000 done\n",
                             storage, ""};
    const fake_run overlap{a, "enter 1 6 1500000000\nexit 1 6 4000000000 done\n", storage, ""};
    for (topology_kind t : {topology_kind::sentinel, topology_kind::cluster}) {
        if (!judge(fake_run{a, b, storage, ""}, true, &verdict::overlaps, 0, "a clean run", failure,
                   t) ||
            !judge(overlap, true, &verdict::overlaps, 1, "two holders at once", failure, t) ||
            !judge(lost, true, &verdict::rejected_unpaused, 1, "a lock lost in a failover", failure,
                   t) ||
            !judge(crossed, true, &verdict::out_of_order, 1, "tokens crossed in a failover",
                   failure, t) ||
            !judge(stale, false, &verdict::stale_accepted, 1, "a stale write accepted", failure,
                   t) ||
            !judge(regressed, false, &verdict::token_regressions, 1, "a token issued again",
                   failure, t)) {
            return false;
        }
    }
    // The same logs under the standalone rules: a lost lock is a violation.
    return judge(overlap, false, &verdict::overlaps, 1, "two holders at once", failure) &&
           judge(lost, false, &verdict::overlaps, 1, "a lock lost", failure) &&
           judge(regressed, false, &verdict::out_of_order, 1, "a token issued again", failure);
}

// The link-delay rules (unfenced, every token 0): never more jobs inside at
// once than the permits, one for a lock; tokens and the storage say nothing.
bool link_delay_rules(std::string& failure) {
    // Jobs of workers 0, 1 and 2 inside over [1 s, 2 s], [1.5 s, 3 s], [1.8 s, 4 s].
    const std::string a = "enter 1 0 1000000000\nexit 1 0 2000000000 done\n";
    const std::string b = "enter 1 0 1500000000\nexit 1 0 3000000000 done\n";
    const std::string c = "enter 1 0 1800000000\nexit 1 0 4000000000 terminated\n";
    // One after another: the same token (0) twice is no repeated token here.
    const fake_run turns{a, "enter 1 0 2500000000\nexit 1 0 3000000000 done\n", "", ""};
    const fake_run two{a, b, "", ""};
    const fake_run three{a, b, "", "", c};
    // Entering at the instant another exits is inside with it.
    const fake_run touching{a, "enter 1 0 2000000000\nexit 1 0 3000000000 done\n", "", ""};
    // An agent's job killed before its exit record: inside until its agent ended.
    const fake_run killed{"op agent 1 900000000 2600000000 0 signal:9\nenter 1 0 1000000000\n",
                          "enter 1 0 2500000000\nexit 1 0 3000000000 done\n", "", ""};
    const topology_kind t = topology_kind::standalone;
    return judge(turns, true, &verdict::beyond_permits, 0, "a lock taken in turns", failure, t,
                 0) &&
           judge(turns, true, &verdict::most_alive, 1, "a lock taken in turns", failure, t, 0) &&
           judge(two, false, &verdict::beyond_permits, 1, "two jobs under a lock", failure, t, 0) &&
           judge(touching, false, &verdict::beyond_permits, 1, "jobs that touch", failure, t, 0) &&
           judge(killed, false, &verdict::beyond_permits, 1, "a killed job's agent", failure, t,
                 0) &&
           judge(two, true, &verdict::most_alive, 2, "two jobs, two permits", failure, t, 2) &&
           judge(three, false, &verdict::beyond_permits, 1, "three jobs, two permits", failure, t,
                 2) &&
           judge(three, true, &verdict::most_alive, 3, "three jobs, three permits", failure, t, 3);
}

}  // namespace

bool verify_self_test(std::string& failure) {
    // Worker 0 holds [1 s, 2 s] with token 5, worker 1 [3 s, 4 s] with 6.
    const std::string a =
        "op acquire 1 900000000 1000000000 3000000000 acquired\n"
        "enter 1 5 1000000000\nwrite 1 5 1500000000 accepted\n"
        "exit 1 5 2000000000 done\n"
        "op release 1 2000000000 2001000000 700000000 released\n";
    const std::string b = "enter 1 6 3000000000\nexit 1 6 4000000000 done\n";
    const std::string storage = "accept 5 1500000000 0\naccept 6 3500000000 1\n";
    fake_run clean{a, b, storage, ""};
    // Worker 1 enters at 1.5 s, inside worker 0's section.
    fake_run overlap{a, "enter 1 6 1500000000\nexit 1 6 4000000000 done\n", storage, ""};
    // The same, but worker 0 was stopped inside its section: reported apart.
    fake_run paused = overlap;
    paused.faults = "fault holder_pause 0 1200000000 2900000000 -\n";
    fake_run stale{a, b, "accept 6 1500000000 1\naccept 5 3500000000 0\n", ""};
    fake_run order{a, "enter 1 5 3000000000\nexit 1 5 4000000000 done\n", storage, ""};
    fake_run late{a + "op acquire 2 5000000000 9000000000 3000000000 busy\n", b, storage, ""};
    fake_run garbage{a, b + "bogus line\n", storage, ""};
    // Worker 1 (not paused) holds from 1.5 s; worker 0 enters at 1.8 s and
    // is stopped at 1.9 s: its pause came after, so it excuses nothing.
    fake_run late_pause{"enter 1 6 1800000000\nexit 1 6 2500000000 done\n",
                        "enter 1 5 1500000000\nexit 1 5 3000000000 done\n", "",
                        "fault holder_pause 0 1900000000 3500000000 -\n"};
    // Worker 0 stopped at 2.5 s, but worker 1 had entered at 1.5 s already.
    fake_run pause_after_entry = overlap;
    pause_after_entry.faults = "fault holder_pause 0 2500000000 2900000000 -\n";
    fake_run truncated{a + "enter 2 7\n", b, storage, ""};
    fake_run rejected{a,
                      "enter 1 6 3000000000\nwrite 1 6 3100000000 rejected\n"
                      "exit 1 6 4000000000 done\n",
                      storage, ""};
    return judge(clean, true, &verdict::overlaps, 0, "a clean run", failure) &&
           judge(clean, true, &verdict::acquisitions, 2, "a clean run's acquisitions", failure) &&
           judge(overlap, false, &verdict::overlaps, 1, "two holders at once", failure) &&
           judge(paused, true, &verdict::paused_overlaps, 1, "a paused holder", failure) &&
           judge(stale, false, &verdict::stale_accepted, 1, "a stale write accepted", failure) &&
           judge(order, false, &verdict::out_of_order, 1, "a repeated token", failure) &&
           judge(late, false, &verdict::late_ops, 1, "an operation past its bound", failure) &&
           judge(garbage, false, &verdict::malformed, 1, "a malformed line", failure) &&
           judge(late_pause, false, &verdict::overlaps, 1, "entry into an unpaused holder",
                 failure) &&
           judge(pause_after_entry, false, &verdict::overlaps, 1, "a pause after the overlap",
                 failure) &&
           judge(truncated, false, &verdict::malformed, 1, "a truncated line", failure) &&
           judge(rejected, false, &verdict::rejected_unpaused, 1, "a stale write, not paused",
                 failure) &&
           replicated_rules(a, b, storage, failure) && link_delay_rules(failure);
}

}  // namespace edgelock_chaos
