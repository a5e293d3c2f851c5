// The simulated network behind the test port; see net.hpp.
#include "sim/net.hpp"

#include <algorithm>
#include <cstdio>

#include "edgelock/resp_decoder.hpp"

namespace sim {

using edgelock::duration;
using edgelock::instant;

namespace {

net* g_current = nullptr;

constexpr std::uint64_t never_us = UINT64_MAX;

}  // namespace

net::net(std::uint64_t seed, instant start)
    : net_rng_(seed),
      split_rng_(seed ^ 0x6a09e667f3bcc908ULL),
      random_rng_(seed ^ 0xbb67ae8584caa73bULL),
      now_(start.us),
      previous_(g_current) {
    g_current = this;
}

net::~net() {
    g_current = previous_;
}

net* net::current() noexcept {
    return g_current;
}

// --- nodes and faults ---------------------------------------------------------

int net::add_node() {
    auto n = std::make_unique<sim_node>();
    const int i = node_count();
    n->host = "10.0.0." + std::to_string(i + 1);
    n->port = static_cast<std::uint16_t>(7001 + i);
    nodes_.push_back(std::move(n));
    return i;
}

void net::add_nodes(int count) {
    for (int i = 0; i < count; ++i) {
        add_node();
    }
}

std::string net::url(int i, const std::string& userinfo, const std::string& path) const {
    const sim_node& n = *nodes_.at(static_cast<std::size_t>(i));
    return "redis://" + (userinfo.empty() ? std::string() : userinfo + "@") + n.host + ":" +
           std::to_string(n.port) + path;
}

redis_node& net::node(int i) {
    return nodes_.at(static_cast<std::size_t>(i))->redis;
}

node_faults& net::faults(int i) {
    return nodes_.at(static_cast<std::size_t>(i))->faults;
}

bool net::up(int i) const {
    return nodes_.at(static_cast<std::size_t>(i))->up;
}

std::string net::address(int i) const {
    return host(i) + ":" + std::to_string(port(i));
}

std::uint16_t net::port(int i) const {
    return nodes_.at(static_cast<std::size_t>(i))->port;
}

void net::cut(int i) {
    for (auto& c : conns_) {
        if (c->node == i && (c->state == conn_state::open || c->state == conn_state::connecting)) {
            reset(*c);
        }
    }
}

void net::crash(int i) {
    nodes_.at(static_cast<std::size_t>(i))->up = false;
    cut(i);
}

void net::restart(int i, bool keep_data) {
    sim_node& n = *nodes_.at(static_cast<std::size_t>(i));
    n.redis.restart(keep_data);
    n.up = true;
    n.paused_until = 0;
    n.expiry_check_at = 0;
}

void net::pause(int i, duration d) {
    sim_node& n = *nodes_.at(static_cast<std::size_t>(i));
    n.paused_until = std::max(n.paused_until, now_ + d.us);
}

std::size_t net::max_in_flight(int i) const {
    return nodes_.at(static_cast<std::size_t>(i))->max_in_flight;
}

// --- time and the queue -------------------------------------------------------

void net::push(std::uint64_t t, item it) {
    queue_.emplace(std::make_pair(std::max(t, now_), seq_++), std::move(it));
}

void net::at(instant t, std::function<void()> fn) {
    push(t.us, item{item_kind::action, 0, {}, std::move(fn)});
}

instant net::next_event() const {
    return instant{queue_.empty() ? never_us : queue_.begin()->first.first};
}

void net::advance(duration d) {
    const std::uint64_t target = now_ + d.us;
    for (;;) {
        run_due();
        if (queue_.empty() || queue_.begin()->first.first > target) {
            break;
        }
        now_ = queue_.begin()->first.first;
    }
    now_ = std::max(now_, target);
    run_due();
}

std::uint64_t net::half_latency(int node) {
    const node_faults& f = nodes_[static_cast<std::size_t>(node)]->faults;
    std::uniform_int_distribution<std::uint64_t> d(f.latency_min_us,
                                                   std::max(f.latency_min_us, f.latency_max_us));
    return d(net_rng_) / 2;
}

void net::run_due() {
    while (!queue_.empty() && queue_.begin()->first.first <= now_) {
        auto it = queue_.begin();
        item due = std::move(it->second);
        queue_.erase(it);
        ++steps_;
        handle(due);
    }
}

void net::handle(item& it) {
    if (it.kind == item_kind::action) {
        ++visible_changes_;  // it may have changed anything
        it.fn();
        for (int i = 0; i < node_count(); ++i) {
            deliver_unasked(i);
        }
        return;
    }
    connection& c = *conns_.at(static_cast<std::size_t>(it.conn - 1));
    sim_node& n = *nodes_[static_cast<std::size_t>(c.node)];
    switch (it.kind) {
    case item_kind::connected:
        if (c.state == conn_state::connecting) {
            c.state = n.up ? conn_state::open : conn_state::refused;
            ++visible_changes_;
        }
        return;
    case item_kind::to_node:
        if (c.state != conn_state::open) {
            return;  // the connection broke with these bytes in it
        }
        if (!n.up) {
            reset(c);
            return;
        }
        if (n.paused_until > now_ || !c.parked.empty()) {
            // The process is stopped: the bytes wait in its socket, in order.
            c.parked += it.bytes;
            if (!c.unpark_due) {
                c.unpark_due = true;
                push(n.paused_until, item{item_kind::unpark, c.id, {}, {}});
            }
            return;
        }
        node_receive(c, it.bytes);
        return;
    case item_kind::unpark: {
        c.unpark_due = false;
        if (c.state != conn_state::open || c.parked.empty()) {
            return;
        }
        if (!n.up) {
            reset(c);
            return;
        }
        if (n.paused_until > now_) {
            c.unpark_due = true;  // paused again meanwhile
            push(n.paused_until, item{item_kind::unpark, c.id, {}, {}});
            return;
        }
        const std::string bytes = std::move(c.parked);
        c.parked.clear();
        node_receive(c, bytes);
        return;
    }
    case item_kind::to_client:
        if (c.state == conn_state::open && c.fd >= 0) {
            client_receive(c, it.bytes);
            if (it.unasked) {
                ++pushes_delivered;
                n.last_push_at = now_;
            }
        }
        return;
    case item_kind::action:
        return;
    }
}

void net::reset(connection& c) {
    ++visible_changes_;
    if (c.state == conn_state::connecting) {
        c.state = conn_state::refused;
    } else if (c.state == conn_state::open) {
        c.state = conn_state::reset;
        closes.push_back(close_record{c.node, now(), false});
    }
    c.session.alive = false;
    c.inbox.clear();  // a reset throws away what was not read
    c.replies.clear();
    c.node_rx.clear();
    c.parked.clear();
}

void net::hold_back(connection& c) {
    const node_faults& f = nodes_[static_cast<std::size_t>(c.node)]->faults;
    if (f.late_delivery <= 0.0) {
        return;  // no draw: schedules without the fault keep their randomness
    }
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (u(net_rng_) >= f.late_delivery) {
        return;
    }
    std::uniform_int_distribution<std::uint64_t> d(f.late_min_us,
                                                   std::max(f.late_min_us, f.late_max_us));
    const std::uint64_t until = now_ + d(net_rng_);
    // Taken out in delivery order and put back in it: a later time for each,
    // never an earlier one, so the connection stays FIFO.
    std::vector<std::pair<std::uint64_t, item>> held;
    for (auto it = queue_.begin(); it != queue_.end();) {
        if (it->second.kind == item_kind::to_node && it->second.conn == c.id) {
            held.emplace_back(it->first.first, std::move(it->second));
            it = queue_.erase(it);
        } else {
            ++it;
        }
    }
    if (held.empty()) {
        return;
    }
    ++held_back;
    for (auto& [t, it] : held) {
        push(std::max(t, until), std::move(it));
    }
}

// Requests in, replies scheduled back; every split of the bytes parses alike.
void net::node_receive(connection& c, const std::string& bytes) {
    sim_node& n = *nodes_[static_cast<std::size_t>(c.node)];
    c.node_rx += bytes;
    while (c.state == conn_state::open && !c.node_rx.empty()) {
        constexpr std::size_t capacity = 32;
        edgelock::resp_node parsed[capacity];
        edgelock::resp_decoder dec;
        const edgelock::resp_result r =
            dec.decode(c.node_rx.data(), c.node_rx.size(), parsed, capacity);
        if (r.status == edgelock::resp_status::incomplete) {
            return;
        }
        bool bulk_strings = r.status == edgelock::resp_status::complete && r.nodes >= 2 &&
                            parsed[0].type == edgelock::resp_type::array;
        std::vector<std::string> argv;
        for (std::size_t i = 1; bulk_strings && i < r.nodes; ++i) {
            bulk_strings = parsed[i].type == edgelock::resp_type::bulk_string;
            argv.push_back(to_std(parsed[i].text));
        }
        if (!bulk_strings) {
            std::string head = c.node_rx.substr(0, 400);
            for (char& ch : head) {
                ch = (ch == '\r' || ch == '\n') ? ' ' : ch;
            }
            failure_ =
                "node " + std::to_string(c.node) +
                " got a request that is not an array "
                "of bulk strings (" +
                (r.status == edgelock::resp_status::error ? edgelock::describe(r.error) : "ok") +
                "): " + head;
            std::fprintf(stderr, "sim::net: %s\n", failure_.c_str());
            reset(c);
            return;
        }
        c.node_rx.erase(0, r.size);
        ++c.requests;
        if (c.fd < 0) {
            ++requests_after_close;
        }
        n.max_in_flight = std::max<std::size_t>(
            n.max_in_flight, static_cast<std::size_t>(c.requests - c.replies_read));
        if (on_command) {
            on_command(c.node, c.id, argv);
        }
        bool drop = false;
        bool ran = true;
        if (n.faults.loss > 0.0) {
            std::uniform_real_distribution<double> u(0.0, 1.0);
            drop = u(net_rng_) < n.faults.loss;
            ran = !drop || (net_rng_() & 1) != 0;
        }
        std::string reply;
        if (ran) {
            reply = n.redis.execute(c.session, argv, now_);
        }
        if (drop) {
            reset(c);
            return;
        }
        const std::uint64_t t =
            std::max(c.last_to_client, now_ + half_latency(c.node) + n.faults.reply_delay_us);
        c.last_to_client = t;
        push(t, item{item_kind::to_client, c.id, std::move(reply), {}});
        deliver_unasked(c.node);
    }
}

void net::deliver_unasked(int i) {
    sim_node& n = *nodes_[static_cast<std::size_t>(i)];
    if (n.redis.clients.outbox.empty()) {
        schedule_expiry(i);
        return;
    }
    std::vector<std::pair<std::uint64_t, std::string>> out;
    out.swap(n.redis.clients.outbox);
    for (auto& [id, bytes] : out) {
        connection& c = *conns_.at(static_cast<std::size_t>(id - 1));
        if (c.state != conn_state::open || c.node != i) {
            continue;
        }
        const std::uint64_t t =
            std::max(c.last_to_client, now_ + half_latency(i) + n.faults.reply_delay_us);
        c.last_to_client = t;
        item it{item_kind::to_client, c.id, std::move(bytes), {}};
        it.unasked = true;
        push(t, std::move(it));
    }
    schedule_expiry(i);
}

void net::schedule_expiry(int i) {
    sim_node& n = *nodes_[static_cast<std::size_t>(i)];
    if (!n.up || !n.redis.tracking || !n.redis.clients.tracks_anything()) {
        return;  // a node down expires nothing; its restart forgets its clients
    }
    const std::uint64_t next = n.redis.next_tracked_expiry();
    const std::uint64_t due = std::max(next, n.paused_until);
    if (next == 0 || (n.expiry_check_at != 0 && n.expiry_check_at <= due)) {
        return;
    }
    n.expiry_check_at = due;
    at(instant{due}, [this, i, due] {
        sim_node& m = *nodes_[static_cast<std::size_t>(i)];
        if (m.expiry_check_at != due) {
            return;  // an earlier one replaced it
        }
        m.expiry_check_at = 0;
        if (m.up && m.paused_until <= now_) {
            m.redis.expire_tracked(now_);
        }
        // Paused: handle() sets the next one, at the pause's end at the earliest.
    });
}

void net::client_receive(connection& c, const std::string& reply) {
    ++visible_changes_;
    longest_reply_ = std::max(longest_reply_, reply.size());
    c.replies.emplace_back(c.arrived, c.arrived + reply.size());
    c.arrived += reply.size();
    c.inbox += reply;
}

}  // namespace sim
