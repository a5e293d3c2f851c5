// The agent's bad options, bad environment values and hostile servers.
//
// A usage error is exit 64 with one line on stderr, and it must not touch the
// network: every node URL here points at a listening socket the test owns,
// which must not see a single connection. A hostile server must end in 69 or
// 1 within bounded time, with nothing acquired: a command given to `run` is
// never started, `status` never reports the lock held.
//
// "cli: usage errors are 64 with one line on stderr" and "cli: hostile
// servers..." in test_cli.cpp cover other options and the exit codes of
// acquire/run against the first twelve fake_redis modes; these cases add the
// options and values they do not try, the "no connection" and "nothing
// acquired" halves, status/renew/release against every mode, and the modes
// random (bytes without end from the moment of accept) and length-2-63.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"

#ifndef EDGELOCK_CLI_PATH
#error "build with -DEDGELOCK_CLI_PATH=\"/path/to/edgelock\""
#endif
#ifndef EDGELOCK_FAKE_REDIS_PATH
#error "build with -DEDGELOCK_FAKE_REDIS_PATH=\"/path/to/fake_redis\""
#endif

using edgelock_test::agent;
using edgelock_test::agent_run;
using edgelock_test::clip;
using edgelock_test::contains;
using edgelock_test::exit_conflict;
using edgelock_test::exit_lost;
using edgelock_test::exit_unavailable;
using edgelock_test::exit_usage;
using edgelock_test::file_exists;
using edgelock_test::one_line;
using edgelock_test::positive;
using edgelock_test::process;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::run_result;
using edgelock_test::show;
using edgelock_test::temp_dir;
using edgelock_test::url;
using edgelock_test::write_file;

namespace {

using strings = std::vector<std::string>;

const char* const valid_token = "00112233445566778899aabbccddeeff";

// A loopback port nobody answers on, but where every connection attempt is
// seen: the kernel completes the handshake into the backlog, accepted() counts.
class listener {
public:
    listener() {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(::listen(fd_, 128) == 0);
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port_ = ntohs(a.sin_port);
    }
    ~listener() { ::close(fd_); }
    listener(const listener&) = delete;
    listener& operator=(const listener&) = delete;

    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    std::uint16_t port() const { return port_; }

    // Connections made since the last call.
    int accepted() {
        int n = 0;
        for (;;) {
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) {
                return n;
            }
            ::close(c);
            ++n;
        }
    }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

// A fake_redis in `mode`, started and its port read.
struct fake {
    std::string mode;
    std::unique_ptr<process> server;
    std::string port;

    explicit fake(const std::string& m) : mode(m) {
        server = std::make_unique<process>(strings{EDGELOCK_FAKE_REDIS_PATH, m, "--seconds", "90"},
                                           strings{});
        port = server->read_line(5.0);
        INFO("fake_redis " << m);
        REQUIRE(positive(port) > 0);
    }
    std::string url() const { return "redis://127.0.0.1:" + port; }
};

const char* const all_modes[] = {
    "silent",      "reset",       "close",           "trickle", "garbage",
    "huge-length", "length-2-63", "negative-length", "deep",    "no-cr",
    "big-error",   "wrong-type",  "ok-then-garbage", "random"};

// What every agent run against hostile nodes must end with.
void check_not_acquired(const strings& args, const run_result& r, const std::string& mode) {
    INFO("fake_redis " << mode << "\n" << show(args, r));
    CHECK((r.status == exit_unavailable || r.status == exit_conflict));
    CHECK(r.seconds < 10.0);
}

}  // namespace

// --- usage errors --------------------------------------------------------------------

