// Redis Cluster nodes: a redis-cluster:// node is one deployment of a lock,
// served by several connections. Its own connection (index = the node's)
// goes to a seed, the next seed after each failure; extra connections of the
// client (client<N, M>, shared by its Cluster nodes) go to the further
// masters its locks' slots are on. A lock's keys share one hash slot (the
// key layout sees to that), so each lock has one route per node: the
// connection its requests go out on.
//
// Routes are learnt from the slot map and from redirections. The node's own
// connection asks CLUSTER SLOTS once it is set up, after a MOVED and after a
// connection of the node fails; the reply is read where it lies, one range
// at a time, into the routes of the locks attached, and nothing of it is
// kept: the map costs one byte per lock and node (its route), and each
// connection a peer address (254 bytes). A map longer than the receive
// buffer is not asked for again on that node; MOVED answers then teach the
// routes one slot at a time.
//
// A MOVED or ASK answer ran nothing, so the request goes out again, in the
// same round and before the same deadline: MOVED moves the route of every
// lock in that slot, ASK sends this one request once, behind ASKING, where
// the slot is being imported. When no extra connection is free for a master,
// the answer counts as that node's "no" and node(i) says why.
#include <string.h>

#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/key_slot.hpp"
#include "edgelock/resp_encoder.hpp"
#include "node_url_internal.hpp"

namespace edgelock {

using namespace detail;

namespace {

bool same_peer(const peer& p, str_view host, std::uint16_t port) {
    return p.port == port && p.host_view() == host;
}

// "MOVED 3999 127.0.0.1:6381" or "ASK ...": the slot and the address. An
// empty host ("MOVED 3999 :6380") means the one that answered.
bool parse_redirect(str_view text, bool& ask, std::uint32_t& slot, str_view& host,
                    std::uint32_t& port) {
    ask = starts_with(text, "ASK ");
    if (!ask && !starts_with(text, "MOVED ")) {
        return false;
    }
    const str_view rest = url_detail::sub(text, ask ? 4 : 6, text.size);
    const std::size_t space = url_detail::find(rest, ' ');
    if (space == rest.size ||
        !url_detail::parse_decimal(url_detail::sub(rest, 0, space), key_slot_count - 1, slot)) {
        return false;
    }
    const str_view where = url_detail::sub(rest, space + 1, rest.size);
    std::size_t colon = where.size;
    for (std::size_t i = 0; i < where.size; ++i) {
        colon = where[i] == ':' ? i : colon;  // the last: an IPv6 address has more
    }
    if (colon == where.size || colon > node_url_max_host ||
        !url_detail::parse_decimal(url_detail::sub(where, colon + 1, where.size), 65535, port) ||
        port == 0) {
        return false;
    }
    host = url_detail::sub(where, 0, colon);
    return true;
}

// The header of an array reply: its element count and where the first
// element starts; false when it is not one.
bool array_header(const char* data, std::size_t size, std::size_t& count, std::size_t& first) {
    if (size < 4 || data[0] != '*') {
        return false;
    }
    count = 0;
    std::size_t i = 1;
    for (; i < size && data[i] >= '0' && data[i] <= '9' && count < 100000; ++i) {
        count = count * 10 + static_cast<std::size_t>(data[i] - '0');
    }
    if (i == 1 || i + 1 >= size || data[i] != '\r' || data[i + 1] != '\n') {
        return false;
    }
    first = i + 2;
    return true;
}

}  // namespace

std::uint8_t client_base::served_by(const client_lock& l, std::uint8_t node) noexcept {
    return l.ask_[node] != no_connection ? l.ask_[node] : l.route_[node];
}

bool client_base::serves(std::uint8_t n, const client_lock& l) const noexcept {
    const std::uint8_t node = conns_[n].node;
    return node != no_connection && served_by(l, node) == n;
}

void client_base::cluster_attach(client_lock& l) noexcept {
    char key[lock_key_capacity];
    const std::size_t size = lock_key(l.machine_.name(), lock_key_kind::lock, key, sizeof key);
    l.slot_ = key_slot(str_view(key, size));
    for (std::uint8_t i = 0; i < lock_max_nodes; ++i) {
        l.route_[i] = i;  // a Cluster node's own connection until the map says
        l.ask_[i] = no_connection;
    }
}

std::uint8_t client_base::cluster_connection(std::uint8_t node, str_view host, std::uint16_t port,
                                             instant now) noexcept {
    if (host.size == 0 || host.size > node_url_max_host) {
        return no_connection;
    }
    const port::endpoint own = endpoint_of(node);
    if (own.host == host && own.port == port) {
        return node;
    }
    std::uint8_t free = no_connection;
    for (std::uint8_t n = node_count_; n < conn_count_; ++n) {
        const detail::connection& c = conns_[n];
        if (c.node == node && same_peer(c.target, host, port)) {
            return n;
        }
        if (free == no_connection && c.node == no_connection) {
            free = n;
        }
    }
    // None free: one that no lock is served by now, of any Cluster node.
    for (std::uint8_t n = node_count_; n < conn_count_ && free == no_connection; ++n) {
        bool used = !conns_[n].fifo.empty();
        for (const client_lock* l = locks_; l != nullptr && !used; l = l->next_) {
            used = serves(n, *l);
        }
        if (!used) {
            free = n;
        }
    }
    if (free == no_connection) {
        return no_connection;
    }
    detail::connection& c = conns_[free];
    if (c.fd >= 0) {
        drop(free, now);
    }
    c.lookup.end();  // a lookup of its old master's host, if one runs, is kept
    c.node = node;
    c.address = conns_[node].address;  // its credentials
    c.state = node_state::down;
    c.failures = 0;
    c.timers.stop_all();
    c.report = detail::node_report{};
    c.cluster = detail::cluster_state{};
    memcpy(c.target.host, host.data, host.size);
    c.target.host_size = static_cast<std::uint8_t>(host.size);
    c.target.port = port;
    return free;
}

bool client_base::cluster_redirect(std::uint8_t n, client_lock& l, std::uint32_t tag,
                                   const resp_node* nodes, std::size_t count,
                                   instant now) noexcept {
    const std::size_t i = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    if (i >= count || !nodes[i].is_error()) {
        return false;
    }
    bool ask = false;
    std::uint32_t slot = 0;
    std::uint32_t port = 0;
    str_view host;
    if (!parse_redirect(nodes[i].text, ask, slot, host, port)) {
        return false;
    }
    detail::connection& c = conns_[n];
    const std::uint8_t node = c.node;
    if (host.empty()) {
        host = endpoint_of(n).host;
    }
    // The reply stays readable: a connection taken back for room is never
    // this one, which serves the lock.
    const std::uint8_t to = cluster_connection(node, host, static_cast<std::uint16_t>(port), now);
    if (to == no_connection) {
        c.report.error = node_error::server_error;
        c.report.set_message(
            "a Cluster master with no connection left for it (client<N, M>: "
            "more extra connections)");
        return false;
    }
    if (ask) {
        l.ask_[node] = to;
    } else {
        for (client_lock* k = locks_; k != nullptr; k = k->next_) {
            if (k->slot_ == slot) {
                k->route_[node] = to;
            }
        }
        conns_[node].cluster.map_due = true;  // more than this slot may have moved
    }
    l.machine_.redirected(node, tag);
    c.report.error = node_error::none;  // not an error: the node said where
    c.report.message_size = 0;
    ++churn_;
    return true;
}

// Writes CLUSTER SLOTS on a Cluster node's own connection when the map is
// due; false when it waits for room.
bool client_base::queue_cluster_map(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.address.seed_count == 0 || n >= node_count_ || !c.cluster.map_due || c.cluster.map_out ||
        c.cluster.map_unread) {
        return true;
    }
    const str_view ask[] = {"CLUSTER", "SLOTS"};
    if (c.fifo.full() || sizeof c.tx - c.tx_size < resp_command_size(ask, 2)) {
        return false;
    }
    c.tx_size += resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, ask, 2).size;
    detail::in_flight f;
    f.to = reply_to::cluster;
    push_in_flight(n, f, now);
    c.cluster.map_due = false;
    c.cluster.map_out = true;
    return true;
}

