// The client's side of the simulated network: the port's socket calls
// (connect, send, recv, close), random bytes, and wait(), the one place
// virtual time moves for the client. See net.hpp.
#include <algorithm>
#include <cstdio>

#include "sim/net.hpp"

namespace sim {

using edgelock::instant;
using edgelock::port::net_result;
using edgelock::port::net_status;
using edgelock::port::wait_entry;

namespace {

constexpr std::uint64_t never_us = UINT64_MAX;
constexpr int ebadf = 9;  // what a POSIX port would report for an unknown fd

net_result result(net_status s, std::size_t size = 0, int code = 0) {
    net_result r;
    r.status = s;
    r.size = size;
    r.code = code;
    return r;
}

}  // namespace

bool net::random_bytes(void* buf, std::size_t size) {
    if (random_fails) {
        return false;
    }
    auto* out = static_cast<unsigned char*>(buf);
    for (std::size_t i = 0; i < size; ++i) {
        out[i] = static_cast<unsigned char>(random_rng_() & 0xff);
    }
    return true;
}

net::connection* net::by_fd(int fd) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= fds_.size() ||
        fds_[static_cast<std::size_t>(fd)] == 0) {
        return nullptr;
    }
    return conns_[static_cast<std::size_t>(fds_[static_cast<std::size_t>(fd)] - 1)].get();
}

net_result net::connect(const edgelock::port::endpoint& where, int& fd) {
    fd = -1;
    if (where.unix_path.empty() && !numeric_host(where.host)) {
        return result(net_status::bad_argument);  // a name: the port takes addresses only
    }
    int index = -1;
    bool host_known = false;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (where.host == edgelock::str_view(nodes_[i]->host.data(), nodes_[i]->host.size())) {
            host_known = true;
            if (where.port == nodes_[i]->port) {
                index = static_cast<int>(i);
            }
        }
    }
    net_status status = net_status::in_progress;
    if (!where.unix_path.empty() || (index < 0 && host_known)) {
        status = net_status::refused;
    } else if (index < 0) {
        status = net_status::unreachable;
    } else if (!nodes_[static_cast<std::size_t>(index)]->up &&
               !nodes_[static_cast<std::size_t>(index)]->faults.refuse_late) {
        status = net_status::refused;
    }
    connects.push_back(connect_record{index, now(), status});
    if (status != net_status::in_progress) {
        return result(status);
    }
    auto c = std::make_unique<connection>();
    c->id = conns_.size() + 1;
    c->node = index;
    c->session.id = c->id;
    nodes_[static_cast<std::size_t>(index)]->redis.clients.add(c->session);
    const auto free_fd = static_cast<std::size_t>(take_fd());
    c->fd = static_cast<int>(free_fd);
    fds_[free_fd] = c->id;
    const node_faults& f = nodes_[static_cast<std::size_t>(index)]->faults;
    if (!f.connect_hangs) {
        // SYN and SYN-ACK: a round trip.
        const std::uint64_t rtt = half_latency(index) + half_latency(index);
        push(now_ + rtt, item{item_kind::connected, c->id, {}, {}});
    }
    fd = static_cast<int>(free_fd);
    conns_.push_back(std::move(c));
    return result(net_status::in_progress);
}

net_result net::connect_finish(int fd) {
    connection* c = by_fd(fd);
    if (c == nullptr) {
        return result(net_status::error, 0, ebadf);
    }
    switch (c->state) {
    case conn_state::open:
        return result(net_status::ok);
    case conn_state::connecting:
        return result(net_status::in_progress);
    case conn_state::refused:
        return result(net_status::refused);
    case conn_state::reset:
        return result(net_status::reset);
    }
    return result(net_status::error);
}

net_result net::send(int fd, const void* data, std::size_t size) {
    connection* c = by_fd(fd);
    if (c == nullptr) {
        return result(net_status::error, 0, ebadf);
    }
    if (c->state == conn_state::reset || c->state == conn_state::refused) {
        return result(net_status::reset);
    }
    if (c->state == conn_state::connecting || now_ < c->send_ready_at) {
        return result(net_status::would_block);
    }
    std::size_t take = size;
    if (partial_sends && size > 0) {
        const std::uint64_t roll = split_rng_() % 8;
        if (roll == 0) {
            // The socket buffer is full for a moment.
            c->send_ready_at = now_ + 1 + split_rng_() % 100;
            at(instant{c->send_ready_at}, [] {});
            return result(net_status::would_block);
        }
        if (roll <= 2) {
            take = 1 + static_cast<std::size_t>(split_rng_() % size);
        }
    }
    if (nodes_[static_cast<std::size_t>(c->node)]->last_push_at == now_) {
        ++sends_on_push;
    }
    const std::uint64_t t = std::max(
        c->last_to_node, now_ + half_latency(c->node) +
                             nodes_[static_cast<std::size_t>(c->node)]->faults.request_delay_us);
    c->last_to_node = t;
    push(t, item{item_kind::to_node, c->id, std::string(static_cast<const char*>(data), take), {}});
    return result(net_status::ok, take);
}

