// Helpers of the agent's tests under a name server that never answers
// (test_cli_dns*.cpp, tests/tools/stuck_dns.hpp): the name nobody answers
// for, the agent run in the namespace that asks it, and a job watched for
// the time it runs with its key gone from a quorum.
//
//   const stuck_dns dns(5);
//   if (!usable(dns)) return;                       // skipped, with the reason
//   const run_result r = agent_under(dns, {"acquire", ...});
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/skip.hpp"
#include "tools/stuck_dns.hpp"

namespace edgelock_test {

// The name nobody answers for.
inline const std::string stuck_name = "never.edgelock.test";

// False, the test skipped with the reason, where no stuck name server can be
// made (not root, no mount namespace).
inline bool usable(const stuck_dns& dns) {
    if (!dns.ok()) {
        skip(("no stuck name server here: " + dns.why()).c_str());
        return false;
    }
    return true;
}

// The agent's argv, run in the private namespace whose resolver asks `dns`
// (the agent is the process unshare and sh exec into: the same pid).
inline process agent_under(const stuck_dns& dns, const strings& args) {
    return process(dns.wrap(agent_argv(args)), sanitizer_env());
}

// A job that marks its start and its end with files: how long it ran with
// the key gone from a quorum, sampled every 50 ms until the agent exits.
struct job_watch {
    temp_dir dir;
    std::string started = dir / "started";
    std::string ended = dir / "ended";
    double gone = 0;          // seconds the job ran without a quorum of keys
    std::size_t samples = 0;  // while it ran

    // "sh -c" text for a job that runs `seconds` between the marks.
    std::string job(int seconds) const {
        return "touch " + started + "; sleep " + std::to_string(seconds) + "; touch " + ended;
    }

    // quorum(): whether a quorum holds the key now; also(): any other check
    // of the sample, while the job runs.
    template <class Quorum, class Also>
    void watch(process& p, Quorum quorum, Also also) {
        double last = mono_s();
        const double give_up = last + 60;
        while (p.running() && mono_s() < give_up) {
            sleep_ms(50);
            const double now = mono_s();
            if (file_exists(started) && !file_exists(ended)) {
                ++samples;
                if (!quorum()) {
                    gone += now - last;
                }
                also();
            }
            last = now;
        }
    }
};

}  // namespace edgelock_test
