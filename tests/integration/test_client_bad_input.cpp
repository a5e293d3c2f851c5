// Bad input to the driver against real redis-servers: every refused call says
// why and changes nothing (configure, command, a held lock's misuse, resume,
// calls from a callback, the event-loop API, attach).
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "edgelock/lock_scripts.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp_encoder.hpp"
#include "integration/client_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"

using namespace edgelock;
using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

// --- bad input: every refused call says why AND changes nothing ---------------------------
//
// Not the node list, not a connection (none made, none dropped), not a held
// lock's token, fence or validity, not a pending operation's retry policy.
// "client: configuration and misuse errors" above checks the error codes; the
// cases here add what stays unchanged, and the calls it does not reach:
// command(), resume(), the event-loop entry points, calls from callbacks.

namespace {

// A held lock as its owner sees it, and as Redis holds it.
struct held_view {
    bool held = false;
    lock_state state = lock_state::unconfigured;
    std::string token;
    std::uint64_t fence = 0;
    instant validity;
    std::string value;  // GET {name}

    bool operator==(const held_view& o) const {
        return held == o.held && state == o.state && token == o.token && fence == o.fence &&
               validity == o.validity && value == o.value;
    }
};

held_view view_of(const client_lock& l, redis_client& admin, const char* name) {
    held_view v;
    v.held = l.held();
    v.state = l.state();
    v.token = hex(l.token());
    v.fence = l.fence();
    v.validity = l.validity_deadline();
    const edgelock_test::reply r = admin.command({"GET", key_of(name)});
    v.value = r.type == '$' ? r.text : std::string("<none>");
    return v;
}

std::string show(const held_view& v) {
    return std::string("held=") + (v.held ? "yes" : "no") + " state=" + describe(v.state) +
           " token=" + v.token + " fence=" + std::to_string(v.fence) +
           " validity=" + std::to_string(v.validity.us) + " redis=" + v.value;
}

}  // namespace

// --- bad input: client_base::configure ----------------------------------------------------

TEST_CASE("client bad input: a rejected configure keeps the nodes and their connections",
          "[integration][bad-input]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    client<2> c;
    configure(c, urls);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    const long long id = connection_id(c, 0);

    const std::string good = redis_url(srv);
    const std::string long_secret(node_url_max_secret + 1, 's');
    const std::string name65(65, 'n');
    auto with = [](auto f) {
        client_options o;
        f(o);
        return o;
    };
    struct row {
        const char* what;
        std::vector<std::string> urls;  // empty: a null array
        std::size_t count;
        client_options options;
        client_errc want;
    };
    const std::vector<row> rows = {
        {"a null URL array with a count", {}, 1, client_options{}, client_errc::bad_node_count},
        {"stall_timeout 0",
         {good},
         1,
         with([](client_options& o) { o.stall_timeout = duration{}; }),
         client_errc::bad_option},
        {"reconnect_min 0",
         {good},
         1,
         with([](client_options& o) { o.reconnect_min = duration{}; }),
         client_errc::bad_option},
        {"reconnect_min above reconnect_max",
         {good},
         1,
         with([](client_options& o) {
             o.reconnect_min = duration::seconds(3);
             o.reconnect_max = duration::seconds(2);
         }),
         client_errc::bad_option},
        {"a client name of 65 bytes",
         {good},
         1,
         with([&](client_options& o) { o.client_name = str_view(name65.data(), name65.size()); }),
         client_errc::bad_option},
        {"a client name with a NUL",
         {good},
         1,
         with([](client_options& o) { o.client_name = str_view("a\0b", 3); }),
         client_errc::bad_option},
        {"a client name with a newline",
         {good},
         1,
         with([](client_options& o) { o.client_name = "a\r\nCONFIG SET"; }),
         client_errc::bad_option},
        {"a user name of 257 bytes",
         {good},
         1,
         with([&](client_options& o) {
             o.username = str_view(long_secret.data(), long_secret.size());
             o.password = "pw";
         }),
         client_errc::secret_too_long},
        {"a password of 257 bytes",
         {good},
         1,
         with([&](client_options& o) {
             o.password = str_view(long_secret.data(), long_secret.size());
         }),
         client_errc::secret_too_long},
        {"a user name in the options, no password anywhere",
         {good},
         1,
         with([](client_options& o) { o.username = "gw"; }),
         client_errc::user_without_password},
        {"a bad URL after a good one",
         {good, good + "/x"},
         2,
         client_options{},
         client_errc::bad_url},
        {"TLS after a good one",
         {good, "rediss://127.0.0.1:1"},
         2,
         client_options{},
         client_errc::tls_not_built_in},
    };
    for (const row& r : rows) {
        INFO(r.what);
        std::vector<str_view> views;
        for (const std::string& u : r.urls) {
            views.emplace_back(u.data(), u.size());
        }
        CHECK(c.configure(r.urls.empty() ? nullptr : views.data(), r.count, r.options) == r.want);
        CHECK(c.node_count() == 1);
        CHECK(c.ready_count() == 1);
        const node_info n = c.node(0);
        INFO(what(n));
        CHECK(n.state == node_state::ready);
        CHECK(n.error == node_error::none);
        CHECK(c.node(1).state == node_state::down);
    }
    CHECK(c.bad_url_index() == 1);
    CHECK(c.bad_url_error() == url_errc::tls_not_built_in);

    // The same connection, still named as configured, still answering.
    CHECK(connection_id(c, 0) == id);
    CHECK(must_command(c, 0, {"CLIENT", "GETNAME"}).text == "edgelock");

    // At the limits it is accepted: a 64-byte name, secrets of 256 bytes are
    // not refused (the server then judges the password).
    const std::string name64(64, 'n');
    client_options o;
    o.client_name = str_view(name64.data(), name64.size());
    configure(c, urls, o);
    CHECK(must_command(c, 0, {"CLIENT", "GETNAME"}).text == name64);
}

