// A Sentinel node's trip back to the master it left, for the keys of
// locks kept across a switch (failover.cpp) and then found done.
//
// Kept keys are not forgotten. The old master is remembered (one: a
// further switch with kept locks replaces it). When the renew on the new
// master finds a kept lock lost (a lone false switch: the new master is
// another one, the old one still serves), or the lock was released there
// before its renew, its key is still on the old master, blocking every
// client that uses it until the ttl. The node then goes back there once,
// deletes it by its token (safe: the lock is done) and returns to the
// announced master, within a connect_timeout and a stall_timeout; an old
// master that cannot be reached, or is a replica now, is given up.
// busy() says while this is due, so a program about to exit can wait
// (settle(); the agent does). What is left: reentrant locks are left to
// their ttl (lock::encode_delete writes a plain compare-and-delete, which
// a hash does not answer); a master that cannot be reached at the switch,
// or on the trip back, cannot be cleaned; a lock acquired again before
// the trip leaves its old key to its ttl.
#include "client_internal.hpp"
#include "edgelock/client.hpp"

namespace edgelock {

using namespace detail;

// Armed, once set up on the new master: each kept lock is renewed there at
// once (renew_held). One that renewed has its key here; one found lost (the
// new master is not the old one's replica, or one that had not received the
// key), or released before its renew, still has its key on the old master,
// where nothing will delete it: the node goes back there once to delete it
// by its token, which is safe, the lock being done. A false switch, from
// a sentinel that lies or errs while the old master stays one, would
// otherwise leave the old master blocked for the whole ttl to every client
// still on it.
void client_base::failover_side::check(client_base& self, std::uint8_t n, instant now) noexcept {
    detail::connection& c = self.conns_[n];
    if (c.moving.trip != failover_trip::armed || c.state != node_state::ready || c.where.asking() ||
        c.moving.renew) {
        return;
    }
    bool owed = false;
    std::uint32_t bit = 1;
    for (client_lock* l = self.locks_; l != nullptr && bit != 0; l = l->next_, bit <<= 1) {
        if ((c.moving.kept & bit) == 0) {
            continue;
        }
        const lock_state s = l->machine_.state();
        const bool quiet =
            l->queued_ == client_lock::op::none && l->running_ == client_lock::op::none;
        if (!self.serves(n, *l) || l->machine_.options().mode == lock_mode::reentrant ||
            s == lock_state::acquiring || s == lock_state::fencing || s == lock_state::retry_wait ||
            (s == lock_state::held && quiet)) {
            // Renewed here (its key is here), or acquired again (a new token:
            // the old key is left to its ttl).
            c.moving.kept &= ~bit;
        } else if (done(*l) && l->machine_.next_send(c.node) == lock::outgoing::none) {
            owed = true;  // (its release or clean-up here has gone first)
        }
        // else its renew or release here is under way
    }
    if (c.target.is(c.moving.back.host_view(), c.moving.back.port)) {
        c.moving.kept = 0;  // the old master is this one (announced back): nothing is left there
    }
    if (c.moving.kept == 0) {
        c.moving.trip = failover_trip::none;
    } else if (owed) {
        c.moving.trip = failover_trip::draining;  // nothing more goes out here (transmit)
        trip(self, n, now);
    }
}

// A kept lock that is over: lost or released, nothing of it under way.
bool client_base::failover_side::done(const client_lock& l) noexcept {
    return l.machine_.state() == lock_state::idle && l.queued_ == client_lock::op::none &&
           l.running_ == client_lock::op::none && l.machine_.options().mode != lock_mode::reentrant;
}

// The trip back: the new master's replies awaited, then the old master,
// connected to and set up within connect_timeout (arrived() sends the
// deletes there), its replies within stall_timeout, then home. Once per
// switch; an old master that cannot be reached (or is a replica now: its
// set-up fails) is given up, its keys left to their ttl.
void client_base::failover_side::trip(client_base& self, std::uint8_t n, instant now) noexcept {
    detail::connection& c = self.conns_[n];
    if (c.io.fd() < 0 && c.state != node_state::resolving) {
        if (c.moving.trip == failover_trip::draining) {
            // The new master failed first: it backs off as any node, and the
            // trip is given up.
            c.moving.trip = failover_trip::none;
            c.moving.kept = 0;
            return;
        }
        home(self, n, now);
        return;
    }
    if (!c.fifo.empty() || c.moving.trip == failover_trip::out) {
        return;  // replies, or the set-up, still due
    }
    if (c.moving.trip == failover_trip::cleaning) {
        home(self, n, now);
        return;
    }
    self.drop(n, now);
    c.where.stop();
    c.target = c.moving.back;
    c.moving.due = true;  // no sentinel is asked: they name the new master
    c.moving.trip = failover_trip::out;
    c.state = node_state::down;
    self.start_connect(n, now);
    if (c.io.fd() < 0 && c.state == node_state::backoff) {
        home(self, n, now);  // failed at once
    }
}

// The trip's end: to the master announced last (normally the one left for
// the trip), or the sentinels asked again if the watch may have missed one,
// at once (this is no switch to back off from). Held locks renew there.
void client_base::failover_side::home(client_base& self, std::uint8_t n, instant now) noexcept {
    detail::connection& c = self.conns_[n];
    const bool ask = c.moving.next == failover_next::ask;
    c.moving.trip = failover_trip::none;
    c.moving.kept = 0;
    c.moving.next = failover_next::none;
    if (c.io.fd() >= 0) {
        self.drop(n, now);
    }
    c.where.stop();
    if (!ask) {
        c.target = c.watch.announced();
    }
    c.moving.due = !ask;
    c.moving.renew = true;
    c.failures = 0;  // the old master's failure is not the new one's
    c.state = node_state::down;
    self.start_connect(n, now);
}

// A trip under way, or due once the new master's set-up is done (not while
// the node backs off from it: nothing is then sure to come).
bool client_base::failover_side::owes(const client_base& self, std::uint8_t n) noexcept {
    const detail::connection& c = self.conns_[n];
    if (c.moving.trip > failover_trip::armed) {
        return true;
    }
    if (c.moving.trip != failover_trip::armed || c.state == node_state::backoff ||
        c.state == node_state::down) {
        return false;
    }
    std::uint32_t bit = 1;
    for (const client_lock* l = self.locks_; l != nullptr && bit != 0; l = l->next_, bit <<= 1) {
        if ((c.moving.kept & bit) != 0 && done(*l)) {
            return true;
        }
    }
    return false;
}

// The locks' places in the list moved (kept counts by place): one linked in
// front (added, at 0) or unlinked from `at`.
void client_base::failover_side::renumber(client_base& self, std::size_t at, bool added) noexcept {
    if (at >= 32) {
        return;
    }
    const std::uint32_t below = (std::uint32_t{1} << at) - 1;
    for (std::uint8_t n = 0; n < self.node_count_; ++n) {
        std::uint32_t& k = self.conns_[n].moving.kept;
        k = added ? (k & below) | ((k & ~below) << 1) : (k & below) | ((k >> 1) & ~below);
    }
}

}  // namespace edgelock
