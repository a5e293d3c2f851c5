// The agent over a slow, lossy link, with the kernel's own TCP on both ends:
// the link emulator (tests/tools/link_emu.cpp) joins two network namespaces,
// redis-server runs in one, the agent in the other. First the emulator
// itself (a connect takes a round trip, loss is counted, an outage blocks and
// then heals); then what must hold on such a link whatever the timing: the
// agent runs its job or says it could not (69), leaves no key behind that
// outlives its ttl, and two agents never run their jobs at once.
//
// Root only (namespaces, TUN devices): elsewhere these tests skip and say why.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/link_emu.hpp"
#include "tools/lock_key.hpp"
#include "tools/skip.hpp"

// The emulator, where the build has one (Linux hosts).
#ifdef EDGELOCK_LINK_EMU_PATH
const std::string link_emu_path = EDGELOCK_LINK_EMU_PATH;
#else
const std::string link_emu_path;
#endif

using namespace edgelock_test;

namespace {

sockaddr_in address(const std::string& dotted, std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, dotted.c_str(), &a.sin_addr);
    return a;
}

bool bind_to(int s, const std::string& dotted, std::uint16_t port) {
    const sockaddr_in a = address(dotted, port);
    return ::bind(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
}

// Starts a non-blocking connect from the client's namespace.
int connect_across(link_emulator& link, std::uint16_t port) {
    const int s = link.client_socket(SOCK_STREAM | SOCK_NONBLOCK);
    const sockaddr_in a = address(link.server_addr(), port);
    ::connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    return s;
}

// Waits up to timeout_ms for a connect to finish; its error (0: connected),
// or -1 when it is still pending.
int connect_result(int s, int timeout_ms) {
    pollfd p{s, POLLOUT, 0};
    if (::poll(&p, 1, timeout_ms) != 1) {
        return -1;
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
    return err;
}

// Polls the emulator's status until `done` holds, at most timeout_s.
template <typename F>
link_status wait_status(link_emulator& link, double timeout_s, F done) {
    const double deadline = mono_s() + timeout_s;
    link_status s = link.status();
    while (!done(s) && mono_s() < deadline) {
        sleep_ms(10);
        s = link.status();
    }
    return s;
}

// Starts the link, or says why this machine cannot have one.
bool start_link(link_emulator& link, std::uint64_t seed) {
    if (link_emu_path.empty()) {
        skip("no link emulator in this build (Linux only)");
        return false;
    }
    const std::string why = link.start(link_emu_path, seed, 120);
    if (!why.empty()) {
        skip(why.c_str());
        return false;
    }
    return true;
}

}  // namespace

TEST_CASE("link emulator: loss is counted, a connect takes a round trip, an outage heals",
          "[cli][link]") {
    link_emulator link;
    if (!start_link(link, 7)) {
        return;
    }
    SECTION("half the datagrams lost, each one counted") {
        REQUIRE(link.command("profile up 0 0 500"));
        const int rx = link.server_socket(SOCK_DGRAM | SOCK_NONBLOCK);
        REQUIRE(bind_to(rx, link.server_addr(), 7001));
        const int tx = link.client_socket(SOCK_DGRAM);
        const sockaddr_in to = address(link.server_addr(), 7001);
        constexpr int sent = 200;
        for (int i = 0; i < sent; ++i) {
            REQUIRE(::sendto(tx, "x", 1, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
                    1);
        }
        const link_status s = wait_status(
            link, 5.0, [](const link_status& st) { return st.up.in == sent && st.up.queued == 0; });
        REQUIRE(s.up.in == sent);
        CHECK(s.up.lost + s.up.out == sent);
        CHECK(s.up.lost > sent / 4);
        CHECK(s.up.out > sent / 4);
        long long received = 0;
        char b[16];
        const double deadline = mono_s() + 2.0;
        while (received < s.up.out && mono_s() < deadline) {
            if (::recv(rx, b, sizeof b, 0) == 1) {
                ++received;
            } else {
                sleep_ms(1);
            }
        }
        CHECK(received == s.up.out);
        ::close(rx);
        ::close(tx);
    }
    SECTION("a connect takes one round trip: 2 x 100 ms") {
        REQUIRE(link.command("profile both 100 0 0"));
        const int l = link.server_socket(SOCK_STREAM);
        REQUIRE(bind_to(l, link.server_addr(), 7002));
        REQUIRE(::listen(l, 4) == 0);
        const double start = mono_s();
        const int c = connect_across(link, 7002);
        REQUIRE(connect_result(c, 5000) == 0);
        const double took = mono_s() - start;
        CHECK(took >= 0.199);
        CHECK(took < 1.0);  // far more than any scheduling delay; a lost SYN would take 1 s
        ::close(c);
        ::close(l);
    }
    SECTION("an outage drops everything, then the link carries again") {
        REQUIRE(link.command("profile both 20 0 0"));
        const int l = link.server_socket(SOCK_STREAM);
        REQUIRE(bind_to(l, link.server_addr(), 7003));
        REQUIRE(::listen(l, 4) == 0);
        REQUIRE(link.command("outage 1500"));
        const int c = connect_across(link, 7003);
        // The SYN and its first resend (1 s later) are cut; a later resend
        // gets through once the outage is over.
        const link_status during =
            wait_status(link, 5.0, [](const link_status& st) { return st.up.cut >= 1; });
        CHECK(during.up.cut >= 1);
        CHECK(during.up.out == 0);
        REQUIRE(connect_result(c, 10000) == 0);
        const link_status after = link.status();
        CHECK(after.outage_ms == 0);
        CHECK(after.up.cut >= 2);
        CHECK(after.up.out >= 1);
        ::close(c);
        ::close(l);
    }
}

TEST_CASE(
    "cli lossy link: at 150 ms +-50 one way and 5% loss, the agent runs or says 69, "
    "leaves no key past its ttl, and never overlaps",
    "[cli][link]") {
    link_emulator link;
    if (!start_link(link, 11)) {
        return;
    }
    REQUIRE(link.command("profile both 150 50 50"));
    netns_redis server(link);
    redis_client inside(server.unix_path());
    temp_dir dir("edgelock-lossy");
    const std::string marks = dir / "marks";
    const std::string name = "lossy-link";
    const std::string key = key_of(name);
    // Each job writes its start and its end; a job that starts while another
    // runs shows as two starts in a row.
    const strings job{"sh", "-c",
                      "echo start $$ >> " + marks + "; sleep 0.3; echo end $$ >> " + marks};
    const strings args = [&] {
        strings a{EDGELOCK_CLI_PATH, "run", "-t", "4s", "-N", server.url(), name, "--"};
        a.insert(a.end(), job.begin(), job.end());
        return link.in_client(a);
    }();
    // After a run, once the kernel has nothing left to send for it (an
    // acquire the agent gave up on may still land): the key is gone, or
    // carries an expiry within the ttl; then it must go by itself, so that
    // the next run starts free.
    auto no_key_left = [&](const std::string& what) {
        const double settle = mono_s() + 60.0;
        while (link.client_tcp_in_flight() > 0 && mono_s() < settle) {
            sleep_ms(20);
        }
        REQUIRE(link.client_tcp_in_flight() == 0);
        const long long pttl = inside.command({"PTTL", key}).integer;
        INFO(what << ": PTTL " << pttl);
        CHECK((pttl == -2 || (pttl > 0 && pttl <= 4000)));
        const double deadline = mono_s() + 5.0;
        while (inside.command({"EXISTS", key}).integer != 0 && mono_s() < deadline) {
            sleep_ms(20);
        }
        CHECK(inside.command({"EXISTS", key}).integer == 0);
    };
    int ran = 0;
    for (int i = 0; i < 3; ++i) {
        process p(args, {});
        const run_result r = p.finish(30.0);
        INFO("run " << i << ": " << show(args, r));
        REQUIRE_FALSE(r.timed_out);
        CHECK((r.status == 0 || r.status == exit_unavailable));
        ran += r.status == 0 ? 1 : 0;
        no_key_left("run " + std::to_string(i));
    }
    // Two at once: one runs, the other finds it held (1) or cannot tell (69).
    process first(args, {});
    process second(args, {});
    const run_result a = first.finish(30.0);
    const run_result b = second.finish(30.0);
    INFO("first: " << show(args, a) << "\nsecond: " << show(args, b));
    for (const run_result* r : {&a, &b}) {
        REQUIRE_FALSE(r->timed_out);
        CHECK((r->status == 0 || r->status == exit_conflict || r->status == exit_unavailable));
        ran += r->status == 0 ? 1 : 0;
    }
    no_key_left("the pair");
    std::ifstream in(marks);
    std::string word;
    std::string pid;
    std::string running;
    int ends = 0;
    while (in >> word >> pid) {
        INFO(word << " " << pid << " while " << (running.empty() ? "none" : running) << " ran");
        if (word == "start") {
            CHECK(running.empty());
            running = pid;
        } else {
            CHECK(running == pid);
            running.clear();
            ++ends;
        }
    }
    CHECK(running.empty());
    CHECK(ends == ran);
}

#ifdef EDGELOCK_BASIC_LOCK_PATH
TEST_CASE("lossy link: the library's example with default options over a 600 ms round trip",
          "[cli][link]") {
    link_emulator link;
    if (!start_link(link, 12)) {
        return;
    }
    // A satellite's round trip: 300 ms each way. The example sets only the
    // ttl (10 s): the library's defaults must do the rest.
    REQUIRE(link.command("profile both 300 0 0"));
    netns_redis server(link);
    redis_client inside(server.unix_path());
    const std::string name = "example-600ms";
    const strings args = link.in_client({EDGELOCK_BASIC_LOCK_PATH, server.url(), name});
    process p(args, {});
    const run_result r = p.finish(60.0);
    INFO(show(args, r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.status == 0);
    CHECK(contains(r.out, "acquired " + name));
    CHECK(inside.command({"EXISTS", key_of(name)}).integer == 0);  // released
}
#endif

TEST_CASE(
    "cli lossy link: a try too short for a 600 ms round trip says the round trip and the "
    "ttl that fits",
    "[cli][link]") {
    link_emulator link;
    if (!start_link(link, 13)) {
        return;
    }
    REQUIRE(link.command("profile both 300 0 0"));
    netns_redis server(link);
    redis_client inside(server.unix_path());
    const std::string name = "too-short";
    // -t 2s: a try has 989 ms, and the node's connect and set-up nine
    // tenths of it; the connect takes 600 ms (measured), and the set-up's
    // reply would come 600 ms after that.
    const strings args =
        link.in_client({EDGELOCK_CLI_PATH, "acquire", "-t", "2s", "-N", server.url(), name});
    process p(args, {});
    const run_result r = p.finish(30.0);
    INFO(show(args, r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.status == exit_unavailable);
    CHECK(contains(r.err, "connect timed out: no reply to the set-up"));
    // 16 round trips and 2 s, in whole seconds: 16 x 600 ms + 2 s = 11.6 s.
    CHECK(contains(r.err, "the link's round trip is about 6"));
    CHECK(contains(r.err, "at -t 2000 ms a try has 989 ms (half the ttl): use -t 12s or more"));
    // The acquire it gave up on may still land: taken back, or left to its ttl.
    const double settle = mono_s() + 30.0;
    while (link.client_tcp_in_flight() > 0 && mono_s() < settle) {
        sleep_ms(20);
    }
    const long long pttl = inside.command({"PTTL", key_of(name)}).integer;
    CHECK((pttl == -2 || (pttl > 0 && pttl <= 2000)));
}
