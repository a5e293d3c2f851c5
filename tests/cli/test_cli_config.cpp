// The configuration file (src/cli/config_file.hpp, settings.hpp): its
// layers (defaults, the file, the environment, the command line), its bad
// input (64, FILE:LINE, no node contacted), the refusal of a password others
// may read, and `edgelock config`, which shows where each setting came from
// and never a secret. Tests without a server contact none.
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/files.hpp"
#include "tools/net.hpp"
#include "tools/skip.hpp"
#include "tools/url.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// The settings `edgelock config` shows, in its order.
const char* const setting_keys[] = {"nodes",
                                    "password-file",
                                    "sentinel-password-file",
                                    "password",
                                    "tls",
                                    "cacert",
                                    "cacertdir",
                                    "cert",
                                    "key",
                                    "sni",
                                    "insecure",
                                    "tls-session-cache",
                                    "ttl",
                                    "wait",
                                    "renew-every",
                                    "grace",
                                    "max-hold",
                                    "fencing",
                                    "min-replicas",
                                    "conflict-exit-code",
                                    "label",
                                    "metrics-file"};

// A file of `text` in `dir`, with mode `mode`.
std::string conf(const temp_dir& dir, const std::string& name, const std::string& text,
                 mode_t mode = 0600) {
    const std::string path = dir / name;
    REQUIRE(write_file(path, text));
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return path;
}

struct shown_setting {
    std::string value;
    std::string from;
};

// `edgelock config`'s lines, "key = value  (from)", by key; the order of
// the keys in `order`.
std::map<std::string, shown_setting> parse_shown(const std::string& out, strings* order = nullptr) {
    std::map<std::string, shown_setting> m;
    for (const std::string& line : lines_of(out)) {
        const std::size_t eq = line.find(" = ");
        const std::size_t open = line.rfind("  (");
        if (eq == std::string::npos || open == std::string::npos || open < eq ||
            line.back() != ')') {
            FAIL("not a config line: '" << line << "'");
        }
        const std::string key = line.substr(0, eq);
        m[key] = shown_setting{line.substr(eq + 3, open - eq - 3),
                               line.substr(open + 3, line.size() - open - 4)};
        if (order != nullptr) {
            order->push_back(key);
        }
    }
    return m;
}

// `edgelock config ARGS` with `env`: must succeed.
std::map<std::string, shown_setting> shown(const strings& args, const strings& env) {
    strings a{"config"};
    a.insert(a.end(), args.begin(), args.end());
    const run_result r = agent(a, env);
    INFO(show(a, r));
    REQUIRE(r.status == 0);
    REQUIRE(r.err.empty());
    return parse_shown(r.out);
}

}  // namespace

TEST_CASE("cli config: each layer overrides the one below it", "[cli][config]") {
    temp_dir dir{"edgelock-config"};
    const std::string pw_file = conf(dir, "pw", "from-file\n");
    const std::string pw_cli = conf(dir, "pw-cli", "from-cli\n");
    const std::string path = conf(dir, "edgelock.conf",
                                  "# a gateway\n"
                                  "nodes = redis://10.0.0.1:6379\n"
                                  "ttl = 10s\n"
                                  "\n"
                                  "   wait   =   2s   \n"
                                  "password-file = " +
                                      pw_file + "\n");
    const strings file{"EDGELOCK_CONFIG=" + path};

    // The file over the defaults.
    auto s = shown({}, file);
    CHECK(s["config"].value == path);
    CHECK(s["config"].from == "EDGELOCK_CONFIG");
    CHECK(s["nodes"].value == "redis://10.0.0.1:6379");
    CHECK(s["nodes"].from == path + ":2");
    CHECK(s["ttl"].value == "10s");
    CHECK(s["ttl"].from == path + ":3");
    CHECK(s["wait"].value == "2s");  // blanks around key and value dropped
    CHECK(s["wait"].from == path + ":5");
    CHECK(s["grace"].value == "5s");
    CHECK(s["grace"].from == "default");
    CHECK(s["password-file"].from == path + ":6");

    // The environment over the file.
    strings env = file;
    env.push_back("EDGELOCK_NODES=redis://10.0.0.2:6379");
    env.push_back("REDISCLI_AUTH=from-env");
    s = shown({}, env);
    CHECK(s["nodes"].value == "redis://10.0.0.2:6379");
    CHECK(s["nodes"].from == "EDGELOCK_NODES");
    CHECK(s["password"].value == "********");
    CHECK(s["password"].from == "REDISCLI_AUTH");
    CHECK(s["password-file"].from == path + ":6; overridden");
    CHECK(s["ttl"].from == path + ":3");

    // The command line over both.
    s = shown(
        {"-N", "redis://10.0.0.3:6379", "--ttl", "20s", "-w", "1s", "--password-file", pw_cli},
        env);
    CHECK(s["nodes"].value == "redis://10.0.0.3:6379");
    CHECK(s["nodes"].from == "-N");
    CHECK(s["ttl"].value == "20s");
    CHECK(s["ttl"].from == "--ttl");
    CHECK(s["wait"].from == "-w");
    CHECK(s["password-file"].value == pw_cli);
    CHECK(s["password-file"].from == "--password-file");
    CHECK(s["password"].from == "REDISCLI_AUTH; overridden");
    // -n is one try whatever the file says.
    s = shown({"-n"}, file);
    CHECK(s["wait"].value == "0");
    CHECK(s["wait"].from == "--nonblock");
}

