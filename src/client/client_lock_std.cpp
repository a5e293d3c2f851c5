// client_lock as the standard's Lockable and TimedLockable: lock(), try_lock(),
// unlock(), and the timed tries (their templates are in client_lock.hpp).
#include "edgelock/client.hpp"

namespace edgelock {

namespace {

bool acquired(const op_result& r) {
    return r.error == client_errc::ok && r.event.kind == lock_event_kind::acquired;
}

// An acquisition that ended this way cannot succeed however often it is
// tried: the lock is not attached, the call came from a callback, another
// operation of the lock is under way, the machine refuses, or the port cannot
// wait. Anything else (busy, no quorum, nodes down, the call's own bound)
// may succeed later.
bool hopeless(client_errc e) {
    switch (e) {
    case client_errc::not_attached:
    case client_errc::reentered:
    case client_errc::busy:
    case client_errc::lock_rejected:
    case client_errc::wait_failed:
    case client_errc::not_configured:
        return true;
    default:
        return false;
    }
}

// lock()'s rounds of waiting: long, so a held lock is found at once, and
// bounded, so no single call's arithmetic nears the clock's range.
constexpr duration lock_round = duration::seconds(3600);

}  // namespace

void client_lock::lock() noexcept {
    for (;;) {
        const op_result r = acquire(lock_round);
        if (acquired(r) || hopeless(r.error)) {
            return;
        }
    }
}

bool client_lock::try_lock() noexcept {
    return acquired(try_acquire());
}

bool client_lock::try_lock_within(duration wait) noexcept {
    return acquired(acquire(wait));
}

void client_lock::unlock() noexcept {
    release();
}

}  // namespace edgelock
