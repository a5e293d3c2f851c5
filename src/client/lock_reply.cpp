// A lock's reply, where it goes: to the lock's machine, unless the node said
// the request belongs elsewhere (a Cluster's MOVED or ASK: cluster.cpp) or
// that its master was demoted under us (READONLY on a Sentinel node).
#include "client_internal.hpp"
#include "edgelock/client.hpp"

namespace edgelock {

using namespace detail;

namespace {

// Whether a reply is NOSCRIPT: the node lost its script cache.
bool is_noscript(const resp_node* nodes, std::size_t count) {
    const std::size_t i = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    return i < count && nodes[i].is_error() && starts_with(nodes[i].text, "NOSCRIPT");
}

// A reply to a lock request: an error is the node's latest reason (the
// connection stays), anything else clears it.
// Counted, unless the lock retries it itself (NOSCRIPT) or it is a
// Cluster's redirect.
void note_lock_reply(connection& c, node_stats& stats, const resp_node* nodes, std::size_t count) {
    const std::size_t i = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    if (i < count && nodes[i].is_error()) {
        const str_view text = nodes[i].text;
        if (!starts_with(text, "NOSCRIPT") && !starts_with(text, "MOVED ") &&
            !starts_with(text, "ASK ")) {
            count_error(stats, node_error::server_error);
        }
        c.report.error = node_error::server_error;
        c.report.code = 0;
        c.report.set_message(nodes[i].text);
    } else if (c.report.error == node_error::server_error) {
        c.report.error = node_error::none;
        c.report.message_size = 0;
    }
}

}  // namespace

// A reply to a lock request that followed the set-up (pipeline.cpp), read
// before the set-up is done: true when it goes to the machine as any other.
// After a refused check it counts for nothing (as if the connection broke),
// and what it took gets a cleanup, which goes behind it, here; a NOAUTH means the
// HELLO that carried the password was unknown here, and the request goes
// again once AUTH has gone.
bool client_base::follow_setup(std::uint8_t n, const detail::in_flight& f, const resp_node* nodes,
                               std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    const std::size_t i = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    const bool noauth = i < count && nodes[i].is_error() && starts_with(nodes[i].text, "NOAUTH");
    if (c.setup.refused() && f.cleanup) {
        // Its answer is the machine's; the node's reason stays the set-up's.
        f.lock->machine_.on_reply(c.node, f.tag, nodes, count, now);
    } else if (c.setup.refused()) {
        f.lock->machine_.undo(c.node, f.tag, nodes, count, now);
    } else if (noauth && !c.setup.refused()) {
        f.lock->machine_.redirected(c.node, f.tag);
    } else {
        return true;
    }
    if (!c.fifo.empty() && c.fifo.front().lock == f.lock && c.fifo.front().follows) {
        c.fifo.front().to = reply_to::discard;  // its WAIT means nothing now
    }
    pump_events(*f.lock, now);
    return false;
}

void client_base::lock_reply(std::uint8_t n, const detail::in_flight& f, const resp_node* nodes,
                             std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    const std::uint32_t generation = c.io.generation();
    if (c.state == node_state::handshake && !f.follows && !follow_setup(n, f, nodes, count, now)) {
        return;
    }
    // Before the events: a callback may ask node(n) why. A NOSCRIPT waits
    // for the machine: one it retries (the script's text goes at once, on
    // this connection, and EVAL cannot answer NOSCRIPT) is no reason of the
    // node's, and must not show as one if the round ends before the retry's
    // reply (a node restarted without its scripts, then slow).
    const bool noscript = is_noscript(nodes, count);
    if (!noscript) {
        note_lock_reply(c, stats_of(n), nodes, count);
    } else {
        c.scripts_cold = true;  // the other scripts are not there either
    }
    if (c.address.seed_count > 0 && !f.follows &&
        follow_redirect(n, *f.lock, f.tag, nodes, count, now)) {
        // MOVED or ASK: nothing ran; the request goes out again where the
        // node said, and the WAIT behind it here means nothing.
        if (!c.fifo.empty() && c.fifo.front().lock == f.lock && c.fifo.front().follows) {
            c.fifo.front().to = reply_to::discard;
        }
        return;
    }
    f.lock->machine_.on_reply(c.node, f.tag, nodes, count, now);
    if (noscript && f.lock->machine_.next_send(c.node) == lock::outgoing::none) {
        note_lock_reply(c, stats_of(n), nodes, count);  // not retried
    }
    // A try that found the key taken, with nothing more to send here this
    // round (a script acquire is one request a round: fenced, reentrant, or
    // with a holder record): the waiter's CLIENT TRACKING goes now, alone,
    // so that a release before its next try is heard. Before the events:
    // the callback may detach the lock.
    if (c.io.generation() == generation && c.state == node_state::ready &&
        f.lock->machine_.next_send(c.node) == lock::outgoing::none &&
        c.fifo.size() < c.fifo.capacity &&
        tracking_for(n, *f.lock, true) == waiter_tracking::asks && ask_tracking(n, *f.lock, now)) {
        f.lock->machine_.on_told(c.node, now);
    }
    pump_events(*f.lock, now);
    if (c.address.sentinel_count > 0 && c.io.generation() == generation &&
        c.report.error == node_error::server_error && c.report.message_size >= 8 &&
        str_view(c.report.message, 8) == str_view("READONLY")) {
        // The master was demoted under us: ask the sentinels again.
        fail(n, node_error::replica, 0, now, str_view(c.report.message, c.report.message_size));
    }
}

}  // namespace edgelock
