// A Sentinel node following a switch: what the client does when its watch
// (sentinel_watch.cpp) hears +switch-master, or may have missed one.
//
// Four rules, each against a sentinel that lies or floods:
//
// - Switches go through the reconnect backoff. The first switch after a
//   quiet spell (no message for reconnect_max) is followed at once: that is a
//   failover, and the watch is there to follow it fast. Each further one
//   counts as a failed connection would: the next connect waits
//   backoff_until() of that many failures, doubling from reconnect_min to
//   reconnect_max, and a connect that then fails backs off as any node's.
//   A sentinel flipping the master every millisecond gets a handful of
//   connections to each master, not one per message; the master followed is
//   the one the latest message named.
//
// - A lock written on the master the node leaves is deleted there first.
//   Before the connection leaves a master it is set up on, nothing more is
//   written there and the replies in flight are awaited (an acquire may
//   still run there). Then every lock of the node that may have a key there
//   (any lock not idle) gets a compare-and-delete by its own token, and each
//   held one a renew behind it, which finds the key gone and tells the
//   machine the lock is lost there: a lock never counts as held on a key it
//   deleted itself (one whose renew cannot follow now, between two renew
//   tries, keeps its key). The switch waits for those replies too, within the stall
//   timeout like any request. Deleting by our own token is always safe for
//   others. One exception: at the first switch after a quiet spell (a
//   failover), the locks already held keep their keys. The old master is
//   being demoted (its data goes when it turns replica), and the new one,
//   its replica, may have the key: the renew there says, and a lock that
//   survives a failover must not be made to lose it. A switch that comes
//   within reconnect_max of the last is not a failover to trust, and an
//   acquire answered after the switch was heard is not a hold to keep.
//   This was chosen over remembering the masters written to and carrying
//   each release to all of them later (one is remembered for the kept
//   locks, failover_trip.cpp): that would need a connection back to a master the
//   sentinels said is gone (against their word, while a new master serves),
//   at release time, with memory per master; here the old master is cleaned
//   while the socket to it is still up, which is when it is reachable, and
//   a release afterwards has one master to reach, the current one.
//
// - A held lock renews at once on the new master: one without the key (an
//   asynchronous replica that had not received it, or another master
//   altogether) is found within a round trip of the set-up, not at the
//   watchdog's next renew, up to ttl/3 later; the lock is then lost and says
//   so. A switch heard while the connection is down is used at the next
//   connect, without asking again a sentinel that may still name the old one.
//
// - Kept keys are not forgotten: see failover_trip.cpp.
#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/detail/backoff.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp_encoder.hpp"

