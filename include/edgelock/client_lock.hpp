// A lock on a client (client_lock): the lock machine on real connections,
// its watchdog and its callback, with blocking and event-loop operations.
// Part of client.hpp; see there for how to use it.
#pragma once

#include <chrono>
#include <cstdint>

#include "edgelock/client_errors.hpp"
#include "edgelock/client_stats.hpp"
#include "edgelock/detail/timer_table.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"

namespace edgelock {

class client_base;
class client_lock;

struct watchdog_options {
    bool enabled = true;
    // While held, renew this long after the start of the last acquire or
    // renew round (the instant its validity counts from). Zero: ttl / 3.
    duration renew_every{};
    // Held this long since it was acquired (a reentrant lock: since its first
    // hold), the lock is let go: no more renewals, a release at once, and the
    // owner told `lost` (reason held_too_long) before the release's own
    // event, so that it stops the work the lock guards. Zero: no limit. A
    // runaway job then blocks the others for max_hold at most, not forever.
    duration max_hold{};
};

// Told of every event of a lock: acquired, busy, failed, renewed, released,
// lost, and renew_failed (a renew round missed its quorum; the lock is retried
// and kept, but at risk until the validity deadline). An acquisition the
// machine could not even start (no random bytes) is reported as failed.
using lock_callback = void (*)(void* ctx, client_lock& lock, const lock_event& event);

// The latest operation started on a lock (start_acquire/renew/release, or a
// blocking call): which, whether it has ended, and how. An event-loop user
// asks it after a client call instead of keeping its own account of which
// events end what. A renew started while the watchdog's is under way ends
// with the watchdog's.
struct op_outcome {
    enum class op : std::uint8_t { none, acquire, renew, release };
    op started = op::none;
    bool done = false;  // ended: `result` says how
    // ok: the event that ended it (acquired, busy, failed; renewed, lost;
    // released). Otherwise why it could not run (not_held, lock_rejected,
    // deadline for a blocking call that gave up...).
    op_result result;
};

// A lock on a client: the lock machine, its watchdog, and its callback. Attach
// once; the lock is detached (and its requests forgotten) by detach() or its
// destructor, which do not release it: release first.
class client_lock {
public:
    client_lock() noexcept = default;
    ~client_lock() { detach(); }
    client_lock(const client_lock&) = delete;
    client_lock& operator=(const client_lock&) = delete;

    // Configures the machine for every node of the client. The name's bytes
    // (and options.owner's) are not copied: keep them alive while attached.
    // lock_rejected: see lock_error().
    client_errc attach(client_base& c, str_view name, const lock_options& options = {},
                       const watchdog_options& watchdog = {}) noexcept;
    void detach() noexcept;
    bool attached() const noexcept { return client_ != nullptr; }
    lock_errc lock_error() const noexcept { return lock_error_; }

    void set_callback(lock_callback fn, void* ctx) noexcept {
        callback_ = fn;
        callback_ctx_ = ctx;
    }

    // --- blocking API: drives the client until the operation ends ---
    op_result try_acquire() noexcept;           // one round
    op_result acquire(duration wait) noexcept;  // rounds until acquired or `wait` passed
    op_result renew() noexcept;                 // renewed, or lost
    op_result release() noexcept;               // released; not_held when it was lost meanwhile

    // --- the standard's Lockable and TimedLockable, without exceptions ---
    // So std::unique_lock<edgelock::client_lock> g(job, std::chrono::seconds(5)),
    // std::lock_guard, std::scoped_lock and std::lock work on a lock. They say
    // only yes or no; the calls above (and last_event()) say why.
    //
    // lock() blocks until the lock is held, as std::mutex::lock does: while
    // another holds it, and while its nodes are unreachable or refuse, it
    // keeps trying (rounds paced by the lock's retry policy; nodes reconnect
    // with their backoff) for as long as that lasts. It returns without the
    // lock only when it never could get it: not attached, called from a
    // callback, another operation of the lock under way, the port's wait
    // failing. Code that must not block indefinitely uses try_lock_for().
    // unlock() releases; when no quorum answers, the lock ends with its ttl.
    // A held lock is renewed by the watchdog only while the client is driven
    // (its blocking calls or its event loop): a critical section under a
    // std::unique_lock that does not drive it must end within the ttl, or
    // check held() before acting.
    void lock() noexcept;
    bool try_lock() noexcept;  // one round
    void unlock() noexcept;
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) noexcept {
        return try_lock_within(to_duration(wait));
    }
    template <class Clock, class Dur>
    bool try_lock_until(const std::chrono::time_point<Clock, Dur>& until) noexcept {
        const auto now = Clock::now();
        return try_lock_within(until > now ? to_duration(until - now) : duration{});
    }

