// The chaos safety checker's shared parts: the run's parameters, the logs
// every process appends to, and the fenced "storage".
//
// A run (tests/chaos/main.cpp) starts redis-servers in one of three
// topologies (topology*.cpp), a fault proxy in front of each, and K worker
// processes contending for one key; a fault scheduler breaks nodes, the
// network and lock holders meanwhile. A link-delay run (--link-delays) has
// agents only, on a plain lock or a semaphore (--permits N), and slows the
// links to the nodes while agents set up. Every critical
// section is logged with its fencing token and its enter / exit instants on
// CLOCK_MONOTONIC, which is machine-wide, so instants from different
// processes compare. A verifier (verify.cpp) reads the logs afterwards.
//
// Logs are text, one record per line, each written with a single write() to a
// file opened O_APPEND, so records from several processes never interleave:
//
//   worker-W.log   enter SEQ TOKEN T
//                  write SEQ TOKEN T accepted|rejected
//                  exit  SEQ TOKEN T done|lost|terminated
//                  op KIND SEQ START END BOUND RESULT   (KIND: acquire, release, agent)
//   storage.log    accept TOKEN T W  |  reject TOKEN HIGHEST T W
//   faults.log     fault KIND TARGET START END DETAIL
//
// Instants are nanoseconds of CLOCK_MONOTONIC.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tools/clock.hpp"

