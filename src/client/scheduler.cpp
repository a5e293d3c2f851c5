// The service loop: lock timeouts and the watchdog, starting operations once
// their nodes are settled, events to the locks' callbacks.
#include "edgelock/client.hpp"

#include "client_internal.hpp"

namespace edgelock {

using namespace detail;

namespace {

constexpr unsigned max_service_passes = 16;

}  // namespace

void client_base::pump_events(client_lock& l, instant now) noexcept {
    lock_event ev;
    while (l.machine_.poll_event(ev)) {
        l.last_event_ = ev;
        switch (ev.kind) {
        case lock_event_kind::acquired:
        case lock_event_kind::renewed: {
            duration every = l.watchdog_.renew_every;
            if (every.us == 0) {
                every = duration::micros(l.machine_.options().ttl.us / 3);
            }
            if (l.watchdog_.enabled) {
                // From the start of the round the validity counts from: a
                // round that took long leaves the next renew its full time
                // for a reply (one that took longer than `every` renews at
                // once).
                l.timers_.set(client_lock::timer::renew, l.machine_.validity_base() + every);
            } else {
                l.timers_.stop(client_lock::timer::renew);
            }
            // From the first hold; a reentrant acquire does not move it.
            if (ev.kind == lock_event_kind::acquired && l.watchdog_.max_hold.us > 0 &&
                !l.timers_.armed(client_lock::timer::max_hold)) {
                l.timers_.set(client_lock::timer::max_hold, now + l.watchdog_.max_hold);
            }
            break;
        }
        case lock_event_kind::renew_failed:
            break;
        case lock_event_kind::released:
            l.timers_.stop(client_lock::timer::renew);
            l.timers_.stop(client_lock::timer::max_hold);
            if (ev.nodes > 0) {
                released_here(l, now);
            }
            break;
        default:
            l.timers_.stop(client_lock::timer::renew);
            if (!l.machine_.held(now)) {
                l.timers_.stop(client_lock::timer::max_hold);  // lost (or never held)
            }
            break;
        }
        if (ev.kind == lock_event_kind::lost && l.queued_ != client_lock::op::none) {
            // A renew or release still waiting for a node to connect has
            // nothing left to act on: it ends here, not when it would have
            // begun, so the lock is free for a new acquisition at once. A
            // blocking renew hears `lost`; a blocking release, not_held.
            const client_lock::op queued = l.queued_;
            l.queued_ = client_lock::op::none;
            l.timers_.stop(client_lock::timer::begin_by);
            op_result r;
            if (queued == client_lock::op::renew) {
                r.event = ev;
            } else {
                r.error = client_errc::not_held;
            }
            l.finish(queued, r);
        }
        if (l.running_ != client_lock::op::none) {
            bool ends = false;
            switch (l.running_) {
            case client_lock::op::acquire:
                ends = ev.kind == lock_event_kind::acquired || ev.kind == lock_event_kind::busy ||
                       ev.kind == lock_event_kind::failed;
                break;
            case client_lock::op::renew:
                ends = ev.kind == lock_event_kind::renewed || ev.kind == lock_event_kind::lost;
                break;
            case client_lock::op::release:
                ends = ev.kind == lock_event_kind::released;
                break;
            case client_lock::op::none:
                break;
            }
            if (ends) {
                const client_lock::op ended = l.running_;
                l.running_ = client_lock::op::none;
                op_result r;
                r.event = ev;
                l.finish(ended, r);
            }
        }
        count_event(l.stats_, ev, l.machine_.contended());
        notify(l, ev);
    }
}

// Someone needs connection n: an explicit connect() (the nodes' own), a
// lock with an operation under way or held (the watchdog will need it), or
// a request or cleanup waiting for it. A Cluster node's extra connection is
// needed only by the locks it serves.
bool client_base::node_wanted(std::uint8_t n) const noexcept {
    const std::uint8_t node = conns_[n].node;
    if (node == no_connection) {
        return false;
    }
    const bool own = n < node_count_;
    if (connect_wanted_ && own) {
        return true;
    }
    for (const client_lock* l = locks_; l != nullptr; l = l->next_) {
        const bool served = serves(n, *l);
        if (((own || served) && lock_active(*l)) ||
            (served && l->machine_.next_send(node) != lock::outgoing::none)) {
            return true;
        }
    }
    return false;
}

// watchdog_options::max_hold has passed: no more renewals, a release at
// once, and the owner told first.
void client_base::let_go(client_lock& l, instant now) noexcept {
    l.timers_.stop(client_lock::timer::renew);
    const lock_state s = l.machine_.state();
    if ((s != lock_state::held && s != lock_state::renewing) ||
        l.start(client_lock::op::release, now, 0, duration{}) != client_errc::ok) {
        return;  // already let go: released, releasing or lost
    }
    lock_event ev;
    ev.kind = lock_event_kind::lost;
    ev.reason = lock_failure::held_too_long;
    l.last_event_ = ev;
    count_event(l.stats_, ev, false);
    notify(l, ev);
}

void client_base::notify(client_lock& l, const lock_event& ev) noexcept {
    ++churn_;
    if (l.callback_ != nullptr) {
        const bool outer = in_callback_;
        in_callback_ = true;
        l.callback_(l.callback_ctx_, l, ev);
        in_callback_ = outer;
    }
}

// No connection is connecting or setting up.
bool client_base::all_settled() const noexcept {
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        if (!node_settled(n)) {
            return false;
        }
    }
    return true;
}

