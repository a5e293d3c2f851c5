// The fault proxy (tests/tools/fault_proxy.cpp) between real clients and a
// real redis-server: pass-through, delays and their order, blackhole and its
// healing, drop, reset, refuse, trickle, split, the status counters, bytes in
// flight delivered after their sender's side ended, the control protocol's
// errors, its command line and its ways to exit; and the library's client
// taking a lock through it. Its tools: proxy_helpers.hpp.
//
// Built with EDGELOCK_FAULT_PROXY_PATH. Every wait has a deadline; timing
// checks are lower bounds implied by the injected delays, and upper bounds
// many times what a run needs.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli_helpers.hpp"
#include "cli/proxy_helpers.hpp"
#include "edgelock/client.hpp"
#include "edgelock/port.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/hex.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"
#include "tools/url.hpp"

using edgelock_test::alive;
using edgelock_test::free_port;
using edgelock_test::hex;
using edgelock_test::key_of;
using edgelock_test::mono_s;
using edgelock_test::process;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::redis_url;
using edgelock_test::run_result;
using edgelock_test::sleep_us;
using edgelock_test::wait_fd;
using edgelock_test::wait_for;
using namespace edgelock_test::proxy_test;

namespace {

constexpr int exit_usage = 64;

long long to_ll(std::size_t n) {
    return static_cast<long long>(n);
}

}  // namespace

TEST_CASE("proxy: commands and replies pass through unchanged", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    redis_client admin(srv.port());

    redis_client c(p.port);
    CHECK(c.command({"PING"}).text == "PONG");
    CHECK(c.command({"SET", "k", "v"}).text == "OK");
    CHECK(c.command({"GET", "k"}).text == "v");
    CHECK(admin.command({"GET", "k"}).text == "v");

    // Larger than the proxy's 1 MB bound per direction: it flows in steps.
    const std::string big(3u << 20, 'x');
    CHECK(c.command({"SET", "big", big}).text == "OK");
    tcp raw(p.port);
    REQUIRE(raw.error() == 0);
    raw.send(resp({"GET", "big"}));
    const std::string want = "$" + std::to_string(big.size()) + "\r\n" + big + "\r\n";
    CHECK(raw.read_n(want.size(), 5.0) == want);

    // Two clients at once, each on its own upstream connection.
    redis_client d(p.port);
    CHECK(d.command({"SELECT", "1"}).text == "OK");
    CHECK(d.command({"GET", "k"}).type == '_');
    CHECK(c.command({"GET", "k"}).text == "v");
    const std::string st = ctl("status");
    CHECK(field(st, "conns") == 3);
    CHECK(field(st, "accepted") == 3);
}

TEST_CASE("proxy: delays are lower bounds, per direction", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    tcp c(p.port);
    ping_ok(c);

    REQUIRE(ctl("delay up 200") == "OK");
    std::string st = ctl("status");
    CHECK(field(st, "delay_up") == 200);
    CHECK(st.find(" delay_up=200/0 delay_down=0/0 ") != std::string::npos);
    double s = ping_seconds(c);
    CHECK(s >= 0.2);
    CHECK(s < 5.0);

    REQUIRE(ctl("delay up 0") == "OK");
    REQUIRE(ctl("delay down 200 50") == "OK");
    CHECK(ctl("status").find(" delay_up=0/0 delay_down=200/50 ") != std::string::npos);
    s = ping_seconds(c);
    CHECK(s >= 0.2);
    CHECK(s < 5.0);

    REQUIRE(ctl("delay both 150") == "OK");
    s = ping_seconds(c);
    CHECK(s >= 0.3);
    CHECK(s < 5.0);

    // A connection opened under the delay gets it too.
    tcp d(p.port);
    s = ping_seconds(d);
    CHECK(s >= 0.3);
    CHECK(s < 5.0);

    REQUIRE(ctl("delay both 0") == "OK");
    CHECK(ctl("status").find(" delay_up=0/0 delay_down=0/0 ") != std::string::npos);
    REQUIRE(ctl("delay both 300") == "OK");
    REQUIRE(ctl("pass") == "OK");
    st = ctl("status");
    CHECK(st.find(" delay_up=0/0 delay_down=0/0 ") != std::string::npos);
    CHECK(mode_of(st) == "pass");
    ping_ok(c);
}

