// redis-cluster:// nodes against a real Redis Cluster (cluster_fixture.hpp:
// three masters, a replica each). One client reaches every master its locks
// need through its extra connections (client<1, 2>), each lock's requests
// going to the master that serves its key's slot. A lock held while its
// slot is moved by hand keeps being renewed through ASK (the key moved, the
// slot not yet) and MOVED (the slot moved), and a rival never gets it. A
// failover and a kill -9 of the lock's master end with the lock renewed on
// the promoted replica or reported lost, never held twice, never a hang.
// Bad cluster URLs fail configure; seeds all down fail the node in bounded
// time. And a Redlock whose nodes are two standalone servers and a cluster.
//
// Timing checks are sanity bounds several times what a run needs.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/cluster_fixture.hpp"
#include "integration/cluster_ops.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/net.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// The client keeps views of lock names: the strings outlive the locks.
str_view sv(const std::string& s) {
    return str_view(s.data(), s.size());
}

// A short ttl, so that a lock the cluster loses is told lost quickly; and
// time enough per request for a connection to a master made on demand
// (connect and set-up) on a busy machine.
constexpr unsigned short_ttl_ms = 2000;
constexpr unsigned node_timeout_ms = 500;

void drive(client_base& c, unsigned ms) {
    REQUIRE(c.run_for(duration::millis(ms)) == client_errc::ok);
}

// Events of kind k from index `from` on.
int count_since(const recorder& rec, std::size_t from, lock_event_kind k) {
    int n = 0;
    for (std::size_t i = from; i < rec.events.size(); ++i) {
        n += rec.events[i].kind == k ? 1 : 0;
    }
    return n;
}

lock_options waiting(unsigned ttl_ms, unsigned wait_ms) {
    lock_options o = edgelock_test::options(ttl_ms, node_timeout_ms);
    o.max_tries = 1000;
    o.wait = duration::millis(wait_ms);
    o.retry_min = duration::millis(50);
    o.retry_max = duration::millis(100);
    return o;
}

// A fresh acquisition of `name` within `wait_ms`, its key then on `on`,
// and its release, which deletes it there.
void acquire_release_on(client_base& c, cluster_deployment& d, const std::string& name,
                        redis_server& on, unsigned wait_ms) {
    INFO("lock " << name);
    client_lock l;
    REQUIRE(l.attach(c, sv(name), waiting(5000, wait_ms), no_watchdog()) == client_errc::ok);
    const op_result r = l.acquire(duration::millis(wait_ms));
    INFO(what(r) << "; node: " << what(c.node(0)));
    REQUIRE(r.error == client_errc::ok);
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(d.where_is(key_of(name)) == &on);
    CHECK(cluster_deployment::value_on(on, key_of(name)) == hex(l.token()));
    must_release(l);
    CHECK(d.where_is(key_of(name)) == nullptr);
}

}  // namespace

