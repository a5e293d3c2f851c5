// Drives several clients on one virtual clock through the driver's
// event-loop API, as a daemon owning its loop would: wanted() and
// next_deadline() from every client, one port::wait() over all of them, then
// on_ready() with each client's ready fds and on_timeout() for each client
// whose deadline came.
//
// Test actions scheduled with at() run between client calls, so they may
// start operations (start_acquire...) or anything else a loop owner does.
// Faults that must also happen during a blocking call belong on the net
// (net::at). Bounded in steps, so a livelock ends the run instead of the test.
//
//   sim::net n(seed);  n.add_nodes(3);
//   edgelock::client<3> a, b;  ... configure both ...
//   sim::event_loop loop(n);
//   loop.add(a);  loop.add(b);
//   lock.start_acquire(1, edgelock::duration::seconds(1));
//   REQUIRE(loop.run_for(edgelock::duration::millis(100)));
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "sim/net.hpp"

namespace sim {

class event_loop {
public:
    explicit event_loop(net& n) : net_(n) {}

    void add(edgelock::client_base& c) { clients_.push_back(&c); }

    void at(edgelock::instant t, std::function<void()> fn) {
        actions_.emplace(std::make_pair(t.us, seq_++), std::move(fn));
    }
    bool actions_pending() const { return !actions_.empty(); }

    // Runs until virtual time `until`; with instant::never(), until nothing is
    // left to do (no client deadline, no action, nothing on the net). False
    // when max_steps went by first (a livelock) or a wait failed.
    bool run_until(edgelock::instant until, std::uint64_t max_steps = 1000000) {
        const std::uint64_t limit = steps_ + max_steps;
        std::vector<edgelock::port::wait_entry> entries;
        std::vector<std::pair<std::size_t, std::size_t>> ranges;  // per client
        for (;;) {
            run_due_actions();
            entries.clear();
            ranges.clear();
            edgelock::instant deadline = until;
            for (edgelock::client_base* c : clients_) {
                const std::size_t first = entries.size();
                entries.resize(first + c->fd_capacity());
                const std::size_t k = c->wanted(entries.data() + first, c->fd_capacity());
                entries.resize(first + k);
                ranges.emplace_back(first, k);
                deadline = edgelock::earliest(deadline, c->next_deadline());
            }
            if (!actions_.empty()) {
                deadline =
                    edgelock::earliest(deadline, edgelock::instant{actions_.begin()->first.first});
            }
            if (deadline.is_never()) {
                if (net_.idle()) {
                    return true;  // nothing left to do
                }
                // What is scheduled may turn out to concern nobody (bytes for
                // a closed connection): look again once it has happened.
                deadline = net_.next_event();
            }
            if (++steps_ > limit) {
                return false;
            }
            const int ready = edgelock::port::wait(entries.data(), entries.size(), deadline);
            if (ready < 0) {
                return false;
            }
            const edgelock::instant now = edgelock::port::now();
            if (ready == 0 && now >= until && !due(now)) {
                return true;
            }
            for (std::size_t i = 0; i < clients_.size(); ++i) {
                const auto [first, k] = ranges[i];
                bool any = false;
                for (std::size_t j = first; j < first + k; ++j) {
                    any = any || entries[j].ready != 0;
                }
                if (any) {
                    clients_[i]->on_ready(entries.data() + first, k);
                }
            }
            for (edgelock::client_base* c : clients_) {
                if (c->next_deadline() <= edgelock::port::now()) {
                    c->on_timeout();
                }
            }
        }
    }

    bool run_for(edgelock::duration d, std::uint64_t max_steps = 1000000) {
        return run_until(edgelock::port::now() + d, max_steps);
    }
    bool run_until_idle(std::uint64_t max_steps = 1000000) {
        return run_until(edgelock::instant::never(), max_steps);
    }

    std::uint64_t steps() const { return steps_; }

private:
    void run_due_actions() {
        while (!actions_.empty() && actions_.begin()->first.first <= edgelock::port::now().us) {
            auto it = actions_.begin();
            std::function<void()> fn = std::move(it->second);
            actions_.erase(it);
            fn();
        }
    }

    bool due(edgelock::instant now) const {
        if (!actions_.empty() && actions_.begin()->first.first <= now.us) {
            return true;
        }
        for (const edgelock::client_base* c : clients_) {
            if (c->next_deadline() <= now) {
                return true;
            }
        }
        return false;
    }

    net& net_;
    std::vector<edgelock::client_base*> clients_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::function<void()>> actions_;
    std::uint64_t seq_ = 0;
    std::uint64_t steps_ = 0;
};

}  // namespace sim
