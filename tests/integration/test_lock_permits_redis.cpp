// Semaphores (lock_options::permits) against a real redis-server, through the
// client: what the acquire script writes (a permit's key with the token and
// the ttl, the permits hash with the limit and the holder records), a holder
// refused once every permit is taken, renew and release on the permit held,
// another limit refused, a permit key of another type counted as taken, the
// fencing counter, and a permit freed by its ttl when its holder stops. Read
// back with a plain connection.
//
// Timing checks are sanity bounds several times what a run needs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/port.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/integration

namespace {

const char* const holder_text = "host=gw-17 pid=4242 label=nightly";
const unsigned ttl_ms = 10000;
const unsigned node_timeout_ms = 500;  // qemu and sanitizer builds are slow

// The semaphore's hash: its limit and the holder records.
std::string permits_of(const std::string& name) {
    return key_of(name, lock_key_kind::permits);
}

lock_options permit_options(unsigned permits, unsigned ttl = ttl_ms,
                            lock_mode mode = lock_mode::plain) {
    lock_options o = options(ttl, node_timeout_ms, mode);
    o.permits = static_cast<std::uint8_t>(permits);
    return o;
}

// A contender: a client of its own and its lock on the semaphore.
struct contender {
    client<1> c;
    client_lock l;
};

std::unique_ptr<contender> make_contender(const url_list& urls, const char* name,
                                          const lock_options& o) {
    std::unique_ptr<contender> p(new contender());
    configure(p->c, urls);
    REQUIRE(p->l.attach(p->c, name, o, no_watchdog()) == client_errc::ok);
    return p;
}

// Acquires in one round or fails the test; returns what it ended with.
op_result must_take(client_lock& l) {
    const op_result r = l.try_acquire();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    REQUIRE(r.event.permit >= 0);
    CHECK(l.permit() == r.event.permit);
    return r;
}

// The server's clock in microseconds, and in whole seconds (TIME's first element).
long long server_time_us(redis_client& admin) {
    const reply t = admin.command({"TIME"});
    REQUIRE(t.type == '*');
    REQUIRE(t.elements.size() == 2);
    return std::atoll(t.elements[0].text.c_str()) * 1000000 +
           std::atoll(t.elements[1].text.c_str());
}

long long server_time_s(redis_client& admin) {
    return server_time_us(admin) / 1000000;
}

// When the key expires, in unix ms (PEXPIRETIME: a key's expiry itself, so
// two keys compare however long apart they are read).
long long expires_at(redis_client& admin, const std::string& key) {
    const reply r = admin.command({"PEXPIRETIME", key});
    REQUIRE(r.type == ':');
    return r.integer;
}

// The permit's key holds the token with a fresh ttl; the hash holds its
// record, taken at a server time in [from_s, to_s], and outlives it.
void check_permit(redis_client& admin, const std::string& name, const client_lock& l,
                  long long from_s, long long to_s) {
    const int p = l.permit();
    INFO("permit " << p);
    REQUIRE(p >= 0);
    const std::string key = permit_key_of(name, static_cast<unsigned>(p));
    const std::string token = hex(l.token());
    CHECK(admin.command({"TYPE", key}).text == "string");
    CHECK(admin.command({"GET", key}).text == token);
    const long long pttl = admin.command({"PTTL", key}).integer;
    CHECK(pttl > static_cast<long long>(ttl_ms) - 1000);
    CHECK(pttl <= static_cast<long long>(ttl_ms));
    CHECK(expires_at(admin, permits_of(name)) >= expires_at(admin, key));

    const reply field = admin.command({"HGET", permits_of(name), std::to_string(p)});
    REQUIRE(field.type == '$');
    holder_record rec;
    INFO("record: " << field.text);
    REQUIRE(read_holder_record(str_view(field.text.data(), field.text.size()), rec));
    CHECK(str(rec.owner) == token);
    CHECK(str(rec.text) == holder_text);
    CHECK(static_cast<long long>(rec.since_s) >= from_s);
    CHECK(static_cast<long long>(rec.since_s) <= to_s);
    // Exactly the three fields: the token, the seconds in decimal, the text.
    CHECK(field.text == token + "\n" + std::to_string(rec.since_s) + "\n" + holder_text);
}

}  // namespace

