// A deterministic simulated Redis cluster and driver for the lock machine.
//
// N sim::redis_node on one virtual clock, clients each owning lock objects and
// one connection per node (shared by all the client's locks: requests are
// pipelined and replies matched in FIFO order, as the real driver does). Bytes
// go both ways through edgelock's own encoder and decoder, in random splits.
//
// Faults: per-node latency range (replies of different nodes reorder; one
// connection stays FIFO), connection loss (the request may or may not have run),
// crash (connections reset, requests refused), restart (keyspace kept or lost,
// script cache always lost), pause (requests wait, keys still expire).
//
// Time only moves by jumping to the next event: a message, a lock deadline or
// a scheduled action. run_until() stops at a bound on steps to catch livelock.
//
//   sim::cluster c(3, seed);
//   int a = c.add_client();
//   edgelock::lock& l = c.add_lock(a, "jobs", options);
//   c.on_event = [&](int client, int lock, const edgelock::lock_event& ev) { ... };
//   l.acquire(c.now());
//   c.run_until(c.now() + edgelock::duration::seconds(1));
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/resp_decoder.hpp"
#include "sim/redis_node.hpp"

namespace sim {

// A seeded random source for the machines (std::mt19937_64 behind the callback).
struct seeded_random {
    std::mt19937_64 rng;
    bool fail = false;  // make the source fail, to test that path
    explicit seeded_random(std::uint64_t seed) : rng(seed) {}

    static bool fill(void* ctx, void* buf, std::size_t size) {
        auto* self = static_cast<seeded_random*>(ctx);
        if (self->fail) {
            return false;
        }
        auto* out = static_cast<unsigned char*>(buf);
        for (std::size_t i = 0; i < size; ++i) {
            out[i] = static_cast<unsigned char>(self->rng() & 0xff);
        }
        return true;
    }
    edgelock::random_source source() { return edgelock::random_source{&seeded_random::fill, this}; }
};

struct node_faults {
    std::uint64_t latency_min_us = 200;
    std::uint64_t latency_max_us = 2000;
    double loss = 0.0;  // per request: the connection drops (before or after it ran)
};

class cluster {
public:
    using event_fn = std::function<void(int client, int lock, const edgelock::lock_event&)>;

    cluster(int nodes, std::uint64_t seed) : rng_(seed), rnd_(seed ^ 0x9e3779b97f4a7c15ULL) {
        nodes_.resize(static_cast<std::size_t>(nodes));
    }

    // --- set-up --------------------------------------------------------
    int add_client() {
        auto c = std::make_unique<client>();
        c->conns.resize(nodes_.size());
        clients_.push_back(std::move(c));
        return static_cast<int>(clients_.size()) - 1;
    }

    edgelock::lock& add_lock(int client_id, const std::string& name,
                             const edgelock::lock_options& opt, int node_count = -1) {
        client& c = *clients_.at(static_cast<std::size_t>(client_id));
        auto e = std::make_unique<lock_entry>();
        e->name = name;
        const int n = node_count < 0 ? static_cast<int>(nodes_.size()) : node_count;
        const edgelock::lock_errc err =
            e->lock.configure(edgelock::str_view(e->name.data(), e->name.size()),
                              static_cast<std::uint8_t>(n), opt, rnd_.source());
        if (err != edgelock::lock_errc::ok) {
            throw std::runtime_error(std::string("configure: ") + edgelock::describe(err));
        }
        c.locks.push_back(std::move(e));
        return c.locks.back()->lock;
    }

    edgelock::lock& lock_of(int client_id, int lock_id = 0) {
        return clients_.at(static_cast<std::size_t>(client_id))
            ->locks.at(static_cast<std::size_t>(lock_id))
            ->lock;
    }
    redis_node& node(int i) { return nodes_.at(static_cast<std::size_t>(i)).redis; }
    node_faults& faults(int i) { return nodes_.at(static_cast<std::size_t>(i)).faults; }
    seeded_random& random() { return rnd_; }
    std::mt19937_64& rng() { return rng_; }
    edgelock::instant now() const { return edgelock::instant{now_}; }
    std::uint64_t steps() const { return steps_; }
    int node_count() const { return static_cast<int>(nodes_.size()); }

