// Redis Cluster nodes: a redis-cluster:// node is one deployment of a lock,
// served by several connections. Its own connection (index = the node's)
// goes to a seed, the next seed after each failure; extra connections of the
// client (client<N, M>, shared by its Cluster nodes) go to the further
// masters its locks' slots are on. A lock's keys share one hash slot (the
// key layout sees to that), so each lock has one route per node: the
// connection its requests go out on.
//
// Routes are learnt from the slot map and from redirections. A lock's route
// is the node's own connection (to a seed) until one of them says otherwise,
// and its first request goes there in the set-up's flight (pipeline.cpp): a
// seed that serves the slot answers it at once, and no map is read. The
// node's own connection asks CLUSTER SLOTS after a MOVED and after a
// connection of the node fails, never twice within a second
// (cluster_router::map_interval); the reply is read where it lies, one range
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
//
// A request is sent at most max_redirects (5) times in its round: a master
// answering MOVED to itself, MOVED naming another slot, or an ASK whose
// target answers MOVED back (a migration half aborted) would otherwise have
// it sent again as fast as the answers come, until the round's deadline.
// The fifth redirect answer is not followed: it counts as the node's "no"
// for the round, and node(i) says "redirected 5 times in one round (last:
// MOVED 1234 host:port)". A round sends a node at most two requests that
// can be redirected (the SET acquire and the script it may fall back to),
// so at most ten. The slot map that a MOVED asks for is rate-limited by the
// router (cluster_router::map_interval).
//
// A request sent by ASK may have written where it went: a cleanup of the
// lock on that node goes there too, directly, behind ASKING, rather than to
// the route, whose master would answer ASK again a round trip later (by
// which time a one-shot client may have exited, leaving the key to its
// ttl). So each lock keeps, per node, where its last request sent by ASK
// went; a request sent on the route forgets it.
//
// A lock's requests to one node keep their order across its connections: one
// waits while another of the same lock is in flight on another connection of
// that node. A try that timed out behind an ASK has its cleanup answered ASK
// by the migrating master, and sent on after the next try has acquired on the
// importing master. Each round has its own token (lock.hpp), so that cleanup
// no longer matches the next try's key; the order keeps what a node sees of
// one lock as simple to reason about as one connection's.
//
// What a map or an answer says is detail::cluster_router's to read
// (cluster_router.cpp); applying it to the locks and connections is here.
#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/key_slot.hpp"

