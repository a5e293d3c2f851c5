// What bench_handoff's participants share: the records of every hold, in a
// MAP_SHARED mapping made before the fork, and how a participant fails.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tools/clock.hpp"

namespace edgelock_handoff {

constexpr std::int64_t hold_ns = 1'000'000;
constexpr std::size_t max_records = 4096;
constexpr const char* lock_name = "handoff";

static_assert(std::atomic<std::uint32_t>::is_always_lock_free,
              "shared-memory counters must be lock-free");

struct record {
    std::atomic<std::uint32_t> done;  // 1 once the release has completed
    std::int32_t who;
    std::int64_t acquired_at;
    std::int64_t release_started_at;
};

// Shared by the parent and every participant.
struct shared_state {
    std::atomic<std::uint32_t> next;  // records handed out = acquisitions so far
    std::atomic<std::uint32_t> stop;
    std::atomic<std::uint32_t> gave_up;  // acquire(wait) calls that ended busy
    std::atomic<std::uint32_t> error_set;
    char error[256];
    record records[max_records];
};

[[noreturn]] inline void participant_fail(shared_state& s, int who, const std::string& what) {
    if (s.error_set.exchange(1) == 0) {
        std::snprintf(s.error, sizeof s.error, "participant %d: %s", who, what.c_str());
    }
    ::_exit(2);
}

// Back in the queue only once someone else holds it: every release finds all
// the others waiting, and no participant takes the lock straight back.
inline void wait_for_next_holder(shared_state& s, std::uint32_t index) {
    while (s.next.load() == index + 1 && s.stop.load() == 0) {
        edgelock_test::sleep_ns(100'000);
    }
}

// The peer participant (handoff_peer.cpp): a hand-written RESP3 client told
// by CLIENT TRACKING, the least a told waiter needs.
[[noreturn]] void peer_participant(shared_state& s, int who, std::uint16_t port);

}  // namespace edgelock_handoff
