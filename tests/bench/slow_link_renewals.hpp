// The cost of a held lock's renewals while agents wait for it, for
// bench_slow_link: one holder, `edgelock run --ttl 600ms --renew-every 200ms
// KEY -- sleep 60`, and N waiters, `edgelock run --wait 60s KEY -- true`,
// every one through the fault proxy (no delay), whose byte counters see all
// of their traffic and nothing else.
//
// Once every waiter is connected and two renewals have passed, a window is
// opened halfway between two renewals and closed halfway after the
// `renewals`-th one after it: the window holds exactly that many renewals and
// whatever they set off. Renewals are seen on the server (PEXPIRETIME of the
// key moving forward, polled every 5 ms), whatever command makes them. Then
// the holder dies (SIGKILL to it and its job: no release), its key expires a
// ttl after its last renew, the first waiter must be told and run, every
// other waiter get the lock in turn and exit 0, and nothing is left running.
#pragma once

#include <string>

#include "bench/slow_link_tools.hpp"
#include "tools/proc.hpp"

namespace edgelock_slow_link {

struct renewal_window {
    int waiters = 0;
    int renewals = 0;  // in the window
    requests asked;    // requests in the window
    wire bytes;        // bytes through the proxy in the window
    // With waiters: from the dead holder's key's expiry (PEXPIRETIME) to the
    // first waiter's exit (its job run and its lock released), in ms.
    double after_expiry_ms = -1;
};

// The lock `name` must be free. Fails the program when something does not
// behave (the holder loses the lock, a waiter ends early or badly).
renewal_window measure_renewals(const std::string& agent, edgelock_test::fault_proxy& proxy,
                                server_tally& tally, const std::string& name, int waiters,
                                int renewals);

// The holder's ttl and renew interval, for the text.
constexpr int renewal_ttl_ms = 600;
constexpr int renewal_every_ms = 200;

}  // namespace edgelock_slow_link