namespace edgelock {

using namespace detail;

namespace {

// node(i)'s reason when a request reached max_redirects: "redirected 5
// times in one round (last: MOVED 1234 127.0.0.1:7001)", the last answer
// cut to what the message holds.
void say_redirected(node_report& report, str_view last) noexcept {
    char text[sizeof report.message];
    static const char head[] = "redirected ";
    static const char middle[] = " times in one round (last: ";
    std::size_t size = 0;
    const auto put = [&](str_view s, std::size_t keep) {
        for (std::size_t k = 0; k < s.size && size + keep < sizeof text; ++k) {
            text[size++] = s[k];
        }
    };
    const char count[] = {static_cast<char>('0' + max_redirects % 10)};
    static_assert(max_redirects < 10, "one digit");
    put(str_view(head, sizeof head - 1), 0);
    put(str_view(count, 1), 0);
    put(str_view(middle, sizeof middle - 1), 0);
    put(last, 1);  // room kept for the ')'
    put(str_view(")", 1), 0);
    report.error = node_error::server_error;
    report.code = 0;
    report.set_message(str_view(text, size));
}

}  // namespace

std::uint8_t client_base::served_by(const client_lock& l, std::uint8_t node) noexcept {
    if (l.asked_[node] != no_connection && l.machine_.next_send(node) == lock::outgoing::cleanup) {
        return l.asked_[node];  // where the write it takes back went
    }
    return l.ask_[node] != no_connection ? l.ask_[node] : l.route_[node];
}

bool client_base::serves(std::uint8_t n, const client_lock& l) const noexcept {
    const std::uint8_t node = conns_[n].node;
    return node != no_connection && served_by(l, node) == n;
}

bool client_base::in_flight_elsewhere(std::uint8_t n, const client_lock& l) const noexcept {
    const std::uint8_t node = conns_[n].node;
    for (std::uint8_t m = 0; m < conn_count_; ++m) {
        const detail::connection& c = conns_[m];
        if (m == n || c.node != node) {
            continue;
        }
        for (std::size_t i = 0; i < c.fifo.size(); ++i) {
            if (c.fifo[i].lock == &l) {
                return true;
            }
        }
    }
    return false;
}

void client_base::route_lock(client_lock& l) noexcept {
    char key[lock_key_capacity];
    const std::size_t size = lock_key(l.machine_.name(), lock_key_kind::lock, key, sizeof key);
    l.slot_ = key_slot(str_view(key, size));
    for (std::uint8_t i = 0; i < lock_max_nodes; ++i) {
        l.route_[i] = i;  // a Cluster node's own connection until the map says
        l.ask_[i] = no_connection;
        l.asked_[i] = no_connection;
        l.redirects_[i] = 0;
        l.redirected_tag_[i] = 0;
    }
}

std::uint8_t client_base::connection_to(std::uint8_t node, str_view host, std::uint16_t port,
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
        if (c.node == node && c.target.is(host, port)) {
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
    for (client_lock* l = locks_; l != nullptr; l = l->next_) {
        for (std::uint8_t i = 0; i < lock_max_nodes; ++i) {
            l->asked_[i] = l->asked_[i] == free ? no_connection : l->asked_[i];
        }
    }
    detail::connection& c = conns_[free];
    if (c.io.fd() >= 0) {
        drop(free, now);
    }
    c.lookup.end();  // a lookup of its old master's host, if one runs, is kept
    c.node = node;
    c.address = conns_[node].address;  // its credentials
    c.state = node_state::down;
    c.failures = 0;
    c.timers.stop_all();
    c.report = detail::node_report{};
    c.cluster.reset();
    c.target.set(host, port);
    return free;
}

bool client_base::follow_redirect(std::uint8_t n, client_lock& l, std::uint32_t tag,
                                  const resp_node* nodes, std::size_t count, instant now) noexcept {
    const std::size_t i = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    detail::redirect r;
    if (i >= count || !nodes[i].is_error() || !cluster_router::parse_redirect(nodes[i].text, r)) {
        return false;
    }
    detail::connection& c = conns_[n];
    const std::uint8_t node = c.node;
    if (l.redirected_tag_[node] != tag) {
        l.redirected_tag_[node] = tag;  // another request: its own count
        l.redirects_[node] = 0;
    }
    if (l.redirects_[node] < max_redirects) {
        ++l.redirects_[node];
    }
    if (l.redirects_[node] >= max_redirects) {
        say_redirected(c.report, nodes[i].text);
        return false;  // the node's "no" for this round
    }
    if (r.host.empty()) {
        r.host = endpoint_of(n).host;
    }
    // The reply stays readable: a connection taken back for room is never
    // this one, which serves the lock.
    const std::uint8_t to = connection_to(node, r.host, r.port, now);
    if (to == no_connection) {
        c.report.error = node_error::server_error;
        c.report.set_message(
            "a Cluster master with no connection left for it (client<N, M>: "
            "more extra connections)");
        return false;
    }
    if (r.ask) {
        l.ask_[node] = to;
    } else {
        for (client_lock* k = locks_; k != nullptr; k = k->next_) {
            if (k->slot_ == r.slot) {
                k->route_[node] = to;
            }
        }
        conns_[node].cluster.want_map();  // more than this slot may have moved
    }
    l.machine_.redirected(node, tag);
    c.report.error = node_error::none;  // not an error: the node said where
    c.report.message_size = 0;
    ++churn_;
    return true;
}

namespace {

// What slot_map_reply() hands the router for each range.
struct map_context {
    client_base* client;
    std::uint8_t n;
    instant now;
    str_view asked;  // the host the map came from
};

}  // namespace

// Each range's master becomes the route of the locks whose slot is in it.
void client_base::slot_map_reply(std::uint8_t n, const char* data, std::size_t size,
                                 instant now) noexcept {
    struct apply {
        static void range(void* ctx, const slot_range& r) {
            map_context& m = *static_cast<map_context*>(ctx);
            client_base& self = *m.client;
            const std::uint8_t node = self.conns_[m.n].node;
            const str_view host = r.host.empty() ? m.asked : r.host;
            std::uint8_t to = no_connection;
            for (client_lock* l = self.locks_; l != nullptr; l = l->next_) {
                if (l->slot_ < r.first || l->slot_ > r.last) {
                    continue;
                }
                if (to == no_connection) {
                    to = self.connection_to(node, host, r.port, m.now);
                    if (to == no_connection) {
                        return;  // the locks keep their routes; a MOVED says so
                    }
                }
                l->route_[node] = to;
            }
        }
    };
    map_context m{this, n, now, endpoint_of(n).host};
    conns_[n].cluster.on_map(data, size, nodes_, EDGELOCK_CLIENT_REPLY_NODES, &apply::range, &m);
}

}  // namespace edgelock
