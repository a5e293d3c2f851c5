// Human-readable names for the lock machine's enums, for logs and error
// messages. Apart from the machine so that a program that never calls them
// does not carry their strings (with --gc-sections, as for resp_describe.cpp).
#include "edgelock/lock.hpp"

namespace edgelock {

const char* describe(lock_errc code) noexcept {
    switch (code) {
    case lock_errc::ok:
        return "ok";
    case lock_errc::not_configured:
        return "lock not configured";
    case lock_errc::bad_node_count:
        return "node count must be in [1, lock_max_nodes]";
    case lock_errc::bad_quorum:
        return "quorum must be in [nodes/2+1, nodes]";
    case lock_errc::empty_name:
        return "lock name is empty";
    case lock_errc::name_too_long:
        return "lock name longer than lock_max_name";
    case lock_errc::name_unslotted:
        return "fenced lock name has a '}' outside a hash tag: its counter cannot share its slot";
    case lock_errc::owner_too_long:
        return "owner longer than lock_max_owner";
    case lock_errc::holder_too_long:
        return "holder record longer than lock_max_holder";
    case lock_errc::bad_ttl:
        return "ttl must be in [1 ms, lock_max_ttl_ms] and exceed the drift";
    case lock_errc::bad_node_timeout:
        return "node timeout must be below the ttl";
    case lock_errc::bad_drift:
        return "drift_ppm above lock_max_drift_ppm";
    case lock_errc::bad_retry:
        return "max_tries is 0 or retry_min > retry_max";
    case lock_errc::bad_mode_option:
        return "renew_resurrects is only allowed in plain mode";
    case lock_errc::no_random_source:
        return "no random source";
    case lock_errc::random_failed:
        return "the random source failed";
    case lock_errc::busy:
        return "another operation of this lock is in progress";
    case lock_errc::not_held:
        return "the lock is not held";
    case lock_errc::bad_node:
        return "node index out of range";
    case lock_errc::buffer_too_small:
        return "buffer too small for the request";
    case lock_errc::bad_replicas:
        return "min_replicas needs a replica_timeout above 0 and below the node timeout";
    case lock_errc::bad_permits:
        return "bad permits: above the most a semaphore has, with the reentrant mode or "
               "renew_resurrects, or too many to name in one request for a name this long";
    }
    return "unknown lock error";
}

const char* describe(lock_state state) noexcept {
    switch (state) {
    case lock_state::unconfigured:
        return "unconfigured";
    case lock_state::idle:
        return "idle";
    case lock_state::acquiring:
        return "acquiring";
    case lock_state::fencing:
        return "fencing";
    case lock_state::retry_wait:
        return "retry_wait";
    case lock_state::held:
        return "held";
    case lock_state::renewing:
        return "renewing";
    case lock_state::releasing:
        return "releasing";
    }
    return "unknown lock state";
}

const char* describe(lock_event_kind kind) noexcept {
    switch (kind) {
    case lock_event_kind::acquired:
        return "acquired";
    case lock_event_kind::busy:
        return "busy";
    case lock_event_kind::failed:
        return "failed";
    case lock_event_kind::renewed:
        return "renewed";
    case lock_event_kind::released:
        return "released";
    case lock_event_kind::lost:
        return "lost";
    case lock_event_kind::renew_failed:
        return "renew failed";
    }
    return "unknown lock event";
}

const char* describe(lock_failure reason) noexcept {
    switch (reason) {
    case lock_failure::none:
        return "none";
    case lock_failure::no_quorum:
        return "too few nodes agreed";
    case lock_failure::expired:
        return "the round outlasted the validity";
    case lock_failure::random_failed:
        return "the random source failed";
    case lock_failure::fence_conflict:
        return "a fencing counter was above the token";
    case lock_failure::not_ours:
        return "a quorum says the lock is no longer ours";
    case lock_failure::validity_ended:
        return "the validity ended before a renew";
    case lock_failure::not_replicated:
        return "too few replicas acknowledged the key (min_replicas)";
    case lock_failure::held_too_long:
        return "held for max_hold: let go";
    case lock_failure::permits_differ:
        return "the semaphore has another limit of permits on a node";
    }
    return "unknown lock failure";
}

}  // namespace edgelock
