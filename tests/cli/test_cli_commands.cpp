// The agent's other commands (acquire, renew, release, status), durations,
// nodes from the environment, usage errors, -h and -V, and passwords.
//
// Bad input: a usage error is exit 64 with one line on stderr, and it must not
// touch the network (the nodes named are a listening socket the test owns,
// which must not see a single connection); a bad TOKEN leaves a held lock as
// it was.
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"
#include "tools/url.hpp"

#ifndef EDGELOCK_CLI_PATH
#error "build with -DEDGELOCK_CLI_PATH=\"/path/to/edgelock\""
#endif
#ifndef EDGELOCK_FAKE_REDIS_PATH
#error "build with -DEDGELOCK_FAKE_REDIS_PATH=\"/path/to/fake_redis\""
#endif

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

// --- acquire / renew / release / status ------------------------------------------

TEST_CASE("cli: acquire, renew, release and status", "[cli]") {
    std::vector<std::unique_ptr<redis_server>> servers;
    std::vector<std::unique_ptr<redis_client>> admins;
    strings urls;
    for (int i = 0; i < 3; ++i) {
        servers.push_back(std::make_unique<redis_server>());
        admins.push_back(std::make_unique<redis_client>(servers.back()->port()));
        load_scripts(*admins.back());  // as an earlier run would: no node late for a NOSCRIPT
        urls.push_back(redis_url(*servers.back()));
    }
    const std::string nodes = node_list(urls);
    const std::string key = "cli-commands";

    const strings acq{"acquire", "-t", "5s", "-N", nodes, key};
    const run_result a = agent(acq);
    INFO(show(acq, a));
    REQUIRE(a.status == 0);
    const strings out = lines_of(a.out);
    REQUIRE(out.size() == 1);
    const std::string token = out[0];
    CHECK(is_token(token));
    for (auto& c : admins) {
        CHECK(lock_value(*c, key) == token);
        CHECK(lock_pttl(*c, key) <= 5000);
    }

    {
        const strings args{"renew", "-t", "20s", "-N", nodes, key, token};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        // A quorum's keys renewed: the round ends with its second yes, and a
        // node still connecting by then is not asked (its key keeps its ttl).
        int renewed = 0;
        for (auto& c : admins) {
            CHECK(lock_value(*c, key) == token);
            renewed += lock_pttl(*c, key) > 10000 ? 1 : 0;
        }
        CHECK(renewed >= 2);
    }
    {
        const strings args{"renew", "-t", "20s", "-N", nodes, key, std::string(32, '0')};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status != 0);  // not ours: not renewed
    }

    const strings held_args{"status", "-N", nodes, key};
    const run_result held = agent(held_args);
    {
        INFO(show(held_args, held));
        CHECK(held.status == 0);
        CHECK(contains(lower(held.out), "held"));
        for (const auto& s : servers) {
            CHECK(contains(held.out, "127.0.0.1:" + std::to_string(s->port())));
        }
    }

    {
        const strings args{"release", "-N", nodes, key, std::string(32, 'a')};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 1);
        for (auto& c : admins) {
            CHECK(lock_value(*c, key) == token);
        }
    }
    {
        const strings args{"release", "-N", nodes, key, token};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        for (auto& c : admins) {
            CHECK(lock_exists(*c, key) == 0);
        }
    }
    {
        const strings args{"release", "-N", nodes, key, token};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 1);
    }

    const run_result freed = agent(held_args);
    INFO(show(held_args, freed));
    CHECK(freed.status == 0);
    CHECK(contains(lower(freed.out), "free"));
    CHECK(freed.out != held.out);
}

TEST_CASE("cli bad input: a bad TOKEN leaves a held lock as it was", "[cli][bad-input]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-bad-token";
    const strings acq{"acquire", "-t", "20s", "-N", redis_url(srv), key};
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
            const strings args{cmd, "-t", "60s", "-N", redis_url(srv), key, bad};
            const run_result r = agent(args);
            INFO(show(args, r));
            CHECK(r.status == exit_usage);
            CHECK(admin.command({"GET", key_of(key)}).text == token);
            const long long pttl = admin.command({"PTTL", key_of(key)}).integer;
            CHECK(pttl > 0);
            CHECK(pttl <= 20000);  // not renewed to 60 s
        }
    }
    // The token in upper case is the same token.
    const strings rel{"release", "-N", redis_url(srv), key, upper};
    const run_result r = agent(rel);
    INFO(show(rel, r));
    CHECK(r.status == 0);
    CHECK(admin.command({"EXISTS", key_of(key)}).integer == 0);
}