TEST_CASE("cli config: a run takes its nodes and ttl from the file, under env and argv",
          "[cli][config]") {
    redis_server srv;
    redis_client admin(srv.port());
    loopback_listener mute;
    REQUIRE(mute.fd() >= 0);
    temp_dir dir{"edgelock-config"};
    const std::string path =
        conf(dir, "edgelock.conf", "nodes = " + redis_url(srv) + "\nttl = 7s\nlabel = from-file\n");
    const strings file{"EDGELOCK_CONFIG=" + path};

    // nodes and ttl from the file: the key lives 7 s on that server.
    {
        const strings args{"acquire", "cfg-file"};
        const run_result r = agent(args, file);
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        const long long pttl = lock_pttl(admin, "cfg-file");
        CHECK(pttl > 5000);
        CHECK(pttl <= 7000);
        // The file's label is the holder record's.
        const strings st{"status", "cfg-file"};
        const run_result s = agent(st, file);
        INFO(show(st, s));
        CHECK(s.status == 0);
        CHECK(contains(s.out, "from-file"));
    }
    // run: the file's ttl while the command runs.
    {
        const std::string out = dir / "pttl";
        const strings args{"run", "cfg-run", "--",
                           "sh",  "-c",      "sleep 0.3; echo ok > '" + out + "'"};
        agent_run a(args, file);
        REQUIRE(wait_for([&] { return lock_exists(admin, "cfg-run") == 1; }, 5.0));
        const long long pttl = lock_pttl(admin, "cfg-run");
        CHECK(pttl > 5000);
        CHECK(pttl <= 7000);
        const run_result r = a.finish();
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(read_file(out) == "ok\n");
    }
    // The command line's ttl over the file's.
    {
        const strings args{"acquire", "-t", "30s", "cfg-argv"};
        const run_result r = agent(args, file);
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        CHECK(lock_pttl(admin, "cfg-argv") > 20000);
    }
    // $EDGELOCK_NODES over the file's nodes: a mute node, so no lock.
    strings env = file;
    env.push_back("EDGELOCK_NODES=" + redis_url(mute.port()));
    {
        const strings args{"acquire", "-t", "1s", "cfg-env"};
        const run_result r = agent(args, env);
        INFO(show(args, r));
        CHECK(r.status == exit_unavailable);
        CHECK(mute.accepted() > 0);
        CHECK(lock_exists(admin, "cfg-env") == 0);
    }
    // -N over $EDGELOCK_NODES.
    {
        const strings args{"acquire", "-N", redis_url(srv), "cfg-argv-nodes"};
        const run_result r = agent(args, env);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(lock_exists(admin, "cfg-argv-nodes") == 1);
    }
}

