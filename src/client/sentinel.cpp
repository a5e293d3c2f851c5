// Sentinel-managed masters: a redis-sentinel:// node's connection first goes
// to a sentinel and asks SENTINEL get-master-addr-by-name, then to the master
// it names, where the set-up runs as for any node (its HELLO's role
// confirms a master: a node that turned replica fails with `replica`). Every
// connect asks again, so a failover is followed by the next reconnect: after
// a disconnect, a failed set-up, or a READONLY answer to a lock request (the
// master was demoted under us), which drops the connection. The watch
// (sentinel_watch.cpp) hears a +switch-master, and failover.cpp follows it.
//
// The sentinels are asked in turn, each within sentinel_timeout, starting
// with the one that answered last; the asking uses the node's own connection
// (fd, buffers, pipeline, transport: TLS for rediss-sentinel://), so it costs
// no memory and no fd of its own. The asking and the master's connect and
// set-up share one connect_timeout, as any node's connect does. When none
// answers with an address in time the node fails with sentinel_failed and
// the last one's reason, and backs off like any node.
//
// The part that knows whom to ask and what an answer means is
// detail::sentinel_resolver; the client's side is here.
#include "client_internal.hpp"
#include "edgelock/client.hpp"
#include "edgelock/resp_encoder.hpp"
#include "node_url_internal.hpp"

namespace edgelock {

using namespace detail;

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
    const resp_encoded e = resp_encode_command(buf, capacity, auth, argc);
    return e.error == resp_encode_errc::ok ? e.size : 0;
}

void sentinel_resolver::begin(instant now, instant connect_deadline,
                              duration sentinel_timeout) noexcept {
    asking_ = true;
    tried_ = 0;
    restart(now, connect_deadline, sentinel_timeout);
}

void sentinel_resolver::restart(instant now, instant connect_deadline,
                                duration sentinel_timeout) noexcept {
    timers_.set(timer::answer, earliest(now + sentinel_timeout, connect_deadline));
}

bool sentinel_resolver::next(const node_address& a, instant now,
                             instant connect_deadline) noexcept {
    if (tried_ + 1 >= a.sentinel_count || connect_deadline <= now) {
        stop();
        return false;
    }
    ++tried_;
    return true;
}

void sentinel_resolver::stop() noexcept {
    asking_ = false;
    timers_.stop(timer::answer);
}

bool sentinel_resolver::sentinel(const node_address& a, str_view& host,
                                 std::uint16_t& port) const noexcept {
    if (a.sentinel_count == 0) {
        return false;
    }
    const std::uint8_t i = static_cast<std::uint8_t>((front_ + tried_) % a.sentinel_count);
    return node_url_sentinel(a, i, host, port);
}

std::size_t sentinel_resolver::write_question(char* buf, std::size_t capacity,
                                              const node_address& a, const client_options& o,
                                              bool& auth) noexcept {
    std::size_t size = encode_sentinel_auth(buf, capacity, o);
    auth = size > 0;
    if (!auth && !o.sentinel_password.empty()) {
        return 0;  // the AUTH does not fit
    }
    const str_view ask[] = {"SENTINEL", "get-master-addr-by-name", a.master_name};
    const resp_encoded e = resp_encode_command(buf + size, capacity - size, ask, 3);
    return e.error == resp_encode_errc::ok ? size + e.size : 0;
}

sentinel_resolver::answer sentinel_resolver::on_reply(std::uint32_t tag, const resp_node* nodes,
                                                      std::size_t count, const node_address& a,
                                                      peer& master) noexcept {
    const std::size_t top = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    const bool error = nodes != nullptr && top < count && nodes[top].is_error();
    why_ = error ? nodes[top].text : str_view();
    if (tag == tag_auth && !error) {
        return answer::wait;  // +OK; the address comes next
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
            why_ = nodes != nullptr && top < count && nodes[top].type == resp_type::null
                       ? str_view("the sentinel does not know the master name")
                       : str_view("a sentinel answer that is not [host, port]");
        }
        return answer::refused;
    }
    master.set(nodes[top + 1].text, static_cast<std::uint16_t>(port));
    front_ = static_cast<std::uint8_t>((front_ + tried_) % a.sentinel_count);
    stop();
    return answer::found;
}

}  // namespace detail

port::endpoint client_base::endpoint_of(std::uint8_t n) const noexcept {
    const detail::connection& c = conns_[n];
    port::endpoint where;
    where.host = c.address.host;
    where.port = c.address.port;
    where.unix_path = c.address.unix_path;
    if (c.address.seed_count > 0 && n < node_count_) {
        (void)node_url_seed(c.address, c.cluster.seed(), where.host, where.port);
    } else if (c.address.sentinel_count > 0 && c.where.asking()) {
        (void)c.where.sentinel(c.address, where.host, where.port);
    } else if (c.address.sentinel_count > 0 || c.address.seed_count > 0) {
        // The master a sentinel named, or a Cluster master of an extra connection.
        where.host = c.target.host_view();
        where.port = c.target.port;
    }
    return where;
}

bool client_base::ask_next(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    const instant deadline = c.timers.get(connection_timer::connect);
    if (!c.where.next(c.address, now, deadline)) {
        return false;
    }
    reconnect(n, now, deadline);
    return true;
}

void client_base::master_answer(std::uint8_t n, std::uint32_t tag, const resp_node* nodes,
                                std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    const sentinel_resolver::answer a = c.where.on_reply(tag, nodes, count, c.address, c.target);
    if (a == sentinel_resolver::answer::wait) {
        return;
    }
    if (a == sentinel_resolver::answer::refused) {
        c.report.set_message(c.where.why());
        if (!ask_next(n, now)) {
            fail(n, node_error::sentinel_failed, 0, now, str_view());
        }
        return;
    }
    c.report.message_size = 0;
    // Now to the master, in what is left of the connect's time.
    reconnect(n, now, c.timers.get(connection_timer::connect));
}

}  // namespace edgelock