// Operations may start: every node is settled, or has its set-up written in
// full (the lock requests go behind it, pipeline.cpp).
bool client_base::all_startable() const noexcept {
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        if (!node_settled(n) && !startable(n)) {
            return false;
        }
    }
    return true;
}

bool client_base::startable(std::uint8_t n) const noexcept {
    return conns_[n].state == node_state::ready || (pipelines(n) && !conns_[n].setup.refused());
}

std::uint8_t client_base::startable_count() const noexcept {
    std::uint8_t count = 0;
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        count = static_cast<std::uint8_t>(count + (startable(n) ? 1 : 0));
    }
    return count;
}

std::uint8_t client_base::ready_count() const noexcept {
    std::uint8_t ready = 0;
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        ready = static_cast<std::uint8_t>(ready + (conns_[n].state == node_state::ready ? 1 : 0));
    }
    return ready;
}

// A connection whose lookup, connect or set-up (or the sentinel it asks) ran
// out of time fails; so does one whose oldest request waited stall_timeout.
void client_base::connection_deadlines(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.lookup.tidy(now, lookup_max_age());  // a lookup kept from an earlier attempt
    const bool unsettled = !node_settled(n);
    const bool sentinel_due = c.where.asking() && c.where.expired(now);
    if (unsettled && (c.timers.expired(connection_timer::connect, now) || sentinel_due)) {
        if (c.state == node_state::resolving) {
            fail(n, node_error::resolve_timeout, 0, now);
            return;
        }
        // Say which part ran out of time: the transport's own handshake (a
        // TLS server that never finishes it), or, connected, the set-up's
        // replies or a sentinel's answer (a slow link's, or a server that
        // accepts and says nothing).
        str_view during;
        if (c.io.phase() == stream_phase::opening) {
            during = c.io.failure_text(*transport_);
            if (during.empty()) {
                during = transport_->secure() ? "TLS handshake" : "transport handshake";
            }
        } else if (c.state == node_state::handshake) {
            during =
                c.where.asking() ? "no answer from the sentinel asked" : "no reply to the set-up";
        }
        fail(n, node_error::connect_timeout, 0, now, during);
    } else if (c.state == node_state::ready && !c.fifo.empty() &&
               c.timers.expired(connection_timer::stall, now)) {
        fail(n, node_error::stalled, 0, now);
    }
}

bool client_base::node_settled(std::uint8_t n) const noexcept {
    const node_state s = conns_[n].state;
    return s == node_state::ready || s == node_state::backoff || s == node_state::down;
}

bool client_base::lock_active(const client_lock& l) const noexcept {
    return l.queued_ != client_lock::op::none || l.running_ != client_lock::op::none ||
           l.machine_.state() != lock_state::idle;
}

void client_base::begin(client_lock& l, instant now) noexcept {
    const client_lock::op kind = l.queued_;
    l.queued_ = client_lock::op::none;
    l.timers_.stop(client_lock::timer::begin_by);
    lock_errc e = lock_errc::ok;
    switch (kind) {
    case client_lock::op::acquire:
        e = l.machine_.acquire(now);
        break;
    case client_lock::op::renew:
        e = l.machine_.state() == lock_state::renewing ? lock_errc::ok : l.machine_.renew(now);
        break;
    case client_lock::op::release:
        e = l.machine_.state() == lock_state::idle ? lock_errc::not_held : l.machine_.release(now);
        break;
    case client_lock::op::none:
        return;
    }
    if (e != lock_errc::ok) {
        // The lock moved on while its nodes connected (lost, say, and that was
        // reported), or the machine refused (no random bytes for a token).
        l.lock_error_ = e;
        l.running_ = client_lock::op::none;
        op_result r;
        r.error = e == lock_errc::not_held ? client_errc::not_held : client_errc::lock_rejected;
        r.lock_error = e;
        l.finish(kind, r);
        if (kind == client_lock::op::acquire) {
            // An event-loop owner waits for an outcome: give it one.
            lock_event ev;
            ev.kind = lock_event_kind::failed;
            ev.reason = e == lock_errc::random_failed ? lock_failure::random_failed
                                                      : lock_failure::no_quorum;
            count_event(l.stats_, ev, false);  // (the machine's flag is an earlier one's)
            notify(l, ev);
        }
        return;
    }
    l.running_ = kind;
    pump_events(l, now);  // renew can report lost at once
}

