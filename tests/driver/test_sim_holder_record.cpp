// The holder record (lock_options::holder) through the real driver on
// virtual time, under Redlock with told waiters: the acquire writes it into
// the renewal mark on every node with the key's ttl, renewals keep it and its
// ttl in step with the key's, a waiter's busy tries leave it alone (and ask
// to be told at once), and the release takes it away, after which the
// winning waiter's record is there, the waiters told long before a poll.
#include <catch2/catch.hpp>

#include <array>
#include <string>

#include "driver/driver_helpers.hpp"
#include "edgelock/client.hpp"
#include "edgelock/lock.hpp"
#include "sim/event_loop.hpp"
#include "sim/net.hpp"
#include "tools/lock_key.hpp"

using edgelock::client_errc;
using edgelock::duration;
using edgelock_test::node_urls;

namespace {

using client_type = edgelock::client<3, 6>;

// The record on node i, or an empty owner when there is none.
struct seen {
    std::string owner;
    std::string text;
    std::uint64_t since_s = 0;
    std::int64_t mark_ttl = -2;
    std::int64_t key_ttl = -2;
};

seen record_at(sim::net& n, int i, const std::string& name) {
    seen s;
    const std::string mark = edgelock_test::renewal_mark_of(name);
    s.mark_ttl = n.node(i).pttl(mark, n.now().us);
    s.key_ttl = n.node(i).pttl(name, n.now().us);
    sim::keyspace::entry* e = n.node(i).find(mark, n.now().us);
    edgelock::holder_record r;
    if (e != nullptr &&
        edgelock::read_holder_record(edgelock::str_view(e->str.data(), e->str.size()), r)) {
        s.owner = std::string(r.owner.data, r.owner.size);
        s.text = std::string(r.text.data, r.text.size);
        s.since_s = r.since_s;
    }
    return s;
}

}  // namespace

TEST_CASE("sim holder record: written by the take, kept by renewals, gone with the release",
          "[sim][holder]") {
    sim::net n(4301);
    n.add_nodes(3);
    for (int i = 0; i < 3; ++i) {
        n.node(i).tracking = true;
    }
    const node_urls urls(n);
    client_type holder_client;
    std::array<client_type, 2> waiter_clients;
    edgelock_test::configure(holder_client, urls);
    sim::event_loop loop(n);
    loop.add(holder_client);
    for (client_type& c : waiter_clients) {
        edgelock_test::configure(c, urls);
        loop.add(c);
    }
    const std::string texts[] = {"host=gw-1 pid=11 label=holder", "host=gw-2 pid=22 label=a",
                                 "host=gw-3 pid=33 label=b"};
    edgelock::watchdog_options every;
    every.renew_every = duration::millis(100);
    edgelock::lock_options o = edgelock_test::fast_lock_options();
    o.holder = edgelock::str_view(texts[0].data(), texts[0].size());
    edgelock::client_lock holder;
    REQUIRE(holder.attach(holder_client, "jobs", o, every) == client_errc::ok);
    std::array<edgelock::client_lock, 2> waiters;
    for (std::size_t i = 0; i < waiters.size(); ++i) {
        edgelock::lock_options w = edgelock_test::fast_lock_options();
        w.ttl = duration::seconds(10);
        w.retry_min = w.retry_max = duration::millis(3000);  // anything sooner was told
        w.holder = edgelock::str_view(texts[i + 1].data(), texts[i + 1].size());
        REQUIRE(waiters[i].attach(waiter_clients[i], "jobs", w, every) == client_errc::ok);
    }

    REQUIRE(holder.start_acquire(1, duration::seconds(1)) == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(50)));
    REQUIRE(holder.held());
    const std::string token = edgelock_test::hex(holder.token());
    std::uint64_t since[3] = {};
    for (int i = 0; i < 3; ++i) {
        const seen s = record_at(n, i, "jobs");
        CHECK(s.owner == token);
        CHECK(s.text == texts[0]);
        CHECK(s.mark_ttl == s.key_ttl);  // one script, one ttl
        CHECK(s.since_s >= 1700000000);  // the server's clock, in seconds
        since[i] = s.since_s;
    }
    for (edgelock::client_lock& w : waiters) {
        REQUIRE(w.start_acquire(1000, duration::seconds(30)) == client_errc::ok);
    }
    // Two seconds: 20 renewals, and each waiter's tries found the key taken.
    REQUIRE(loop.run_for(duration::seconds(2)));
    REQUIRE(holder.held());
    for (int i = 0; i < 3; ++i) {
        const seen s = record_at(n, i, "jobs");
        CHECK(s.owner == token);
        CHECK(s.text == texts[0]);
        CHECK(s.since_s == since[i]);  // not rewritten: still the take's time
        CHECK(s.mark_ttl == s.key_ttl);
        CHECK(s.key_ttl > 800);  // renewed (the ttl is 1 s)
    }
    for (const edgelock::client_lock& w : waiters) {
        CHECK_FALSE(w.held());
    }
    // Each waiter tried once (its next try is 3 s away) and asked, after
    // that try, to be told: a script acquire leaves no request in its
    // round to carry CLIENT TRACKING.
    std::uint64_t asked = 0;
    for (int i = 0; i < 3; ++i) {
        asked += n.node(i).count_of("CLIENT");
    }
    CHECK(asked == 6);

    REQUIRE(holder.start_release() == client_errc::ok);
    REQUIRE(loop.run_for(duration::millis(100)));  // told: long before a poll
    REQUIRE(waiters[0].held() != waiters[1].held());
    const std::size_t winner = waiters[0].held() ? 0 : 1;
    for (int i = 0; i < 3; ++i) {
        const seen s = record_at(n, i, "jobs");
        if (s.owner.empty()) {
            continue;  // a node the winner's quorum did without
        }
        CHECK(s.owner == edgelock_test::hex(waiters[winner].token()));
        CHECK(s.text == texts[winner + 1]);
        CHECK(s.mark_ttl == s.key_ttl);
    }
}
