// Waiters told of their key's release: RESP3 pushes from CLIENT TRACKING
// (over RESP2, the same, published to a subscription: subscription.cpp).
//
// Tracking is broadcasting mode, asked for by a waiter when it first waits:
// the try after an acquire found the key taken goes behind
// CLIENT TRACKING ON [REDIRECT id] BCAST NOLOOP PREFIX <renewal mark>, once
// per name and connection (detail/tracked_names.hpp). From then on the
// server pushes ["invalidate", [key, ...]] whenever a key starting with the
// lock's renewal mark changes, that is one of the lock's two marks
// (src/core/renewal_mark.cpp), and ["invalidate", null] when a flush drops
// them all. It gathers the keys changed under one prefix in one pass of its
// event loop into one push, and it keeps telling: nothing is read again to
// stay told, so a waiter costs nothing while the lock stays as it is.
//
// The release mark, or a flush, is a release: the waiter tries at once. The
// renewal mark alone is a renew (lock::on_key_renewed: the fallback poll
// moves on), or its expiry with the key, when that poll was nearly due. The
// key itself is not tracked: a take (the winner of a handoff) writes only
// the key and wakes no loser, so a release costs each waiter one try. What
// is not heard (a release by a client that writes no marks, the expiry of a
// key never renewed) is found by the fallback poll, just after the holder's
// ttl.
//
// Chosen over OPTIN tracking (a key read after CLIENT CACHING yes is told of
// once, then must be read again: each renew cost every waiter a request),
// over keyspace notifications (pub/sub on __keyspace@db__, which need
// `notify-keyspace-events` set on the server, a CONFIG SET that managed Redis
// services often forbid, and a second connection per node), over a channel
// that releasers publish to (a subscription of its own, and no word of an
// expiry), and over tracking the name as the prefix (every take then woke
// every waiter once more). What a prefix costs: pushes for other keys that
// start with the mark (read and dropped), and the server keeps the prefix
// for the connection's life.
//
// NOLOOP: the server does not tell a connection of its own writes, so a
// holder's renew and release cost it no push. A lock of this client waiting
// for a name that another lock of the same client released is woken here
// instead (released_here).
#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/resp_encoder.hpp"