TEST_CASE("proxy: jittered delay keeps the order of chunks", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv, {"--seed", "7"});
    controller ctl(p);
    tcp c(p.port);
    ping_ok(c);
    REQUIRE(ctl("delay both 5 20") == "OK");

    // One INCR per send, spaced so the proxy reads them as separate chunks
    // whose random delays would reorder them if it let them.
    const int n = 200;
    const double t0 = mono_s();
    for (int i = 0; i < n; ++i) {
        c.send(resp({"INCR", "counter"}));
        sleep_us(300);
    }
    const std::string want = incr_replies(1, n);
    CHECK(c.read_n(want.size(), 8.0) == want);
    CHECK(mono_s() - t0 >= 0.01);  // at least one delay up and one down
    CHECK(c.next(0.1) == ending::timeout);
}

TEST_CASE("proxy: blackhole holds everything until pass heals it", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    tcp a(p.port);
    ping_ok(a);

    REQUIRE(ctl("blackhole") == "OK");
    CHECK(mode_of(ctl("status")) == "blackhole");
    a.send(resp({"PING"}));
    for (int i = 0; i < 50; ++i) {
        a.send(resp({"INCR", "n"}));
    }
    // A connection made during the partition: accepted, not forwarded.
    tcp b(p.port);
    REQUIRE(b.error() == 0);
    b.send(resp({"ECHO", "late"}));
    CHECK(a.next(0.3) == ending::timeout);
    CHECK(b.next(0.05) == ending::timeout);
    redis_client admin(srv.port());
    CHECK(admin.command({"EXISTS", "n"}).integer == 0);  // nothing reached the server
    const std::string st = ctl("status");
    CHECK(field(st, "conns") == 2);
    CHECK(field(st, "accepted") == 2);

    REQUIRE(ctl("pass") == "OK");
    const std::string want = "+PONG\r\n" + incr_replies(1, 50);
    CHECK(a.read_n(want.size(), 5.0) == want);
    CHECK(b.read_n(10, 5.0) == "$4\r\nlate\r\n");
    // Still in step: the next command gets its own reply.
    a.send(resp({"GET", "n"}));
    CHECK(a.read_n(8, 5.0) == "$2\r\n50\r\n");
    ping_ok(b);
}

TEST_CASE("proxy: drop closes every connection with a FIN", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    tcp a(p.port);
    tcp b(p.port);
    ping_ok(a);
    ping_ok(b);

    CHECK(ctl("drop") == "OK drop=2");
    CHECK(a.next(3.0) == ending::eof);
    CHECK(b.next(3.0) == ending::eof);
    // The mode is unchanged: a new connection works.
    const std::string st = ctl("status");
    CHECK(mode_of(st) == "pass");
    CHECK(field(st, "conns") == 0);
    CHECK(field(st, "ended") == 2);
    tcp c(p.port);
    ping_ok(c);
}

TEST_CASE("proxy: reset aborts every connection", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    tcp a(p.port);
    ping_ok(a);

    CHECK(ctl("reset") == "OK reset=1");
    const ending e = a.next(3.0);
    INFO(describe(e));
    CHECK((e == ending::reset || e == ending::eof));
    CHECK(mode_of(ctl("status")) == "pass");
    tcp c(p.port);
    ping_ok(c);
}

TEST_CASE("proxy: refuse resets new connections, keeps the old ones", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    tcp old(p.port);
    ping_ok(old);

    REQUIRE(ctl("refuse") == "OK");
    CHECK(mode_of(ctl("status")) == "refuse");
    for (int i = 0; i < 3; ++i) {
        tcp fresh(p.port);
        check_cut(fresh);
    }
    ping_ok(old);
    const std::string st = ctl("status");
    CHECK(field(st, "accepted") == 4);
    CHECK(field(st, "ended") == 3);  // the refused ones

    REQUIRE(ctl("pass") == "OK");
    tcp again(p.port);
    ping_ok(again);
}

