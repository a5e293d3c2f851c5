// What the agent says of its nodes and of an acquisition that failed: each
// node's reason, the warnings its set-up found, and the exit status with
// the link's measured round trip and the ttl that would fit it.
#include <algorithm>
#include <cstring>
#include <string>

#include "agent.hpp"
#include "messages.hpp"
#include "terminal_text.hpp"

namespace edgelock_cli {

using namespace edgelock;

// What one try may spend on connecting and on each round: half of what the
// ttl leaves after the drift allowance, the library's round allowance with
// no node_timeout (lock_options). A lock granted within it still has half
// its ttl; a slow link's late reply (a segment TCP resends after 200 ms or
// more, a SYN after 1 s) still counts, where a fixed cap failed the try.
duration try_allowance(duration ttl) {
    lock_options o;  // the agent keeps the library's drift allowance, no node_timeout
    o.ttl = ttl;
    return lock_round_allowance(o);
}

namespace {

// Node i's link as its connections measured it: the smoothed round trip in
// whole milliseconds (at least 1), 0 when nothing was timed.
std::uint64_t round_trip_ms(std::uint8_t i) {
    const std::uint64_t us = driver.node_stats(i).rtt_smoothed_us;
    return us == 0 ? 0 : (us + 999) / 1000;
}

// The smallest ttl, in whole seconds, whose try holds what a link of that
// round trip needs: its connect, the set-up with the acquire behind it, and
// a resend of either (TCP resends a SYN after 1 s), with a renewal's resends
// in a third of it: 16 round trips and 2 s (README, "Deadlines").
std::uint64_t ttl_for_ms(std::uint64_t rtt_ms) {
    return (16 * rtt_ms + 2000 + 999) / 1000 * 1000;
}

}  // namespace

// Why nodes failed, one line each, before exit 69 or 1. With the lock's
// quorum: a node still connecting or silent when too few others were left
// for a quorum, or when the others' answers decided the round (busy), was
// not waited for, and is said so.
int report_nodes(std::uint8_t quorum, bool decided) {
    int said = 0;
    std::uint8_t failed = 0;
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        const node_info n = driver.node(i);
        failed = static_cast<std::uint8_t>(failed + (n.error != node_error::none ? 1 : 0));
    }
    const bool out_of_reach = quorum != 0 && driver.node_count() - failed < quorum;
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        const node_info n = driver.node(i);
        if (n.state == node_state::ready && n.error == node_error::none) {
            continue;
        }
        ++said;
        std::string why = describe(n.error);
        if (n.error == node_error::none) {
            why = decided ? std::string("not waited for (") + describe(n.state) +
                                "): the other nodes' answers decided the try"
                  : out_of_reach ? std::string("not waited for (") + describe(n.state) +
                                       "): too few other nodes were left for a quorum"
                                 : std::string("no reply in time (") + describe(n.state) + ")";
            const std::uint64_t rtt = round_trip_ms(i);
            if (rtt != 0 && !out_of_reach && !decided) {
                why += "; its round trip is about " + std::to_string(rtt) + " ms";
            }
        }
        if (!n.message.empty()) {
            why += ": " + terminal_text(text(n.message));  // the node's error reply
        } else if (n.code != 0 && n.error == node_error::io_error) {
            why += std::string(": ") + std::strerror(n.code);
        }
        say(1, "node %s: %s", node_shown(i).c_str(), why.c_str());
    }
    return said;
}

// What a node's set-up found that Redis cannot promise, once per node: a
// node used with a warning, or (once acquired) a replica the quorum went
// without; when the acquisition fails, report_nodes() says it instead.
void warn_nodes(bool acquired) {
    static bool warned[lock_max_nodes] = {};
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        const node_info n = driver.node(i);
        if (warned[i]) {
            continue;
        }
        if (n.state == node_state::ready && n.warning == node_warning::may_evict) {
            warned[i] = true;
            say(1,
                "warning: node %s: maxmemory-policy %s with maxmemory set: Redis may evict the "
                "lock's key under memory pressure (use noeviction)",
                node_shown(i).c_str(), terminal_text(text(n.maxmemory_policy)).c_str());
        } else if (acquired && n.error == node_error::replica) {
            warned[i] = true;
            say(1, "warning: node %s: %s (%s): it cannot hold the lock", node_shown(i).c_str(),
                describe(n.error), terminal_text(text(n.message)).c_str());
        }
    }
}

int unavailable(const client_lock& l) {
    say(1, "no quorum of nodes reachable (%u of %u needed)", l.machine().quorum(),
        driver.node_count());
    const int named = report_nodes(l.machine().quorum());
    // The slowest link's measured round trip, and the ttl that would fit it.
    std::uint64_t rtt = 0;
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        rtt = std::max(rtt, round_trip_ms(i));
    }
    const unsigned long long allowance = try_allowance(opt.ttl).ms();
    const unsigned long long ttl = opt.ttl.ms();
    if (rtt != 0 && ttl_for_ms(rtt) > ttl) {
        say(1,
            "the link's round trip is about %llu ms; at -t %llu ms a try has %llu ms (half the "
            "ttl): use -t %llus or more",
            static_cast<unsigned long long>(rtt), ttl, allowance,
            static_cast<unsigned long long>(ttl_for_ms(rtt) / 1000));
    } else if (named == 0) {
        // Connected, and still no answer when the try's time was up.
        say(1,
            "no answer within the %llu ms a try has at -t %llu ms (half the ttl): a slower "
            "link needs a longer ttl",
            allowance, ttl);
    }
    return exit_unavailable;
}

// Exit status for an acquisition that ended in `ev` (busy or failed).
int not_acquired(const client_lock& l, const lock_event& ev) {
    if (ev.kind == lock_event_kind::busy ||
        (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::fence_conflict)) {
        const std::string what = opt.permits != 0 ? "every permit of '" + opt.key + "' (" +
                                                        std::to_string(opt.permits) + ") is"
                                                  : "'" + opt.key + "' is";
        if (ev.holder_ttl_ms >= 0) {
            say(1, "%s held by another owner (%s %lld ms more)", what.c_str(),
                opt.permits != 0 ? "the first for" : "for",
                static_cast<long long>(ev.holder_ttl_ms));
        } else {
            say(1, "%s held by another owner", what.c_str());
        }
        report_nodes(l.machine().quorum(), true);  // the nodes that did not answer "busy"
        return opt.conflict_exit;
    }
    if (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::permits_differ) {
        if (ev.permits_found > 0) {
            say(1, "'%s' is a semaphore of %d permits on a node, not %u (--permits)",
                opt.key.c_str(), static_cast<int>(ev.permits_found), opt.permits);
        } else {
            say(1, "'%s' has an unreadable limit of permits on a node", opt.key.c_str());
        }
        return exit_config;
    }
    if (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::random_failed) {
        say(1, "no secure random bytes for a token");
        return exit_software;
    }
    if (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::not_replicated) {
        say(1, "'%s': too few replicas acknowledged the key (--min-replicas %u within %llu ms)",
            opt.key.c_str(), opt.min_replicas,
            static_cast<unsigned long long>(l.machine().options().replica_timeout.ms()));
        report_nodes();
        return exit_unavailable;
    }
    return unavailable(l);
}

}  // namespace edgelock_cli
