// The verifier's parts over a run's critical sections (verify.cpp): what it
// reads of each section and operation, tokens issued again after a section
// had ended, and how many sections were inside at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgelock_chaos {

struct section {
    int worker = 0;
    std::int64_t seq = 0;
    std::uint64_t token = 0;
    std::int64_t enter = 0;
    std::int64_t exit = -1;  // -1: no exit record
    std::string outcome;
    bool paused = false;           // its worker was stopped while inside
    std::int64_t pause_start = 0;  // when (the first such stop)
    bool write_rejected = false;
    std::int64_t write_at = -1;  // when its write returned; -1: none
};

struct op {
    int worker = 0;
    std::string kind;
    std::int64_t seq = 0;
    std::int64_t start = 0;
    std::int64_t end = 0;
    std::int64_t bound = 0;
    std::string result;
};

// Sections whose token is not above that of a section which had ended
// before their acquisition began (the library's acquire, or the agent run,
// started): whatever else failed over, such a token was issued later.
long long regressions(const std::vector<section>& sections, const std::vector<op>& ops);

// Sections that entered while `limit` others were inside (each counted once)
// and the most inside at once. A section is inside over [enter, exit], ends
// included, as in the overlap check: one entering at the instant another
// exits is inside with it.
struct alive_count {
    long long beyond = 0;
    long long most = 0;
    std::string examples;
};

alive_count count_alive(const std::vector<section>& sections, long long limit,
                        std::int64_t start_ns);

}  // namespace edgelock_chaos