TEST_CASE("cli bad input: usage errors are 64, one line, and touch no node", "[cli][bad-input]") {
    listener node;
    const std::string n = node.url();
    temp_dir dir;
    write_file(dir / "long", std::string(2000, 'p'));
    write_file(dir / "secret-257", std::string(257, 'p') + "\n");
    ::mkdir((dir / "a-directory").c_str(), 0700);
    std::string ten = n;
    for (int i = 1; i < 10; ++i) {
        ten += "," + n;
    }
    const std::string key129(129, 'k');
    const std::string pw257(257, 'p');

    struct row {
        const char* what;
        strings args;
        strings env;
    };
    const std::vector<row> rows = {
        // Durations.
        {"ttl above 24h", {"acquire", "-N", n, "-t", "25h", "k"}, {}},
        {"ttl of 24h and 1ms", {"acquire", "-N", n, "-t", "86400001ms", "k"}, {}},
        {"ttl eaten by the drift (1ms)", {"acquire", "-N", n, "-t", "1ms", "k"}, {}},
        {"ttl eaten by the drift (2ms)", {"acquire", "-N", n, "-t", "2ms", "k"}, {}},
        {"empty duration", {"acquire", "-N", n, "--ttl=", "k"}, {}},
        {"duration with a space", {"acquire", "-N", n, "-t", "5 s", "k"}, {}},
        {"duration in upper case", {"acquire", "-N", n, "-t", "5S", "k"}, {}},
        {"fractional duration", {"acquire", "-N", n, "-t", "1.5s", "k"}, {}},
        {"unit without a number", {"acquire", "-N", n, "-t", "ms", "k"}, {}},
        {"duration with a plus sign", {"acquire", "-N", n, "-t", "+5s", "k"}, {}},
        {"renew-every 0", {"run", "-N", n, "--renew-every", "0", "k", "--", "true"}, {}},
        {"renew-every past the validity",
         {"run", "-N", n, "-t", "30s", "--renew-every", "29700ms", "k", "--", "true"},
         {}},
        {"bad grace", {"run", "-N", n, "--grace", "5x", "k", "--", "true"}, {}},
        {"negative grace", {"run", "-N", n, "--grace=-1s", "k", "--", "true"}, {}},
        {"negative wait", {"acquire", "-N", n, "-w", "-1", "k"}, {}},
        {"wait overflow", {"acquire", "-N", n, "-w", "99999999h", "k"}, {}},
        // -E.
        {"conflict exit code -1", {"acquire", "-N", n, "-E", "-1", "k"}, {}},
        {"conflict exit code 256", {"acquire", "-N", n, "-E", "256", "k"}, {}},
        {"conflict exit code abc", {"acquire", "-N", n, "-E", "abc", "k"}, {}},
        {"conflict exit code 1x", {"acquire", "-N", n, "-E", "1x", "k"}, {}},
        {"empty conflict exit code", {"acquire", "-N", n, "--conflict-exit-code=", "k"}, {}},
        // Options without their value.
        {"-t at the end", {"acquire", "-N", n, "k", "-t"}, {}},
        {"-N at the end", {"acquire", "k", "-N"}, {}},
        {"--password-file at the end", {"acquire", "-N", n, "k", "--password-file"}, {}},
        // Flags given a value.
        {"--nonblock=no", {"acquire", "-N", n, "--nonblock=no", "k"}, {}},
        {"--verbose=0", {"acquire", "-N", n, "--verbose=0", "k"}, {}},
        {"--quiet=no", {"acquire", "-N", n, "--quiet=no", "k"}, {}},
        {"--fencing=no", {"acquire", "-N", n, "--fencing=no", "k"}, {}},
        {"-vq", {"acquire", "-N", n, "-vq", "k"}, {}},
        {"-nv", {"acquire", "-N", n, "-nv", "k"}, {}},
        // KEY, nodes.
        {"KEY of 129 bytes", {"acquire", "-N", n, key129}, {}},
        {"10 nodes", {"acquire", "-N", ten, "k"}, {}},
        {"an empty node between two", {"acquire", "-N", n + ",," + n, "k"}, {}},
        {"a trailing comma", {"acquire", "-N", n + ",", "k"}, {}},
        {"a bad URL after a good one", {"acquire", "-N", n + ",redis://127.0.0.1:0", "k"}, {}},
        {"a user without a password",
         {"acquire", "-N", "redis://gw@127.0.0.1:" + std::to_string(node.port()), "k"},
         {}},
        {"db out of range", {"acquire", "-N", n + "/2147483648", "k"}, {}},
        {"relative unix path", {"acquire", "-N", "unix://tmp/redis.sock", "k"}, {}},
        // TOKEN.
        {"TOKEN of 31 hex digits", {"release", "-N", n, "k", std::string(31, 'a')}, {}},
        {"TOKEN of 33 hex digits", {"renew", "-N", n, "k", std::string(33, 'a')}, {}},
        {"TOKEN of 32 non-hex bytes", {"renew", "-N", n, "k", std::string(32, 'g')}, {}},
        {"TOKEN with a 0x prefix", {"release", "-N", n, "k", "0x" + std::string(30, 'a')}, {}},
        {"empty TOKEN", {"release", "-N", n, "k", ""}, {}},
        // Operands.
        {"acquire with an extra operand", {"acquire", "-N", n, "k", "extra"}, {}},
        {"status with an extra operand", {"status", "-N", n, "k", "extra"}, {}},
        {"renew with an extra operand", {"renew", "-N", n, "k", valid_token, "extra"}, {}},
        {"acquire with a command", {"acquire", "-N", n, "k", "--", "true"}, {}},
        // Passwords.
        {"a missing password file", {"acquire", "-N", n, "--password-file", dir / "none", "k"}, {}},
        {"a directory as password file",
         {"acquire", "-N", n, "--password-file", dir / "a-directory", "k"},
         {}},
        {"a password file over 1 KiB",
         {"acquire", "-N", n, "--password-file", dir / "long", "k"},
         {}},
        {"a password of 257 bytes from a file",
         {"acquire", "-N", n, "--password-file", dir / "secret-257", "k"},
         {}},
        // The environment.
        {"EDGELOCK_NODES with an empty node", {"acquire", "k"}, {"EDGELOCK_NODES=" + n + ",," + n}},
        {"EDGELOCK_NODES of a comma", {"acquire", "k"}, {"EDGELOCK_NODES=,"}},
        {"EDGELOCK_NODES not a URL", {"acquire", "k"}, {"EDGELOCK_NODES=127.0.0.1:6379"}},
        {"EDGELOCK_NODES of 10 nodes", {"acquire", "k"}, {"EDGELOCK_NODES=" + ten}},
        {"EDGELOCK_NODES with TLS", {"acquire", "k"}, {"EDGELOCK_NODES=rediss://127.0.0.1:1"}},
        {"REDISCLI_AUTH of 257 bytes", {"acquire", "-N", n, "k"}, {"REDISCLI_AUTH=" + pw257}},
    };
    for (const row& w : rows) {
        const run_result r = agent(w.args, w.env);
        INFO(w.what << "\n" << show(w.args, r));
        CHECK(r.status == exit_usage);
        CHECK(one_line(r.err));
        CHECK(r.out.empty());
        CHECK(r.seconds < 5.0);
        CHECK(node.accepted() == 0);
    }

    // The same values, valid: the agent does go to the node (and finds it mute).
    const strings args{"release", "-N", n, "k", valid_token};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == exit_unavailable);
    CHECK(node.accepted() > 0);
}

