// What bench_slow_link counts, and how it runs the programs it counts.
//
//   server_tally t(server);      // INFO commandstats + MONITOR, on the unix socket
//   t.mark();
//   const timed_run r = run_timed({agent, "run", ...}, 30);
//   const requests q = t.take(); // what clients asked between mark() and take()
//   const wire w = wire_of(proxy);  // the proxy's byte counters
//
// Requests are what clients sent, not what the server ran: INFO commandstats
// also counts the commands a script runs (redis.call), so those, which
// MONITOR shows as "[db lua]", are taken off. The tally's own commands (its
// INFO, its ECHO marker, PEXPIRETIME) are never counted.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "integration/redis_server.hpp"
#include "tools/proc.hpp"

namespace edgelock_slow_link {

// Counts by command name as INFO commandstats spells them ("set",
// "script|load").
using counts = std::map<std::string, long long>;

struct requests {
    counts sent;        // requests clients sent
    counts by_scripts;  // commands scripts ran for them (not requests)
    // The requests themselves, in order, as MONITOR showed them (the tally's
    // own INFO and ECHO left out).
    std::vector<std::vector<std::string>> commands;
    long long total() const;
    // "hello 1, info 3, set 1; scripts ran get 1, del 1", each count divided by `per`.
    std::string describe(double per = 1) const;
};

class server_tally {
public:
    explicit server_tally(const edgelock_test::redis_server& server);
    server_tally(const server_tally&) = delete;
    server_tally& operator=(const server_tally&) = delete;

    // Starts a window.
    void mark();
    // What clients asked since mark(); fails the program when MONITOR falls silent.
    requests take();
    // PEXPIRETIME of key (absolute ms), -2 when it does not exist; uncounted.
    long long expire_time(const std::string& key);

private:
    counts stats();
    void drain(counts* scripted, std::vector<std::vector<std::string>>* commands = nullptr);

    std::unique_ptr<edgelock_test::redis_client> admin_;
    std::unique_ptr<edgelock_test::redis_client> monitor_;
    counts before_;
    int marker_ = 0;
};

// The fault proxy's counters (its `status`).
struct wire {
    long long up = 0;    // bytes delivered client -> server
    long long down = 0;  // server -> client
    long long conns = 0;
};
wire wire_of(edgelock_test::fault_proxy& proxy);
// Waits (up to timeout_s) until the proxy has no connection left, so that
// every byte of the runs before is delivered and counted. False on timeout.
bool wait_idle(edgelock_test::fault_proxy& proxy, double timeout_s);

// One run of a program: its exit status (as a shell shows it), how long it
// took from spawn to exit, and what it printed.
struct timed_run {
    int status = -1;
    std::int64_t wall_ns = 0;
    std::string out;
    std::string err;
};
// Runs argv to its end; past timeout_s its process group is killed and the
// program fails. Output goes through files (nothing blocks on a full pipe).
timed_run run_timed(const std::vector<std::string>& argv, double timeout_s);

// Bytes of one RESP request (an array of bulk strings).
std::size_t resp_request_size(const std::vector<std::string>& args);

// Where a run's bytes go: each request's size as RESP, and its reply's,
// measured by sending the same requests again, in order, on one connection
// to the server at `port` (what they change, they change again).
struct byte_account {
    std::string what;  // the command and its first argument
    std::size_t up = 0;
    std::size_t down = 0;
};
std::vector<byte_account> account_bytes(std::uint16_t port,
                                        const std::vector<std::vector<std::string>>& commands);

// The agent a benchmark runs: `built` (the one built with it), or another
// build named by `--agent PATH`; any other argument fails the program.
std::string agent_from_args(int argc, char** argv, const char* program, const char* built);

// Median of samples (the lower middle of an even count); 0 when empty.
double median(std::vector<double> v);

}  // namespace edgelock_slow_link