// --- client_base::command -----------------------------------------------------------------

TEST_CASE("client bad input: command() checks its arguments before touching the network",
          "[integration][bad-input]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    client<1> c;
    const str_view ping[] = {"PING"};
    command_reply rec;
    CHECK(c.command(0, ping, 1, port::now() + duration::seconds(1), &command_reply::take, &rec) ==
          client_errc::not_configured);
    configure(c, urls);

    // The largest ECHO the send buffer holds, and one byte more.
    std::size_t fits = 1;
    for (;;) {
        const std::string probe(fits + 1, 'e');
        const str_view args[] = {"ECHO", str_view(probe.data(), probe.size())};
        if (resp_command_size(args, 2) > EDGELOCK_CLIENT_TX_BUFFER) {
            break;
        }
        ++fits;
    }
    const std::string too_big(fits + 1, 'e');
    const str_view echo_big[] = {"ECHO", str_view(too_big.data(), too_big.size())};
    REQUIRE(resp_command_size(echo_big, 2) == EDGELOCK_CLIENT_TX_BUFFER + 1);

    struct row {
        const char* what;
        std::uint8_t index;
        const str_view* args;
        std::size_t argc;
        reply_callback fn;
    };
    const row rows[] = {
        {"node index 1 of 1", 1, ping, 1, &command_reply::take},
        {"node index 255", 255, ping, 1, &command_reply::take},
        {"no callback", 0, ping, 1, nullptr},
        {"no arguments", 0, ping, 0, &command_reply::take},
        {"a null argument array with a count", 0, nullptr, 2, &command_reply::take},
        {"a command larger than the send buffer", 0, echo_big, 2, &command_reply::take},
    };
    const auto refuse_all = [&](node_state expected) {
        for (const row& r : rows) {
            INFO(r.what);
            const instant t = port::now();
            CHECK(c.command(r.index, r.args, r.argc, t + duration::seconds(3), r.fn, &rec) ==
                  client_errc::bad_option);
            CHECK(ms_since(t) < 200);  // refused at once, not at the deadline
            CHECK(rec.calls == 0);
            const node_info n = c.node(0);
            INFO(what(n));
            CHECK(n.state == expected);
        }
    };
    // Not connected yet: a refused command connects nothing.
    refuse_all(node_state::down);
    CHECK(c.next_deadline().is_never());

    // Connected: refused commands queue nothing, so the next reply is the next command's.
    CHECK(must_command(c, 0, {"PING"}).text == "PONG");
    refuse_all(node_state::ready);
    const std::string fitting(fits, 'e');
    const command_reply echoed = must_command(c, 0, {"ECHO", fitting});
    CHECK(echoed.text == fitting);
    CHECK(must_command(c, 0, {"ECHO", "next"}).text == "next");
}