    event_fn on_event;
    // Where a test may inspect bytes as they leave a machine.
    std::function<void(int client, int node, const std::string& bytes)> on_send;

    // --- faults --------------------------------------------------------
    void crash(int i) {
        sim_node& n = nodes_.at(static_cast<std::size_t>(i));
        n.up = false;
        for (std::size_t c = 0; c < clients_.size(); ++c) {
            reset(static_cast<int>(c), i);
        }
    }
    void restart(int i, bool keep_data) {
        sim_node& n = nodes_.at(static_cast<std::size_t>(i));
        n.redis.restart(keep_data);
        n.up = true;
    }
    void pause(int i, edgelock::duration d) {
        sim_node& n = nodes_.at(static_cast<std::size_t>(i));
        n.paused_until = std::max(n.paused_until, now_ + d.us);
    }
    bool up(int i) const { return nodes_.at(static_cast<std::size_t>(i)).up; }

    // Runs fn at virtual time t (in order of scheduling for equal times).
    void at(edgelock::instant t, std::function<void()> fn) {
        push(std::max(t.us, now_), item{item_kind::action, -1, -1, 0, {}, std::move(fn)});
    }

    // --- running -------------------------------------------------------
    // Runs until virtual time `until`, until nothing is left to do, or until
    // max_steps events were handled (returns false then: a livelock).
    bool run_until(edgelock::instant until, std::uint64_t max_steps = 1000000) {
        const std::uint64_t limit = steps_ + max_steps;
        for (;;) {
            flush();
            std::uint64_t next = edgelock::instant::never().us;
            if (!queue_.empty()) {
                next = queue_.begin()->first.first;
            }
            for (auto& c : clients_) {
                for (auto& l : c->locks) {
                    next = std::min(next, l->lock.next_deadline().us);
                }
            }
            if (next == edgelock::instant::never().us || next > until.us) {
                if (until.us != edgelock::instant::never().us) {
                    now_ = std::max(now_, until.us);
                }
                return true;
            }
            if (++steps_ > limit) {
                return false;
            }
            now_ = std::max(now_, next);
            if (!queue_.empty() && queue_.begin()->first.first <= now_) {
                auto it = queue_.begin();
                item it_copy = std::move(it->second);
                queue_.erase(it);
                handle(it_copy);
            } else {
                for (std::size_t ci = 0; ci < clients_.size(); ++ci) {
                    for (std::size_t li = 0; li < clients_[ci]->locks.size(); ++li) {
                        edgelock::lock& l = clients_[ci]->locks[li]->lock;
                        if (l.next_deadline().us <= now_) {
                            l.on_timeout(now());
                            drain_events(static_cast<int>(ci), static_cast<int>(li));
                        }
                    }
                }
            }
        }
    }

    // Delivers any events a test caused by calling the machine directly.
    void drain_all() {
        for (std::size_t ci = 0; ci < clients_.size(); ++ci) {
            for (std::size_t li = 0; li < clients_[ci]->locks.size(); ++li) {
                drain_events(static_cast<int>(ci), static_cast<int>(li));
            }
        }
    }

private:
    enum class item_kind { to_node, to_client, action };
    struct item {
        item_kind kind;
        int client;
        int node;
        std::uint32_t epoch;
        std::string bytes;
        std::function<void()> fn;
    };
    struct connection {
        std::uint32_t epoch = 0;
        std::deque<std::pair<int, std::uint32_t>> fifo;  // (lock, tag) awaiting replies
        static constexpr std::size_t node_capacity = 32;
        std::string client_rx;
        edgelock::resp_decoder client_dec;
        edgelock::resp_node client_nodes[node_capacity];
        std::string node_rx;
        edgelock::resp_decoder node_dec;
        edgelock::resp_node node_nodes[node_capacity];
        std::uint64_t last_to_node = 0;
        std::uint64_t last_to_client = 0;
    };
    struct lock_entry {
        std::string name;
        edgelock::lock lock;
    };
    struct client {
        std::vector<std::unique_ptr<lock_entry>> locks;
        std::vector<connection> conns;
    };
    struct sim_node {
        redis_node redis;
        node_faults faults;
        bool up = true;
        std::uint64_t paused_until = 0;
    };

