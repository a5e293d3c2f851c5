// The holder record (lock_options::holder) against real redis-servers, through
// the client: what an acquire writes into the renewal mark (owner, the
// server's TIME, the text; the key's ttl) in plain, fenced and reentrant mode,
// on one node and on three; that the lock's key is what it is without a
// record; that a renew keeps the record and extends it with the key, a busy
// acquire leaves it alone, and a release deletes it. Read back with a plain
// connection and edgelock::read_holder_record.
//
// Timing checks are sanity bounds several times what a run needs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>
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

// The server's clock, in whole seconds (TIME's first element).
long long server_time_s(redis_client& admin) {
    const reply t = admin.command({"TIME"});
    REQUIRE(t.type == '*');
    REQUIRE(t.elements.size() == 2);
    return std::atoll(t.elements[0].text.c_str());
}

struct seen_record {
    std::string raw;  // the mark's value
    std::string owner;
    std::uint64_t since_s = 0;
    std::string text;
};

// The record in the renewal mark of `name`, which must hold one.
seen_record must_read_record(redis_client& admin, const std::string& name) {
    const reply r = admin.command({"GET", renewal_mark_of(name)});
    INFO("GET " << renewal_mark_of(name));
    REQUIRE(r.type == '$');  // not nil: the mark exists
    seen_record out;
    out.raw = r.text;
    holder_record rec;
    INFO("value: " << out.raw);
    REQUIRE(read_holder_record(str_view(out.raw.data(), out.raw.size()), rec));
    out.owner.assign(rec.owner.data, rec.owner.size);
    out.since_s = rec.since_s;
    out.text.assign(rec.text.data, rec.text.size);
    return out;
}

// The record says `owner` and the holder text, taken at a server time in
// [from_s, to_s]; returns its raw value.
std::string check_record(redis_client& admin, const std::string& name, const std::string& owner,
                         long long from_s, long long to_s) {
    const seen_record r = must_read_record(admin, name);
    CHECK(r.owner == owner);
    CHECK(r.text == holder_text);
    CHECK(static_cast<long long>(r.since_s) >= from_s);
    CHECK(static_cast<long long>(r.since_s) <= to_s);
    // Exactly the three fields: owner, the seconds in decimal, the text.
    CHECK(r.raw == owner + "\n" + std::to_string(r.since_s) + "\n" + holder_text);
    return r.raw;
}

// The mark's ttl is the key's (within 50 ms); returns the mark's.
long long check_same_ttl(redis_client& admin, const std::string& name) {
    const long long mark = admin.command({"PTTL", renewal_mark_of(name)}).integer;
    const long long key = admin.command({"PTTL", key_of(name)}).integer;
    INFO("PTTL mark " << mark << ", key " << key);
    CHECK(mark > 0);
    CHECK(key > 0);
    CHECK(mark <= ttl_ms);
    CHECK(std::llabs(mark - key) <= 50);
    return mark;
}

lock_options holder_options(lock_mode mode, const char* holder = holder_text) {
    lock_options o = options(ttl_ms, node_timeout_ms, mode);
    o.holder = holder;
    return o;
}

// Sleeps so the ttls drop, renews, and checks the record is the same and its
// ttl back with the key's.
void renew_keeps_record(client_lock& l, redis_client& admin, const std::string& name,
                        const std::string& raw) {
    sleep_ms(300);
    const long long dropped = check_same_ttl(admin, name);
    CHECK(dropped <= static_cast<long long>(ttl_ms) - 250);
    const op_result r = l.renew();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    REQUIRE(r.event.kind == lock_event_kind::renewed);
    CHECK(admin.command({"GET", renewal_mark_of(name)}).text == raw);
    const long long renewed = check_same_ttl(admin, name);
    CHECK(renewed >= dropped + 200);
    CHECK(renewed > static_cast<long long>(ttl_ms) - 1000);
}

// Released: the key and the mark (record and all) are gone.
void release_deletes_record(client_lock& l, redis_client& admin, const std::string& name) {
    must_release(l);
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
    CHECK(admin.command({"EXISTS", renewal_mark_of(name)}).integer == 0);
}