TEST_CASE("cli config: settings for other commands, and TLS files, do not bind a command",
          "[cli][config]") {
    redis_server srv;
    temp_dir dir{"edgelock-config"};
    // What a fleet's file may carry for run, and for its TLS nodes.
    const std::string path =
        conf(dir, "edgelock.conf",
             "nodes = " + redis_url(srv) + "\nlabel = nightly\nmax-hold = 1h\nmetrics-file = " +
                 (dir / "m.prom") + "\ncacert = /nonexistent/ca.pem\nsni = redis.example\n");
    const strings file{"EDGELOCK_CONFIG=" + path};
    for (const strings& args :
         {strings{"status", "cfg-other"}, strings{"list"}, strings{"acquire", "cfg-other"}}) {
        const run_result r = agent(args, file);
        INFO(show(args, r));
        CHECK(r.status == 0);
        CHECK(r.err.empty());
    }
    // Given on the command line, they are still usage errors.
    for (const strings& args : {strings{"status", "--label", "x", "cfg-other"},
                                strings{"status", "--max-hold", "1m", "cfg-other"},
                                strings{"acquire", "--metrics-file", dir / "x", "cfg-other"},
                                strings{"status", "--cacert", dir / "x", "cfg-other"}}) {
        const run_result r = agent(args, file);
        INFO(show(args, r));
        CHECK(r.status == exit_usage);
        CHECK(one_line(r.err));
    }
    // edgelock config says the TLS files are left unused.
    auto s = shown({}, file);
    CHECK(s["cacert"].from == path + ":5; ignored: no node uses TLS");
    CHECK(s["sni"].from == path + ":6; ignored: no node uses TLS");
    CHECK(s["label"].value == "nightly");
}

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
    const std::string refusal = ": holds a password but is readable by others (chmod 600)";
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
            CHECK(r.err == "edgelock: " + path + refusal + "\n");
            CHECK(r.out.empty());
        } else {
            CHECK(r.status == 0);
            CHECK(r.err.empty());
        }
        CHECK_FALSE(contains(r.out + r.err, "s3cret"));
    }
}

TEST_CASE("cli config: edgelock config shows every setting, its origin, no secret",
          "[cli][config]") {
    temp_dir dir{"edgelock-config"};
    const std::string path =
        conf(dir, "edgelock.conf",
             "nodes = redis://gw:n0de-secret@10.0.0.5:6379,redis://10.0.0.6:6379\n"
             "password = inl1ne-secret\n"
             "tls = on\n"
             "cacert = /etc/ssl/fleet-ca.pem\n"
             "fencing = yes\n");
    const strings env{"EDGELOCK_CONFIG=" + path};
    const strings args{"config", "--ttl", "12s", "--label", "backup"};
    const run_result r = agent(args, env);
    INFO(show(args, r));
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    strings order;
    auto s = parse_shown(r.out, &order);
    // One line per setting, in a stable order, after the file's own.
    REQUIRE(order.size() == 1 + sizeof setting_keys / sizeof setting_keys[0]);
    CHECK(order[0] == "config");
    for (std::size_t k = 0; k < sizeof setting_keys / sizeof setting_keys[0]; ++k) {
        CHECK(order[k + 1] == setting_keys[k]);
    }
    CHECK(s["nodes"].value == "redis://gw:****@10.0.0.5:6379,redis://10.0.0.6:6379");
    CHECK(s["nodes"].from == path + ":1");
    CHECK(s["password"].value == "********");
    CHECK(s["password"].from == path + ":2");
    CHECK(s["tls"].value == "on");
    CHECK(s["cacert"].from == path + ":4");  // a node uses TLS: not ignored
    CHECK(s["fencing"].value == "yes");
    CHECK(s["ttl"].value == "12s");
    CHECK(s["ttl"].from == "--ttl");
    CHECK(s["label"].value == "backup");
    CHECK(s["label"].from == "--label");
    CHECK(s["conflict-exit-code"].value == "1");
    CHECK(s["conflict-exit-code"].from == "default");
    CHECK_FALSE(contains(r.out, "secret"));

    // The same as JSON, and $REDISCLI_AUTH masked as well.
    strings with_auth = env;
    with_auth.push_back("REDISCLI_AUTH=env1ronment-secret");
    const strings json{"config", "--json"};
    const run_result j = agent(json, with_auth);
    INFO(show(json, j));
    CHECK(j.status == 0);
    CHECK(starts_with(j.out, "{\"config\":{\"file\":\"" + path + "\""));
    CHECK(
        contains(j.out, "{\"key\":\"password\",\"value\":\"********\",\"from\":\"REDISCLI_AUTH\""));
    CHECK(contains(j.out, "\"value\":\"redis://gw:****@10.0.0.5:6379,redis://10.0.0.6:6379\""));
    CHECK_FALSE(contains(j.out + j.err, "secret"));
}

