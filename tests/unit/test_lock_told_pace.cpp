// A waiter's told tries, paced (detail::told_pace, lock::on_key_changed): a
// node that pushes more than a tracking server can send has the waiter back
// off to the polling rate, however many pushes come; pushes as a server
// sends them (one per change) each start a round at once, every time; and
// once the noise stops, the next push starts a round at once again.
//
// Driven on virtual time in steps of 50 us: every request is answered busy
// one round trip (200 us) after it is sent; pushes come as each case says.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "edgelock/lock.hpp"
#include "tools/random.hpp"
#include "unit/lock_helpers.hpp"

using edgelock::duration;
using edgelock::instant;
using edgelock::lock_errc;
using edgelock::lock_state;
using edgelock_test::counter_random;
using edgelock_test::reply;
using edgelock_test::sent;
using edgelock_test::take;

namespace {

const instant t0{5000000};
const duration step = duration::micros(50);
const duration rtt = duration::micros(200);
const char* const busy_reply = "*2\r\n:0\r\n:30000\r\n";  // the holder has 30 s left

// Pushes from a node: every `every` (a flood), or one `after` each busy
// answer (what a server sends when the key does change each time).
struct pusher {
    duration every{};
    duration after{};
    instant stop = instant::never();
};

struct run_result {
    int rounds = 0;          // acquire requests sent to node 0
    duration worst_delay{};  // the longest from a one-per-answer push to node 0's next request
};

struct paced_waiter {
    counter_random rnd;
    edgelock::lock l;
    std::uint8_t nodes;

    explicit paced_waiter(std::uint8_t n) : nodes(n) {
        edgelock::lock_options o = edgelock_test::lock_test_options();
        o.max_tries = UINT32_MAX;
        o.wait = duration::seconds(60);
        o.retry_min = duration::millis(50);  // the defaults
        o.retry_max = duration::millis(200);
        REQUIRE(l.configure("jobs", n, o, rnd.source()) == lock_errc::ok);
        for (std::uint8_t i = 0; i < n; ++i) {
            REQUIRE(l.set_node_caps(i, edgelock_test::told_caps()) == lock_errc::ok);
        }
    }

    // Runs from `from` for `span`, each node pushing as `push[i]` says.
    run_result run(instant from, duration span, const pusher* push) {
        run_result out;
        instant reply_at[edgelock::lock_max_nodes];
        std::uint32_t tag[edgelock::lock_max_nodes] = {};
        instant next_push[edgelock::lock_max_nodes];
        instant pushed_at = instant::never();  // node 0's one-per-answer push, not yet answered
        for (std::uint8_t i = 0; i < nodes; ++i) {
            reply_at[i] = instant::never();
            next_push[i] = push[i].every.us > 0 ? from : instant::never();
        }
        for (instant t = from; t < from + span; t = t + step) {
            for (std::uint8_t i = 0; i < nodes; ++i) {
                if (next_push[i] <= t && t < push[i].stop) {
                    REQUIRE(l.on_key_changed(i, t) == lock_errc::ok);
                    pushed_at = i == 0 && push[i].after.us > 0 ? t : pushed_at;
                    next_push[i] = push[i].every.us > 0 ? t + push[i].every : instant::never();
                }
                if (reply_at[i] <= t) {
                    reply_at[i] = instant::never();
                    reply(l, i, tag[i], busy_reply, t);
                    if (push[i].after.us > 0) {
                        next_push[i] = t + push[i].after;
                    }
                }
            }
            if (l.next_deadline() <= t) {
                l.on_timeout(t);
            }
            for (std::uint8_t i = 0; i < nodes; ++i) {
                if (l.next_send(i) == edgelock::lock::outgoing::request) {
                    const sent s = take(l, i);
                    tag[i] = s.tag;
                    reply_at[i] = t + rtt;
                    if (i == 0) {
                        ++out.rounds;
                        if (!pushed_at.is_never() && t - pushed_at > out.worst_delay) {
                            out.worst_delay = t - pushed_at;
                        }
                        pushed_at = instant::never();
                    }
                }
            }
        }
        return out;
    }
};

}  // namespace

TEST_CASE("told pace: a node flooding pushes gets the polling rate, not one try per round trip",
          "[lock][notify]") {
    for (const std::uint8_t nodes : {std::uint8_t{1}, std::uint8_t{3}}) {
        paced_waiter w(nodes);
        REQUIRE(w.l.acquire(t0) == lock_errc::ok);
        pusher push[3];
        push[0].every = duration::micros(150);  // about 6,700 a second, from node 0 only
        const run_result r = w.run(t0, duration::seconds(2), push);
        INFO(int(nodes) << " nodes: " << r.rounds << " rounds in 2 s");
        CHECK(w.l.state() != lock_state::held);
        // Two told tries at once, then 50, 100, 200, 200... ms apart: about 12;
        // one per round trip would be about 10,000.
        CHECK(r.rounds >= 8);
        CHECK(r.rounds <= 16);
    }
}

TEST_CASE("told pace: one push per change starts each round at once, every time",
          "[lock][notify]") {
    paced_waiter w(1);
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    pusher push[1];
    push[0].after = duration::millis(1);  // the key taken by another 1 ms after each look
    const run_result r = w.run(t0, duration::seconds(2), push);
    INFO(r.rounds << " rounds, worst delay " << r.worst_delay.us << " us");
    CHECK(r.worst_delay == duration{});  // never waits for the pace
    CHECK(r.rounds >= 1500);             // one per 1.25 ms: a round trip and the 1 ms
}

TEST_CASE("told pace: after the noise stops, a push starts a round at once again",
          "[lock][notify]") {
    paced_waiter w(1);
    REQUIRE(w.l.acquire(t0) == lock_errc::ok);
    pusher flood[1];
    flood[0].every = duration::micros(150);
    flood[0].stop = t0 + duration::seconds(1);
    const run_result noisy = w.run(t0, duration::seconds(1), flood);
    CHECK(noisy.rounds <= 10);
    // Quiet for half a second, then the key changes as a server tells it.
    pusher quiet[1];
    (void)w.run(t0 + duration::seconds(1), duration::millis(500), quiet);
    pusher honest[1];
    honest[0].after = duration::millis(1);
    honest[0].every = duration::seconds(10);  // the first push at once
    const run_result after = w.run(t0 + duration::millis(1500), duration::millis(500), honest);
    INFO(after.rounds << " rounds, worst delay " << after.worst_delay.us << " us");
    CHECK(after.worst_delay == duration{});
    CHECK(after.rounds >= 300);
}