TEST_CASE("cli: acquire --fencing prints the fencing token on line 2", "[cli]") {
    redis_server srv;
    const strings args{"acquire",      "--fencing",         "-t", "5s", "-N",
                       redis_url(srv), "cli-acquire-fenced"};
    const run_result r = agent(args);
    INFO(show(args, r));
    REQUIRE(r.status == 0);
    const strings out = lines_of(r.out);
    REQUIRE(out.size() == 2);
    CHECK(is_token(out[0]));
    CHECK(positive(out[1]) > 0);
}

TEST_CASE("cli: durations: ms, s, m, h and bare seconds", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    struct row {
        const char* ttl;
        long long min_ms;
        long long max_ms;
    };
    const row rows[] = {
        {"250ms", 1, 250},      {"7", 5000, 7000},        {"10s", 8000, 10000},
        {"2m", 110000, 120000}, {"1h", 3500000, 3600000},
    };
    for (const row& w : rows) {
        const std::string key = std::string("cli-duration-") + w.ttl;
        const strings args{"acquire", "-t", w.ttl, "-N", redis_url(srv), key};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        const long long t = lock_pttl(admin, key);
        INFO("PTTL " << t);
        CHECK(t >= w.min_ms);
        CHECK(t <= w.max_ms);
    }
}