TEST_CASE("client bad input: command() on a dead or frozen node ends in bounded time",
          "[integration][bad-input]") {
    redis_server srv;
    redis_server dead;
    dead.kill();
    const url_list urls({redis_url(srv), redis_url(dead)});
    client<2> c;
    configure(c, urls);
    const str_view ping[] = {"PING"};
    command_reply rec;

    instant t = port::now();
    CHECK(c.command(1, ping, 1, t + duration::seconds(3), &command_reply::take, &rec) ==
          client_errc::node_unavailable);
    CHECK(ms_since(t) < 1500);  // refused: known at once, not at the deadline
    CHECK(rec.calls == 0);
    CHECK(c.node(1).error == node_error::refused);

    // A frozen node: given up at the deadline; its late reply goes to nobody.
    CHECK(must_command(c, 0, {"PING"}).text == "PONG");
    srv.pause();
    t = port::now();
    CHECK(c.command(0, ping, 1, t + duration::millis(300), &command_reply::take, &rec) ==
          client_errc::timed_out);
    CHECK(ms_since(t) >= 250);
    CHECK(ms_since(t) < 1500);
    srv.resume();
    CHECK(must_command(c, 0, {"ECHO", "after"}).text == "after");
    CHECK(rec.calls == 0);
}

// --- client_lock: misuse of a held lock ---------------------------------------------------

TEST_CASE("client bad input: misuse of a held lock leaves it held, with the same token",
          "[integration][bad-input]") {
    redis_server srv;
    redis_server other_srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    const url_list other_urls({redis_url(other_srv)});
    client<1> c;
    client<1> other;
    configure(c, urls);
    configure(other, other_urls);
    const char* name = "bad-held";
    client_lock l;
    REQUIRE(l.attach(c, name, options(10000, 500, lock_mode::fenced), no_watchdog()) ==
            client_errc::ok);
    must_acquire(l);
    const held_view before = view_of(l, admin, name);
    REQUIRE(before.held);
    REQUIRE(before.value == before.token);
    REQUIRE(before.fence > 0);

    owner_token theirs;
    REQUIRE(theirs.from_hex("00112233445566778899aabbccddeeff", 32));
    const auto unchanged = [&](const char* what) {
        INFO(what);
        const held_view now = view_of(l, admin, name);
        INFO("before: " << show(before) << "\nafter:  " << show(now));
        CHECK(now == before);
        CHECK(l.attached());
    };

    CHECK(l.try_acquire().error == client_errc::busy);
    unchanged("try_acquire");
    CHECK(l.acquire(duration::millis(500)).error == client_errc::busy);
    unchanged("acquire");
    CHECK(l.start_acquire(3, duration::seconds(1)) == client_errc::busy);
    unchanged("start_acquire");
    CHECK(l.start_acquire(0, duration::seconds(1)) == client_errc::bad_option);
    unchanged("start_acquire with 0 tries");
    CHECK(l.resume(theirs) == client_errc::busy);
    unchanged("resume");
    CHECK(l.attach(other, name, options(10000, 500)) == client_errc::already_attached);
    unchanged("attach to another client");
    CHECK(c.configure(urls.views.data(), 1, client_options{}) == client_errc::in_use);
    unchanged("configure while attached");
    CHECK(other.ready_count() == 0);  // the other client was never touched

    must_release(l);
    CHECK(admin.command({"EXISTS", key_of(name)}).integer == 0);
}