TEST_CASE("proxy: trickle sends one byte per interval", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    redis_client admin(srv.port());
    REQUIRE(admin.command({"SET", "k", "0123456789"}).text == "OK");
    tcp c(p.port);
    ping_ok(c);

    REQUIRE(ctl("trickle 10") == "OK");
    CHECK(mode_of(ctl("status")) == "trickle");
    const std::string request = resp({"GET", "k"});
    const std::string reply = "$10\r\n0123456789\r\n";
    const double t0 = mono_s();
    c.send(request);
    // The first byte of each direction may go at once, then one per 10 ms.
    CHECK(c.read_n(3, 5.0) == "$10");
    const double first = mono_s() - t0;
    CHECK(first >= 0.01 * static_cast<double>(request.size() - 1 + 2));
    CHECK(c.read_n(reply.size() - 3, 5.0) == reply.substr(3));
    const double s = mono_s() - t0;
    CHECK(s >= 0.01 * static_cast<double>(request.size() - 1 + reply.size() - 1));
    CHECK(s < 5.0);

    REQUIRE(ctl("pass") == "OK");
    CHECK(ping_seconds(c) < 5.0);
}

TEST_CASE("proxy: split forwards byte by byte, and stays correct", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    redis_client c(p.port);
    REQUIRE(ctl("split") == "OK");
    CHECK(mode_of(ctl("status")) == "split");

    CHECK(c.command({"PING"}).text == "PONG");
    CHECK(c.command({"SET", "k", "value"}).text == "OK");
    CHECK(c.command({"GET", "k"}).text == "value");
    const std::string mid(100000, 'm');
    CHECK(c.command({"SET", "mid", mid}).text == "OK");
    CHECK(c.command({"GET", "mid"}).text == mid);

    // Many commands in one write, their replies one byte at a time.
    std::string batch;
    for (int i = 0; i < 300; ++i) {
        batch += resp({"INCR", "n"});
    }
    c.send_raw(batch);
    for (int i = 1; i <= 300; ++i) {
        const edgelock_test::reply r = c.read_reply();
        REQUIRE(r.type == ':');
        REQUIRE(r.integer == i);
    }

    // With a delay as well.
    REQUIRE(ctl("delay both 10 10") == "OK");
    CHECK(mode_of(ctl("status")) == "split");
    CHECK(c.command({"GET", "n"}).text == "300");
}

TEST_CASE("proxy: status counts connections and bytes", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    CHECK(ctl("status") ==
          "OK mode=pass delay_up=0/0 delay_down=0/0 conns=0 accepted=0 ended=0 bytes_up=0 "
          "bytes_down=0 queued_up=0 queued_down=0");
    {
        tcp c(p.port);
        ping_ok(c);  // 14 bytes up, 7 down
        const std::string st = ctl("status");
        CHECK(field(st, "conns") == 1);
        CHECK(field(st, "accepted") == 1);
        CHECK(field(st, "bytes_up") == 14);
        CHECK(field(st, "bytes_down") == 7);
        tcp d(p.port);
        ping_ok(d);
        CHECK(field(ctl("status"), "conns") == 2);
    }
    // Both clients closed: the proxy closes their upstream side too.
    std::string st;
    CHECK(wait_for(
        [&] {
            st = ctl("status");
            return field(st, "conns") == 0;
        },
        3.0));
    CHECK(field(st, "accepted") == 2);
    CHECK(field(st, "ended") == 2);
    CHECK(field(st, "bytes_up") == 28);
    CHECK(field(st, "bytes_down") == 14);
    redis_client admin(srv.port());
    CHECK(wait_for(
        [&] {
            // Only admin's own connection is left on the server.
            const std::string list = admin.command({"CLIENT", "LIST"}).text;
            return std::count(list.begin(), list.end(), '\n') == 1;
        },
        3.0));

    // Several commands in one write, and a second control connection.
    ctl.socket().send("status\nstatus\n");
    CHECK(ctl.socket().read_line(3.0) == st);
    CHECK(ctl.socket().read_line(3.0) == st);
    controller other(p);
    CHECK(other("status") == st);
}

