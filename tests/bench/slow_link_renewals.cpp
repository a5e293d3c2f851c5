#include "bench/slow_link_renewals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "bench/bench_common.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"
#include "tools/url.hpp"

namespace edgelock_slow_link {

namespace {

const char* const program = "bench_slow_link";

// The holder and its waiters; whatever is still running when this goes is
// killed (and each agent's job with it: the agent's child dies with it).
class agents {
public:
    agents() : null_fd_(::open("/dev/null", O_RDWR | O_CLOEXEC)) {}
    ~agents() {
        kill_all();
        if (null_fd_ >= 0) {
            ::close(null_fd_);
        }
    }
    agents(const agents&) = delete;
    agents& operator=(const agents&) = delete;

    pid_t start(const std::vector<std::string>& argv) {
        edgelock_test::spawn_options o;
        o.stdin_fd = o.stdout_fd = null_fd_;
        const pid_t pid = edgelock_test::spawn(argv, o);
        if (pid < 0) {
            fail("spawn of the agent failed");
        }
        pids_.push_back(pid);
        return pid;
    }
    // True once pid has exited, with its status as a shell shows it.
    bool ended(pid_t pid, int& status) {
        int st = 0;
        if (!edgelock_test::reap(pid, &st)) {
            return false;
        }
        status = edgelock_test::exit_status(st);
        for (pid_t& p : pids_) {
            if (p == pid) {
                p = pids_.back();
                pids_.pop_back();
                break;
            }
        }
        return true;
    }
    // (exit() runs no destructor of this.)
    [[noreturn]] void fail(const std::string& why) {
        kill_all();
        edgelock_bench::fail(program, "renewals: " + why);
    }
    // Kills pid's process group (it and its job) and reaps it.
    void kill(pid_t pid) {
        edgelock_test::kill_group(pid, SIGKILL);
        edgelock_test::wait_exit(pid);
        for (pid_t& p : pids_) {
            if (p == pid) {
                p = pids_.back();
                pids_.pop_back();
                break;
            }
        }
    }
    void kill_all() {
        for (const pid_t pid : pids_) {
            edgelock_test::kill_group(pid, SIGKILL);
            edgelock_test::wait_exit(pid);
        }
        pids_.clear();
    }

private:
    int null_fd_;
    std::vector<pid_t> pids_;
};

// The wall clock in ms since the epoch, as PEXPIRETIME counts (the server
// runs on this machine).
long long unix_ms() {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
}

}  // namespace

renewal_window measure_renewals(const std::string& agent, edgelock_test::fault_proxy& proxy,
                                server_tally& tally, const std::string& name, int waiters,
                                int renewals) {
    const std::string url = edgelock_test::redis_url(proxy.port());
    const std::string key = edgelock_test::key_of(name);
    agents kids;
    const pid_t holder = kids.start(
        {agent, "run", "-q", "-N", url, "--ttl", std::to_string(renewal_ttl_ms) + "ms",
         "--renew-every", std::to_string(renewal_every_ms) + "ms", name, "--", "sleep", "60"});
    int status = 0;
    if (!edgelock_test::wait_for([&] { return tally.expire_time(key) > 0; }, 10.0)) {
        kids.fail("the holder did not take the lock");
    }
    std::vector<pid_t> waiting;
    for (int i = 0; i < waiters; ++i) {
        waiting.push_back(
            kids.start({agent, "run", "-q", "-N", url, "--wait", "60s", name, "--", "true"}));
    }
    auto check = [&] {
        if (kids.ended(holder, status)) {
            kids.fail(edgelock_bench::format("the holder ended early (%d)", status));
        }
        for (const pid_t w : waiting) {
            if (kids.ended(w, status)) {
                kids.fail(
                    edgelock_bench::format("a waiter ended while the lock was held (%d)", status));
            }
        }
    };
    if (!edgelock_test::wait_for(
            [&] {
                check();
                return wire_of(proxy).conns >= waiters + 1;
            },
            30.0)) {
        kids.fail("the waiters did not all connect");
    }
    // The next `n` renewals, seen as the key's expiry moving forward.
    long long expiry = tally.expire_time(key);
    auto await_renewals = [&](int n) {
        const std::int64_t deadline = edgelock_test::mono_ns() + static_cast<std::int64_t>(n + 5) *
                                                                     3 * renewal_every_ms * 1000000;
        while (n > 0) {
            if (edgelock_test::mono_ns() > deadline) {
                kids.fail("the holder stopped renewing");
            }
            check();
            const long long now = tally.expire_time(key);
            if (now < 0) {
                kids.fail("the lock went away while held");
            }
            if (now > expiry) {
                --n;
            }
            expiry = now;
            edgelock_test::sleep_ms(5);
        }
    };
    await_renewals(3);  // the waiters' first tries are behind
    edgelock_test::sleep_ms(renewal_every_ms / 2);
    renewal_window result;
    result.waiters = waiters;
    result.renewals = renewals;
    tally.mark();
    const wire before = wire_of(proxy);
    await_renewals(renewals);
    edgelock_test::sleep_ms(renewal_every_ms / 2);
    result.asked = tally.take();
    const wire after = wire_of(proxy);
    result.bytes.up = after.up - before.up;
    result.bytes.down = after.down - before.down;
    check();

    // The end: the holder dies with its job (no release); its key expires a
    // ttl after its last renew, the server tells the waiters, and each in
    // turn runs.
    kids.kill(holder);
    const long long expires_at = tally.expire_time(key);  // still there: not read past it
    const std::int64_t deadline = edgelock_test::mono_ns() + 30'000'000'000;
    std::size_t done = 0;
    while (done < waiting.size()) {
        if (edgelock_test::mono_ns() > deadline) {
            kids.fail("the waiters did not all get the lock within 30 s");
        }
        for (pid_t& w : waiting) {
            if (w > 0 && kids.ended(w, status)) {
                if (status != 0) {
                    kids.fail(edgelock_bench::format("a waiter exited %d", status));
                }
                if (done == 0) {
                    result.after_expiry_ms = static_cast<double>(unix_ms() - expires_at);
                }
                w = -1;
                ++done;
            }
        }
        edgelock_test::sleep_ms(1);
    }
    // With no waiter, the dead holder's key is left to expire: gone before
    // the next window's holder starts.
    if (!edgelock_test::wait_for([&] { return tally.expire_time(key) == -2; }, 10.0)) {
        kids.fail("the dead holder's key did not expire");
    }
    if (!wait_idle(proxy, 10.0)) {
        edgelock_bench::fail(program, "renewals: connections left open");
    }
    return result;
}

}  // namespace edgelock_slow_link
