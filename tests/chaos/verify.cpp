// The chaos checker's verifier: reads a run's logs (chaos.hpp) and judges it.
//
// A critical section of a worker whose process group the scheduler stopped
// while it was inside ("a paused holder") may outlive its lock: no lock
// service can prevent that, only fencing can make the storage notice. Such
// sections are reported apart; in the standalone topology every other
// overlap is a safety violation.
//
// In the sentinel and cluster topologies a failover can lose a lock: the
// promoted replica may not have the lock's key yet (replication is
// asynchronous), and another worker takes the lock while the first still
// works. Overlaps, stale writes of holders that were not paused and tokens
// out of order are reported there, not failures. What fencing must still
// ensure is: the storage never accepts a stale write, and a token is above
// the token of every section that had ended before its acquisition began
// (counters never fall below the server's clock, so a failover that lost
// increments still hands out larger tokens).
//
// A link-delay run (unfenced, a lock or a semaphore of P permits) is judged
// on the jobs' own enter and exit records: never more of them inside at once
// than the permits (one for a lock).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "chaos/chaos.hpp"
#include "chaos/verify_sections.hpp"

namespace edgelock_chaos {

namespace {

struct fault {
    std::string kind;
    int target = 0;
    std::int64_t start = 0;
    std::int64_t end = 0;
};

std::string pad(const std::string& label, long long value, const char* note = "") {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-48s %8lld%s%s\n", label.c_str(), value,
                  *note != '\0' ? "   " : "", note);
    return buf;
}

}  // namespace