// Another lock with a holder of its own finds the key taken: busy, and the
// record and the key are as they were.
void busy_leaves_record(client_lock& other, redis_client& admin, const std::string& name,
                        const std::string& raw) {
    const std::string key_type = admin.command({"TYPE", key_of(name)}).text;
    const op_result r = other.try_acquire();
    INFO(what(r));
    REQUIRE(r.error == client_errc::ok);
    CHECK(r.event.kind == lock_event_kind::busy);
    CHECK(admin.command({"GET", renewal_mark_of(name)}).text == raw);
    CHECK(admin.command({"TYPE", key_of(name)}).text == key_type);
}

}  // namespace

TEST_CASE("holder redis: a plain lock's record is written, kept, and deleted",
          "[integration][lock][holder]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "holder-plain";
    url_list urls({redis_url(srv)});
    client<1> ca;
    client<1> cb;
    configure(ca, urls);
    configure(cb, urls);
    client_lock a;
    client_lock b;
    REQUIRE(a.attach(ca, name, holder_options(lock_mode::plain), no_watchdog()) == client_errc::ok);
    REQUIRE(b.attach(cb, name, holder_options(lock_mode::plain, "host=gw-18 pid=1 label=other"),
                     no_watchdog()) == client_errc::ok);

    const long long from = server_time_s(admin);
    must_acquire(a);
    const long long to = server_time_s(admin);
    const std::string token = hex(a.token());
    // The key is what it is without a record: the token, with the ttl.
    CHECK(admin.command({"TYPE", key_of(name)}).text == "string");
    CHECK(admin.command({"GET", key_of(name)}).text == token);
    const std::string raw = check_record(admin, name, token, from, to);
    CHECK(check_same_ttl(admin, name) > static_cast<long long>(ttl_ms) - 1000);

    busy_leaves_record(b, admin, name, raw);
    CHECK(admin.command({"GET", key_of(name)}).text == token);

    renew_keeps_record(a, admin, name, raw);
    release_deletes_record(a, admin, name);

    // b now takes it: its own record replaces nothing, it is new.
    const long long from_b = server_time_s(admin);
    must_acquire(b);
    const seen_record rb = must_read_record(admin, name);
    CHECK(rb.owner == hex(b.token()));
    CHECK(rb.text == "host=gw-18 pid=1 label=other");
    CHECK(static_cast<long long>(rb.since_s) >= from_b);
    release_deletes_record(b, admin, name);
}

TEST_CASE("holder redis: control, a plain lock without a holder writes no record",
          "[integration][lock][holder]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "holder-none";
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    REQUIRE(l.attach(c, name, options(ttl_ms, node_timeout_ms), no_watchdog()) == client_errc::ok);
    must_acquire(l);
    CHECK(admin.command({"GET", key_of(name)}).text == hex(l.token()));
    CHECK(admin.command({"EXISTS", renewal_mark_of(name)}).integer == 0);
    // A renew writes the mark, empty: no record in it.
    const op_result r = l.renew();
    REQUIRE(r.error == client_errc::ok);
    REQUIRE(r.event.kind == lock_event_kind::renewed);
    const reply mark = admin.command({"GET", renewal_mark_of(name)});
    CHECK(mark.type == '$');
    CHECK(mark.text.empty());
    holder_record rec;
    CHECK_FALSE(read_holder_record(str_view(mark.text.data(), mark.text.size()), rec));
    release_deletes_record(l, admin, name);
}

TEST_CASE("holder redis: a renew that may resurrect keeps the record",
          "[integration][lock][holder]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "holder-resurrect";
    url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    lock_options o = holder_options(lock_mode::plain);
    o.renew_resurrects = true;  // the renew is the acquire script, without the record
    REQUIRE(l.attach(c, name, o, no_watchdog()) == client_errc::ok);
    const long long from = server_time_s(admin);
    must_acquire(l);
    const long long to = server_time_s(admin);
    const std::string raw = check_record(admin, name, hex(l.token()), from, to);
    renew_keeps_record(l, admin, name, raw);
    release_deletes_record(l, admin, name);
}