    void push(std::uint64_t t, item it) {
        queue_.emplace(std::make_pair(t, seq_++), std::move(it));
    }

    std::uint64_t latency(int node) {
        const node_faults& f = nodes_[static_cast<std::size_t>(node)].faults;
        std::uniform_int_distribution<std::uint64_t> d(
            f.latency_min_us, std::max(f.latency_min_us, f.latency_max_us));
        return d(rng_);
    }

    void drain_events(int ci, int li) {
        edgelock::lock& l = lock_of(ci, li);
        edgelock::lock_event ev;
        while (l.poll_event(ev)) {
            if (on_event) {
                on_event(ci, li, ev);
            }
        }
    }

    // Everything in flight on the connection is gone; the client hears at once.
    void reset(int ci, int ni) {
        client& c = *clients_[static_cast<std::size_t>(ci)];
        connection& conn = c.conns[static_cast<std::size_t>(ni)];
        ++conn.epoch;
        conn.fifo.clear();
        conn.client_rx.clear();
        conn.client_dec.reset();
        conn.node_rx.clear();
        conn.node_dec.reset();
        for (std::size_t li = 0; li < c.locks.size(); ++li) {
            c.locks[li]->lock.on_disconnected(static_cast<std::uint8_t>(ni), now());
            drain_events(ci, static_cast<int>(li));
        }
    }

    // Asks every machine for its bytes and puts them on the wire.
    void flush() {
        bool any = true;
        while (any) {
            any = false;
            for (std::size_t ci = 0; ci < clients_.size(); ++ci) {
                client& c = *clients_[ci];
                for (std::size_t li = 0; li < c.locks.size(); ++li) {
                    edgelock::lock& l = c.locks[li]->lock;
                    for (int ni = 0; ni < static_cast<int>(l.node_count()); ++ni) {
                        char buf[edgelock::lock_max_request];
                        for (;;) {
                            const edgelock::lock_transmit t =
                                l.poll_transmit(static_cast<std::uint8_t>(ni), buf, sizeof buf);
                            if (t.error != edgelock::lock_errc::ok) {
                                throw std::runtime_error(std::string("poll_transmit: ") +
                                                         edgelock::describe(t.error));
                            }
                            if (t.size == 0) {
                                break;
                            }
                            any = true;
                            send(static_cast<int>(ci), static_cast<int>(li), ni,
                                 std::string(buf, t.size), t.tag);
                        }
                    }
                }
            }
        }
    }

    void send(int ci, int li, int ni, std::string bytes, std::uint32_t tag) {
        if (on_send) {
            on_send(ci, ni, bytes);
        }
        connection& conn =
            clients_[static_cast<std::size_t>(ci)]->conns[static_cast<std::size_t>(ni)];
        if (!nodes_[static_cast<std::size_t>(ni)].up) {
            // Connection refused. Scheduled, not immediate: the machine is in
            // the middle of poll_transmit.
            const std::uint32_t epoch = conn.epoch;
            at(now(), [this, ci, ni, epoch] {
                if (clients_[static_cast<std::size_t>(ci)]
                        ->conns[static_cast<std::size_t>(ni)]
                        .epoch == epoch) {
                    reset(ci, ni);
                }
            });
            conn.fifo.emplace_back(li, tag);
            return;
        }
        conn.fifo.emplace_back(li, tag);
        const std::uint64_t t = std::max(conn.last_to_node, now_ + latency(ni) / 2);
        conn.last_to_node = t;
        push(t, item{item_kind::to_node, ci, ni, conn.epoch, std::move(bytes), {}});
    }

    void handle(item& it) {
        if (it.kind == item_kind::action) {
            it.fn();
            drain_all();
            return;
        }
        client& c = *clients_[static_cast<std::size_t>(it.client)];
        connection& conn = c.conns[static_cast<std::size_t>(it.node)];
        if (it.epoch != conn.epoch) {
            return;  // the connection this was sent on is gone
        }
        sim_node& n = nodes_[static_cast<std::size_t>(it.node)];
        if (it.kind == item_kind::to_node) {
            if (!n.up) {
                reset(it.client, it.node);
                return;
            }
            if (n.paused_until > now_) {
                // The process is stopped: the bytes wait in the socket.
                conn.last_to_node = std::max(conn.last_to_node, n.paused_until);
                push(n.paused_until, std::move(it));
                return;
            }
            node_receive(it.client, it.node, conn, n, it.bytes);
        } else {
            client_receive(it.client, it.node, conn, it.bytes);
        }
    }