bool verify(const std::string& dir, const run_facts& facts, std::string& report, verdict* counts) {
    std::vector<section> sections;
    std::vector<op> ops;
    std::vector<fault> faults;
    std::map<std::pair<int, std::int64_t>, std::size_t> index;
    long long malformed = 0;

    for (int w = 0; w < facts.workers; ++w) {
        std::ifstream in(dir + "/worker-" + std::to_string(w) + ".log");
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream s(line);
            std::string kind;
            s >> kind;
            if (kind == "enter" || kind == "exit" || kind == "write") {
                std::int64_t seq = 0;
                std::uint64_t token = 0;
                std::int64_t t = 0;
                std::string outcome;
                s >> seq >> token >> t;
                if (kind != "enter") {
                    s >> outcome;
                }
                if (!s) {
                    ++malformed;
                    continue;
                }
                const auto key = std::make_pair(w, seq);
                if (kind == "enter") {
                    index[key] = sections.size();
                    section sec;
                    sec.worker = w;
                    sec.seq = seq;
                    sec.token = token;
                    sec.enter = t;
                    sections.push_back(sec);
                } else {
                    const auto it = index.find(key);
                    if (it == index.end()) {
                        ++malformed;
                        continue;
                    }
                    if (kind == "exit") {
                        sections[it->second].exit = t;
                        sections[it->second].outcome = outcome;
                    } else {
                        sections[it->second].write_at = t;
                        sections[it->second].write_rejected = outcome == "rejected";
                    }
                }
            } else if (kind == "op") {
                op o;
                o.worker = w;
                s >> o.kind >> o.seq >> o.start >> o.end >> o.bound >> o.result;
                if (!s) {
                    ++malformed;
                    continue;
                }
                ops.push_back(o);
            } else if (!kind.empty()) {
                ++malformed;
            }
        }
    }
    {
        std::ifstream in(dir + "/faults.log");
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream s(line);
            std::string word;
            fault f;
            s >> word >> f.kind >> f.target >> f.start >> f.end;
            if (!s || word != "fault") {
                ++malformed;
                continue;
            }
            faults.push_back(f);
        }
    }

    // Agent runs: the agent's own exit bounds a section whose command was
    // killed before it could write its exit record.
    std::map<std::pair<int, std::int64_t>, const op*> agent_runs;
    for (const op& o : ops) {
        if (o.kind == "agent") {
            agent_runs[std::make_pair(o.worker, o.seq)] = &o;
        }
    }
    long long open_sections = 0;
    for (section& s : sections) {
        if (s.exit < 0) {
            const auto it = agent_runs.find(std::make_pair(s.worker, s.seq));
            s.exit = it != agent_runs.end() ? it->second->end : facts.end_ns;
            s.outcome = "killed";
            if (it == agent_runs.end()) {
                ++open_sections;
            }
        }
    }

    // Paused holders: the worker's group was stopped while it was inside, or
    // after its last check while its write was on its way (a write is issued
    // after a check and lands when the storage takes it).
    std::map<std::string, long long> fault_counts;
    for (const fault& f : faults) {
        ++fault_counts[f.kind];
        if (f.kind != "holder_pause") {
            continue;
        }
        for (section& s : sections) {
            if (s.worker == f.target && s.enter <= f.start &&
                f.start <= std::max(s.exit, s.write_at) && (!s.paused || f.start < s.pause_start)) {
                s.paused = true;
                s.pause_start = f.start;
            }
        }
    }

    std::sort(sections.begin(), sections.end(),
              [](const section& x, const section& y) { return x.enter < y.enter; });

    // Overlaps: every pair of sections whose [enter, exit] intervals meet. The
    // one excuse: the earlier holder had been stopped by the scheduler before
    // the later one entered (its lock ran out while it could not act).
    long long overlaps = 0;
    long long paused_overlaps = 0;
    std::string overlap_examples;
    for (std::size_t i = 0; i < sections.size(); ++i) {
        for (std::size_t j = i + 1; j < sections.size() && sections[j].enter <= sections[i].exit;
             ++j) {
            if (sections[i].paused && sections[i].pause_start <= sections[j].enter) {
                ++paused_overlaps;
                continue;
            }
            ++overlaps;
            if (overlaps <= 5) {
                char buf[200];
                std::snprintf(
                    buf, sizeof buf,
                    "    overlap: worker %d seq %lld token %llu held [%lld, %lld] ms, worker "
                    "%d seq %lld token %llu entered at %lld ms\n",
                    sections[i].worker, static_cast<long long>(sections[i].seq),
                    static_cast<unsigned long long>(sections[i].token),
                    static_cast<long long>((sections[i].enter - facts.start_ns) / 1000000),
                    static_cast<long long>((sections[i].exit - facts.start_ns) / 1000000),
                    sections[j].worker, static_cast<long long>(sections[j].seq),
                    static_cast<unsigned long long>(sections[j].token),
                    static_cast<long long>((sections[j].enter - facts.start_ns) / 1000000));
                overlap_examples += buf;
            }
        }
    }

    // Fencing: in the order the sections began, tokens strictly increase.
    long long out_of_order = 0;
    for (std::size_t i = 1; i < sections.size(); ++i) {
        if (sections[i].token <= sections[i - 1].token) {
            ++out_of_order;
        }
    }
    const long long token_regressions = regressions(sections, ops);
    const long long limit = facts.permits > 0 ? facts.permits : 1;
    const alive_count alive = count_alive(sections, limit, facts.start_ns);

    // The storage: an accepted token below one accepted before is stale.
    long long accepted = 0;
    long long stale_accepted = 0;
    long long stale_rejected = 0;
    {
        std::ifstream in(dir + "/storage.log");
        std::string line;
        std::uint64_t highest = 0;
        while (std::getline(in, line)) {
            std::istringstream s(line);
            std::string kind;
            std::uint64_t token = 0;
            s >> kind >> token;
            if (kind == "accept") {
                ++accepted;
                if (token < highest) {
                    ++stale_accepted;
                }
                highest = std::max(highest, token);
            } else if (kind == "reject") {
                ++stale_rejected;
            } else {
                ++malformed;
            }
        }
    }

    // Deadlines: every blocking operation returned within its bound. A worker
    // stopped by the scheduler is excused for the operation it was in.
    auto worker_paused = [&](int w, std::int64_t from, std::int64_t to) {
        for (const fault& f : faults) {
            if (f.kind == "holder_pause" && f.target == w && f.start <= to && f.end >= from) {
                return true;
            }
        }
        return false;
    };
    std::map<std::pair<int, std::int64_t>, const section*> by_key;
    for (const section& s : sections) {
        by_key[std::make_pair(s.worker, s.seq)] = &s;
    }
    long long late_ops = 0;
    long long agent_runs_total = 0;
    long long agent_bad_status = 0;
    std::map<std::string, long long> outcomes;
    std::string late_examples;
    auto late = [&](const op& o, const char* what, std::int64_t took, std::int64_t bound) {
        ++late_ops;
        if (late_ops <= 5) {
            char buf[200];
            std::snprintf(buf, sizeof buf,
                          "    late: worker %d %s %s took %lld ms, bound %lld ms\n", o.worker,
                          o.kind.c_str(), what, static_cast<long long>(took / 1000000),
                          static_cast<long long>(bound / 1000000));
            late_examples += buf;
        }
    };
    for (const op& o : ops) {
        ++outcomes[o.kind + " " + o.result];
        if (worker_paused(o.worker, o.start, o.end)) {
            continue;
        }
        if (o.kind != "agent") {
            if (o.end - o.start > o.bound) {
                late(o, o.result.c_str(), o.end - o.start, o.bound);
            }
            continue;
        }
        ++agent_runs_total;
        // 0 ran, 1 not acquired in time, 69 no quorum, 75 lost: anything else
        // (70, 127, a signal) is the agent failing.
        if (o.result != "exit:0" && o.result != "exit:1" && o.result != "exit:69" &&
            o.result != "exit:75") {
            ++agent_bad_status;
        }
        const auto it = by_key.find(std::make_pair(o.worker, o.seq));
        if (it == by_key.end()) {
            if (o.end - o.start > ms_to_ns(agent_fail_bound_ms)) {
                late(o, "without the lock", o.end - o.start, ms_to_ns(agent_fail_bound_ms));
            }
            continue;
        }
        const section& s = *it->second;
        if (s.enter - o.start > ms_to_ns(agent_fail_bound_ms)) {
            late(o, "to acquire", s.enter - o.start, ms_to_ns(agent_fail_bound_ms));
        }
        if (o.end - s.exit > ms_to_ns(release_bound_ms)) {
            late(o, "to release", o.end - s.exit, ms_to_ns(release_bound_ms));
        }
    }

    long long lost = 0;
    long long library_sections = 0;
    for (const section& s : sections) {
        if (s.outcome != "done") {
            ++lost;
        }
        if (s.worker < facts.library_workers) {
            ++library_sections;
        }
    }
    long long paused_sections = 0;
    long long rejected_unpaused = 0;  // only a holder whose lock ran out writes stale
    for (const section& s : sections) {
        paused_sections += s.paused ? 1 : 0;
        rejected_unpaused += s.write_rejected && !s.paused ? 1 : 0;
    }

    const long long acquisitions = static_cast<long long>(sections.size());
    const long long min_acquisitions = facts.seconds;  // one a second at the least
    const double seconds = static_cast<double>(facts.end_ns - facts.start_ns) / 1e9;

    const bool replicated = facts.topology != topology_kind::standalone;
    std::string r;
    char head[300];
    char shape[120] = "";
    if (facts.topology == topology_kind::sentinel) {
        std::snprintf(shape, sizeof shape,
                      "sentinel: %d nodes (1 master, %d replicas), %d sentinels", facts.nodes,
                      facts.replicas, facts.sentinels);
    } else if (facts.topology == topology_kind::cluster) {
        std::snprintf(shape, sizeof shape, "cluster: %d nodes (%d masters, %d replicas)",
                      facts.nodes, facts.nodes - facts.replicas, facts.replicas);
    } else {
        std::snprintf(shape, sizeof shape, "%d node%s", facts.nodes, facts.nodes == 1 ? "" : "s");
    }
    std::string kind = "fenced";
    if (!facts.fenced) {
        kind = facts.permits > 0 ? "semaphore of " + std::to_string(facts.permits) + " permits"
                                 : std::string("plain lock");
        kind += ", link delays";
    }
    std::snprintf(
        head, sizeof head,
        "edgelock chaos report: %s, %d workers (%d library, %d agent), %.0f s, "
        "seed %llu, ttl %lld ms, %s\n",
        shape, facts.workers, facts.library_workers, facts.workers - facts.library_workers, seconds,
        static_cast<unsigned long long>(facts.seed), static_cast<long long>(ttl_ms), kind.c_str());
    r += head;
    r += pad("acquisitions (critical sections)", acquisitions);
    r += pad("  by library workers", library_sections);
    r += pad("  by agent workers", acquisitions - library_sections);
    r += pad("  left early: lock lost or command stopped", lost);
    r += pad("  with the holder paused past its ttl", paused_sections);
    r += pad("storage writes accepted", accepted);
    long long total_faults = 0;
    for (const auto& f : fault_counts) {
        total_faults += f.second;
    }
    r += pad("faults injected", total_faults);
    for (const auto& f : fault_counts) {
        r += pad("  " + f.first, f.second);
    }
    r += pad("agent runs", agent_runs_total);
    r += "checks:\n";
    if (replicated) {
        r += pad("stale writes accepted by the storage", stale_accepted, "must be 0");
        r += pad("  stale writes rejected by the storage", stale_rejected, "fencing at work");
        r += pad("tokens not above an ended section's", token_regressions, "must be 0");
    } else if (!facts.fenced) {
        r += pad("jobs entered beyond the " + std::to_string(limit) + " allowed inside",
                 alive.beyond, "must be 0");
        r += alive.examples;
        r += pad("  most jobs inside at once", alive.most);
    } else {
        r += pad("overlapping critical sections", overlaps, "must be 0");
        r += overlap_examples;
        r += pad("  overlaps with a paused holder", paused_overlaps, "expected; fencing catches");
        r += pad("stale writes accepted by the storage", stale_accepted, "must be 0");
        r += pad("  stale writes rejected by the storage", stale_rejected, "fencing at work");
        r += pad("stale writes from a holder that was not paused", rejected_unpaused, "must be 0");
        r += pad("fencing tokens out of order", out_of_order, "must be 0");
    }
    r += pad("locks still held after the end + ttl", facts.locks_left, "must be 0");
    r += pad("operations past their deadline", late_ops, "must be 0");
    r += late_examples;
    r += pad("agent runs with an unexpected exit status", agent_bad_status, "must be 0");
    r += pad("workers that crashed", facts.workers_crashed, "must be 0");
    r += pad("workers that did not stop when told", facts.workers_not_stopped, "must be 0");
    r += pad("sections without an exit record", open_sections, "must be 0");
    r += pad("malformed log lines", malformed, "must be 0");
    r += pad("harness errors", facts.harness_errors, "must be 0");
    if (replicated) {
        r += "locks lost in a failover (replication is asynchronous): reported, not failures\n";
        r += pad("overlapping critical sections", overlaps, "a lock lost");
        r += overlap_examples;
        r += pad("  overlaps with a paused holder", paused_overlaps, "fencing catches");
        r += pad("stale writes from a holder that was not paused", rejected_unpaused,
                 "its lock lost");
        r += pad("fencing tokens out of order", out_of_order, "two holders at once");
    }
    r += "outcomes:\n";
    for (const auto& o : outcomes) {
        r += pad("  " + o.first, o.second);
    }

    const bool fencing_ok = replicated      ? stale_accepted == 0 && token_regressions == 0
                            : !facts.fenced ? alive.beyond == 0
                                            : overlaps == 0 && stale_accepted == 0 &&
                                                  rejected_unpaused == 0 && out_of_order == 0;
    bool ok = fencing_ok && facts.locks_left == 0 && late_ops == 0 && agent_bad_status == 0 &&
              facts.workers_crashed == 0 && facts.workers_not_stopped == 0 && open_sections == 0 &&
              malformed == 0 && facts.harness_errors == 0;
    if (acquisitions < min_acquisitions) {
        r += "too few acquisitions to judge (fewer than one a second)\n";
        ok = false;
    }
    r += ok ? "result: PASS\n" : "result: FAIL\n";
    report = r;
    if (counts != nullptr) {
        counts->acquisitions = acquisitions;
        counts->overlaps = overlaps;
        counts->paused_overlaps = paused_overlaps;
        counts->beyond_permits = alive.beyond;
        counts->most_alive = alive.most;
        counts->stale_accepted = stale_accepted;
        counts->stale_rejected = stale_rejected;
        counts->rejected_unpaused = rejected_unpaused;
        counts->out_of_order = out_of_order;
        counts->token_regressions = token_regressions;
        counts->late_ops = late_ops;
        counts->agent_bad_status = agent_bad_status;
        counts->open_sections = open_sections;
        counts->malformed = malformed;
    }
    return ok;
}

}  // namespace edgelock_chaos