// A rejected start_acquire/acquire/try_acquire must not rewrite the retry policy
// of an acquisition that was started but is still waiting for its node.
TEST_CASE("client bad input: a refused acquire leaves a pending acquisition's retries",
          "[integration][bad-input]") {
    redis_server srv;
    const url_list urls({redis_url(srv)});
    const char* name = "bad-pending";

    // Someone else holds the lock: an acquisition ends busy after its tries.
    client<1> holder_client;
    configure(holder_client, urls);
    client_lock holder;
    REQUIRE(holder.attach(holder_client, name, options(10000, 500), no_watchdog()) ==
            client_errc::ok);
    must_acquire(holder);

    client<1> c;  // not connected: the acquisition waits for the set-up
    configure(c, urls);
    client_lock l;
    recorder rec;
    rec.listen(l);
    REQUIRE(l.attach(c, name, options(10000, 500), no_watchdog()) == client_errc::ok);
    REQUIRE(l.start_acquire(1, duration{}) == client_errc::ok);  // one try
    REQUIRE(c.node(0).state == node_state::down);  // nothing happens before the next call
    c.on_timeout();                                // which starts connecting
    const node_state s = c.node(0).state;
    INFO("node 0: " << describe(s));
    REQUIRE(l.state() == lock_state::idle);  // started, not yet handed to the machine
    REQUIRE((s == node_state::connecting || s == node_state::handshake));

    const instant t = port::now();
    CHECK(l.try_acquire().error == client_errc::busy);
    CHECK(l.acquire(duration::seconds(30)).error == client_errc::busy);
    CHECK(l.start_acquire(50, duration::seconds(30)) == client_errc::busy);
    CHECK(ms_since(t) < 300);
    CHECK(rec.events.empty());

    // One try, as asked first: busy, and nothing left running or waiting.
    const instant give_up = port::now() + duration::seconds(3);
    while (rec.events.empty() && port::now() < give_up) {
        REQUIRE(c.run_for(duration::millis(20)) == client_errc::ok);
    }
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].kind == lock_event_kind::busy);
    REQUIRE(c.run_for(duration::millis(300)) == client_errc::ok);
    CHECK(l.state() == lock_state::idle);
    CHECK(rec.events.size() == 1);
    CHECK(c.next_deadline().is_never());
    must_release(holder);
}

// --- client_lock::resume --------------------------------------------------------------------

TEST_CASE("client bad input: resume refuses what it cannot take over", "[integration][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    owner_token theirs;
    REQUIRE(theirs.from_hex("00112233445566778899aabbccddeeff", 32));

    client_lock unattached;
    CHECK(unattached.resume(theirs) == client_errc::not_attached);
    CHECK_FALSE(unattached.held());
    CHECK(hex(unattached.token()) == std::string(32, '0'));

    client_lock reentrant;
    REQUIRE(reentrant.attach(c, "bad-resume-r", options(5000, 200, lock_mode::reentrant),
                             no_watchdog()) == client_errc::ok);
    CHECK(reentrant.resume(theirs) == client_errc::lock_rejected);
    CHECK(reentrant.lock_error() == lock_errc::bad_mode_option);
    CHECK(reentrant.state() == lock_state::idle);
    CHECK_FALSE(reentrant.held());
    CHECK(hex(reentrant.token()) == std::string(32, '0'));
    // Refused, not broken: it still acquires.
    must_acquire(reentrant);
    must_release(reentrant);

    // An acquisition waiting for its node: resume would race it.
    client<1> fresh;
    configure(fresh, urls);
    client_lock pending;
    REQUIRE(pending.attach(fresh, "bad-resume-p", options(5000, 500), no_watchdog()) ==
            client_errc::ok);
    REQUIRE(pending.start_acquire(1, duration{}) == client_errc::ok);
    CHECK(pending.resume(theirs) == client_errc::busy);
    const instant give_up = port::now() + duration::seconds(3);
    while (!pending.held() && port::now() < give_up) {
        REQUIRE(fresh.run_for(duration::millis(20)) == client_errc::ok);
    }
    REQUIRE(pending.held());
    CHECK(hex(pending.token()) != hex(theirs));
    CHECK(admin.command({"GET", key_of("bad-resume-p")}).text == hex(pending.token()));
    must_release(pending);
}