void client_base::service(instant now) noexcept {
    if (node_count_ == 0) {
        return;
    }
    // Another pass is needed only when this one made work for a part of it
    // that already ran: a callback (it may start operations), a connection
    // that dropped, a round failed at once on a node that is down (both may
    // queue cleanups for nodes already served). Sending and starting
    // operations do not: what they queue goes out later in the same pass.
    for (unsigned pass = 0; pass < max_service_passes; ++pass) {
        const std::uint32_t churn = churn_;
        // Lock deadlines and the watchdog.
        for (client_lock* l = locks_; l != nullptr; l = l->next_) {
            if (l->machine_.next_deadline() <= now) {
                l->machine_.on_timeout(now);
                pump_events(*l, now);
            }
            if (l->timers_.expired(client_lock::timer::max_hold, now)) {
                l->timers_.stop(client_lock::timer::max_hold);
                let_go(*l, now);
            }
            if (l->timers_.expired(client_lock::timer::renew, now)) {
                l->timers_.stop(client_lock::timer::renew);
                if (l->machine_.state() == lock_state::held &&
                    l->queued_ == client_lock::op::none && l->running_ == client_lock::op::none) {
                    l->queued_ = client_lock::op::renew;
                    l->timers_.set(client_lock::timer::begin_by,
                                   now + detail::begin_wait(l->machine_));
                }
            }
        }
        // Connection deadlines.
        for (std::uint8_t n = 0; n < conn_count_; ++n) {
            connection_deadlines(n, now);
        }
        // The subscriptions of RESP2 nodes: made, timed out, made again.
        for (std::uint8_t n = 0; n < conn_count_; ++n) {
            detail::subscription& sub = conns_[n].sub;
            const bool wanted = tracking_side::wanted(*this, n);
            if (wanted || sub.phase() == sub_phase::connecting || sub.phase() == sub_phase::setup) {
                tracking_side::apply(*this, n,
                                     sub.service(wanted, tracking_side::link(*this, n), now), now);
            }
        }
        // The watches of Sentinel nodes: +switch-master.
        for (std::uint8_t n = 0; n < node_count_; ++n) {
            if (conns_[n].address.sentinel_count > 0) {
                failover_side::apply(*this, n,
                                     conns_[n].watch.service(failover_side::wanted(*this, n),
                                                             failover_side::link(*this, n), now),
                                     now);
            }
        }
        // Connect what someone needs.
        for (std::uint8_t n = 0; n < conn_count_; ++n) {
            detail::connection& c = conns_[n];
            if ((c.state == node_state::down || (c.state == node_state::backoff &&
                                                 c.timers.get(connection_timer::backoff) <= now)) &&
                node_wanted(n)) {
                start_connect(n, now);
            }
        }
        // Start operations once no node is still connecting, or once they
        // have waited for one (begin_wait): a node stuck in set-up (a frozen
        // server completes the TCP handshake) then counts as a "no" like any
        // node that does not answer in time, instead of holding up the round.
        const bool settled = all_startable();
        for (client_lock* l = locks_; l != nullptr; l = l->next_) {
            if (l->queued_ != client_lock::op::none &&
                (settled || l->timers_.expired(client_lock::timer::begin_by, now))) {
                begin(*l, now);
            }
        }
        // Requests: out on ready connections; failed at once, unsent, on
        // nodes that are down, even behind a cleanup (which stays queued for
        // when the node is back): a round waits only for nodes that may answer.
        for (std::uint8_t n = 0; n < conn_count_; ++n) {
            detail::connection& c = conns_[n];
            if (c.state == node_state::ready || c.state == node_state::handshake) {
                transmit(n, now);
            } else if ((c.state == node_state::backoff || c.state == node_state::down) &&
                       c.node != no_connection) {
                for (client_lock* l = locks_; l != nullptr; l = l->next_) {
                    if (serves(n, *l) && l->machine_.next_send(c.node) != lock::outgoing::none) {
                        const lock_state before = l->machine_.state();
                        const lock::outgoing next = l->machine_.next_send(c.node);
                        l->machine_.on_unreachable(c.node, now);
                        if (l->machine_.state() != before ||
                            l->machine_.next_send(c.node) != next) {
                            pump_events(*l, now);
                            ++churn_;
                        }
                    }
                }
            }
        }
        if (churn_ == churn) {
            return;
        }
    }
}

}  // namespace edgelock
