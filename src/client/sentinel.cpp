// Sentinel-managed masters: a redis-sentinel:// node's connection first goes
// to a sentinel and asks SENTINEL get-master-addr-by-name, then to the master
// it names, where the set-up runs as for any node (its INFO replication
// confirms a master: a node that turned replica fails with `replica`). Every
// connect asks again, so a failover is followed by the next reconnect: after
// a disconnect, a failed set-up, or a READONLY answer to a lock request (the
// master was demoted under us), which drops the connection.
//
// The sentinels are asked in turn, each within sentinel_timeout, starting
// with the one that answered last; the asking uses the node's own connection
// (fd, buffers, pipeline), so it costs no memory and no fd of its own. The
// asking and the master's connect and set-up share one connect_timeout, as
// any node's connect does. When none answers with an address in time the node
// fails with sentinel_failed and the last one's reason, and backs off like
// any node.
#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/resp_encoder.hpp"
#include "node_url_internal.hpp"

namespace edgelock {

using namespace detail;

namespace {

constexpr std::uint32_t ask_auth = 0;
constexpr std::uint32_t ask_master = 1;

}  // namespace

namespace detail {

std::size_t encode_sentinel_auth(char* buf, std::size_t capacity, const client_options& o) {
    if (o.sentinel_password.empty()) {
        return 0;
    }
    str_view auth[3] = {"AUTH"};
    std::size_t argc = 1;
    if (!o.sentinel_username.empty()) {
        auth[argc++] = o.sentinel_username;
    }
    auth[argc++] = o.sentinel_password;
    return resp_encode_command(buf, capacity, auth, argc).size;
}

}  // namespace detail

port::endpoint client_base::endpoint_of(std::uint8_t n) const noexcept {
    const detail::connection& c = conns_[n];
    port::endpoint where;
    where.host = c.address.host;
    where.port = c.address.port;
    where.unix_path = c.address.unix_path;
    if (c.address.seed_count > 0 && n < node_count_) {
        (void)node_url_seed(c.address, c.cluster.seed, where.host, where.port);
    } else if (c.address.sentinel_count > 0 && c.sentinel.asking) {
        const std::uint8_t i = static_cast<std::uint8_t>((c.sentinel.front + c.sentinel.tried) %
                                                         c.address.sentinel_count);
        (void)node_url_sentinel(c.address, i, where.host, where.port);
    } else if (c.address.sentinel_count > 0 || c.address.seed_count > 0) {
        // The master a sentinel named, or a Cluster master of an extra connection.
        where.host = c.target.host_view();
        where.port = c.target.port;
    }
    return where;
}

void client_base::sentinel_begin(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.sentinel.asking = true;
    c.sentinel.tried = 0;
    c.timers.set(connection_timer::sentinel, earliest(now + options_.sentinel_timeout,
                                                      c.timers.get(connection_timer::connect)));
    resolve(n, now);
}

// The sentinel being asked failed us: the next one, within its own time and
// what is left of the connect's. False when every sentinel has been asked, or
// no time is left: the node fails.
bool client_base::sentinel_next(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    const instant deadline = c.timers.get(connection_timer::connect);
    if (c.sentinel.tried + 1 >= c.address.sentinel_count || deadline <= now) {
        c.sentinel.asking = false;
        return false;
    }
    ++c.sentinel.tried;
    sentinel_reconnect(n, now, deadline);
    return true;
}

// Ends this connection and makes the next one (to a sentinel, or to the
// master one named), to be set up by `deadline`.
void client_base::sentinel_reconnect(std::uint8_t n, instant now, instant deadline) noexcept {
    detail::connection& c = conns_[n];
    drop(n, now);
    c.state = node_state::connecting;
    c.timers.set(connection_timer::connect, deadline);
    if (c.sentinel.asking) {
        c.timers.set(connection_timer::sentinel,
                     earliest(now + options_.sentinel_timeout, deadline));
    }
    resolve(n, now);
}

// Connected to a sentinel: [AUTH], then where the master is.
void client_base::sentinel_query(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.state = node_state::handshake;
    c.tx_size = encode_sentinel_auth(c.tx, sizeof c.tx, options_);
    if (c.tx_size > 0) {
        detail::in_flight f;
        f.to = reply_to::sentinel;
        f.tag = ask_auth;
        push_in_flight(n, f, now);
    }
    const str_view ask[] = {"SENTINEL", "get-master-addr-by-name", c.address.master_name};
    const resp_encoded e = resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, ask, 3);
    c.tx_size += e.size;
    detail::in_flight f;
    f.to = reply_to::sentinel;
    f.tag = ask_master;
    push_in_flight(n, f, now);
    transmit(n, now);
}

void client_base::sentinel_reply(std::uint8_t n, std::uint32_t tag, const resp_node* nodes,
                                 std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    const std::size_t top = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    const bool error = nodes != nullptr && top < count && nodes[top].is_error();
    if (error) {
        c.report.set_message(nodes[top].text);
    }
    if (tag == ask_auth && !error) {
        return;  // +OK; the address comes next
    }
    // [host, port]: two strings.
    std::uint32_t port = 0;
    bool found = !error && nodes != nullptr && top + 2 < count &&
                 nodes[top].type == resp_type::array && nodes[top].count == 2 &&
                 nodes[top + 1].has_text() && nodes[top + 2].has_text() &&
                 nodes[top + 1].text.size > 0 && nodes[top + 1].text.size <= node_url_max_host;
    found = found && url_detail::parse_decimal(nodes[top + 2].text, 65535, port) && port > 0;
    if (!found) {
        if (!error) {
            c.report.set_message(nodes != nullptr && top < count &&
                                         nodes[top].type == resp_type::null
                                     ? str_view("the sentinel does not know the master name")
                                     : str_view("a sentinel answer that is not [host, port]"));
        }
        if (!sentinel_next(n, now)) {
            fail(n, node_error::sentinel_failed, 0, now, str_view());
        }
        return;
    }
    const str_view host = nodes[top + 1].text;
    for (std::size_t i = 0; i < host.size; ++i) {
        c.target.host[i] = host[i];
    }
    c.target.host_size = static_cast<std::uint8_t>(host.size);
    c.target.port = static_cast<std::uint16_t>(port);
    c.sentinel.front =
        static_cast<std::uint8_t>((c.sentinel.front + c.sentinel.tried) % c.address.sentinel_count);
    c.sentinel.asking = false;
    c.report.message_size = 0;
    // Now to the master, in what is left of the connect's time.
    sentinel_reconnect(n, now, c.timers.get(connection_timer::connect));
}

}  // namespace edgelock