namespace edgelock {

using namespace detail;

namespace {

// A lock that may have a key on the node's master, to delete there by its
// token before the node leaves it. Not while a round that counts the node's
// "yes" is open (acquiring, fencing): the round could then win on a key
// deleted under it. Its key there is then left to the ttl, or, if the round
// fails, to its cleanup.
bool may_have_written(const lock& m) {
    return m.state() != lock_state::idle && m.state() != lock_state::unconfigured &&
           m.state() != lock_state::acquiring && m.state() != lock_state::fencing &&
           m.options().mode != lock_mode::reentrant;
}

}  // namespace

bool client_base::failover_side::wanted(const client_base& self, std::uint8_t n) noexcept {
    return n < self.node_count_ && self.conns_[n].address.sentinel_count > 0 && self.node_wanted(n);
}

detail::watch_link client_base::failover_side::link(client_base& self, std::uint8_t n) noexcept {
    detail::watch_link link;
    link.via = self.transport_;
    link.options = &self.options_;
    link.address = &self.conns_[n].address;
    link.front = self.conns_[n].where.front();
    link.lookup_max_age = self.lookup_max_age();
    link.random = &self.random_;
    link.nodes = self.nodes_;
    link.node_capacity = EDGELOCK_CLIENT_REPLY_NODES;
    return link;
}

void client_base::failover_side::apply(client_base& self, std::uint8_t n, std::uint8_t events,
                                       instant now) noexcept {
    detail::connection& c = self.conns_[n];
    if (c.moving.trip > failover_trip::armed) {
        // Away for the old master's keys: where to go next is read at the
        // trip's end (the latest announced, or the sentinels asked again).
        if ((events & watch_switched) != 0) {
            heard(self, n, now);
        } else if ((events & watch_missed) != 0) {
            c.moving.next = failover_next::ask;
        }
        trip(self, n, now);
        return;
    }
    if ((events & watch_switched) != 0) {
        heard(self, n, now);
    } else if ((events & watch_missed) != 0 && c.io.fd() >= 0 && !c.where.asking()) {
        leave(self, n, failover_next::ask, now);  // made again by asking the sentinels
    }
    if (c.moving.leaving == failover_leave::no) {
        check(self, n, now);
        return;
    }
    if (c.io.fd() < 0) {
        // The old master failed meanwhile (fail() set its backoff): the switch
        // is used at the next connect.
        c.moving.leaving = failover_leave::no;
        if (c.moving.next == failover_next::announced) {
            c.target = c.watch.announced();
            c.moving.due = true;
        }
        c.moving.next = failover_next::none;
        c.moving.renew = true;
        return;
    }
    if (!c.fifo.empty()) {
        return;  // the old master's replies are still due
    }
    if (c.moving.leaving == failover_leave::draining && clean(self, n, now)) {
        c.moving.leaving = failover_leave::cleaning;
        self.transmit(n, now);
        return;
    }
    move(self, n, now);  // the old master answered everything: cleaned
}

// +switch-master for the node's master: c.watch.announced() is where.
void client_base::failover_side::heard(client_base& self, std::uint8_t n, instant now) noexcept {
    detail::connection& c = self.conns_[n];
    const peer& to = c.watch.announced();
    // Every message counts for the quiet spell, so a flood never has one.
    if (c.moving.streak > 0 && !(now < c.moving.last + self.options_.reconnect_max)) {
        c.moving.streak = 0;  // a failover, followed at once
    }
    c.moving.last = now;
    if (c.moving.trip > failover_trip::armed) {
        return;  // the trip's end goes to the latest announced
    }
    if (c.moving.leaving != failover_leave::no) {
        c.moving.next = failover_next::announced;  // the latest is read when the clean-ups are done
        return;
    }
    if (c.target.is(to.host_view(), to.port) && c.state == node_state::ready && !c.where.asking()) {
        return;  // already there
    }
    if (c.io.fd() < 0 && c.state != node_state::resolving) {
        // Down, or backing off: the next connect goes there.
        c.target = to;
        c.moving.due = true;
        return;
    }
    leave(self, n, failover_next::announced, now);
}

// The connection leaves where it is for `next`: at once, or once the master
// it is set up on has answered what is in flight and has been cleaned.
void client_base::failover_side::leave(client_base& self, std::uint8_t n, failover_next next,
                                       instant now) noexcept {
    detail::connection& c = self.conns_[n];
    c.moving.next = next;
    // A first switch after a quiet spell is a failover: the locks held now
    // keep their keys (the old master is being demoted, and the new one may
    // hold them: the renew there says), and so do they when the watch may
    // have missed a message. Switches that keep coming are not trusted:
    // every key there goes.
    const bool quiet = c.moving.streak == 0 || next == failover_next::ask;
    const bool here = c.state == node_state::ready && !c.where.asking();
    c.moving.kept = 0;
    bool written = !c.fifo.empty();
    std::uint32_t bit = 1;
    for (client_lock* l = self.locks_; l != nullptr; l = l->next_, bit <<= 1) {
        if (!self.serves(n, *l)) {
            continue;
        }
        if (quiet && bit != 0 && l->machine_.held(now)) {
            c.moving.kept |= bit;
        } else {
            written = written || may_have_written(l->machine_);
        }
    }
    // The kept keys stay here: remembered, for a trip back should a kept
    // lock be found lost on the new master (check()). One master only: a
    // further switch forgets the one before (replaces it, when it keeps
    // locks too), whose keys then go with their ttl.
    c.moving.trip = failover_trip::none;
    if (here && c.moving.kept != 0) {
        c.moving.back = c.target;
        c.moving.trip = failover_trip::armed;
    }
    if (here && written) {
        c.moving.leaving = failover_leave::draining;  // nothing more goes out there (transmit)
        return;
    }
    move(self, n, now);
}

void client_base::failover_side::move(client_base& self, std::uint8_t n, instant now) noexcept {
    detail::connection& c = self.conns_[n];
    const failover_next next = c.moving.next;
    c.moving.leaving = failover_leave::no;
    c.moving.next = failover_next::none;
    if (next == failover_next::ask) {
        self.drop(n, now);
        c.where.stop();
        c.state = node_state::down;
        c.moving.renew = true;
        return;
    }
    const peer& to = c.watch.announced();
    if (c.target.is(to.host_view(), to.port) && c.state == node_state::ready && !c.where.asking()) {
        self.transmit(n, now);  // announced back meanwhile: it stays
        return;
    }
    const instant at = backoff(self, n, now);
    self.drop(n, now);
    c.where.stop();
    c.target = to;
    c.moving.due = true;
    c.moving.renew = true;
    c.state = node_state::backoff;
    c.timers.set(connection_timer::backoff, at);
}

// When the node may connect after the switch heard now.
instant client_base::failover_side::backoff(client_base& self, std::uint8_t n,
                                            instant now) noexcept {
    detail::failover& f = self.conns_[n].moving;
    instant at = now;
    if (f.streak > 0) {
        std::uint8_t failures = static_cast<std::uint8_t>(f.streak - 1);
        at = backoff_until(self.options_, self.random_, failures, now);
    }
    if (f.streak < 255) {
        ++f.streak;
    }
    return at;
}

// On the old master, everything in flight answered: a compare-and-delete by
// token, as EVAL (its script cache is not known), for each lock that may
// have a key there, then a renew for each held one, which finds it gone.
// True when anything went in. A clean-up that does not fit in the buffer or
// the pipeline is left to the key's ttl.
bool client_base::failover_side::clean(client_base& self, std::uint8_t n, instant now) noexcept {
    detail::connection& c = self.conns_[n];
    bool any = false;
    std::uint32_t bit = 1;
    for (client_lock* l = self.locks_; l != nullptr; l = l->next_, bit <<= 1) {
        // Room for the delete, and the renew, its WAIT and what goes ahead.
        if (!self.serves(n, *l) || !may_have_written(l->machine_) || (c.moving.kept & bit) != 0 ||
            c.fifo.size() + 4 > c.fifo.capacity) {
            continue;
        }
        const bool held = l->machine_.held(now);
        if (held) {
            if (l->queued_ == client_lock::op::none && l->running_ == client_lock::op::none) {
                l->queued_ = client_lock::op::renew;
                self.begin(*l, now);
            }
            if (l->machine_.next_send(c.node) != lock::outgoing::request) {
                continue;  // no renew can follow the delete now: the key stays
            }
        }
        if (!write_delete(self, n, *l, held ? lock_max_renew_request : 0, now)) {
            continue;  // left to its ttl there
        }
        any = true;
        if (held) {
            write_renew(self, n, *l, now);
        }
    }
    return any;
}

// A compare-and-delete of l's key (a semaphore's permit) by its token, as
// EVAL (the master's script cache is not known), its reply not read; false when it does not fit
// with `room` bytes to spare.
bool client_base::failover_side::write_delete(client_base& self, std::uint8_t n,
                                              const client_lock& l, std::size_t room,
                                              instant now) noexcept {
    detail::connection& c = self.conns_[n];
    const std::size_t size = l.machine_.encode_delete(c.tx + c.tx_size, sizeof c.tx - c.tx_size);
    if (size == 0 || sizeof c.tx - c.tx_size < size + room) {
        return false;
    }
    c.tx_size += size;
    detail::in_flight f;
    f.to = reply_to::discard;
    self.push_in_flight(n, f, now);
    return true;
}

// The held lock's renew, right behind its delete (queue_requests is held
// back while the node leaves, so nothing else goes out there); clean()
// made sure there is room for it.
void client_base::failover_side::write_renew(client_base& self, std::uint8_t n, client_lock& l,
                                             instant now) noexcept {
    detail::connection& c = self.conns_[n];
    // As EVAL: a NOSCRIPT could not be answered by sending it again, since
    // the connection leaves once the replies are in, and the lock would then
    // count as held on the key it has just deleted.
    l.machine_.send_as_eval(c.node);
    const lock_transmit t =
        l.machine_.poll_transmit(c.node, c.tx + c.tx_size, sizeof c.tx - c.tx_size);
    if (t.error != lock_errc::ok || t.size == 0) {
        return;
    }
    c.tx_size += t.size;
    for (std::uint8_t k = 0; k < t.preceding; ++k) {
        detail::in_flight skip;
        skip.to = reply_to::discard;
        self.push_in_flight(n, skip, now);
    }
    detail::in_flight f;
    f.lock = &l;
    f.tag = t.tag;
    f.to = reply_to::lock;
    self.push_in_flight(n, f, now);
    if (t.following > 0) {
        f.tag = t.following_tag;
        f.follows = true;
        self.push_in_flight(n, f, now);
    }
}

void client_base::failover_side::renew_held(client_base& self, std::uint8_t n,
                                            instant now) noexcept {
    for (client_lock* l = self.locks_; l != nullptr; l = l->next_) {
        if (self.serves(n, *l) && l->machine_.state() == lock_state::held &&
            l->queued_ == client_lock::op::none && l->running_ == client_lock::op::none) {
            l->queued_ = client_lock::op::renew;
            l->timers_.set(client_lock::timer::begin_by, now + detail::begin_wait(l->machine_));
        }
    }
}

void client_base::failover_side::arrived(client_base& self, std::uint8_t n, instant now) noexcept {
    detail::connection& c = self.conns_[n];
    if (c.moving.trip == failover_trip::out) {
        // Back on the old master: the keys of the kept locks that are done
        // go (a lock acquired again meanwhile has a new token: its old key
        // is left to its ttl). The replies are awaited, then home().
        std::uint32_t bit = 1;
        for (client_lock* l = self.locks_; l != nullptr && bit != 0; l = l->next_, bit <<= 1) {
            if ((c.moving.kept & bit) != 0 && done(*l) && !c.fifo.full()) {
                write_delete(self, n, *l, 0, now);
            }
        }
        c.moving.trip = failover_trip::cleaning;
        return;
    }
    if (c.moving.renew) {
        c.moving.renew = false;
        renew_held(self, n, now);
    }
}

}  // namespace edgelock