// [[first, last, [host, port, ...], [replica...]...], ...]: each range's
// master becomes the route of the locks whose slot is in it.
void client_base::cluster_map_reply(std::uint8_t n, const char* data, std::size_t size,
                                    instant now) noexcept {
    detail::connection& c = conns_[n];
    c.cluster.map_out = false;
    std::size_t ranges = 0;
    std::size_t pos = 0;
    if (!array_header(data, size, ranges, pos)) {
        return;  // an error (a server not in cluster mode): MOVED will tell
    }
    resp_node* const range = nodes_;  // the reply is read here, range by range
    for (std::size_t k = 0; k < ranges && pos < size; ++k) {
        const resp_result r = resp_decode_whole(data + pos, size - pos, range,
                                                EDGELOCK_CLIENT_REPLY_NODES, reply_limits());
        if (r.status != resp_status::complete) {
            return;  // a range with more replicas than nodes to read it: MOVED will tell
        }
        pos += r.size;
        const bool shaped = r.nodes >= 6 && range[0].type == resp_type::array &&
                            range[0].count >= 3 && range[1].type == resp_type::integer &&
                            range[2].type == resp_type::integer &&
                            range[3].type == resp_type::array && range[3].count >= 2 &&
                            range[4].has_text() && range[5].type == resp_type::integer &&
                            range[5].integer > 0 && range[5].integer <= 65535;
        if (!shaped) {
            continue;
        }
        str_view host = range[4].text;
        if (host.empty() || host == str_view("?")) {
            host = endpoint_of(n).host;  // the endpoint is the one asked
        }
        const std::int64_t first = range[1].integer;
        const std::int64_t last = range[2].integer;
        std::uint8_t to = no_connection;
        for (client_lock* l = locks_; l != nullptr; l = l->next_) {
            if (l->slot_ < first || l->slot_ > last) {
                continue;
            }
            if (to == no_connection) {
                to = cluster_connection(c.node, host, static_cast<std::uint16_t>(range[5].integer),
                                        now);
                if (to == no_connection) {
                    break;  // the locks keep their routes; a MOVED says so
                }
            }
            l->route_[c.node] = to;
        }
    }
}

// A connection of a Cluster node failed: its own tries the next seed, and
// the map is asked again (a master may be gone, its replica promoted).
void client_base::cluster_lost(std::uint8_t n) noexcept {
    detail::connection& c = conns_[n];
    if (c.node == no_connection) {
        return;
    }
    if (n < node_count_) {
        c.cluster.seed = static_cast<std::uint8_t>((c.cluster.seed + 1) % c.address.seed_count);
    }
    conns_[c.node].cluster.map_due = true;
}

}  // namespace edgelock