    // Takes over an acquisition made elsewhere by its token (see lock::resume),
    // to renew or release it. Plain and fenced modes.
    client_errc resume(const owner_token& token) noexcept;

    // --- event-loop API: starts the operation; the callback and outcome() tell the outcome ---
    // The request goes out at the client's next call (on_timeout() at
    // next_deadline(), which is now, or on_ready()).
    // With the retry policy the lock was attached with (lock_options'
    // max_tries and wait), or with the one given.
    client_errc start_acquire() noexcept;
    client_errc start_acquire(std::uint32_t max_tries, duration wait) noexcept;
    client_errc start_renew() noexcept;
    // Also cancels an acquisition that is waiting for its nodes to connect.
    client_errc start_release() noexcept;

    // Held now: the machine says held and the validity deadline is ahead.
    bool held() const noexcept;
    lock_state state() const noexcept { return machine_.state(); }
    instant validity_deadline() const noexcept { return machine_.validity_deadline(); }
    std::uint64_t fence() const noexcept { return machine_.fence(); }
    owner_token token() const noexcept { return machine_.token(); }
    // A semaphore's permit held (from 0), while held; else -1 (see lock::permit).
    int permit() const noexcept { return machine_.permit(); }
    const edgelock::lock& machine() const noexcept { return machine_; }
    // The last event of the lock (lost, renew_failed...) and when it came.
    const lock_event& last_event() const noexcept { return last_event_; }
    // The latest operation started, and whether and how it ended.
    const op_outcome& outcome() const noexcept { return outcome_; }
    // The lock's counters (client_stats.hpp), for the life of this object.
    lock_stats stats() const noexcept { return stats_; }

private:
    friend class client_base;

    enum class op : std::uint8_t { none, acquire, renew, release };

    // max_tries and wait: the retry policy of an acquire, set only if it starts.
    client_errc start(op kind, instant now, std::uint32_t max_tries = 1,
                      duration wait = duration{}) noexcept;
    op_result run(op kind, std::uint32_t max_tries = 1, duration wait = duration{}) noexcept;
    void abandon(instant now) noexcept;
    // The operation `kind` ended with `r`: a blocking call waiting for it
    // and outcome() are told.
    void finish(op kind, const op_result& r) noexcept;
    bool try_lock_within(duration wait) noexcept;
    // A std::chrono duration in whole microseconds, rounded up; negative is
    // zero, beyond the range saturates.
    template <class Rep, class Period>
    static duration to_duration(const std::chrono::duration<Rep, Period>& d) noexcept {
        const double us = std::chrono::duration<double, std::micro>(d).count();
        if (!(us > 0)) {
            return duration{};
        }
        if (us >= 18e18) {
            return duration{UINT64_MAX};
        }
        const auto whole = static_cast<std::uint64_t>(us);
        return duration{whole + (static_cast<double>(whole) < us ? 1 : 0)};
    }

    // The lock's timers in the client.
    enum class timer : std::uint8_t {
        renew,     // the watchdog's next renew
        begin_by,  // a queued operation begins then even if a node is still connecting
        max_hold,  // held since watchdog_options::max_hold: let go then
    };

    edgelock::lock machine_;
    client_base* client_ = nullptr;
    client_lock* next_ = nullptr;
    lock_callback callback_ = nullptr;
    void* callback_ctx_ = nullptr;
    watchdog_options watchdog_;
    detail::timer_table<timer, 3> timers_;
    lock_event last_event_;
    lock_errc lock_error_ = lock_errc::ok;
    op queued_ = op::none;         // started by the user, waiting for connections
    op running_ = op::none;        // handed to the machine, outcome not yet known
    op_result* waiter_ = nullptr;  // a blocking call waiting for the running operation
    op_outcome outcome_;
    lock_stats stats_;
    // redis-cluster:// nodes (cluster.cpp): the hash slot of the lock's
    // keys; per node, the connection serving it, the one an ASK sends its
    // next request to, and the one its last request sent by ASK went to
    // (where a cleanup goes); the redirects followed for the request whose
    // tag is redirected_tag_.
    std::uint16_t slot_ = 0;
    std::uint8_t route_[lock_max_nodes] = {};
    std::uint8_t ask_[lock_max_nodes] = {};
    std::uint8_t asked_[lock_max_nodes] = {};
    std::uint8_t redirects_[lock_max_nodes] = {};
    std::uint32_t redirected_tag_[lock_max_nodes] = {};
};

}  // namespace edgelock