TEST_CASE("cli bad input: a bad TOKEN leaves a held lock as it was", "[cli][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-bad-token";
    const strings acq{"acquire", "-t", "20s", "-N", url(srv), key};
    const run_result a = agent(acq);
    INFO(show(acq, a));
    REQUIRE(a.status == 0);
    const std::string token = a.out.substr(0, a.out.find('\n'));
    REQUIRE(token.size() == 32);

    std::string upper = token;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    for (const std::string& bad : {token.substr(1), token + "0", "0x" + token.substr(2),
                                   token.substr(0, 31) + "z", std::string()}) {
        for (const char* cmd : {"release", "renew"}) {
            const strings args{cmd, "-t", "60s", "-N", url(srv), key, bad};
            const run_result r = agent(args);
            INFO(show(args, r));
            CHECK(r.status == exit_usage);
            CHECK(admin.command({"GET", "{" + key + "}"}).text == token);
            const long long pttl = admin.command({"PTTL", "{" + key + "}"}).integer;
            CHECK(pttl > 0);
            CHECK(pttl <= 20000);  // not renewed to 60 s
        }
    }
    // The token in upper case is the same token.
    const strings rel{"release", "-N", url(srv), key, upper};
    const run_result r = agent(rel);
    INFO(show(rel, r));
    CHECK(r.status == 0);
    CHECK(admin.command({"EXISTS", "{" + key + "}"}).integer == 0);
}

// --- hostile servers -------------------------------------------------------------------

