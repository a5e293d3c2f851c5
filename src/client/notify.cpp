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
#include "edgelock/client.hpp"

namespace edgelock {

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

void client_base::on_push(std::uint8_t n, const resp_node* nodes, std::size_t count,
                          instant now) noexcept {
    (void)n;  // any node's word will do: a waiter retries on every node
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
            wake(*l, now);
        }
    }
}

void client_base::wake(client_lock& l, instant now) noexcept {
    const lock_state s = l.machine_.state();
    if (s == lock_state::retry_wait || s == lock_state::acquiring) {
        l.machine_.on_key_changed(now);  // a round to send, or one when this ends
        ++churn_;
        pump_events(l, now);
    }
}

void client_base::wake_all(instant now) noexcept {
    for (client_lock* l = locks_; l != nullptr;) {
        client_lock* next = l->next_;
        wake(*l, now);
        l = next;
    }
}

void client_base::released_here(const client_lock& by, instant now) noexcept {
    for (client_lock* l = locks_; l != nullptr; l = l->next_) {
        if (l != &by && l->machine_.name() == by.machine_.name()) {
            wake(*l, now);
        }
    }
}

}  // namespace edgelock
