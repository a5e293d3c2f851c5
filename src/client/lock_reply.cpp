// A lock's reply, where it goes: to the lock's machine, unless the node said
// the request belongs elsewhere (a Cluster's MOVED or ASK: cluster.cpp) or
// that its master was demoted under us (READONLY on a Sentinel node).
#include "client_internal.hpp"
#include "edgelock/client.hpp"

namespace edgelock {

using namespace detail;

namespace {

// A reply to a lock request: an error is the node's latest reason (the
// connection stays), anything else clears it.
void note_lock_reply(connection& c, const resp_node* nodes, std::size_t count) {
    const std::size_t i = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    if (i < count && nodes[i].is_error()) {
        c.report.error = node_error::server_error;
        c.report.code = 0;
        c.report.set_message(nodes[i].text);
    } else if (c.report.error == node_error::server_error) {
        c.report.error = node_error::none;
        c.report.message_size = 0;
    }
}

}  // namespace

void client_base::lock_reply(std::uint8_t n, const detail::in_flight& f, const resp_node* nodes,
                             std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    const std::uint32_t generation = c.io.generation();
    // Before the machine: a callback it triggers may ask node(n) why.
    note_lock_reply(c, nodes, count);
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
    pump_events(*f.lock, now);
    if (c.address.sentinel_count > 0 && c.io.generation() == generation &&
        c.report.error == node_error::server_error && c.report.message_size >= 8 &&
        str_view(c.report.message, 8) == str_view("READONLY")) {
        // The master was demoted under us: ask the sentinels again.
        fail(n, node_error::replica, 0, now, str_view(c.report.message, c.report.message_size));
    }
}

}  // namespace edgelock