TEST_CASE("permits redis: three holders of 3 permits each hold one, and a fourth is busy",
          "[integration][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "permits-three";
    url_list urls({redis_url(srv)});
    lock_options o = permit_options(3);
    o.holder = holder_text;
    std::vector<std::unique_ptr<contender>> holders;
    std::set<int> taken;
    for (int i = 0; i < 3; ++i) {
        holders.push_back(make_contender(urls, name, o));
        const long long from = server_time_s(admin);
        const op_result r = must_take(holders.back()->l);
        const long long to = server_time_s(admin);
        CHECK(r.event.permit < 3);
        taken.insert(r.event.permit);
        check_permit(admin, name, holders.back()->l, from, to);
    }
    CHECK(taken == std::set<int>{0, 1, 2});
    CHECK(admin.command({"HGET", permits_of(name), "limit"}).text == "3");
    CHECK(admin.command({"HLEN", permits_of(name)}).integer == 4);  // the limit, 3 records
    for (const auto& h : holders) {
        const std::string key = permit_key_of(name, static_cast<unsigned>(h->l.permit()));
        CHECK(expires_at(admin, permits_of(name)) >= expires_at(admin, key));
    }

    // A fourth finds every permit taken: busy, told the soonest one's ttl,
    // and nothing written.
    auto fourth = make_contender(urls, name, o);
    const op_result r = fourth->l.try_acquire();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::busy);
    CHECK(r.event.holder_ttl_ms > 0);
    CHECK(r.event.holder_ttl_ms <= static_cast<long long>(ttl_ms));
    CHECK(fourth->l.permit() == -1);
    CHECK_FALSE(fourth->l.held());
    for (const auto& h : holders) {
        const std::string key = permit_key_of(name, static_cast<unsigned>(h->l.permit()));
        CHECK(admin.command({"GET", key}).text == hex(h->l.token()));
    }
    CHECK(admin.command({"HLEN", permits_of(name)}).integer == 4);
    for (const auto& h : holders) {
        must_release(h->l);
    }
}

TEST_CASE("permits redis: a renew extends the permit held, and a deleted permit is lost",
          "[integration][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "permits-renew";
    url_list urls({redis_url(srv)});
    auto a = make_contender(urls, name, permit_options(2));
    auto b = make_contender(urls, name, permit_options(2));
    must_take(a->l);
    must_take(b->l);
    REQUIRE(a->l.permit() != b->l.permit());
    const std::string key_a = permit_key_of(name, static_cast<unsigned>(a->l.permit()));
    const std::string key_b = permit_key_of(name, static_cast<unsigned>(b->l.permit()));

    sleep_ms(300);
    const long long dropped = admin.command({"PTTL", key_a}).integer;
    CHECK(dropped <= static_cast<long long>(ttl_ms) - 250);
    const long long b_expiry = expires_at(admin, key_b);
    const op_result r = a->l.renew();
    {
        INFO(what(r));
        REQUIRE(r.error == client_errc::ok);
        REQUIRE(r.event.kind == lock_event_kind::renewed);
    }
    const long long renewed = admin.command({"PTTL", key_a}).integer;
    CHECK(renewed >= dropped + 200);
    CHECK(renewed > static_cast<long long>(ttl_ms) - 1000);
    CHECK(admin.command({"GET", key_a}).text == hex(a->l.token()));
    // The hash lasts at least as long as the permit (the renew script
    // extends the permit first: each PEXPIRE reads the clock anew).
    CHECK(expires_at(admin, permits_of(name)) >= expires_at(admin, key_a));
    // And after every one of many renews, whichever millisecond each falls on.
    for (int i = 0; i < 200; ++i) {
        REQUIRE(a->l.renew().event.kind == lock_event_kind::renewed);
        REQUIRE(expires_at(admin, permits_of(name)) >= expires_at(admin, key_a));
    }
    // Only the permit held: b's is as it was.
    CHECK(expires_at(admin, key_b) == b_expiry);
    CHECK(a->l.permit() >= 0);

    // The permit deleted by hand: the renew finds it not ours, and the lock lost.
    REQUIRE(admin.command({"DEL", key_a}).integer == 1);
    const op_result lost = a->l.renew();
    INFO(what(lost));
    REQUIRE(lost.error == client_errc::ok);
    CHECK(lost.event.kind == lock_event_kind::lost);
    CHECK(lost.event.reason == lock_failure::not_ours);
    CHECK_FALSE(a->l.held());
    CHECK(a->l.permit() == -1);
    CHECK(admin.command({"EXISTS", key_a}).integer == 0);  // the renew wrote nothing
    CHECK(admin.command({"GET", key_b}).text == hex(b->l.token()));
    must_release(b->l);
}