TEST_CASE("proxy: bad commands answer ERR and change nothing", "[proxy]") {
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    REQUIRE(ctl("delay up 30 5") == "OK");
    REQUIRE(ctl("split") == "OK");
    const std::string before = ctl("status");
    REQUIRE(before.compare(0, 3, "OK ") == 0);

    const strings bad = {"",
                         "   ",
                         "bogus",
                         "PASS",
                         "pass now",
                         "delay",
                         "delay up",
                         "delay sideways 10",
                         "delay up x",
                         "delay up -1",
                         "delay up 600001",
                         "delay up 10 600001",
                         "delay up 10 20 30",
                         "delay up 99999999999999999999999",
                         "trickle",
                         "trickle 1.5",
                         "trickle 10 20",
                         "blackhole 1",
                         "refuse x",
                         "drop all",
                         "status now",
                         "quit now"};
    for (const std::string& cmd : bad) {
        INFO("command '" << cmd << "'");
        CHECK(ctl(cmd).compare(0, 4, "ERR ") == 0);
    }
    CHECK(ctl("status") == before);
    CHECK(ctl("delay up 600000 600000") == "OK");  // the largest accepted
    CHECK(ctl("delay up 30 5") == "OK");
    CHECK(ctl("status") == before);

    // A line over 256 bytes: ERR, then the proxy closes that connection.
    ctl.socket().send(std::string(300, 'x') + "\n");
    CHECK(ctl.socket().read_line(3.0).compare(0, 4, "ERR ") == 0);
    CHECK(ctl.socket().next(3.0) == ending::eof);
    controller other(p);
    CHECK(other("status") == before);
    // Also when no newline comes at all.
    controller third(p);
    third.socket().send(std::string(400, 'y'));
    CHECK(third.socket().read_line(3.0).compare(0, 4, "ERR ") == 0);
    CHECK(third.socket().next(3.0) == ending::eof);
    CHECK(other("status") == before);
}

TEST_CASE("proxy: upstream failures and closes reach the client", "[proxy]") {
    SECTION("nothing listens at the target: the client is reset") {
        proxy_proc p("127.0.0.1:" + std::to_string(free_port()));
        tcp c(p.port);
        check_cut(c);
    }
    SECTION("the server dies: the client sees the connection end") {
        redis_server srv;
        proxy_proc p(srv);
        tcp c(p.port);
        ping_ok(c);
        srv.kill();
        const ending e = c.next(3.0);
        INFO(describe(e));
        CHECK((e == ending::reset || e == ending::eof));
    }
    SECTION("a client's half-close: the reply still comes, then EOF") {
        redis_server srv;
        proxy_proc p(srv);
        tcp c(p.port);
        REQUIRE(c.error() == 0);
        c.send(resp({"PING"}));
        ::shutdown(c.fd(), SHUT_WR);
        CHECK(c.read_n(7, 3.0) == "+PONG\r\n");
        CHECK(c.next(3.0) == ending::eof);
    }
}

