// The configuration file's bad input: 64, FILE:LINE, no node contacted; the
// refusal of a password others may read; and files of random pieces.
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "cli/config_helpers.hpp"
#include "tools/files.hpp"
#include "tools/net.hpp"
#include "tools/url.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

TEST_CASE("cli config: bad files are usage errors naming FILE:LINE, and touch no node",
          "[cli][config][bad-input]") {
    loopback_listener node;
    REQUIRE(node.fd() >= 0);
    const std::string n = redis_url(node.port());
    temp_dir dir{"edgelock-config"};
    ::mkdir((dir / "a-directory").c_str(), 0700);
    REQUIRE(::mkfifo((dir / "a-fifo").c_str(), 0600) == 0);
    std::string ten = n;
    for (int k = 1; k < 10; ++k) {
        ten += "," + n;
    }
    std::string big;
    while (big.size() <= 64 * 1024) {
        big += "# " + std::string(70, 'c') + "\n";
    }
    struct row {
        const char* what;
        std::string text;
        std::string message;  // after "FILE"
    };
    const std::vector<row> rows = {
        {"an unknown key", "ttl = 5s\nfrobnicate = 1\n", ":2: unknown key 'frobnicate'"},
        {"password on argv's name only", "pass = x\n", ":1: unknown key 'pass'"},
        {"a bad duration", "ttl = 5x\n", ":1: bad duration '5x' for ttl"},
        {"a trailing comment", "ttl = 5s # five\n", ":1: bad duration '5s # five' for ttl"},
        {"a ttl out of range", "ttl = 25h\n", ":1: ttl must be between 1ms and 24h"},
        {"a bad wait", "\n\nwait = soon\n", ":3: bad duration 'soon' for wait"},
        {"renew-every 0", "renew-every = 0\n", ":1: renew-every must be above 0"},
        {"a key twice", "ttl = 10s\n# again\nttl = 20s\n", ":3: ttl given twice (first at line 1)"},
        {"a line without =", "ttl 10s\n", ":1: expected key = value"},
        {"no key", " = 10s\n", ":1: no key before '='"},
        {"a bad boolean", "tls = maybe\n", ":1: bad value 'maybe' for tls (yes or no)"},
        {"min-replicas 256", "min-replicas = 256\n", ":1: min-replicas must be 0..255"},
        {"conflict-exit-code -1", "conflict-exit-code = -1\n", ":1: conflict-exit-code must be"},
        {"a bad node URL", "nodes = redis://127.0.0.1:0\n", ":1: bad node URL"},
        {"ten nodes", "nodes = " + ten + "\n", ":1: at most "},
        {"an empty node", "nodes = " + n + ",," + n + "\n", ":1: nodes: empty node in the list"},
        {"an empty label", "label =\n", ":1: label must be 1 to 64 bytes"},
        {"an empty cacert", "cacert =\n", ":1: cacert needs a value"},
        {"a missing password file", "password-file = " + (dir / "none") + "\n",
         ":1: cannot read password file"},
        {"password and password-file", "password = a\npassword-file = " + (dir / "x") + "\n",
         ":2: password and password-file both set"},
        {"cert without key", "tls = yes\ncert = " + (dir / "c.pem") + "\n",
         ":2: cert and key go together"},
        {"a line over 1024 bytes", "# short\nlabel = " + std::string(1100, 'l') + "\n",
         ":2: line longer than 1024 bytes"},
        {"a NUL byte", std::string("ttl = 1\0s\n", 10), ":1: a NUL byte"},
        {"a file over 64 KiB", big, ": larger than 65536 bytes"},
    };
    int i = 0;
    for (const row& w : rows) {
        const std::string path = conf(dir, "c" + std::to_string(i++), w.text);
        const strings args{"acquire", "-N", n, "k"};
        const run_result r = agent(args, {"EDGELOCK_CONFIG=" + path});
        INFO(w.what << "\n" << show(args, r));
        CHECK(r.status == exit_usage);
        CHECK(one_line(r.err));
        CHECK(contains(r.err, "edgelock: " + path + w.message));
        CHECK(r.out.empty());
        CHECK(node.accepted() == 0);
    }
    // Files that are not one, or not there: named by --config or $EDGELOCK_CONFIG.
    const std::string dir_conf = dir / "a-directory";
    const std::string fifo = dir / "a-fifo";
    const std::string missing = dir / "missing.conf";
    struct file_row {
        strings args;
        strings env;
        std::string message;
    };
    const std::vector<file_row> files = {
        {{"--config", dir_conf}, {}, dir_conf + ": not a regular file"},
        {{}, {"EDGELOCK_CONFIG=" + fifo}, fifo + ": not a regular file"},
        {{"--config", missing}, {}, missing + ": No such file or directory"},
        {{}, {"EDGELOCK_CONFIG=" + missing}, missing + ": No such file or directory"},
        {{"--config="}, {}, "--config needs a value"},
        {{"--config"}, {}, "needs a value"},
    };
    for (const file_row& f : files) {
        strings args{"acquire", "-N", n, "k"};
        args.insert(args.end(), f.args.begin(), f.args.end());
        if (f.args == strings{"--config"}) {
            args = {"acquire", "-N", n, "k", "--config"};
        }
        const run_result r = agent(args, f.env, 5.0);
        INFO(show(args, r));
        CHECK(r.status == exit_usage);
        CHECK(one_line(r.err));
        CHECK(contains(r.err, f.message));
        CHECK(node.accepted() == 0);
    }
    // No --password on the command line: ps would show it.
    const strings pw{"acquire", "-N", n, "--password", "x", "k"};
    const run_result r = agent(pw);
    INFO(show(pw, r));
    CHECK(r.status == exit_usage);
    CHECK(contains(r.err, "unknown option '--password'"));
    CHECK(node.accepted() == 0);
}