TEST_CASE("permits redis: a release deletes its permit and record, and the last one the hash",
          "[integration][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "permits-release";
    url_list urls({redis_url(srv)});
    lock_options o = permit_options(3);
    o.holder = holder_text;
    std::vector<std::unique_ptr<contender>> holders;
    for (int i = 0; i < 3; ++i) {
        holders.push_back(make_contender(urls, name, o));
        must_take(holders.back()->l);
    }
    // Released in the order taken; each time the others are left as they were.
    for (std::size_t i = 0; i < holders.size(); ++i) {
        INFO("release " << i);
        const unsigned p = static_cast<unsigned>(holders[i]->l.permit());
        const op_result r = holders[i]->l.release();
        {
            INFO(what(r));
            REQUIRE(r.error == client_errc::ok);
            REQUIRE(r.event.kind == lock_event_kind::released);
            CHECK(r.event.nodes == 1);
        }
        CHECK(holders[i]->l.permit() == -1);
        CHECK(admin.command({"EXISTS", permit_key_of(name, p)}).integer == 0);
        const bool last = i + 1 == holders.size();
        CHECK(admin.command({"EXISTS", permits_of(name)}).integer == (last ? 0 : 1));
        if (!last) {
            CHECK(admin.command({"HEXISTS", permits_of(name), std::to_string(p)}).integer == 0);
            CHECK(admin.command({"HGET", permits_of(name), "limit"}).text == "3");
            CHECK(admin.command({"HLEN", permits_of(name)}).integer ==
                  static_cast<long long>(holders.size() - i));  // the limit, the records left
        }
        for (std::size_t j = i + 1; j < holders.size(); ++j) {
            const std::string other = std::to_string(holders[j]->l.permit());
            const std::string key =
                permit_key_of(name, static_cast<unsigned>(holders[j]->l.permit()));
            CHECK(admin.command({"GET", key}).text == hex(holders[j]->l.token()));
            const std::string owner = hex(holders[j]->l.token()) + "\n";
            const std::string rec = admin.command({"HGET", permits_of(name), other}).text;
            CHECK(rec.compare(0, owner.size(), owner) == 0);
        }
    }
    for (unsigned p = 0; p < 3; ++p) {
        CHECK(admin.command({"EXISTS", permit_key_of(name, p)}).integer == 0);
    }

    // Nothing left of the semaphore: another limit is a new one.
    auto other = make_contender(urls, name, permit_options(2));
    const op_result r = must_take(other->l);
    CHECK(r.event.permit < 2);
    CHECK(admin.command({"HGET", permits_of(name), "limit"}).text == "2");
    must_release(other->l);
    CHECK(admin.command({"EXISTS", permits_of(name)}).integer == 0);
}

TEST_CASE("permits redis: another limit while held fails at once with permits_differ",
          "[integration][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "permits-differ";
    url_list urls({redis_url(srv)});
    auto a = make_contender(urls, name, permit_options(3));
    auto b = make_contender(urls, name, permit_options(3));
    must_take(a->l);
    must_take(b->l);
    const std::string key_a = permit_key_of(name, static_cast<unsigned>(a->l.permit()));
    const std::string key_b = permit_key_of(name, static_cast<unsigned>(b->l.permit()));
    const long long expiry_a = expires_at(admin, key_a);
    const long long expiry_b = expires_at(admin, key_b);

    const unsigned limits[] = {2, 4, 1};
    for (unsigned limit : limits) {
        INFO("limit " << limit);
        auto x = make_contender(urls, name, permit_options(limit));
        REQUIRE(x->c.connect(port::now() + duration::seconds(5)) == 1);
        recorder rec;
        rec.listen(x->l);
        // The acquire script reads the limit with one HGET: counting them
        // counts the acquire requests, which a retry would repeat.
        const long long hgets = command_calls(admin, "hget");
        const op_result r = x->l.acquire(duration::seconds(5));
        INFO(what(r) << "; events: " << rec.list());
        REQUIRE(r.error == client_errc::ok);
        CHECK(r.event.kind == lock_event_kind::failed);
        CHECK(r.event.reason == lock_failure::permits_differ);
        CHECK(r.event.permits_found == 3);
        CHECK(command_calls(admin, "hget") == hgets + 1);
        CHECK(rec.count(lock_event_kind::failed) == 1);
        CHECK(x->l.permit() == -1);
        x->c.run_for(duration::millis(100));  // a cleanup, if any, is out

        // The holders' keys are untouched.
        CHECK(admin.command({"GET", key_a}).text == hex(a->l.token()));
        CHECK(admin.command({"GET", key_b}).text == hex(b->l.token()));
        CHECK(expires_at(admin, key_a) == expiry_a);
        CHECK(expires_at(admin, key_b) == expiry_b);
        CHECK(admin.command({"HGET", permits_of(name), "limit"}).text == "3");
        CHECK(admin.command({"HLEN", permits_of(name)}).integer == 1);  // no records
        for (unsigned p = 0; p < 3; ++p) {
            CHECK(admin.command({"GET", permit_key_of(name, p)}).text != hex(x->l.token()));
        }
    }
    must_release(a->l);
    must_release(b->l);
}