// --- calls from inside a callback -------------------------------------------------------------

namespace {

struct nested_calls {
    client_base* c = nullptr;
    client_lock* other = nullptr;
    bool done = false;
    client_errc run_for = client_errc::ok;
    client_errc run_until = client_errc::ok;
    std::uint8_t connect = 99;
    client_errc command = client_errc::ok;
    int command_replies = 0;
    op_result try_acquire;
    op_result acquire;
    op_result renew;
    op_result release;
    op_result other_try_acquire;
    std::uint8_t ready_before = 0;
    std::uint8_t ready_after = 0;

    static void on_event(void* ctx, client_lock& l, const lock_event& ev) {
        auto& s = *static_cast<nested_calls*>(ctx);
        if (ev.kind != lock_event_kind::acquired || s.done) {
            return;
        }
        s.done = true;
        s.ready_before = s.c->ready_count();
        s.run_for = s.c->run_for(duration::millis(50));
        s.run_until = s.c->run_until(port::now() + duration::millis(50));
        s.connect = s.c->connect(port::now() + duration::millis(50));
        const str_view ping[] = {"PING"};
        command_reply r;
        s.command =
            s.c->command(0, ping, 1, port::now() + duration::millis(50), &command_reply::take, &r);
        s.command_replies = r.calls;
        s.try_acquire = l.try_acquire();
        s.acquire = l.acquire(duration::millis(50));
        s.renew = l.renew();
        s.release = l.release();
        s.other_try_acquire = s.other->try_acquire();
        s.ready_after = s.c->ready_count();
    }
};

}  // namespace

TEST_CASE("client bad input: blocking calls from a callback are refused and change nothing",
          "[integration][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;
    client_lock other;
    REQUIRE(l.attach(c, "bad-nested", options(5000, 200), no_watchdog()) == client_errc::ok);
    REQUIRE(other.attach(c, "bad-nested-other", options(5000, 200), no_watchdog()) ==
            client_errc::ok);
    nested_calls s;
    s.c = &c;
    s.other = &other;
    l.set_callback(&nested_calls::on_event, &s);

    must_acquire(l);  // the callback runs inside this blocking call
    REQUIRE(s.done);
    CHECK(s.run_for == client_errc::reentered);
    CHECK(s.run_until == client_errc::reentered);
    CHECK(s.connect == 0);
    CHECK(s.command == client_errc::reentered);
    CHECK(s.command_replies == 0);
    CHECK(s.try_acquire.error == client_errc::reentered);
    CHECK(s.acquire.error == client_errc::reentered);
    CHECK(s.renew.error == client_errc::reentered);
    CHECK(s.release.error == client_errc::reentered);
    CHECK(s.other_try_acquire.error == client_errc::reentered);
    CHECK(s.ready_after == s.ready_before);

    // Nothing of that happened: the lock is held by this acquisition, the
    // other lock was never taken.
    CHECK(l.held());
    CHECK(admin.command({"GET", key_of("bad-nested")}).text == hex(l.token()));
    CHECK(other.state() == lock_state::idle);
    CHECK(admin.command({"EXISTS", key_of("bad-nested-other")}).integer == 0);
    must_release(l);
}

// --- the event-loop API and an unconfigured client ---------------------------------------------