TEST_CASE("cluster: locks on all three masters through one client", "[integration][cluster]") {
    cluster_deployment d;
    const std::vector<redis_server*> m = d.masters();
    REQUIRE(m.size() == 3);
    const url_list urls({d.url()});
    client<1, 2> c;
    configure(c, urls);

    // A plain, a reentrant (two holds of one owner) and a fenced lock, one
    // on each master; and a plain one more on each.
    const std::string plain_name = d.name_on(*m[0], "cluster-plain");
    const std::string reentrant_name = d.name_on(*m[1], "cluster-reentrant");
    const std::string fenced_name = d.name_on(*m[2], "cluster-fenced");
    lock_options reentrant = edgelock_test::options(5000, node_timeout_ms, lock_mode::reentrant);
    reentrant.owner = "agent-1:task-7";
    client_lock plain;
    client_lock outer;
    client_lock inner;
    client_lock fenced;
    REQUIRE(plain.attach(c, sv(plain_name), edgelock_test::options(5000, node_timeout_ms),
                         no_watchdog()) == client_errc::ok);
    REQUIRE(outer.attach(c, sv(reentrant_name), reentrant, no_watchdog()) == client_errc::ok);
    REQUIRE(inner.attach(c, sv(reentrant_name), reentrant, no_watchdog()) == client_errc::ok);
    REQUIRE(fenced.attach(c, sv(fenced_name),
                          edgelock_test::options(5000, node_timeout_ms, lock_mode::fenced),
                          no_watchdog()) == client_errc::ok);
    std::vector<std::string> more_names;
    std::vector<std::unique_ptr<client_lock>> more;
    for (std::size_t i = 0; i < 3; ++i) {
        more_names.push_back(d.name_on(*m[i], "cluster-more"));
    }
    for (const std::string& name : more_names) {
        more.emplace_back(new client_lock);
        REQUIRE(more.back()->attach(c, sv(name), edgelock_test::options(5000, node_timeout_ms),
                                    no_watchdog()) == client_errc::ok);
    }

    const instant t0 = port::now();
    must_acquire(plain);
    must_acquire(outer);
    const op_result second = inner.try_acquire();
    {
        INFO(what(second));
        REQUIRE(second.event.kind == lock_event_kind::acquired);
        CHECK(second.event.holds == 2);
    }
    must_acquire(fenced);
    CHECK(fenced.fence() > 0);
    for (auto& l : more) {
        must_acquire(*l);
    }
    CHECK(ms_since(t0) < 3000);
    CHECK(c.node(0).state == node_state::ready);

    // Held: each key on the master that serves its slot, and there only.
    CHECK(d.where_is(key_of(plain_name)) == m[0]);
    CHECK(cluster_deployment::value_on(*m[0], key_of(plain_name)) == hex(plain.token()));
    CHECK(d.where_is(key_of(reentrant_name)) == m[1]);
    CHECK(cluster_deployment::asking(*m[1], {"HGET", key_of(reentrant_name), "agent-1:task-7"})
              .text == "2");
    CHECK(d.where_is(key_of(fenced_name)) == m[2]);
    CHECK(d.where_is(fence_key_of(fenced_name)) == m[2]);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(d.where_is(key_of(more_names[i])) == m[i]);
        CHECK(cluster_deployment::value_on(*m[i], key_of(more_names[i])) == hex(more[i]->token()));
    }

    // Renewed, each on its own master.
    drive(c, 200);
    for (client_lock* l : {&plain, &outer, &fenced, more[0].get(), more[1].get(), more[2].get()}) {
        const op_result r = l->renew();
        INFO(what(r));
        CHECK(r.event.kind == lock_event_kind::renewed);
        CHECK(l->held());
    }

    // Released: every key gone (the reentrant one with its last hold).
    must_release(plain);
    CHECK(d.where_is(key_of(plain_name)) == nullptr);
    must_release(inner);
    CHECK(cluster_deployment::asking(*m[1], {"HGET", key_of(reentrant_name), "agent-1:task-7"})
              .text == "1");
    must_release(outer);
    CHECK(d.where_is(key_of(reentrant_name)) == nullptr);
    must_release(fenced);
    CHECK(d.where_is(key_of(fenced_name)) == nullptr);
    for (std::size_t i = 0; i < 3; ++i) {
        must_release(*more[i]);
        CHECK(d.where_is(key_of(more_names[i])) == nullptr);
    }
}