TEST_CASE("permits redis: a permit key of another type counts as taken", "[integration][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    // A name with a hash tag: keys `name:permits`, `name:permit:i`.
    const char* name = "{perm-tag}wrongtype";
    url_list urls({redis_url(srv)});
    const std::string wrong = permit_key_of(name, 0);
    REQUIRE(admin.command({"HSET", wrong, "f", "v"}).integer == 1);
    lock_options o = permit_options(2);
    o.holder = holder_text;
    auto a = make_contender(urls, name, o);
    auto b = make_contender(urls, name, o);
    // The scan starts at a random permit: several tries start at the hash's.
    for (int i = 0; i < 8; ++i) {
        INFO("try " << i);
        const long long from = server_time_s(admin);
        const op_result r = must_take(a->l);
        const long long to = server_time_s(admin);
        CHECK(r.event.permit == 1);
        check_permit(admin, name, a->l, from, to);

        // Both taken, as the other finds.
        const op_result busy = b->l.try_acquire();
        INFO(what(busy));
        REQUIRE(busy.error == client_errc::ok);
        CHECK(busy.event.kind == lock_event_kind::busy);

        must_release(a->l);
        CHECK(admin.command({"EXISTS", permit_key_of(name, 1)}).integer == 0);
        CHECK(admin.command({"HEXISTS", permits_of(name), "1"}).integer == 0);
        // Permit 0 still counts as taken, so the hash stays.
        CHECK(admin.command({"HGET", permits_of(name), "limit"}).text == "2");
        CHECK(admin.command({"TYPE", wrong}).text == "hash");
        CHECK(admin.command({"HGET", wrong, "f"}).text == "v");
    }
}

TEST_CASE("permits redis: fencing tokens increase and are at least the server's TIME",
          "[integration][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "permits-fenced";
    url_list urls({redis_url(srv)});
    const lock_options o = permit_options(2, ttl_ms, lock_mode::fenced);
    auto a = make_contender(urls, name, o);
    auto b = make_contender(urls, name, o);
    std::uint64_t last = 0;
    // a and b in turns, a holding while b takes the other permit.
    for (int i = 0; i < 4; ++i) {
        INFO("turn " << i);
        client_lock& first = i % 2 == 0 ? a->l : b->l;
        client_lock& second = i % 2 == 0 ? b->l : a->l;
        for (client_lock* l : {&first, &second}) {
            const long long now_us = server_time_us(admin);
            const op_result r = must_take(*l);
            CHECK(r.event.fence == l->fence());
            CHECK(r.event.fence > last);
            CHECK(static_cast<long long>(r.event.fence) >= now_us);
            CHECK(admin.command({"GET", fence_key_of(name)}).text == std::to_string(r.event.fence));
            last = r.event.fence;
        }
        must_release(first);
        must_release(second);
        // The counter stays for the next.
        CHECK(admin.command({"GET", fence_key_of(name)}).text == std::to_string(last));
    }
    // A counter ahead of the clock: the next token is one above it.
    const std::string ahead = std::to_string(server_time_us(admin) + 1000000000000LL);
    REQUIRE(admin.command({"SET", fence_key_of(name), ahead}).text == "OK");
    const op_result r = must_take(a->l);
    CHECK(std::to_string(r.event.fence - 1) == ahead);
    must_release(a->l);
}

TEST_CASE("permits redis: a holder that stops renewing frees its permit with its ttl",
          "[integration][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "permits-dead";
    url_list urls({redis_url(srv)});
    auto a = make_contender(urls, name, permit_options(2));
    must_take(a->l);
    const std::string key_a = permit_key_of(name, static_cast<unsigned>(a->l.permit()));
    std::string key_dead;
    std::string token_dead;
    {
        // Its client goes away holding the permit, without a release.
        auto dead = make_contender(urls, name, permit_options(2, 2000));
        must_take(dead->l);
        key_dead = permit_key_of(name, static_cast<unsigned>(dead->l.permit()));
        token_dead = hex(dead->l.token());
    }
    CHECK(admin.command({"GET", key_dead}).text == token_dead);

    auto n = make_contender(urls, name, permit_options(2, 1000));
    const op_result busy = n->l.try_acquire();
    {
        INFO(what(busy));
        REQUIRE(busy.error == client_errc::ok);
        CHECK(busy.event.kind == lock_event_kind::busy);
        CHECK(busy.event.holder_ttl_ms > 0);
        CHECK(busy.event.holder_ttl_ms <= 2000);  // the soonest: the dead holder's
    }
    // Waiting, it finds the dead holder's permit free once its ttl passed.
    const op_result r = n->l.acquire(duration::seconds(10));
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    REQUIRE(r.event.kind == lock_event_kind::acquired);
    CHECK(permit_key_of(name, static_cast<unsigned>(n->l.permit())) == key_dead);
    CHECK(admin.command({"GET", key_dead}).text == hex(n->l.token()));
    CHECK(admin.command({"GET", key_a}).text == hex(a->l.token()));
    must_release(n->l);
    must_release(a->l);
    CHECK(admin.command({"EXISTS", permits_of(name)}).integer == 0);
}