namespace edgelock_chaos {

// Timing of every run. The per-node timeout matches the agent's (ttl / 10).
constexpr std::int64_t ttl_ms = 1000;
constexpr std::int64_t node_timeout_ms = 100;
constexpr std::int64_t wait_ms = 2000;        // how long an acquisition waits
constexpr std::int64_t connect_ms = 1000;     // the agent's connect timeout
constexpr std::int64_t grace_ms = 200;        // the agent's --grace
constexpr std::int64_t sched_slack_ms = 500;  // scheduling on a loaded machine
constexpr const char* lock_name = "chaos";

// A link-delay run's client-to-server delays: far past the agent's connect
// allowance at this ttl (200 ms), so a set-up caught in one is given up and
// made again while its first bytes are still on their way.
constexpr std::int64_t link_delay_min_ms = 400;
constexpr std::int64_t link_delay_max_ms = 800;
// Its jobs: long enough to be running still when a caught agent's late
// bytes land, short enough for a few acquisitions a second.
constexpr std::int64_t link_hold_min_ms = 150;
constexpr std::int64_t link_hold_max_ms = 700;

// Deadlines an operation must meet, for the verifier.
constexpr std::int64_t acquire_bound_ms = wait_ms + 3 * node_timeout_ms + sched_slack_ms;
constexpr std::int64_t release_bound_ms = 2 * node_timeout_ms + sched_slack_ms;
// An agent run that did not get the lock: connect, then wait.
constexpr std::int64_t agent_fail_bound_ms = connect_ms + acquire_bound_ms;

// Instants: edgelock_test::mono_ns(), CLOCK_MONOTONIC in nanoseconds.
using edgelock_test::mono_ns;
std::int64_t ms_to_ns(std::int64_t ms);

// Appends one line (a '\n' is added) with a single write(); false on error.
bool append_line(const std::string& path, const std::string& line);

// The fenced storage: accepts a write whose token is not below the highest it
// has accepted, rejects any other, and logs both to storage.log. Serialised
// with flock(), so any process may call it. Returns true when accepted.
bool storage_write(const std::string& dir, std::uint64_t token, int worker);

// The table of who is inside a critical section, shared by every process of a
// run (a file mapped MAP_SHARED): slot W holds the process group of the
// process running worker W's section while it is inside, 0 otherwise. (An
// agent runs its command in a process group of its own: stopping a holder
// stops that group as well as the worker's.)
class holders {
public:
    holders() = default;
    ~holders();
    holders(const holders&) = delete;
    holders& operator=(const holders&) = delete;
    bool open(const std::string& dir, int workers, bool create);
    // Called by the process running the section: enters with its own group.
    void enter(int worker);
    void leave(int worker);
    bool inside(int worker) const { return group(worker) != 0; }
    int group(int worker) const;
    int count() const { return count_; }

private:
    volatile std::int32_t* map_ = nullptr;
    int count_ = 0;
};

// Worker entry points (worker.cpp); each returns the process's exit status.
int library_worker_main(int argc, char** argv);
int agent_worker_main(int argc, char** argv);
int section_main(int argc, char** argv);

// Where the workers lock (--topology):
//   standalone  N independent masters, a Redlock over them when N > 1
//   sentinel    one master and two replicas under three sentinels: one node
//               URL, redis-sentinel://S1,S2,S3/mymaster
//   cluster     three masters and three replicas: one node URL,
//               redis-cluster://P1,P2,P3 (seed nodes)
// In the last two a failover can lose a lock (replication is asynchronous):
// the verifier reports overlapping holders there, and fails the run only on
// what fencing must still prevent.
enum class topology_kind { standalone, sentinel, cluster };
const char* topology_name(topology_kind kind);
bool parse_topology(const std::string& name, topology_kind& kind);

// The verifier (verify.cpp).
struct run_facts {
    topology_kind topology = topology_kind::standalone;
    int nodes = 0;     // redis-servers holding data (replicas included)
    int replicas = 0;  // of them, replicas (at the start)
    int sentinels = 0;
    int workers = 0;
    int library_workers = 0;
    bool fenced = true;  // the agents run with --fencing, the library fenced
    int permits = 0;     // a semaphore of this many permits; 0: a lock
    int seconds = 0;
    std::uint64_t seed = 0;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    int workers_crashed = 0;      // a worker that exited non-zero or by a signal
    int workers_not_stopped = 0;  // still running long after being told to stop
    int locks_left = 0;           // lock keys (or keys without a ttl) after the end + ttl
    int harness_errors = 0;       // the run itself went wrong (a node did not restart...)
};

// What the verifier counted (the "must be 0" checks among them).
struct verdict {
    long long acquisitions = 0;
    long long overlaps = 0;
    long long paused_overlaps = 0;
    long long beyond_permits = 0;  // sections entered with the permits all taken
    long long most_alive = 0;      // the most sections alive at one instant
    long long stale_accepted = 0;
    long long stale_rejected = 0;
    long long rejected_unpaused = 0;
    long long out_of_order = 0;
    long long token_regressions = 0;  // sentinel, cluster: see verify.cpp
    long long late_ops = 0;
    long long agent_bad_status = 0;
    long long open_sections = 0;
    long long malformed = 0;
};

// Reads the logs in `dir`, writes the report, returns true when every
// "must be 0" is 0 and the run had enough acquisitions to judge.
bool verify(const std::string& dir, const run_facts& facts, std::string& report,
            verdict* counts = nullptr);

// Feeds the verifier made-up logs with known violations and checks that it
// finds each of them, and nothing in a clean log, in every topology's rules
// (verify_self_test.cpp). False, with what went wrong in `failure`, if the
// verifier misjudged one.
bool verify_self_test(std::string& failure);

// One injected fault, from start until it is healed.
struct active_fault {
    std::string kind;
    int target = 0;   // a node, a sentinel (sentinel_stop), or a worker (holder_pause)
    int section = 0;  // holder_pause: the section's own process group, when not the worker's
    int step = 0;     // a fault made in steps (slot_migration): the next one
    int other = -1;   // a second node: the replica expected to take over (master_kill)
    std::uint32_t nodes = 0;  // link_delay: the nodes whose links it slows, a bit each
    long long accepted = 0;   // link_delay: their proxies' connections when it began
    std::int64_t start = 0;
    std::int64_t end = 0;  // when it is healed, or its next step is due
    std::string detail;
};

// Appends `fault KIND TARGET START END DETAIL` to dir/faults.log.
void log_fault(const std::string& dir, const active_fault& f, std::int64_t end);

// The servers of a run and the faults only they can make (topology*.cpp);
// the run itself (main.cpp) owns the workers and pauses lock holders. Every
// instant is read after the action it times.
class topology {
public:
    enum class started { none, one_shot, active };
    virtual ~topology() = default;
    // Starts every server and proxy and waits until they serve; false, said
    // on stderr, when they do not.
    virtual bool start() = 0;
    // The node list the workers lock through (-N, --urls).
    virtual std::string node_list() const = 0;
    // The fault kinds the scheduler draws from, evenly ("holder_pause", the
    // run's own, among them).
    virtual const std::vector<std::string>& kinds() const = 0;
    // Starts a fault of `kind` (never holder_pause) in f. one_shot: it is over
    // already (the run logs it); active: heal it when f.end comes.
    virtual started inject(const std::string& kind, active_fault& f,
                           const std::vector<active_fault>& active) = 0;
    // f.end has come: heals f and returns true, or takes its next step (or
    // finds it cannot heal yet) and sets a later f.end.
    virtual bool advance(active_fault& f) = 0;
    // The run is over: heals f now, waiting only for what safety needs.
    virtual void finish(active_fault& f) = 0;
    // Once every worker has ended and the ttl has passed: lock keys (and
    // keys without an expiry but the fencing counter) still served.
    virtual void count_locks_left(run_facts& facts) = 0;
    // Stops the fault proxies (the servers stop with the object).
    virtual void stop_proxies() = 0;
    int harness_errors = 0;  // the topology went wrong (a node did not restart...)
};

struct topology_options {
    std::string dir;                 // the run's logs
    int nodes = 5;                   // standalone: how many
    bool link_delays = false;        // standalone: link delays are the only faults
    std::uint64_t seed = 0;          // the proxies' seeds
    int proxy_seconds = 0;           // the proxies exit by themselves after it
    std::mt19937_64* rng = nullptr;  // the scheduler's: one seed replays a run
};

std::unique_ptr<topology> make_standalone(const topology_options& o);
std::unique_ptr<topology> make_sentinel(const topology_options& o);
std::unique_ptr<topology> make_cluster(const topology_options& o);

}  // namespace edgelock_chaos