TEST_CASE("cluster: a held lock renewed while its slot migrates, through ASK and MOVED",
          "[integration][cluster]") {
    cluster_deployment d;
    const std::vector<redis_server*> m = d.masters();
    REQUIRE(m.size() == 3);
    redis_server& from = *m[0];
    redis_server& to = *m[1];
    const std::string name = d.name_on(from, "cluster-migrating");
    const int slot = slot_of_lock(name);
    // A second lock in the same slot, renewed by its watchdog.
    const std::string watched_name = name_in_slot(slot, "cluster-migrating-watched");
    const std::string key = key_of(name);
    const std::string watched_key = key_of(watched_name);

    const url_list urls({d.url()});
    client<1, 2> holder;
    client<1, 2> rival_client;
    configure(holder, urls);
    configure(rival_client, urls);
    client_lock l;  // renewed by hand, every 300 ms
    REQUIRE(l.attach(holder, sv(name), edgelock_test::options(short_ttl_ms, node_timeout_ms),
                     no_watchdog()) == client_errc::ok);
    client_lock watched;
    recorder rec;
    rec.listen(watched);
    REQUIRE(watched.attach(holder, sv(watched_name),
                           edgelock_test::options(short_ttl_ms, node_timeout_ms),
                           renew_every(300)) == client_errc::ok);
    client_lock rival;
    client_lock watched_rival;
    REQUIRE(rival.attach(rival_client, sv(name),
                         edgelock_test::options(short_ttl_ms, node_timeout_ms),
                         no_watchdog()) == client_errc::ok);
    REQUIRE(watched_rival.attach(rival_client, sv(watched_name),
                                 edgelock_test::options(short_ttl_ms, node_timeout_ms),
                                 no_watchdog()) == client_errc::ok);
    must_acquire(l);
    must_acquire(watched);

    // Two renewals by hand and the watchdog's meanwhile, both locks still
    // held, the rival refused both, and the keys where `on` says.
    const auto stage = [&](const char* what_now, redis_server* on) {
        INFO(what_now << "; watched lock: " << rec.list());
        const std::size_t mark = rec.events.size();
        for (int i = 0; i < 2; ++i) {
            const op_result r = l.renew();
            INFO(what(r) << "; node: " << what(holder.node(0)));
            CHECK(r.error == client_errc::ok);
            CHECK(r.event.kind == lock_event_kind::renewed);
            drive(holder, 300);
        }
        drive(holder, 100);
        CHECK(count_since(rec, mark, lock_event_kind::renewed) >= 1);
        CHECK(rec.count(lock_event_kind::lost) == 0);
        CHECK(rec.count(lock_event_kind::renew_failed) == 0);
        CHECK(l.held());
        CHECK(watched.held());
        for (client_lock* r : {&rival, &watched_rival}) {
            const op_result busy = r->try_acquire();
            INFO("rival: " << what(busy) << "; node: " << what(rival_client.node(0)));
            CHECK(busy.error == client_errc::ok);
            CHECK(busy.event.kind == lock_event_kind::busy);
            if (busy.event.kind == lock_event_kind::acquired) {
                r->release();
            }
        }
        CHECK(d.where_is(key) == on);
        CHECK(d.where_is(watched_key) == on);
    };

    stage("before the migration", &from);
    d.begin_migration(slot, from, to);
    stage("importing and migrating set, the keys still on the source", &from);
    CHECK(d.migrate_keys(slot, from, to) == 4);  // the two keys and their renewal marks
    stage("the keys migrated, the slot not yet: ASK", &to);
    d.end_migration(slot, from, to, [&] { drive(holder, 20); });
    CHECK(&d.master_of(slot) == &to);
    stage("the slot moved: MOVED", &to);

    INFO(rec.list());
    CHECK(cluster_deployment::value_on(to, key) == hex(l.token()));
    must_release(l);
    must_release(watched);
    CHECK(d.where_is(key) == nullptr);
    CHECK(d.where_is(watched_key) == nullptr);
    CHECK(rec.count(lock_event_kind::lost) == 0);
}

TEST_CASE("cluster: a failover of the lock's master, the lock renewed or told lost",
          "[integration][cluster][failover]") {
    cluster_deployment d;
    redis_server& master = *d.masters()[0];
    const std::string name = d.name_on(master, "cluster-failover");
    const int slot = slot_of_lock(name);
    const url_list urls({d.url()});
    client<1, 2> holder;
    client<1, 2> rival_client;
    configure(holder, urls);
    configure(rival_client, urls);
    client_lock l;
    recorder rec;
    rec.listen(l);
    REQUIRE(l.attach(holder, sv(name), edgelock_test::options(short_ttl_ms, node_timeout_ms),
                     renew_every(300)) == client_errc::ok);
    must_acquire(l);
    drive(holder, 400);

    // The holder's watchdog runs all along.
    const double t0 = mono_s();
    redis_server& promoted = d.failover(master, [&] { drive(holder, 20); });
    INFO("the failover took " << mono_s() - t0 << " s");
    const std::size_t mark = rec.events.size();
    drive(holder, 1000);
    INFO("events: " << rec.list());
    CHECK(&d.master_of(slot) == &promoted);

    const bool lost = rec.count(lock_event_kind::lost) > 0;
    if (!lost) {
        CHECK(l.held());
        CHECK(count_since(rec, mark, lock_event_kind::renewed) >= 1);
        CHECK(d.where_is(key_of(name)) == &promoted);
    } else {
        CHECK_FALSE(l.held());
    }
    // Never held by two.
    client_lock rival;
    REQUIRE(rival.attach(rival_client, sv(name),
                         edgelock_test::options(short_ttl_ms, node_timeout_ms),
                         no_watchdog()) == client_errc::ok);
    const op_result r = rival.try_acquire();
    INFO("rival: " << what(r) << "; node: " << what(rival_client.node(0)));
    CHECK_FALSE((l.held() && r.event.kind == lock_event_kind::acquired));
    if (!lost) {
        CHECK(r.event.kind == lock_event_kind::busy);
    }
    if (r.event.kind == lock_event_kind::acquired) {
        must_release(rival);
    }

    // Another name of the slot: taken on the new master, by either client.
    acquire_release_on(rival_client, d, name_in_slot(slot, "cluster-failover-fresh"), promoted,
                       3000);
    acquire_release_on(holder, d, name_in_slot(slot, "cluster-failover-again"), promoted, 3000);
    if (l.held()) {
        const op_result rel = l.release();
        INFO(what(rel));
        CHECK((rel.error == client_errc::ok || rel.error == client_errc::not_held));
    }
}