// Bytes a delay holds are in flight: a client that closes or resets its
// connection, or cannot take a reply any more, does not take them back, and
// a server that resets does not take back what it said. Each waits until the
// proxy holds the bytes (queued_*), then ends its side, then waits for them
// to arrive; the delays are long against the steps between, so the end comes
// first, but the checks hold whichever comes first.
TEST_CASE("proxy: bytes in flight are delivered after their sender's side ends", "[proxy]") {
    SECTION("the client resets its connection: the server still gets its command") {
        redis_server srv;
        proxy_proc p(srv);
        controller ctl(p);
        redis_client admin(srv.port());
        REQUIRE(ctl("delay up 1000") == "OK");
        tcp c(p.port);
        REQUIRE(c.error() == 0);
        const std::string cmd = resp({"SET", "late", "1"});
        c.send(cmd);
        REQUIRE(
            wait_for([&] { return field(ctl("status"), "queued_up") == to_ll(cmd.size()); }, 5.0));
        c.close(true);
        CHECK(wait_for([&] { return admin.command({"GET", "late"}).text == "1"; }, 10.0));
        // Then the proxy lets the connection go.
        CHECK(wait_for([&] { return field(ctl("status"), "conns") == 0; }, 5.0));
        CHECK(field(ctl("status"), "ended") == 1);
    }
    SECTION("a client gone before the replies: every command it sent still arrives") {
        // Its first command's reply meets a closed socket, its second's a
        // reset one: the third, due last, must arrive all the same.
        redis_server srv;
        proxy_proc p(srv);
        controller ctl(p);
        redis_client admin(srv.port());
        tcp c(p.port);
        ping_ok(c);
        std::size_t held = 0;
        const strings delays = {"300", "600", "1200"};
        const std::vector<strings> cmds = {{"INCR", "n"}, {"INCR", "n"}, {"SET", "last", "1"}};
        for (std::size_t i = 0; i < cmds.size(); ++i) {
            REQUIRE(ctl("delay up " + delays[i]) == "OK");
            const std::string cmd = resp(cmds[i]);
            c.send(cmd);
            held += cmd.size();
            REQUIRE(
                wait_for([&] { return field(ctl("status"), "queued_up") == to_ll(held); }, 5.0));
        }
        c.close(false);
        CHECK(wait_for([&] { return admin.command({"GET", "last"}).text == "1"; }, 10.0));
        CHECK(admin.command({"GET", "n"}).text == "2");
        CHECK(wait_for([&] { return field(ctl("status"), "conns") == 0; }, 5.0));
    }
    SECTION("the server resets: the client still gets what it said before") {
        edgelock_test::loopback_listener server;
        REQUIRE(server.fd() >= 0);
        proxy_proc p("127.0.0.1:" + std::to_string(server.port()));
        controller ctl(p);
        REQUIRE(ctl("delay down 1000") == "OK");
        tcp c(p.port);
        REQUIRE(c.error() == 0);
        REQUIRE(wait_fd(server.fd(), POLLIN, mono_s() + 5.0));
        const int up = ::accept4(server.fd(), nullptr, nullptr, SOCK_CLOEXEC);
        REQUIRE(up >= 0);
        REQUIRE(::send(up, "hello", 5, MSG_NOSIGNAL) == 5);
        REQUIRE(wait_for([&] { return field(ctl("status"), "queued_down") == 5; }, 5.0));
        linger l{};
        l.l_onoff = 1;
        l.l_linger = 0;
        REQUIRE(::setsockopt(up, SOL_SOCKET, SO_LINGER, &l, sizeof l) == 0);
        ::close(up);
        CHECK(c.read_n(5, 10.0) == "hello");
        const ending e = c.next(5.0);
        INFO(describe(e));
        CHECK((e == ending::eof || e == ending::reset));
    }
}

TEST_CASE("proxy: a bad command line exits 64", "[proxy]") {
    const strings targets = {"10.1.2.3:6379", "localhost:6379",  "redis.example.com:6379",
                             "8.8.8.8:53",    "128.0.0.1:6379",  "[2001:db8::1]:6379",
                             "[::1]",         "::1:6379",        "127.0.0.1",
                             "127.0.0.1:0",   "127.0.0.1:70000", "127.0.0.1:x",
                             "127.1:6379",    "0x7f000001:6379", ":6379"};
    for (const std::string& t : targets) {
        INFO("target " << t);
        process proc({EDGELOCK_FAULT_PROXY_PATH, "--target", t}, {});
        const run_result r = proc.finish(5.0);
        CHECK(r.status == exit_usage);
        CHECK(r.out.empty());
        CHECK(!r.err.empty());
    }
    const std::vector<strings> usages = {
        {},
        {"--listen", "0"},
        {"--target"},
        {"--target", "127.0.0.1:6379", "--bogus", "1"},
        {"--target", "127.0.0.1:6379", "--listen", "abc"},
        {"--target", "127.0.0.1:6379", "--listen", "65536"},
        {"--target", "127.0.0.1:6379", "--control"},
        {"--target", "127.0.0.1:6379", "--max-seconds", "0"},
        {"--target", "127.0.0.1:6379", "--seed", "-1"},
        {"127.0.0.1:6379"},
    };
    for (const strings& args : usages) {
        strings argv = {EDGELOCK_FAULT_PROXY_PATH};
        argv.insert(argv.end(), args.begin(), args.end());
        process proc(argv, {});
        const run_result r = proc.finish(5.0);
        INFO("stderr: " << r.err);
        CHECK(r.status == exit_usage);
        CHECK(r.err.find("usage: fault_proxy") != std::string::npos);
    }
    // Loopback targets are accepted: the proxy starts.
    proxy_proc v6("[::1]:6379");
    proxy_proc other("127.0.0.2:6379");
}