TEST_CASE("cli: nodes from EDGELOCK_NODES, and -N overrides it", "[cli]") {
    redis_server srv;
    redis_server dead;
    dead.kill();
    redis_client admin(srv.port());
    {
        const strings args{"acquire", "-t", "5s", "cli-env-nodes"};
        const run_result r = agent(args, {"EDGELOCK_NODES=" + redis_url(srv)});
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        CHECK(lock_value(admin, "cli-env-nodes") == lines_of(r.out).at(0));
    }
    {
        const strings args{"run", "-N", redis_url(srv), "cli-env-override", "--", "true"};
        const run_result r = agent(args, {"EDGELOCK_NODES=" + redis_url(dead)});
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
}

// --- usage errors ------------------------------------------------------------------

TEST_CASE("cli: usage errors are 64 with one line on stderr", "[cli]") {
    redis_server srv;  // so that an agent that does not refuse finds a server
    const std::string n = redis_url(srv);
    struct row {
        const char* what;
        strings args;
    };
    const std::vector<row> rows = {
        {"unknown option", {"run", "--bogus", "-N", n, "k", "--", "true"}},
        {"bad duration", {"run", "-t", "5x", "-N", n, "k", "--", "true"}},
        {"zero ttl", {"run", "-t", "0", "-N", n, "k", "--", "true"}},
        {"bad wait", {"run", "-w", "soon", "-N", n, "k", "--", "true"}},
        {"not a redis URL", {"run", "-N", "http://x", "k", "--", "true"}},
        {"port out of range", {"run", "-N", "redis://127.0.0.1:70000", "k", "--", "true"}},
        {"port 0", {"run", "-N", "redis://127.0.0.1:0", "k", "--", "true"}},
        {"empty node list", {"run", "-N", "", "k", "--", "true"}},
        {"negative ttl", {"run", "-t", "-5", "-N", n, "k", "--", "true"}},
        {"duration overflow", {"run", "-t", "99999999999999h", "-N", n, "k", "--", "true"}},
        {"renew-every not under the ttl",
         {"run", "-t", "1s", "--renew-every", "2s", "-N", n, "k", "--", "true"}},
        {"conflict exit code out of range", {"run", "-E", "300", "-N", n, "k", "--", "true"}},
        {"empty KEY", {"run", "-N", n, "", "--", "true"}},
        {"bad TOKEN", {"release", "-N", n, "k", "not-hex"}},
        {"command without --", {"run", "-N", n, "k", "true"}},
        {"TLS option without TLS", {"run", "--cacert", "ca.pem", "-N", n, "k", "--", "true"}},
        {"--insecure without TLS", {"run", "--insecure", "-N", n, "k", "--", "true"}},
        {"--cert without --key", {"run", "--tls", "--cert", "c.pem", "-N", n, "k", "--", "true"}},
        {"--key without --cert", {"run", "--tls", "--key", "k.pem", "-N", n, "k", "--", "true"}},
        {"empty --sni", {"run", "--tls", "--sni=", "-N", n, "k", "--", "true"}},
        // With TLS built in, the CA file is read at set-up; without, TLS is
        // refused: a usage error either way, before any node is contacted.
        {"unreadable CA file",
         {"run", "--tls", "--cacert", "/nonexistent/ca.pem", "-N", n, "k", "--", "true"}},
        {"missing command", {"run", "-N", n, "k", "--"}},
        {"missing KEY (run)", {"run", "-N", n}},
        {"missing KEY (acquire)", {"acquire", "-N", n}},
        {"missing TOKEN", {"release", "-N", n, "k"}},
        {"unknown subcommand", {"frobnicate", "-N", n, "k"}},
        {"no subcommand", {}},
    };
    for (const row& w : rows) {
        const run_result r = agent(w.args);
        INFO(w.what << "\n" << show(w.args, r));
        CHECK(r.status == exit_usage);
        CHECK(one_line(r.err));
        CHECK(r.out.empty());
    }
}

TEST_CASE("cli bad input: usage errors are 64, one line, and touch no node", "[cli][bad-input]") {
    loopback_listener node;
    REQUIRE(node.fd() >= 0);
    const std::string n = redis_url(node.port());
    temp_dir dir;
    write_file(dir / "long", std::string(2000, 'p'));
    write_file(dir / "secret-257", std::string(257, 'p') + "\n");
    ::chmod((dir / "long").c_str(), 0600);
    ::chmod((dir / "secret-257").c_str(), 0600);
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
        {"a user without a password", {"acquire", "-N", redis_url(node.port(), "gw"), "k"}, {}},
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
        // TLS: options that need it, and a CA file that cannot be read (with
        // TLS built in it is read at set-up, before any node; without, TLS is
        // refused): usage errors either way.
        {"a TLS option without TLS", {"acquire", "-N", n, "--cacert", dir / "none", "k"}, {}},
        {"EDGELOCK_NODES with TLS and an unreadable CA",
         {"acquire", "--cacert", dir / "none", "k"},
         {"EDGELOCK_NODES=rediss://127.0.0.1:" + std::to_string(node.port())}},
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

TEST_CASE("cli: -h prints the usage, -V the version", "[cli]") {
    for (const char* h : {"-h", "--help"}) {
        const strings args{h};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(contains(lower(r.out), "usage"));
        CHECK(contains(r.out, "run"));
    }
    for (const char* v : {"-V", "--version"}) {
        const strings args{v};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK_FALSE(r.out.empty());
    }
}

// --- passwords ---------------------------------------------------------------------

TEST_CASE("cli: passwords from --password-file and REDISCLI_AUTH", "[cli]") {
    redis_server srv({"--requirepass", "pw"});
    temp_dir dir;
    write_file(dir / "pw", "pw");
    write_file(dir / "pw-newline", "pw\n");  // as `echo pw > file` writes it
    write_file(dir / "wrong", "wrong\n");
    for (const char* name : {"pw", "pw-newline", "wrong"}) {
        REQUIRE(::chmod((dir / name).c_str(), 0600) == 0);  // as password files must be
    }

    {
        const strings args{"acquire",  "-t", "5s",           "--password-file",
                           dir / "pw", "-N", redis_url(srv), "cli-pw-file"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(r.out.size() == 33);
    }
    {
        const strings args{"acquire",          "-t", "5s",           "--password-file",
                           dir / "pw-newline", "-N", redis_url(srv), "cli-pw-file-newline"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
    {
        const strings args{"run", "-N", redis_url(srv), "cli-pw-env", "--", "true"};
        const run_result r = agent(args, {"REDISCLI_AUTH=pw"});
        INFO(show(args, r));
        CHECK(r.status == 0);
    }
    struct row {
        const char* what;
        strings args;
    };
    const std::vector<row> refused = {
        {"wrong password",
         {"acquire", "--password-file", dir / "wrong", "-N", redis_url(srv), "cli-pw-wrong"}},
        {"no password", {"acquire", "-N", redis_url(srv), "cli-pw-none"}},
    };
    for (const row& w : refused) {
        const run_result r = agent(w.args);
        INFO(w.what << "\n" << show(w.args, r));
        CHECK(r.status == exit_unavailable);
        CHECK(r.out.empty());
        const std::string e = lower(r.err);
        CHECK((contains(e, "auth") || contains(e, "password")));
    }
}
