// Waiters told of their key's release: RESP3 pushes from CLIENT TRACKING
// (over RESP2, the same, published to a subscription: subscription.cpp).
//
// Tracking is switched on at set-up in OPTIN mode: the server remembers the
// keys read by a command that follows CLIENT CACHING yes, the keys read
// inside a script included, and pushes ["invalidate", [key, ...]] once when
// such a key is changed by anyone: deleted (a release), expired, evicted,
// written, or [invalidate, null] when a flush drops them all. The lock
// machine puts CLIENT CACHING yes ahead of its acquire scripts on a told
// node (lock_transmit::preceding); an acquire that finds a key busy has read
// it (GET and PTTL), so every waiter is registered by the very request that
// told it to wait, and learns of the next change without polling. The push
// is one-shot: the waiter's next busy answer registers it again. Renews,
// releases and the SET acquire are not tracked, so a holder costs the server
// no tracking work.
//
// NOLOOP: the server does not tell a connection of its own writes, so a
// holder's renew and release cost it no push. A lock of this client waiting
// for a name that another lock of the same client released is woken here
// instead (released_here).
//
// Chosen over keyspace notifications (pub/sub on __keyspace@db__), which
// need `notify-keyspace-events` set on the server (a CONFIG SET that managed
// Redis services often forbid) and a second connection per node; and over a
// channel that releasers publish to, which hears only releases made by
// clients that publish, not expiry, another client's release or a flush.
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
    for (client_lock* l = locks_; l != nullptr; l = l->next_) {
        bool changed = nodes == nullptr || keys_at == count;  // unreadable, or a flush
        if (!changed) {
            const resp_node& list = nodes[keys_at];
            for (std::size_t i = keys_at + 1; i < list.end && i < count; i = nodes[i].end) {
                if (nodes[i].has_text() && nodes[i].text == l->machine_.name()) {
                    changed = true;
                    break;
                }
            }
        }
        if (changed) {
            wake(*l, node, now);
        }
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
        c.redirect_due = true;  // the lock connection sends it next (queue_extras)
    }
    if ((events & sub_told) != 0) {
        c.report.tracking = true;
    }
    if ((events & (sub_missed | sub_told)) != 0) {
        self.wake_all(now);  // whatever changed meanwhile was not told
    }
}

// The lock connection accepted (or refused) the redirect to the
// subscription whose id is `id`.
void client_base::redirect_answer(std::uint8_t n, std::uint32_t id, const resp_node* nodes,
                                  std::size_t count, instant now) noexcept {
    const std::size_t top = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    const bool accepted = nodes != nullptr && top < count && !nodes[top].is_error();
    tracking_side::apply(
        *this, n,
        conns_[n].sub.on_redirect_answer(id, accepted, tracking_side::link(*this, n), now), now);
}

// CLIENT TRACKING ON REDIRECT <id> OPTIN NOLOOP when the subscription is new,
// and CLUSTER SLOTS when the map is due (and its interval is over), ahead of the locks' requests.
bool client_base::queue_extras(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.redirect_due) {
        if (c.fifo.full()) {
            return false;
        }
        const decimal_arg id(c.sub.id());
        const str_view args[] = {"CLIENT",  "TRACKING", "ON",    "REDIRECT",
                                 id.view(), "OPTIN",    "NOLOOP"};
        const resp_encoded e =
            resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, args, 7);
        if (e.error != resp_encode_errc::ok) {
            return false;
        }
        c.tx_size += e.size;
        c.redirect_due = false;
        detail::in_flight f;
        f.tag = static_cast<std::uint32_t>(c.sub.id());
        f.to = reply_to::tracking;
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
