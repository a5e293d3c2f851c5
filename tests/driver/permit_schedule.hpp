// The semaphore's checker for random schedules (lock_options::permits = n),
// on top of the shared schedule (sim_schedule.hpp: its world, faults,
// attempt and release pacing), used by test_sim_permits_random.cpp and the
// late-bytes schedules. A holder counts from `acquired` to its release call,
// `lost`, or its validity deadline, whichever is first; under that bound:
//
//   limit    - never more than n holders at one virtual instant;
//   permits  - every holder names a permit below n, and no two holders at
//              one instant hold the same one;
//   fencing  - (fenced mode) no two acquisitions share a token, a permit's
//              tokens strictly increase in the order it was acquired, and
//              every token is above every token handed out before its
//              acquisition began.
//
// Across permits, tokens of acquisitions that overlap in time need not come
// in the order of their `acquired` events: two holders' requests can run in
// one order on the server and their replies arrive in the other.
//
// The number of holders can grow only at `acquired` and at `renewed`, where
// it is counted; between those it only falls as deadlines pass.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "driver/sim_schedule.hpp"

namespace edgelock_test {

// One schedule's semaphore: the shared schedule with the semaphore's own
// account of its holders.
struct permit_schedule {
    schedule s;
    int limit;
    std::vector<int> permit;  // per client: the permit of its hold, -1 none
    struct token_record {
        std::uint64_t at;  // virtual us of its `acquired`
        std::uint64_t fence;
        int permit;
    };
    std::vector<token_record> tokens;
    int most = 0;  // most holders at one instant

    permit_schedule(std::uint64_t seed, std::uint64_t salt, int n) : s(seed, salt), limit(n) {}

    void violation(const std::string& what) {
        if (s.out.violation.empty()) {
            s.out.violation = what + " (now " + std::to_string(s.now()) + ")";
        }
    }

    static void on_event(void* ctx, edgelock::client_lock& l, const edgelock::lock_event& ev) {
        auto* self = static_cast<permit_schedule*>(ctx);
        for (int i = 0; i < static_cast<int>(self->s.who.size()); ++i) {
            if (&self->s.at(i).lock == &l) {
                self->event(i, ev);
            }
        }
    }

    // Client me has just taken or renewed its permit.
    void count_holders(int me, const char* what) {
        int holding = 0;
        for (int j = 0; j < static_cast<int>(s.who.size()); ++j) {
            if (s.at(j).valid_until <= s.now()) {
                continue;
            }
            ++holding;
            if (j != me &&
                permit[static_cast<std::size_t>(j)] == permit[static_cast<std::size_t>(me)]) {
                violation(std::string(what) + ": clients " + std::to_string(me) + " and " +
                          std::to_string(j) + " both hold permit " +
                          std::to_string(permit[static_cast<std::size_t>(me)]));
            }
        }
        most = std::max(most, holding);
        if (holding > limit) {
            violation(std::string(what) + ": " + std::to_string(holding) + " holders of " +
                      std::to_string(limit) + " permits");
        }
    }

    void check_token(int me, std::uint64_t fence) {
        const int p = permit[static_cast<std::size_t>(me)];
        const std::uint64_t began = s.at(me).attempt_began;
        if (fence == 0) {
            violation("fenced acquisition without a token");
        }
        for (const token_record& t : tokens) {
            if (t.fence == fence) {
                violation("token " + std::to_string(fence) + " handed out twice");
            } else if (t.permit == p && t.fence > fence) {
                violation("permit " + std::to_string(p) + ": token " + std::to_string(fence) +
                          " after " + std::to_string(t.fence));
            } else if (t.at <= began && t.fence > fence) {
                violation("token " + std::to_string(fence) + " not above " +
                          std::to_string(t.fence) + ", handed out at " + std::to_string(t.at) +
                          " before this acquisition began at " + std::to_string(began));
            }
        }
        tokens.push_back(token_record{s.now(), fence, p});
    }

    void event(int i, const edgelock::lock_event& ev) {
        contender& me = s.at(i);
        if (s.trace) {
            std::printf("%llu client %d %s validity %llu fence %llu permit %d reason %s\n",
                        static_cast<unsigned long long>(s.now()), i, edgelock::describe(ev.kind),
                        static_cast<unsigned long long>(ev.validity_deadline.us),
                        static_cast<unsigned long long>(ev.fence), static_cast<int>(ev.permit),
                        edgelock::describe(ev.reason));
        }
        switch (ev.kind) {
        case lock_event_kind::acquired:
            ++s.out.acquisitions;
            if (ev.validity_deadline <= s.net.now()) {
                violation("acquired with validity already over");
            }
            if (ev.permit < 0 || ev.permit >= limit || me.lock.permit() != ev.permit) {
                violation("acquired permit " + std::to_string(ev.permit) + ", lock says " +
                          std::to_string(me.lock.permit()));
            }
            permit[static_cast<std::size_t>(i)] = ev.permit;
            me.valid_until = ev.validity_deadline.us;
            me.validity = ev.validity_deadline.us;
            me.releasing = false;
            me.hold_until = s.now() + pick(s.rng, 0, 2 * s.opt.ttl.us);
            count_holders(i, "acquired");
            if (s.opt.mode == lock_mode::fenced) {
                check_token(i, ev.fence);
            }
            s.schedule_release(i);
            break;
        case lock_event_kind::renewed:
            me.validity = ev.validity_deadline.us;
            // A renew that ends after the release call extends the permit,
            // but the client no longer takes itself for a holder.
            if (!me.releasing) {
                me.valid_until = ev.validity_deadline.us;
                count_holders(i, "renewed");
            }
            break;
        case lock_event_kind::lost:
            if (me.validity < s.now()) {
                violation("lost reported after the validity deadline");
            }
            me.valid_until = 0;
            s.schedule_attempt(i);
            break;
        case lock_event_kind::renew_failed:
            break;  // still held (until lost)
        case lock_event_kind::failed:
            if (ev.reason == edgelock::lock_failure::permits_differ) {
                violation("permits_differ with one limit for all");
            }
            me.valid_until = 0;
            s.schedule_attempt(i);
            break;
        case lock_event_kind::released:
        case lock_event_kind::busy:
            me.valid_until = 0;
            s.schedule_attempt(i);
            break;
        }
    }
};

}  // namespace edgelock_test