    // Feeds bytes to a decoder in random pieces: any split must decode alike.
    // `nodes` must outlive the reply: the decoder fills it across calls.
    template <class OnReply>
    void feed(std::string& rx, edgelock::resp_decoder& dec, edgelock::resp_node* nodes,
              const std::string& bytes, OnReply&& on_reply) {
        std::size_t pos = 0;
        while (pos < bytes.size()) {
            std::uniform_int_distribution<std::size_t> d(1, bytes.size() - pos);
            const std::size_t piece = (rng_() & 1) != 0 ? bytes.size() - pos : d(rng_);
            rx.append(bytes, pos, piece);
            pos += piece;
            for (;;) {
                const edgelock::resp_result r =
                    dec.decode(rx.data(), rx.size(), nodes, connection::node_capacity);
                if (r.status == edgelock::resp_status::incomplete) {
                    break;
                }
                if (r.status == edgelock::resp_status::error) {
                    throw std::runtime_error(std::string("decode: ") + edgelock::describe(r.error));
                }
                // The nodes point into rx: hand them out before consuming. A
                // false return means the connection was reset (rx cleared).
                if (!on_reply(nodes, r.nodes)) {
                    return;
                }
                rx.erase(0, r.size);
            }
        }
    }

    void node_receive(int ci, int ni, connection& conn, sim_node& n, const std::string& bytes) {
        const std::uint32_t epoch = conn.epoch;
        feed(conn.node_rx, conn.node_dec, conn.node_nodes, bytes,
             [&](const edgelock::resp_node* nodes, std::size_t count) {
                 std::vector<std::string> argv;
                 if (count == 0 || nodes[0].type != edgelock::resp_type::array) {
                     throw std::runtime_error("node: request is not an array");
                 }
                 for (std::size_t i = 1; i < count; ++i) {
                     argv.push_back(to_std(nodes[i].text));
                 }
                 const double loss = n.faults.loss;
                 bool drop = false;
                 bool ran = true;
                 if (loss > 0.0) {
                     std::uniform_real_distribution<double> u(0.0, 1.0);
                     drop = u(rng_) < loss;
                     ran = !drop || (rng_() & 1) != 0;
                 }
                 std::string reply;
                 if (ran) {
                     reply = n.redis.execute(argv, now_);
                 }
                 if (drop) {
                     reset(ci, ni);
                     return false;
                 }
                 const std::uint64_t t = std::max(conn.last_to_client, now_ + latency(ni) / 2);
                 conn.last_to_client = t;
                 push(t, item{item_kind::to_client, ci, ni, epoch, std::move(reply), {}});
                 return true;
             });
    }

    void client_receive(int ci, int ni, connection& conn, const std::string& bytes) {
        const std::uint32_t epoch = conn.epoch;
        feed(conn.client_rx, conn.client_dec, conn.client_nodes, bytes,
             [&](const edgelock::resp_node* nodes, std::size_t count) {
                 if (conn.fifo.empty()) {
                     throw std::runtime_error("client: reply with no request outstanding");
                 }
                 const auto [li, tag] = conn.fifo.front();
                 conn.fifo.pop_front();
                 edgelock::lock& l = lock_of(ci, li);
                 const edgelock::lock_errc e =
                     l.on_reply(static_cast<std::uint8_t>(ni), tag, nodes, count, now());
                 if (e != edgelock::lock_errc::ok) {
                     throw std::runtime_error(std::string("on_reply: ") + edgelock::describe(e));
                 }
                 drain_events(ci, li);
                 return conn.epoch == epoch;
             });
    }

    std::mt19937_64 rng_;
    seeded_random rnd_;
    std::vector<sim_node> nodes_;
    std::vector<std::unique_ptr<client>> clients_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, item> queue_;
    std::uint64_t seq_ = 0;
    std::uint64_t now_ = 1000000;  // start away from zero
    std::uint64_t steps_ = 0;
};

}  // namespace sim