TEST_CASE("cli config: a password in a file others may read is refused", "[cli][config]") {
    temp_dir dir{"edgelock-config"};
    const std::string refusal = ": holds a password but is readable by others (chmod 600 ";
    struct row {
        const char* what;
        std::string text;
        mode_t mode;
        bool refused;
    };
    const std::vector<row> rows = {
        {"password, 644", "password = s3cret\n", 0644, true},
        {"password, 640", "password = s3cret\n", 0640, true},
        {"password, 604", "password = s3cret\n", 0604, true},
        {"password, 600", "password = s3cret\n", 0600, false},
        {"password, 400", "password = s3cret\n", 0400, false},
        {"a URL's password, 644", "nodes = redis://gw:s3cret@127.0.0.1:1\n", 0644, true},
        {"a URL's password, 600", "nodes = redis://gw:s3cret@127.0.0.1:1\n", 0600, false},
        {"a URL's user only, 644", "nodes = redis://gw@127.0.0.1:1\n", 0644, false},
        {"a password file's name, 644", "password-file = " + conf(dir, "pw", "x\n") + "\n", 0644,
         false},
        {"no password, 644", "ttl = 5s\n", 0644, false},
    };
    int i = 0;
    for (const row& w : rows) {
        const std::string path = conf(dir, "c" + std::to_string(i++), w.text, w.mode);
        const strings args{"config", "--config", path};
        const run_result r = agent(args);
        INFO(w.what << "\n" << show(args, r));
        if (w.refused) {
            CHECK(r.status == exit_usage);
            CHECK(r.err == "edgelock: " + path + refusal + path + ")\n");
            CHECK(r.out.empty());
        } else {
            CHECK(r.status == 0);
            CHECK(r.err.empty());
        }
        CHECK_FALSE(contains(r.out + r.err, "s3cret"));
    }
}

TEST_CASE("cli config: files of random pieces end in 0 or 64, never worse", "[cli][config]") {
    temp_dir dir{"edgelock-config"};
    const char* const pieces[] = {"ttl",
                                  "wait",
                                  "nodes",
                                  "label",
                                  "password",
                                  "tls",
                                  "cacert",
                                  "bogus",
                                  "=",
                                  " = ",
                                  "=",
                                  "#",
                                  "\n",
                                  "\n",
                                  "\r\n",
                                  " ",
                                  "\t",
                                  "5s",
                                  "yes",
                                  "none",
                                  "forever",
                                  "redis://127.0.0.1:1",
                                  "redis://u:p@h",
                                  ",",
                                  "\xff\xfe",
                                  "\x01",
                                  "",
                                  "-1",
                                  "99999999999999999999h"};
    std::mt19937 rng(20261128);
    for (int i = 0; i < 150; ++i) {
        std::string text;
        const int n = static_cast<int>(rng() % 40);
        for (int p = 0; p < n; ++p) {
            text += pieces[rng() % (sizeof pieces / sizeof pieces[0])];
        }
        if (rng() % 8 == 0) {
            text += std::string(1, '\0');
        }
        const std::string path = conf(dir, "r" + std::to_string(i), text, i % 2 ? 0600 : 0644);
        const strings args{"config", "--config", path};
        const run_result r = agent(args, {}, 5.0);
        INFO(show(args, r));
        CHECK((r.status == 0 || r.status == exit_usage));
        if (r.status == exit_usage) {
            CHECK(one_line(r.err));
            CHECK(starts_with(r.err, "edgelock: " + path + ":"));
        }
    }
}