TEST_CASE("cluster: kill -9 of the lock's master ends renewed on the replica or lost",
          "[integration][cluster][failover]") {
    cluster_deployment d;
    redis_server& master = *d.masters()[0];
    const url_list urls({d.url()});
    client<1, 2> holder;
    configure(holder, urls);
    // Two locks on the master, renewed by their watchdogs: one whose ttl
    // ends before the replica is promoted (told lost, most likely), one
    // whose ttl outlasts the promotion (renewed there, most likely). Each
    // must end one way or the other within its ttl + 5 s.
    struct held_lock {
        std::string name;
        unsigned ttl_ms;
        client_lock lock;
        recorder rec;
        bool ended = false;
        double ended_after = 0;
    };
    held_lock locks[2];
    locks[0].name = d.name_on(master, "cluster-killed-short");
    locks[0].ttl_ms = short_ttl_ms;
    locks[1].name = d.name_on(master, "cluster-killed-long");
    locks[1].ttl_ms = 6000;
    const int slot = slot_of_lock(locks[0].name);
    for (held_lock& h : locks) {
        h.rec.listen(h.lock);
        REQUIRE(h.lock.attach(holder, sv(h.name), edgelock_test::options(h.ttl_ms, node_timeout_ms),
                              renew_every(300)) == client_errc::ok);
        must_acquire(h.lock);
    }
    drive(holder, 400);  // renewed, and the keys on the replica

    const double killed = mono_s();
    redis_server& replica = d.kill_master(master);
    bool promoted = false;
    std::size_t mark[2] = {0, 0};
    while (!(locks[0].ended && locks[1].ended) &&
           mono_s() < killed + locks[1].ttl_ms / 1000.0 + 5) {
        drive(holder, 50);
        if (!promoted && d.promoted(replica)) {
            promoted = true;
            mark[0] = locks[0].rec.events.size();
            mark[1] = locks[1].rec.events.size();
        }
        for (std::size_t i = 0; i < 2; ++i) {
            held_lock& h = locks[i];
            if (!h.ended &&
                (h.rec.count(lock_event_kind::lost) > 0 ||
                 (promoted && count_since(h.rec, mark[i], lock_event_kind::renewed) > 0))) {
                h.ended = true;
                h.ended_after = mono_s() - killed;
            }
        }
    }
    for (held_lock& h : locks) {
        INFO(h.name << " (ttl " << h.ttl_ms << " ms): " << h.rec.list()
                    << "; node: " << what(holder.node(0)));
        INFO("ended " << h.ended_after << " s after the kill");
        REQUIRE(h.ended);
        CHECK(h.ended_after < h.ttl_ms / 1000.0 + 5);
        if (h.rec.count(lock_event_kind::lost) > 0) {
            CHECK_FALSE(h.lock.held());
        } else {
            CHECK(h.lock.held());
            CHECK(d.where_is(key_of(h.name)) == &replica);
            CHECK(cluster_deployment::value_on(replica, key_of(h.name)) == hex(h.lock.token()));
        }
    }

    // Once the replica serves the slot, a new acquisition there succeeds:
    // through the holder's client and through a new one.
    cluster_deployment::wait_until([&] { return d.promoted(replica); }, 20,
                                   [&] { drive(holder, 20); });
    CHECK(&d.master_of(slot) == &replica);
    acquire_release_on(holder, d, name_in_slot(slot, "cluster-killed-after"), replica, 5000);
    client<1, 2> fresh;
    configure(fresh, urls);  // its first seed is the dead master
    acquire_release_on(fresh, d, name_in_slot(slot, "cluster-killed-fresh"), replica, 5000);
    for (held_lock& h : locks) {
        if (h.lock.held()) {
            const op_result rel = h.lock.release();
            INFO(what(rel));
            CHECK((rel.error == client_errc::ok || rel.error == client_errc::not_held));
        }
    }
}