TEST_CASE("proxy: it exits 0 by itself, on quit, on SIGTERM, with its parent", "[proxy]") {
    redis_server srv;
    SECTION("--max-seconds") {
        proxy_proc p(srv, {"--max-seconds", "1"});
        tcp c(p.port);
        ping_ok(c);
        const run_result r = p.proc.finish(4.0);
        CHECK_FALSE(r.timed_out);
        CHECK(r.status == 0);
        CHECK(r.seconds >= 0.9);
        CHECK(c.next(3.0) != ending::timeout);  // its connections closed
    }
    SECTION("quit") {
        proxy_proc p(srv);
        controller ctl(p);
        CHECK(ctl("quit") == "OK");
        const run_result r = p.proc.finish(3.0);
        CHECK_FALSE(r.timed_out);
        CHECK(r.status == 0);
        tcp c(p.port);
        CHECK(c.error() == ECONNREFUSED);
    }
    SECTION("SIGTERM") {
        proxy_proc p(srv);
        p.proc.signal(SIGTERM);
        const run_result r = p.proc.finish(3.0);
        CHECK_FALSE(r.timed_out);
        CHECK(r.status == 0);
    }
    SECTION("its parent dies") {
        // A shell starts the proxy and waits; killing the shell alone must
        // take the proxy down with it.
        const std::string cmd = std::string("'") + EDGELOCK_FAULT_PROXY_PATH +
                                "' --target 127.0.0.1:" + std::to_string(srv.port()) +
                                " --max-seconds 60 & echo pid $!; wait";
        process sh({"/bin/sh", "-c", cmd}, {});
        long pid = 0;
        bool ports = false;
        for (int i = 0; i < 2; ++i) {
            const std::string line = sh.read_line(5.0);
            if (line.compare(0, 4, "pid ") == 0) {
                pid = std::atol(line.c_str() + 4);
            } else {
                ports = !line.empty();
            }
        }
        REQUIRE(pid > 0);
        REQUIRE(ports);
        CHECK(alive(static_cast<pid_t>(pid)));
        sh.signal(SIGKILL);
        CHECK(wait_for([&] { return !alive(static_cast<pid_t>(pid)); }, 3.0));
    }
}

TEST_CASE("proxy: the library's client takes a lock through split and delay", "[proxy]") {
    using namespace edgelock;
    redis_server srv;
    proxy_proc p(srv);
    controller ctl(p);
    redis_client admin(srv.port());
    const std::string url = redis_url(p.port);
    const str_view urls[] = {str_view(url.data(), url.size())};

    for (const char* fault : {"split", "delay both 20"}) {
        INFO("fault: " << fault);
        REQUIRE(ctl("pass") == "OK");
        REQUIRE(ctl(fault) == "OK");
        client<1> c;
        REQUIRE(c.configure(urls, 1, client_options{}) == client_errc::ok);
        lock_options o;
        o.ttl = duration::millis(10000);
        o.node_timeout = duration::millis(2000);
        watchdog_options w;
        w.enabled = false;
        client_lock l;
        REQUIRE(l.attach(c, "proxied", o, w) == client_errc::ok);
        REQUIRE(c.connect(port::now() + duration::seconds(5)) == 1);

        const double t0 = mono_s();
        const op_result a = l.try_acquire();
        REQUIRE(a.error == client_errc::ok);
        REQUIRE(a.event.kind == lock_event_kind::acquired);
        CHECK(l.held());
        CHECK(admin.command({"GET", key_of("proxied")}).text == hex(l.token()));
        const op_result r = l.release();
        REQUIRE(r.error == client_errc::ok);
        REQUIRE(r.event.kind == lock_event_kind::released);
        if (std::string(fault) != "split") {
            CHECK(mono_s() - t0 >= 0.08);  // two round trips of 2 x 20 ms
        }
        CHECK_FALSE(l.held());
        CHECK(admin.command({"EXISTS", key_of("proxied")}).integer == 0);
        l.detach();
    }
    CHECK(field(ctl("status"), "accepted") == 2);
}