TEST_CASE("holder redis: a fenced lock's record, one node", "[integration][lock][holder]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "holder-fenced";
    url_list urls({redis_url(srv)});
    client<1> ca;
    client<1> cb;
    configure(ca, urls);
    configure(cb, urls);
    client_lock a;
    client_lock b;
    REQUIRE(a.attach(ca, name, holder_options(lock_mode::fenced), no_watchdog()) ==
            client_errc::ok);
    REQUIRE(b.attach(cb, name, holder_options(lock_mode::fenced, "host=gw-18"), no_watchdog()) ==
            client_errc::ok);

    const long long from = server_time_s(admin);
    must_acquire(a);
    const long long to = server_time_s(admin);
    const std::string token = hex(a.token());
    CHECK(a.fence() > 0);
    CHECK(admin.command({"GET", key_of(name)}).text == token);
    CHECK(admin.command({"GET", fence_key_of(name)}).text == std::to_string(a.fence()));
    const std::string raw = check_record(admin, name, token, from, to);
    CHECK(check_same_ttl(admin, name) > static_cast<long long>(ttl_ms) - 1000);

    busy_leaves_record(b, admin, name, raw);
    CHECK(admin.command({"GET", key_of(name)}).text == token);
    CHECK(admin.command({"GET", fence_key_of(name)}).text == std::to_string(a.fence()));

    renew_keeps_record(a, admin, name, raw);
    release_deletes_record(a, admin, name);
    CHECK(admin.command({"EXISTS", fence_key_of(name)}).integer == 1);  // the counter stays
}

TEST_CASE("holder redis: a reentrant lock's record names the owner",
          "[integration][lock][holder]") {
    redis_server srv;
    redis_client admin(srv.port());
    const char* name = "holder-reentrant";
    url_list urls({redis_url(srv)});
    client<1> ca;
    client<1> cb;
    configure(ca, urls);
    configure(cb, urls);

    SECTION("an owner given") {
        const char* owner = "agent-7/task-3";
        client_lock a;
        client_lock b;
        lock_options oa = holder_options(lock_mode::reentrant);
        oa.owner = owner;
        lock_options ob = holder_options(lock_mode::reentrant, "host=gw-18");
        ob.owner = "agent-8/task-1";
        REQUIRE(a.attach(ca, name, oa, no_watchdog()) == client_errc::ok);
        REQUIRE(b.attach(cb, name, ob, no_watchdog()) == client_errc::ok);

        const long long from = server_time_s(admin);
        must_acquire(a);
        const long long to = server_time_s(admin);
        // The key is the owner's hash, one hold (the owner's count and the
        // hold's own field): as without a record.
        CHECK(admin.command({"TYPE", key_of(name)}).text == "hash");
        CHECK(admin.command({"HLEN", key_of(name)}).integer == 2);
        CHECK(admin.command({"HGET", key_of(name), owner}).text == "1");
        CHECK(admin.command({"HGET", key_of(name), "#" + hex(a.token())}).text == "1");
        const std::string raw = check_record(admin, name, owner, from, to);
        CHECK(check_same_ttl(admin, name) > static_cast<long long>(ttl_ms) - 1000);

        busy_leaves_record(b, admin, name, raw);
        CHECK(admin.command({"HLEN", key_of(name)}).integer == 2);

        renew_keeps_record(a, admin, name, raw);
        release_deletes_record(a, admin, name);
    }
    SECTION("no owner: the acquisition's own, not the round's token") {
        client_lock a;
        REQUIRE(a.attach(ca, name, holder_options(lock_mode::reentrant), no_watchdog()) ==
                client_errc::ok);
        const long long from = server_time_s(admin);
        must_acquire(a);
        const long long to = server_time_s(admin);
        const std::string hold = "#" + hex(a.token());
        const std::vector<reply> fields = admin.command({"HKEYS", key_of(name)}).elements;
        REQUIRE(fields.size() == 2);
        const std::string owner = fields[0].text == hold ? fields[1].text : fields[0].text;
        CHECK(owner.size() == 32);
        CHECK(owner != hex(a.token()));
        CHECK(admin.command({"HGET", key_of(name), hold}).text == "1");
        CHECK(admin.command({"HGET", key_of(name), owner}).text == "1");
        const std::string raw = check_record(admin, name, owner, from, to);
        renew_keeps_record(a, admin, name, raw);
        release_deletes_record(a, admin, name);
    }
}

