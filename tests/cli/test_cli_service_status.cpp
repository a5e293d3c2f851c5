// The agent's systemd status line: with NOTIFY_SOCKET set, `run` sends
// STATUS= datagrams there (acquiring, waiting, holding, released; the
// protocol sd_notify(3) speaks), to a path or an abstract name; a socket
// whose queue is full drops them and never holds the agent up. The test
// listens on a datagram socket of its own.
#include <catch2/catch.hpp>

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "cli/notify_listener.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/redis_py.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const std::string& l : lines) {
        s += l + "\n";
    }
    return s;
}

}  // namespace

TEST_CASE("cli status: run tells systemd acquiring, holding and released", "[cli]") {
    redis_server srv;
    temp_dir dir{"edgelock-cli-status"};
    const std::string key = "cli-status";
    for (const std::string& name :
         {dir / "notify", "@edgelock-test-" + std::to_string(::getpid())}) {
        notify_listener listener(name);
        const strings args{"run", "-N", redis_url(srv), key, "--", "true"};
        const run_result r = agent(args, {"NOTIFY_SOCKET=" + name});
        INFO(show(args, r) << "\nNOTIFY_SOCKET=" << name);
        REQUIRE(r.status == 0);
        const std::vector<std::string> got = listener.take();
        INFO(joined(got));
        REQUIRE(got.size() == 3);
        CHECK(got[0] == "STATUS=acquiring " + key);
        CHECK(starts_with(got[1], "STATUS=holding " + key + " since "));
        CHECK(got[1].find(" UTC, running true (pid ") != std::string::npos);
        CHECK(got[2] == "STATUS=released " + key + "; the command exited 0");
    }
}

TEST_CASE("cli status: a waiter says it waits, then holds", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-status-wait"};
    const std::string key = "cli-status-wait";
    const std::string go = dir / "go";
    agent_run holder({"run", "-N", redis_url(srv), "--label", "nightly-upload", key, "--", "sh",
                      "-c", "while [ ! -e '" + go + "' ]; do sleep 0.02; done"},
                     {});
    REQUIRE(wait_for([&] { return lock_exists(admin, key) == 1; }, 10.0));
    char host[256] = {};
    REQUIRE(::gethostname(host, sizeof host - 1) == 0);
    notify_listener listener(dir / "notify");
    agent_run waiter({"run", "-w", "30s", "--fencing", "-N", redis_url(srv), key, "--", "true"},
                     {"NOTIFY_SOCKET=" + listener.name});
    sleep_ms(300);
    CHECK(waiter.proc.running());  // it cannot end while the holder holds
    REQUIRE(write_file(go, ""));
    CHECK(holder.finish(10.0).status == 0);
    const run_result r = waiter.finish(10.0);
    INFO(show(waiter.args, r));
    CHECK(r.status == 0);
    const std::vector<std::string> got = listener.take();
    INFO(joined(got));
    REQUIRE(got.size() >= 4);
    CHECK(got[0] == "STATUS=acquiring " + key);
    // Who holds it, from the record the holder wrote beside the lock.
    CHECK(starts_with(got[1], "STATUS=waiting for " + key + ", held by " + host + " pid " +
                                  std::to_string(holder.proc.pid()) + " (nightly-upload) for "));
    CHECK(starts_with(got[got.size() - 2], "STATUS=holding " + key + " since "));
    CHECK(got[got.size() - 2].find(", fencing token ") != std::string::npos);
    CHECK(got.back() == "STATUS=released " + key + "; the command exited 0");
}

TEST_CASE("cli status: a waiter on a lock held without a record says so", "[cli][interop]") {
    redis_server srv;
    temp_dir dir{"edgelock-cli-status-py"};
    const std::string key = "cli-status-py";
    REQUIRE(starts_with(redis_py(srv.port(), key, {"acquire", "1500"}), "acquired "));
    notify_listener listener(dir / "notify");
    agent_run waiter({"run", "-w", "10s", "-N", redis_url(srv), key, "--", "true"},
                     {"NOTIFY_SOCKET=" + listener.name});
    const run_result r = waiter.finish(15.0);
    INFO(show(waiter.args, r));
    CHECK(r.status == 0);  // once redis-py's key expired
    const std::vector<std::string> got = listener.take();
    INFO(joined(got));
    REQUIRE(got.size() >= 2);
    CHECK(got[1] == "STATUS=waiting for " + key + ", held by another holder");
}

TEST_CASE("cli status: a job stopped at --max-hold is said so", "[cli]") {
    redis_server srv;
    temp_dir dir{"edgelock-cli-status-max-hold"};
    const std::string key = "cli-status-max-hold";
    notify_listener listener(dir / "notify");
    const strings args{"run", "--max-hold", "300ms", "-N", redis_url(srv),
                       key,   "--",         "sleep", "30"};
    const run_result r = agent(args, {"NOTIFY_SOCKET=" + listener.name});
    INFO(show(args, r));
    CHECK(r.status == 75);
    const std::vector<std::string> got = listener.take();
    INFO(joined(got));
    REQUIRE(got.size() == 4);
    CHECK(starts_with(got[1], "STATUS=holding " + key + " since "));
    CHECK(got[2] == "STATUS=stopping the command: " + key + " held for --max-hold");
    CHECK(got[3] == "STATUS=the command was stopped; " + key + " let go");
}

TEST_CASE("cli status: a socket that takes nothing more holds nothing up", "[cli]") {
    redis_server srv;
    temp_dir dir{"edgelock-cli-status-full"};
    notify_listener listener(dir / "notify");
    // Fill its queue: every later datagram would have to wait, or be dropped.
    const int out = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    REQUIRE(out >= 0);
    sockaddr_un a;
    std::memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, listener.name.data(), listener.name.size());
    int queued = 0;
    while (::sendto(out, "x", 1, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&a), sizeof a) ==
               1 &&
           queued < 100000) {
        ++queued;
    }
    const int full_errno = errno;
    ::close(out);
    REQUIRE(full_errno == EAGAIN);
    const strings args{"run", "-N", redis_url(srv), "cli-status-full", "--", "echo", "ran"};
    const run_result r = agent(args, {"NOTIFY_SOCKET=" + listener.name});
    INFO(show(args, r) << "\n" << queued << " datagrams queued before");
    CHECK(r.status == 0);
    CHECK(r.out == "ran\n");
}

TEST_CASE("cli status: a NOTIFY_SOCKET that is no unix socket is ignored", "[cli]") {
    redis_server srv;
    for (const char* bad : {"", "relative/path", "vsock:2:1234", "/nonexistent/notify"}) {
        const strings args{"run", "-N", redis_url(srv), "cli-status-bad", "--", "echo", "ran"};
        const run_result r = agent(args, {std::string("NOTIFY_SOCKET=") + bad});
        INFO(show(args, r) << "\nNOTIFY_SOCKET=" << bad);
        CHECK(r.status == 0);
        CHECK(r.out == "ran\n");
    }
}