namespace edgelock {

using namespace detail;

namespace {

// The keys of an invalidation, or false when `nodes` is not one: a RESP3
// push ["invalidate", keys], or the RESP2 message a subscription to the
// invalidation channel receives, ["message", "__redis__:invalidate", keys]
// (subscription.cpp). A null key list (a flush), or one that cannot be read,
// gives keys_at == count.
bool invalidation(const resp_node* nodes, std::size_t count, std::size_t& keys_at) noexcept {
    const std::size_t top = skip_attributes(nodes, count, 0);
    if (top + 1 >= count) {
        return false;
    }
    const resp_node& t = nodes[top];
    const bool push = t.type == resp_type::push && t.count == 2;
    const bool message = t.type == resp_type::array && t.count == 3;
    if (!push && !message) {
        return false;
    }
    std::size_t at = skip_attributes(nodes, count, top + 1);
    if (at >= count || !nodes[at].has_text() ||
        nodes[at].text != (push ? str_view("invalidate") : str_view("message"))) {
        return false;
    }
    if (message) {
        at = skip_attributes(nodes, count, nodes[at].end);
        if (at >= count || !nodes[at].has_text() || nodes[at].text != invalidation_channel()) {
            return false;
        }
    }
    // A flush says null. A key list that is missing or not a list is taken
    // as one too: every waiter tries again rather than one missing its key.
    const std::size_t list = skip_attributes(nodes, count, nodes[at].end);
    keys_at = list < count && nodes[list].type == resp_type::array ? list : count;
    return true;
}

}  // namespace

// Any node's word will do: a waiter retries on every node.
void client_base::on_push(std::uint8_t node, const resp_node* nodes, std::size_t count,
                          instant now) noexcept {
    std::size_t keys_at = count;
    if (nodes != nullptr && !invalidation(nodes, count, keys_at)) {
        return;  // pub/sub or another push: not ours
    }
    for (client_lock* l = locks_; l != nullptr;) {
        client_lock* next = l->next_;
        bool released = nodes == nullptr || keys_at == count;  // unreadable, or a flush
        bool renewed = false;
        if (!released) {
            const resp_node& list = nodes[keys_at];
            for (std::size_t i = keys_at + 1; i < list.end && i < count; i = nodes[i].end) {
                if (nodes[i].has_text()) {
                    released = released || l->machine_.is_release_mark(nodes[i].text);
                    renewed = renewed || l->machine_.is_renewal_mark(nodes[i].text);
                }
            }
        }
        if (released) {
            wake(*l, node, now);
        } else if (renewed) {
            l->machine_.on_key_renewed(node, now);  // or the mark's expiry: a round
            pump_events(*l, now);
        }
        l = next;
    }
}

void client_base::wake(client_lock& l, std::uint8_t node, instant now) noexcept {
    const lock_state s = l.machine_.state();
    if (s == lock_state::retry_wait || s == lock_state::acquiring) {
        l.machine_.on_key_changed(node, now);  // a round to send, or one when this ends
        ++churn_;
        pump_events(l, now);
    }
}

void client_base::wake_all(instant now) noexcept {
    for (client_lock* l = locks_; l != nullptr;) {
        client_lock* next = l->next_;
        wake(*l, lock_max_nodes, now);
        l = next;
    }
}

void client_base::released_here(const client_lock& by, instant now) noexcept {
    for (client_lock* l = locks_; l != nullptr; l = l->next_) {
        if (l != &by && l->machine_.name() == by.machine_.name()) {
            wake(*l, lock_max_nodes, now);
        }
    }
}

void client_base::push_to(void* ctx, std::uint8_t node, const resp_node* nodes, std::size_t count,
                          instant now) noexcept {
    static_cast<client_base*>(ctx)->on_push(node, nodes, count, now);
}

bool client_base::tracking_side::wanted(const client_base& self, std::uint8_t n) noexcept {
    const detail::connection& c = self.conns_[n];
    return self.options_.notify && c.state == node_state::ready && c.report.tracks_keys &&
           (c.report.resp2 || !self.options_.resp3);
}

detail::sub_link client_base::tracking_side::link(client_base& self, std::uint8_t n) noexcept {
    const detail::connection& c = self.conns_[n];
    detail::sub_link link;
    link.via = self.transport_;
    link.options = &self.options_;
    link.address = &c.address;
    const port::endpoint lock_connection = self.endpoint_of(n);
    link.named = lock_connection.host;
    link.where = lock_connection;
    if (link.where.unix_path.empty()) {
        link.where.host = str_view(c.connected_to, c.connected_size);
    }
    link.random = &self.random_;
    link.nodes = self.nodes_;
    link.node_capacity = EDGELOCK_CLIENT_REPLY_NODES;
    link.push.fn = &client_base::push_to;
    link.push.ctx = &self;
    link.push.node = c.node;
    return link;
}

void client_base::tracking_side::apply(client_base& self, std::uint8_t n, std::uint8_t events,
                                       instant now) noexcept {
    detail::connection& c = self.conns_[n];
    if ((events & sub_lost) != 0) {
        c.report.tracking = false;  // its waiters poll until it is back
        c.redirect_due = false;
    }
    if ((events & sub_listening) != 0) {
        // Waiters ask for their names again, redirected here; names the
        // server still redirects to the subscription that went are dropped
        // first (CLIENT TRACKING OFF, queue_extras).
        c.report.tracking = true;
        c.redirect_due = !c.names.empty();
    }
    if ((events & (sub_missed | sub_listening)) != 0) {
        self.wake_all(now);  // whatever changed meanwhile was not told
    }
}

client_base::waiter_tracking client_base::tracking_for(std::uint8_t n, const client_lock& l,
                                                       bool may) const noexcept {
    const detail::connection& c = conns_[n];
    if (!may || !c.report.tracking || c.redirect_due) {
        return waiter_tracking::polls;
    }
    char mark[lock_key_capacity];
    switch (c.names.of(str_view(mark, l.machine_.renewal_mark(mark)))) {
    case tracked_names::standing::told:
    case tracked_names::standing::asked:
        return waiter_tracking::told;
    case tracked_names::standing::refused:
        return waiter_tracking::polls;
    case tracked_names::standing::none:
        break;
    }
    // Asked for by a waiter's try only (an acquire that has not found the
    // key taken, a renew or a release costs nothing more), or by a waiter
    // between its tries (lock_reply.cpp), while there is room for one more
    // name.
    const lock_state st = l.machine_.state();
    const bool waiter =
        (st == lock_state::acquiring || st == lock_state::retry_wait) && l.machine_.contended();
    return waiter && !c.names.full() ? waiter_tracking::asks : waiter_tracking::polls;
}

bool client_base::ask_tracking(std::uint8_t n, const client_lock& l, instant now) noexcept {
    detail::connection& c = conns_[n];
    const decimal_arg id(c.sub.id());
    const bool redirect = c.report.resp2 || !options_.resp3;
    str_view args[9] = {"CLIENT", "TRACKING", "ON"};
    std::size_t argc = 3;
    if (redirect) {
        args[argc++] = "REDIRECT";
        args[argc++] = id.view();
    }
    args[argc++] = "BCAST";
    args[argc++] = "NOLOOP";  // not our own writes
    args[argc++] = "PREFIX";
    char mark[lock_key_capacity];
    args[argc++] = str_view(mark, l.machine_.renewal_mark(mark));
    if (resp_command_size(args, argc) > sizeof c.tx - c.tx_size) {
        return false;
    }
    const std::uint32_t tag = c.names.ask(args[argc - 1]);  // room: tracking_for
    c.tx_size += resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, args, argc).size;
    detail::in_flight f;
    f.tag = tag;
    f.to = reply_to::tracking;
    push_in_flight(n, f, now);
    return true;
}

void client_base::tracking_answer(std::uint8_t n, std::uint32_t tag, const resp_node* nodes,
                                  std::size_t count) noexcept {
    const std::size_t top = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    conns_[n].names.answer(tag, nodes != nullptr && top < count && !nodes[top].is_error());
}

// CLIENT TRACKING OFF when a new subscription replaces the one the names
// were redirected to, and CLUSTER SLOTS when the map is due (and its
// interval is over), ahead of the locks' requests.
bool client_base::queue_extras(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.redirect_due) {
        if (c.fifo.full()) {
            return false;
        }
        const str_view args[] = {"CLIENT", "TRACKING", "OFF"};
        const resp_encoded e =
            resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, args, 3);
        if (e.error != resp_encode_errc::ok) {
            return false;
        }
        c.tx_size += e.size;
        c.redirect_due = false;
        c.names.clear();
        detail::in_flight f;
        f.to = reply_to::discard;
        push_in_flight(n, f, now);
    }
    if (c.address.seed_count > 0 && n < node_count_ && c.cluster.map_wanted(now)) {
        if (c.fifo.full()) {
            return false;
        }
        const std::size_t size =
            c.cluster.write_map_request(c.tx + c.tx_size, sizeof c.tx - c.tx_size, now);
        if (size == 0) {
            return false;
        }
        c.tx_size += size;
        detail::in_flight f;
        f.to = reply_to::cluster;
        push_in_flight(n, f, now);
    }
    return true;
}

}  // namespace edgelock