TEST_CASE("client bad input: event-loop calls with descriptors the client does not own",
          "[integration][bad-input]") {
    // Unconfigured: everything refuses or reports nothing, and nothing breaks.
    client<2> idle;
    CHECK(idle.run_for(duration::millis(10)) == client_errc::not_configured);
    CHECK(idle.run_until(port::now() + duration::millis(10)) == client_errc::not_configured);
    CHECK(idle.connect(port::now() + duration::millis(10)) == 0);
    CHECK(idle.wanted(nullptr, 0) == 0);
    CHECK(idle.next_deadline().is_never());
    CHECK(idle.node(0).state == node_state::down);
    CHECK(idle.node_count() == 0);
    idle.on_ready(3, port::want_read);
    idle.on_timeout();
    idle.disconnect();
    CHECK(idle.ready_count() == 0);

    redis_server srv;
    const url_list urls({redis_url(srv)});
    client<2> c;
    configure(c, urls);
    REQUIRE(c.connect(port::now() + duration::seconds(3)) == 1);
    const long long id = connection_id(c, 0);

    // Capacity 0, and a null array with it: nothing written, none reported
    // (a count past what was written would send a loop past its array).
    CHECK(c.wanted(nullptr, 0) == 0);
    port::wait_entry e[2];
    e[0].fd = -7;
    e[0].want = 0x55;
    CHECK(c.wanted(e, 0) == 0);
    CHECK(e[0].fd == -7);
    CHECK(e[0].want == 0x55);
    REQUIRE(c.wanted(e, 2) == 1);
    const int fd = e[0].fd;
    REQUIRE(fd >= 0);

    // Node indexes past the configured count: a default, empty report.
    for (const std::uint8_t i : {std::uint8_t{1}, std::uint8_t{2}, std::uint8_t{255}}) {
        const node_info n = c.node(i);
        CHECK(n.state == node_state::down);
        CHECK(n.error == node_error::none);
        CHECK(n.code == 0);
        CHECK(n.message.empty());
    }

    // Readiness for descriptors that are not the client's, or none at all.
    c.on_ready(-1, 0xff);
    c.on_ready(fd + 1000, port::want_read | port::want_write | port::ready_error);
    c.on_ready(fd, 0);
    port::wait_entry stale[3];
    stale[0].fd = fd + 1001;
    stale[0].ready = port::ready_error;
    stale[1].fd = -1;
    stale[1].ready = port::want_read;
    stale[2].fd = fd + 1002;
    stale[2].ready = 0;
    c.on_ready(stale, 3);
    c.on_ready(nullptr, 0);
    const node_info n = c.node(0);
    INFO(what(n));
    CHECK(n.state == node_state::ready);
    CHECK(n.error == node_error::none);
    CHECK(c.ready_count() == 1);
    CHECK(connection_id(c, 0) == id);
}

// --- attach ------------------------------------------------------------------------------------

TEST_CASE("client bad input: a refused attach links nothing", "[integration][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const url_list urls({redis_url(srv)});
    client<1> c;
    configure(c, urls);
    client_lock l;

    // The watchdog must renew before the validity ends: ttl - (1% + 2 ms).
    const lock_options o = options(1000, 100);
    watchdog_options late;
    late.renew_every = duration::millis(1000 - 12);
    CHECK(l.attach(c, "bad-attach", o, late) == client_errc::bad_option);
    CHECK_FALSE(l.attached());
    late.renew_every = duration::seconds(3600);
    CHECK(l.attach(c, "bad-attach", o, late) == client_errc::bad_option);
    CHECK_FALSE(l.attached());
    // A disabled watchdog's interval is not looked at.
    late.enabled = false;
    const std::string long_name(lock_max_name + 1, 'n');
    CHECK(l.attach(c, str_view(long_name.data(), long_name.size()), o, late) ==
          client_errc::lock_rejected);
    CHECK(l.lock_error() == lock_errc::name_too_long);
    CHECK_FALSE(l.attached());
    // Nothing was linked to the client: it may be configured again, and an
    // operation on the lock says it is not attached.
    CHECK(c.configure(urls.views.data(), 1, client_options{}) == client_errc::ok);
    CHECK(l.start_renew() == client_errc::not_attached);
    CHECK(l.resume(owner_token{}) == client_errc::not_attached);

    // Just inside the limit it is accepted, and renews on its own.
    watchdog_options in_time;
    in_time.renew_every = duration::millis(1000 - 13);
    REQUIRE(l.attach(c, "bad-attach", o, in_time) == client_errc::ok);
    l.detach();
    watchdog_options quick;
    quick.renew_every = duration::millis(100);
    REQUIRE(l.attach(c, "bad-attach", o, quick) == client_errc::ok);
    must_acquire(l);
    REQUIRE(c.run_for(duration::millis(1500)) == client_errc::ok);
    CHECK(l.held());
    CHECK(admin.command({"GET", key_of("bad-attach")}).text == hex(l.token()));
    must_release(l);
}