TEST_CASE("cli config: EDGELOCK_CONFIG names the file, --config wins, none reads none",
          "[cli][config]") {
    temp_dir dir{"edgelock-config"};
    const std::string a = conf(dir, "a.conf", "ttl = 11s\n");
    const std::string b = conf(dir, "b.conf", "ttl = 22s\n");
    auto s = shown({}, {"EDGELOCK_CONFIG=" + a});
    CHECK(s["ttl"].value == "11s");
    CHECK(s["ttl"].from == a + ":1");
    s = shown({"--config", b}, {"EDGELOCK_CONFIG=" + a});
    CHECK(s["config"].value == b);
    CHECK(s["config"].from == "--config");
    CHECK(s["ttl"].value == "22s");
    s = shown({"--config=none"}, {"EDGELOCK_CONFIG=" + a});
    CHECK(s["config"].value == "none");
    CHECK(s["ttl"].value == "30s");
    CHECK(s["ttl"].from == "default");
    s = shown({}, {"EDGELOCK_CONFIG=none"});
    CHECK(s["config"].value == "none");
    CHECK(s["config"].from == "EDGELOCK_CONFIG");
    CHECK(s["ttl"].from == "default");
}

TEST_CASE("cli config: without a name, the default file, whose absence is no error",
          "[cli][config]") {
    struct stat st {};
    if (::stat("/etc/edgelock.conf", &st) == 0) {
        skip("/etc/edgelock.conf exists here");
        return;
    }
    // An empty $EDGELOCK_CONFIG is no name.
    auto s = shown({}, {"EDGELOCK_CONFIG="});
    CHECK(s["config"].value == "/etc/edgelock.conf");
    CHECK(s["config"].from == "default; not found");
    CHECK(s["ttl"].from == "default");
}

namespace {

// A file beside the manual in the source tree (EDGELOCK_MANPAGE_PATH is
// src/cli/edgelock.1).
std::string source_file(const std::string& relative) {
    const std::string manual = EDGELOCK_MANPAGE_PATH;
    const std::size_t at = manual.rfind("src/cli/edgelock.1");
    REQUIRE(at != std::string::npos);
    return manual.substr(0, at) + relative;
}

}  // namespace

TEST_CASE("cli config: the example file is read as it is, and the manual names every key",
          "[cli][config]") {
    temp_dir dir{"edgelock-config"};
    const std::string pw = conf(dir, "password", "x\n");
    std::string text = read_file(source_file("examples/edgelock.conf"));
    REQUIRE(contains(text, "password-file = /etc/edgelock/password\n"));
    // Its password file, here.
    text.replace(text.find("/etc/edgelock/password\n"), 22, pw);
    const std::string path = conf(dir, "edgelock.conf", text, 0644);
    const strings args{"config", "--config", path};
    const run_result r = agent(args);
    INFO(show(args, r));
    REQUIRE(r.status == 0);
    strings order;
    auto s = parse_shown(r.out, &order);
    for (const char* k :
         {"nodes", "password-file", "cacert", "cert", "key", "ttl", "wait", "metrics-file"}) {
        INFO(k);
        CHECK(starts_with(s[k].from, path + ":"));
        CHECK_FALSE(contains(s[k].from, "ignored"));
    }
    // The manual's FILES section lists every key.
    const std::string manual = read_file(EDGELOCK_MANPAGE_PATH);
    const std::size_t files = manual.find(".SH FILES\n");
    REQUIRE(files != std::string::npos);
    std::string section = manual.substr(files, manual.find("\n.SH ", files + 1) - files);
    for (std::size_t i = 0; (i = section.find("\\-", i)) != std::string::npos;) {
        section.replace(i, 2, "-");
    }
    for (const std::string& k : order) {
        INFO(k);
        CHECK((k == "config" || contains(section, ".BR " + k + " ,") ||
               contains(section, ".B " + k + "\n") || contains(section, ".BR " + k + " ;")));
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