std::size_t net::readable_piece(connection& c, std::size_t capacity) {
    const std::size_t all = c.inbox.size();
    std::size_t n = all;
    switch (recv_split) {
    case split::whole:
        break;
    case split::random:
        if ((split_rng_() & 1) != 0) {
            n = 1 + static_cast<std::size_t>(split_rng_() % all);
        }
        break;
    case split::bytewise:
        n = 1;
        break;
    case split::at_offset:
        for (const auto& [start, end] : c.replies) {
            const std::uint64_t cut = start + split_offset;
            if (cut > c.read && cut < end) {
                n = static_cast<std::size_t>(cut - c.read);
                break;
            }
        }
        break;
    }
    return std::min({n, all, capacity});
}

net_result net::recv(int fd, void* buf, std::size_t capacity) {
    connection* c = by_fd(fd);
    if (c == nullptr) {
        return result(net_status::error, 0, ebadf);
    }
    if (!c->inbox.empty() && capacity > 0) {
        const std::size_t n = readable_piece(*c, capacity);
        c->inbox.copy(static_cast<char*>(buf), n);
        c->inbox.erase(0, n);
        c->read += n;
        while (!c->replies.empty() && c->replies.front().second <= c->read) {
            c->replies.pop_front();
            ++c->replies_read;
        }
        return result(net_status::ok, n);
    }
    if (c->state == conn_state::reset || c->state == conn_state::refused) {
        return result(net_status::reset);
    }
    return result(net_status::would_block);
}

void net::close(int fd) {
    connection* c = by_fd(fd);
    if (c == nullptr) {
        return;
    }
    if (c->state == conn_state::open || c->state == conn_state::connecting) {
        closes.push_back(close_record{c->node, now(), true});
    }
    if (c->state == conn_state::connecting) {
        c->state = conn_state::refused;  // given up; a late SYN-ACK changes nothing
    }
    c->session.alive = false;  // the server frees it once what was sent has run
    // Requests already sent still reach the node and run there (TCP delivers
    // them before the FIN), late_delivery may make them later still; their
    // replies are thrown away.
    if (c->state == conn_state::open) {
        hold_back(*c);
    }
    c->fd = -1;
    c->inbox.clear();
    c->replies.clear();
    fds_[static_cast<std::size_t>(fd)] = 0;
}

bool net::closed_by_client(std::uint64_t id) const {
    if (id < 1 || id > conns_.size()) {
        return false;
    }
    const connection& c = *conns_[static_cast<std::size_t>(id - 1)];  // below size(): fits
    return c.fd < 0 && c.state == conn_state::open;
}

std::uint8_t net::readiness(const wait_entry& e, const connection* c) const {
    using namespace edgelock::port;
    if (e.fd < 0) {
        return 0;
    }
    if (c == nullptr) {
        return ready_error;  // poll()'s POLLNVAL
    }
    std::uint8_t r = 0;
    switch (c->state) {
    case conn_state::connecting:
        break;
    case conn_state::refused:
        r = static_cast<std::uint8_t>(ready_error | (e.want & want_write));
        break;
    case conn_state::reset:
        r = static_cast<std::uint8_t>(ready_error | (e.want & want_read));
        break;
    case conn_state::open:
        if ((e.want & want_read) != 0 && !c->inbox.empty()) {
            r |= want_read;
        }
        if ((e.want & want_write) != 0 && now_ >= c->send_ready_at) {
            r |= want_write;
        }
        break;
    }
    return r;
}

int net::wait(wait_entry* entries, std::size_t count, instant deadline) {
    ++steps_;
    // No fd opens or closes during a wait: look each up once.
    std::vector<const connection*> watched(count);
    std::vector<const lookup*> looked_up(count);
    for (std::size_t i = 0; i < count; ++i) {
        watched[i] = by_fd(entries[i].fd);
        looked_up[i] = watched[i] == nullptr ? lookup_by_fd(entries[i].fd) : nullptr;
    }
    std::uint64_t seen = visible_changes_ + 1;
    for (;;) {
        run_due();
        if (seen != visible_changes_) {
            seen = visible_changes_;
            int ready = 0;
            for (std::size_t i = 0; i < count; ++i) {
                if (looked_up[i] != nullptr) {
                    // A lookup's fd is readable once it is done.
                    entries[i].ready =
                        looked_up[i]->done
                            ? static_cast<std::uint8_t>(entries[i].want & edgelock::port::want_read)
                            : std::uint8_t{0};
                } else {
                    entries[i].ready = readiness(entries[i], watched[i]);
                }
                ready += entries[i].ready != 0 ? 1 : 0;
            }
            if (ready > 0) {
                return ready;
            }
        }
        if (deadline.us <= now_) {
            return 0;
        }
        const std::uint64_t next = next_event().us;
        if (next == never_us && deadline.is_never()) {
            failure_ = "wait() with no deadline while nothing is scheduled: it would never return";
            std::fprintf(stderr, "sim::net: %s\n", failure_.c_str());
            return -1;
        }
        now_ = std::min(next, deadline.us);
    }
}

}  // namespace sim