TEST_CASE("cli bad input: random bytes and 2^63 lengths: 69 or 1, nothing acquired",
          "[cli][bad-input]") {
    temp_dir dir;
    for (const char* mode : {"random", "length-2-63"}) {
        fake f(mode);
        const std::string ran = dir / (std::string("ran-") + mode);
        const std::string key = std::string("cli-bad-") + mode;
        std::vector<std::unique_ptr<agent_run>> runs;
        runs.push_back(
            std::make_unique<agent_run>(strings{"acquire", "-N", f.url(), key}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"run", "-N", f.url(), key, "--", "touch", ran}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"run", "-w", "2s", "-N", f.url(), key, "--", "touch", ran}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"renew", "-N", f.url(), key, valid_token}, strings{}));
        runs.push_back(std::make_unique<agent_run>(
            strings{"release", "-N", f.url(), key, valid_token}, strings{}));
        for (auto& a : runs) {
            const run_result r = a->finish();
            check_not_acquired(a->args, r, mode);
            CHECK(r.out.empty());
        }
        const strings st{"status", "-N", f.url(), key};
        const run_result s = agent(st);
        INFO(show(st, s));
        CHECK(s.status == exit_unavailable);
        CHECK_FALSE(contains(s.out, "held"));
        CHECK(s.seconds < 10.0);
        CHECK_FALSE(file_exists(ran));  // the command never ran
        CHECK(f.server->running());     // and the fake survived its clients
    }
}

TEST_CASE("cli bad input: no hostile server lets a command run or reports a lock held",
          "[cli][bad-input]") {
    temp_dir dir;
    std::vector<std::unique_ptr<fake>> fakes;
    for (const char* m : all_modes) {
        fakes.push_back(std::make_unique<fake>(m));
    }
    // Two waves, so that 14 slow modes wait on the agents' timeouts side by side
    // without 56 agents at once.
    struct one {
        std::string mode;
        std::unique_ptr<agent_run> first;
        std::unique_ptr<agent_run> second;
    };
    std::vector<one> all;
    for (const auto& f : fakes) {
        const std::string key = "cli-bad-all-" + f->mode;
        one o;
        o.mode = f->mode;
        o.first = std::make_unique<agent_run>(
            strings{"run", "-N", f->url(), key, "--", "touch", dir / f->mode}, strings{});
        o.second = std::make_unique<agent_run>(strings{"status", "-N", f->url(), key}, strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        const run_result r = o.first->finish();
        check_not_acquired(o.first->args, r, o.mode);
        const run_result s = o.second->finish();
        INFO("fake_redis " << o.mode << "\n" << show(o.second->args, s));
        CHECK(s.status == exit_unavailable);
        CHECK_FALSE(contains(s.out, "held"));
        CHECK(s.seconds < 10.0);
        CHECK_FALSE(file_exists(dir / o.mode));
    }
    all.clear();
    for (const auto& f : fakes) {
        const std::string key = "cli-bad-all-" + f->mode;
        one o;
        o.mode = f->mode;
        o.first = std::make_unique<agent_run>(
            strings{"renew", "-t", "10s", "-N", f->url(), key, valid_token}, strings{});
        o.second = std::make_unique<agent_run>(strings{"release", "-N", f->url(), key, valid_token},
                                               strings{});
        all.push_back(std::move(o));
    }
    for (one& o : all) {
        check_not_acquired(o.first->args, o.first->finish(), o.mode);
        check_not_acquired(o.second->args, o.second->finish(), o.mode);
    }
    for (const auto& f : fakes) {
        INFO("fake_redis " << f->mode);
        CHECK(f->server->running());
    }
}

TEST_CASE("cli bad input: random and 2^63 nodes among real ones", "[cli][bad-input]") {
    redis_server a;
    redis_server b;
    redis_client admin(a.port());
    fake random("random");
    fake huge("length-2-63");
    temp_dir dir;

    // One hostile node of three: the quorum of two real ones holds the lock.
    for (const fake* f : {&random, &huge}) {
        const std::string ran = dir / ("one-" + f->mode);
        const strings args{
            "run",   "-N", url(a) + "," + url(b) + "," + f->url(), "cli-bad-one-" + f->mode, "--",
            "touch", ran};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(r.seconds < 5.0);
        CHECK(file_exists(ran));
    }

    // Two of three: no quorum, the command never runs, the real node is left clean.
    const std::string ran = dir / "two";
    const strings args{
        "run",   "-N", url(a) + "," + random.url() + "," + huge.url(), "cli-bad-two", "--",
        "touch", ran};
    const run_result r = agent(args, {}, 30.0);
    INFO(show(args, r));
    CHECK((r.status == exit_unavailable || r.status == exit_conflict));
    CHECK(r.seconds < 10.0);
    CHECK_FALSE(file_exists(ran));
    CHECK(admin.command({"EXISTS", "{cli-bad-two}"}).integer == 0);
    CHECK(random.server->running());
    CHECK(huge.server->running());
}