TEST_CASE("holder redis: three nodes each hold the record", "[integration][lock][holder]") {
    std::vector<std::unique_ptr<redis_server>> servers;
    std::vector<std::unique_ptr<redis_client>> admins;
    std::vector<std::string> u;
    for (std::size_t i = 0; i < 3; ++i) {
        servers.emplace_back(new redis_server());
        admins.emplace_back(new redis_client(servers.back()->port()));
        u.push_back(redis_url(*servers.back()));
    }
    url_list urls(u);
    client<3> c;
    configure(c, urls);
    REQUIRE(c.connect(port::now() + duration::seconds(5)) == 3);
    const char* name = "holder-redlock";

    const lock_mode modes[] = {lock_mode::plain, lock_mode::fenced};
    const char* const mode_names[] = {"plain", "fenced"};
    for (std::size_t m = 0; m < 2; ++m) {
        const lock_mode mode = modes[m];
        DYNAMIC_SECTION(mode_names[m] << ", a quorum of all three: every node") {
            client_lock l;
            lock_options o = holder_options(mode);
            // The round waits for every node: a reply after a quorum of two
            // would be late, and a late acquire is undone on its node.
            o.quorum = 3;
            REQUIRE(l.attach(c, name, o, no_watchdog()) == client_errc::ok);
            long long from[3];
            for (std::size_t i = 0; i < 3; ++i) {
                from[i] = server_time_s(*admins[i]);
            }
            must_acquire(l);
            const std::string token = hex(l.token());
            std::string raw[3];
            for (std::size_t i = 0; i < 3; ++i) {
                INFO("node " << i);
                redis_client& admin = *admins[i];
                CHECK(admin.command({"GET", key_of(name)}).text == token);
                raw[i] = check_record(admin, name, token, from[i], server_time_s(admin));
                CHECK(check_same_ttl(admin, name) > static_cast<long long>(ttl_ms) - 1000);
            }
            const op_result r = l.renew();
            REQUIRE(r.error == client_errc::ok);
            REQUIRE(r.event.kind == lock_event_kind::renewed);
            for (std::size_t i = 0; i < 3; ++i) {
                INFO("node " << i);
                CHECK(admins[i]->command({"GET", renewal_mark_of(name)}).text == raw[i]);
                check_same_ttl(*admins[i], name);
            }
            must_release(l);
            for (std::size_t i = 0; i < 3; ++i) {
                INFO("node " << i);
                CHECK(admins[i]->command({"EXISTS", key_of(name)}).integer == 0);
                CHECK(admins[i]->command({"EXISTS", renewal_mark_of(name)}).integer == 0);
            }
        }
        DYNAMIC_SECTION(
            mode_names[m]
            << ", the default quorum of two: a node has the record where it has the key") {
            client_lock l;
            REQUIRE(l.attach(c, name, holder_options(mode), no_watchdog()) == client_errc::ok);
            const long long from = server_time_s(*admins[0]) - 1;  // three clocks, one machine
            must_acquire(l);
            c.run_for(duration::millis(200));  // late replies in, their undoing out
            const std::string token = hex(l.token());
            int holders = 0;
            for (std::size_t i = 0; i < 3; ++i) {
                INFO("node " << i);
                redis_client& admin = *admins[i];
                if (admin.command({"GET", key_of(name)}).text == token) {
                    ++holders;
                    check_record(admin, name, token, from, server_time_s(admin) + 1);
                    check_same_ttl(admin, name);
                } else {
                    CHECK(admin.command({"EXISTS", renewal_mark_of(name)}).integer == 0);
                }
            }
            CHECK(holders >= 2);
            must_release(l);
            for (std::size_t i = 0; i < 3; ++i) {
                INFO("node " << i);
                CHECK(admins[i]->command({"EXISTS", key_of(name)}).integer == 0);
                CHECK(admins[i]->command({"EXISTS", renewal_mark_of(name)}).integer == 0);
            }
        }
    }
}
