// --metrics-file PATH: at the end of a run, the run's numbers in the
// Prometheus text format, for node_exporter's textfile collector (the way it
// takes numbers from batch jobs).
//
// One file may serve many keys (one job each): the samples of the other keys
// already in it are kept, this key's replaced. The file is never seen half
// written: the whole text goes to PATH.tmp.<pid> beside it, is flushed to
// disk, and is renamed over PATH. Agents of different keys that end at once
// take turns through flock(2) on PATH.lock, tried without blocking for up to
// 2 s; past that this one writes anyway (and says so: another agent's
// samples may then be missed until its next run). The file keeps at most
// max_keys keys, the most recently written.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace edgelock_cli {

struct job_metrics {
    std::string key;
    double start_time_s = 0;  // Unix time
    double end_time_s = 0;
    double wait_s = 0;  // start to acquired, or to giving up
    double hold_s = 0;  // acquired to released (or let go); 0 when never acquired
    int exit_status = 0;
    bool acquired = false;
    bool lost = false;
    std::uint64_t renewals_failed = 0;
    // Per node, as shown (no credentials): the errors met in this run.
    std::vector<std::pair<std::string, std::uint64_t>> node_errors;
};

constexpr std::size_t metrics_max_keys = 256;
// An existing file is read up to this many bytes (a longer one is cut at a line).
constexpr std::size_t metrics_max_read = 1 << 20;

// The text with `m` in place of its key's samples in `old` (another file's
// text; what it holds of other keys is kept, the rest dropped).
std::string merge_metrics(const std::string& old, const job_metrics& m);

// Writes `m` into the file at `path` as above. False with a one-line reason
// in `error` when it could not; `waited_out` says the turn was not had.
bool write_metrics_file(const std::string& path, const job_metrics& m, std::string& error,
                        bool& waited_out);

}  // namespace edgelock_cli
