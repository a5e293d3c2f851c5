// A lock on a client: attach and detach, starting operations, and the
// blocking acquire/renew/release on top of them.
#include "edgelock/client.hpp"

#include "client_internal.hpp"

namespace edgelock {

using namespace detail;

client_errc client_lock::attach(client_base& c, str_view name, const lock_options& options,
                                const watchdog_options& watchdog) noexcept {
    if (client_ != nullptr) {
        return client_errc::already_attached;
    }
    if (c.node_count_ == 0) {
        return client_errc::not_configured;
    }
    if (watchdog.enabled && watchdog.renew_every.us != 0 &&
        watchdog.renew_every >=
            options.ttl - redlock_drift(options.ttl, options.drift_ppm, options.drift_fixed)) {
        return client_errc::bad_option;  // it would renew after the validity has ended
    }
    const lock_errc e = machine_.configure(name, c.node_count_, options, c.random_);
    lock_error_ = e;
    if (e != lock_errc::ok) {
        return client_errc::lock_rejected;
    }
    client_ = &c;
    c.route_lock(*this);
    watchdog_ = watchdog;
    timers_.stop_all();
    queued_ = op::none;
    running_ = op::none;
    c.link(*this);
    return client_errc::ok;
}

void client_lock::detach() noexcept {
    if (client_ == nullptr) {
        return;
    }
    client_->unlink(*this);
    client_ = nullptr;
    queued_ = op::none;
    running_ = op::none;
    timers_.stop_all();
}

bool client_lock::held() const noexcept {
    return machine_.held(port::now());
}

client_errc client_lock::start(op kind, instant now, std::uint32_t max_tries,
                               duration wait) noexcept {
    if (client_ == nullptr) {
        return client_errc::not_attached;
    }
    // Bring the machine up to date first: a lock whose validity ended while
    // nobody drove the client is lost, not busy. Only this lock: a full
    // service here would make starting n locks cost n^2.
    if (machine_.next_deadline() <= now) {
        machine_.on_timeout(now);
        client_->pump_events(*this, now);
    }
    const lock_state s = machine_.state();
    switch (kind) {
    case op::acquire:
        if (s != lock_state::idle || queued_ != op::none || running_ != op::none) {
            return client_errc::busy;
        }
        break;
    case op::renew:
        if (s == lock_state::idle) {
            return queued_ == op::none ? client_errc::not_held : client_errc::busy;
        }
        if (s != lock_state::held && s != lock_state::renewing) {
            return client_errc::busy;  // acquiring or releasing
        }
        if (queued_ != op::none && queued_ != op::renew) {
            return client_errc::busy;
        }
        if (queued_ == op::renew || running_ == op::renew || s == lock_state::renewing) {
            // The watchdog's renew is under way: its outcome is the answer.
            if (queued_ != op::renew) {
                running_ = op::renew;
            }
            outcome_ = op_outcome{};
            outcome_.started = op_outcome::op::renew;
            return client_errc::ok;
        }
        break;
    case op::release:
        // Stops anything else of this lock, as the machine's release does.
        if (s == lock_state::idle) {
            if (queued_ == op::acquire) {
                queued_ = op::none;  // an acquisition not yet started is cancelled
                outcome_ = op_outcome{};
                outcome_.started = op_outcome::op::release;
                op_result r;
                r.event.kind = lock_event_kind::released;
                finish(op::release, r);
                return client_errc::ok;
            }
            return client_errc::not_held;
        }
        break;
    case op::none:
        return client_errc::bad_option;
    }
    if (kind == op::acquire) {
        // Only now: a refused call must not rewrite the retries of an
        // acquisition that is still waiting for its nodes.
        const lock_errc e = machine_.set_retry(max_tries, wait);
        if (e != lock_errc::ok) {
            lock_error_ = e;
            return client_errc::lock_rejected;
        }
    }
    queued_ = kind;
    timers_.set(timer::begin_by, now + detail::begin_wait(machine_));
    running_ = op::none;
    outcome_ = op_outcome{};
    outcome_.started = static_cast<op_outcome::op>(kind);
    // The operation begins at the client's next call: next_deadline() is now.
    // Starting many locks in a row therefore costs one service, not one each.
    return client_errc::ok;
}

client_errc client_lock::resume(const owner_token& token) noexcept {
    if (client_ == nullptr) {
        return client_errc::not_attached;
    }
    if (queued_ != op::none || running_ != op::none) {
        return client_errc::busy;
    }
    const lock_errc e = machine_.resume(token, port::now());
    lock_error_ = e;
    if (e != lock_errc::ok) {
        return e == lock_errc::busy ? client_errc::busy : client_errc::lock_rejected;
    }
    return client_errc::ok;
}

client_errc client_lock::start_acquire() noexcept {
    const lock_options& o = machine_.options();
    return start_acquire(o.max_tries, o.wait);
}

client_errc client_lock::start_acquire(std::uint32_t max_tries, duration wait) noexcept {
    if (max_tries == 0) {
        return client_errc::bad_option;
    }
    return start(op::acquire, port::now(), max_tries, wait);
}

client_errc client_lock::start_renew() noexcept {
    return start(op::renew, port::now());
}

client_errc client_lock::start_release() noexcept {
    return start(op::release, port::now());
}

op_result client_lock::run(op kind, std::uint32_t max_tries, duration wait) noexcept {
    op_result out;
    if (client_ == nullptr) {
        out.error = client_errc::not_attached;
        return out;
    }
    if (client_->in_callback_) {
        out.error = client_errc::reentered;
        return out;
    }
    // A bound that no correct run reaches: connect, the operation's own time
    // (its wait, or the validity it can renew within), and slack.
    const client_options& co = client_->options_;
    duration span =
        co.connect_timeout + co.connect_timeout + machine_.options().ttl + duration::seconds(5);
    if (kind == op::acquire) {
        span = span + wait;
    }
    instant now = port::now();
    const instant bound = now + span;
    // The outcome is written into `out` by whatever ends the operation, which
    // may happen inside start() already.
    waiter_ = &out;
    out.error = start(kind, now, max_tries, wait);
    if (out.error != client_errc::ok) {
        waiter_ = nullptr;
        return out;
    }
    if (outcome_.done) {
        return outcome_.result;  // a release that only cancelled an acquisition not yet started
    }
    client_->service(now);  // sends it now, before the first wait
    while (waiter_ == &out) {
        client_errc e = client_errc::ok;
        if (client_ == nullptr) {
            e = client_errc::not_attached;
        } else if (now >= bound) {
            e = client_errc::deadline;
        } else {
            e = client_->wait_once(bound, now);
        }
        if (e != client_errc::ok) {
            waiter_ = nullptr;
            abandon(now);
            out.error = e;
            if (outcome_.started == static_cast<op_outcome::op>(kind) && !outcome_.done) {
                outcome_.done = true;
                outcome_.result = out;
            }
            return out;
        }
    }
    return out;
}

void client_lock::finish(op kind, const op_result& r) noexcept {
    if (waiter_ != nullptr) {
        *waiter_ = r;
        waiter_ = nullptr;
    }
    if (outcome_.started == static_cast<op_outcome::op>(kind) && !outcome_.done) {
        outcome_.done = true;
        outcome_.result = r;
    }
}

// A blocking call gave up: nothing may go on in the background unseen. An
// acquisition still running is released (it might yet win); anything not yet
// started is dropped.
void client_lock::abandon(instant now) noexcept {
    queued_ = op::none;
    if (client_ != nullptr && running_ == op::acquire) {
        running_ = op::none;
        machine_.release(now);
        client_->pump_events(*this, now);
    }
}

op_result client_lock::try_acquire() noexcept {
    return run(op::acquire, 1, machine_.options().wait);
}

op_result client_lock::acquire(duration wait) noexcept {
    return run(op::acquire, UINT32_MAX, wait);
}

op_result client_lock::renew() noexcept {
    return run(op::renew);
}

op_result client_lock::release() noexcept {
    return run(op::release);
}

}  // namespace edgelock