TEST_CASE("cluster: bad cluster URLs fail configure, seeds all down fail the node",
          "[integration][cluster]") {
    struct bad_case {
        const char* what;
        std::string url;
        url_errc error;
    };
    const bad_case cases[] = {
        {"no host", "redis-cluster://", url_errc::bad_host},
        {"a port but no host", "redis-cluster://:7000", url_errc::bad_host},
        {"an empty seed", "redis-cluster://127.0.0.1:7000,", url_errc::bad_host},
        {"a /db path", "redis-cluster://127.0.0.1:7000/0", url_errc::bad_path},
        {"a /db path after several seeds", "redis-cluster://127.0.0.1:7000,127.0.0.1:7001/2",
         url_errc::bad_path},
    };
    for (const bad_case& k : cases) {
        INFO(k.what << ": " << k.url);
        const url_list urls({redis_url(free_port()), k.url});
        client<2, 2> c;
        CHECK(c.configure(urls.data(), urls.size(), {}) == client_errc::bad_url);
        CHECK(c.bad_url_index() == 1);
        CHECK(c.bad_url_error() == k.error);
        CHECK(std::string(describe(c.bad_url_error()))
                  .find(k.error == url_errc::bad_path ? "cluster" : "host") != std::string::npos);
    }

    // No seed listening: the node fails with its reason, the acquisition
    // in bounded time.
    const std::uint16_t p1 = free_port();
    const std::uint16_t p2 = free_port();
    const url_list urls(
        {"redis-cluster://127.0.0.1:" + std::to_string(p1) + ",127.0.0.1:" + std::to_string(p2)});
    client<1, 2> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, "cluster-nowhere", edgelock_test::options(short_ttl_ms, node_timeout_ms),
                     no_watchdog()) == client_errc::ok);
    const instant t0 = port::now();
    const op_result r = l.try_acquire();
    INFO(what(r) << "; node: " << what(c.node(0)));
    CHECK(ms_since(t0) < 3000);
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::failed);
    CHECK(r.event.reason == lock_failure::no_quorum);
    CHECK_FALSE(l.held());
    CHECK(c.node(0).state != node_state::ready);
    CHECK(c.node(0).error != node_error::none);
    const instant t1 = port::now();
    CHECK(c.connect(port::now() + duration::seconds(3)) == 0);
    CHECK(ms_since(t1) < 3500);
    CHECK(c.node(0).error != node_error::none);
}

TEST_CASE("cluster: Redlock over a standalone server, a cluster and another standalone",
          "[integration][cluster][redlock]") {
    redis_server a;
    redis_server b;
    cluster_deployment d;
    const url_list urls({redis_url(a), d.url(), redis_url(b)});
    client<3, 2> c;
    configure(c, urls);
    redis_client admin_b(b.port());

    // Quorum 2 of 3: the round is won by the first two yeses (a late yes
    // is taken back), so at least two nodes hold the token.
    for (const lock_mode mode : {lock_mode::plain, lock_mode::fenced}) {
        const std::string name =
            mode == lock_mode::plain ? "cluster-redlock" : "cluster-redlock-fenced";
        INFO(name);
        const std::string key = key_of(name);
        redis_server& m = d.master_of(slot_of_lock(name));
        client_lock l;
        REQUIRE(l.attach(c, sv(name), edgelock_test::options(5000, node_timeout_ms, mode),
                         no_watchdog()) == client_errc::ok);
        must_acquire(l);
        if (mode == lock_mode::fenced) {
            CHECK(l.fence() > 0);
        }
        const op_result r = l.renew();
        INFO(what(r));
        CHECK(r.event.kind == lock_event_kind::renewed);
        redis_client admin_a(a.port());
        int holders = 0;
        holders += admin_a.command({"GET", key}).text == hex(l.token()) ? 1 : 0;
        holders += admin_b.command({"GET", key}).text == hex(l.token()) ? 1 : 0;
        holders +=
            d.where_is(key) == &m && cluster_deployment::value_on(m, key) == hex(l.token()) ? 1 : 0;
        CHECK(holders >= 2);
        must_release(l);
        CHECK(admin_a.command({"EXISTS", key}).integer == 0);
        CHECK(admin_b.command({"EXISTS", key}).integer == 0);
        CHECK(d.where_is(key) == nullptr);
    }

    // The first standalone server down: the quorum needs the cluster.
    a.kill();
    const std::string name = "cluster-redlock-needs-cluster";
    const std::string key = key_of(name);
    redis_server& m = d.master_of(slot_of_lock(name));
    client_lock l;
    REQUIRE(l.attach(c, sv(name), edgelock_test::options(5000, node_timeout_ms), no_watchdog()) ==
            client_errc::ok);
    must_acquire(l);
    CHECK(admin_b.command({"GET", key}).text == hex(l.token()));
    CHECK(d.where_is(key) == &m);
    CHECK(cluster_deployment::value_on(m, key) == hex(l.token()));
    INFO("node 1: " << what(c.node(1)));
    CHECK(c.node(1).state == node_state::ready);
    must_release(l);
    CHECK(admin_b.command({"EXISTS", key}).integer == 0);
    CHECK(d.where_is(key) == nullptr);
}
