// The configuration file (src/cli/config_file.hpp, settings.hpp, layers.hpp):
// its layers (defaults, the file, the environment, the command line), and
// `edgelock config`, which shows where each setting came from and never a
// secret. Its bad input: test_cli_config_input.cpp.
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "cli/config_helpers.hpp"
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
