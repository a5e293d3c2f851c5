// No output of the agent shows a password: edgelock config (text and JSON,
// the URL from -N or from a 0600 configuration file), status (text and
// JSON), its messages on stderr (a node refusing the connection), the job's
// EDGELOCK_NODES and the node labels of the metrics file. The password holds
// every character a URL's password may carry, ',' first: a comma inside a
// password once split the URL where the redaction looked for it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "cli/config_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/files.hpp"
#include "tools/net.hpp"
#include "tools/url.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

// The password as the server knows it, and as a URL carries it: ',' and
// ':' raw, '@', '/' and '%' escaped.
const std::string secret = "s3cr,etPW:@/%k";
const std::string escaped = "s3cr,etPW:%40%2F%25k";

// The secret, its URL form, and the pieces either side of its comma (what a
// split at the comma would leave in clear).
void check_no_secret(const std::string& what, const std::string& text) {
    INFO(what << ":\n" << text);
    for (const std::string& piece : {secret, escaped, std::string("s3cr"), std::string("etPW"),
                                     std::string("%40%2F%25k"), std::string("@/%k")}) {
        CHECK_FALSE(contains(text, piece));
    }
}

void check_no_secret(const std::string& what, const run_result& r) {
    check_no_secret(what + " (stdout)", r.out);
    check_no_secret(what + " (stderr)", r.err);
}

std::string host_port(std::uint16_t port) {
    return "127.0.0.1:" + std::to_string(port);
}

}  // namespace

TEST_CASE("cli secrets: a password with a comma appears in no output", "[cli][secrets]") {
    redis_server srv({"--requirepass", secret});
    const std::uint16_t down = free_port();
    const std::string live = "redis://default:" + escaped + "@" + host_port(srv.port());
    const std::string dead = "redis://default:" + escaped + "@" + host_port(down);
    temp_dir dir{"edgelock-secrets"};

    SECTION("config, from -N and from a 0600 file, as text and JSON") {
        const std::string list = live + "," + dead;
        const std::string masked = "redis://default:****@" + host_port(srv.port()) +
                                   ",redis://default:****@" + host_port(down);
        const std::string path = conf(dir, "edgelock.conf", "nodes = " + list + "\n");
        for (const strings& args :
             {strings{"config", "-N", list}, strings{"config", "--json", "-N", list},
              strings{"config", "--config", path}, strings{"config", "--json", "--config", path}}) {
            const run_result r = agent(args);
            INFO(show(args, r));
            REQUIRE(r.status == 0);
            CHECK(contains(r.out, masked));
            check_no_secret("config", r);
        }
    }

    SECTION("status, as text and JSON, with a node down") {
        for (const strings& args :
             {strings{"status", "-N", live + "," + dead, "secrets-status"},
              strings{"status", "--json", "-N", live + "," + dead, "secrets-status"}}) {
            const run_result r = agent(args);
            INFO(show(args, r));
            CHECK(r.status == exit_unavailable);
            CHECK(contains(r.out, "redis://" + host_port(srv.port())));
            CHECK(contains(r.err, "redis://" + host_port(down)));
            check_no_secret("status", r);
        }
    }

    SECTION("a connection refused, on stderr") {
        const strings args{"acquire", "-N", dead, "secrets-refused"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_unavailable);
        CHECK(contains(r.err, "node redis://" + host_port(down) + ": "));
        check_no_secret("acquire", r);
    }

    SECTION("the job's EDGELOCK_NODES and the metrics file") {
        // -N names the node; the list in the environment only passes through,
        // redacted: a Sentinel, a Cluster, rediss:// and a unix:// path with '@'.
        const std::string list = live + ",redis-sentinel://app:" + escaped +
                                 "@s1,s2:26380/mymaster/2,rediss://:" + escaped +
                                 "@[::1]:6380,redis-cluster://app:" + escaped +
                                 "@h1:7000,h2:7001,unix:///run/r@dis.sock?db=1";
        const std::string file = dir / "edgelock.prom";
        const strings args{"run", "--metrics-file", file, "-N", live, "secrets-env", "--", "env"};
        const run_result r = agent(args, {"EDGELOCK_NODES=" + list});
        INFO(show(args, r));
        REQUIRE(r.status == 0);
        CHECK(contains(r.out, "EDGELOCK_NODES=redis://" + host_port(srv.port()) +
                                  ",redis-sentinel://s1,s2:26380/mymaster/2,rediss://[::1]:6380,"
                                  "redis-cluster://h1:7000,h2:7001,unix:///run/r@dis.sock?db=1\n"));
        check_no_secret("run -- env", r);
        const std::string metrics = read_file(file);
        CHECK(contains(metrics, "redis://" + host_port(srv.port())));
        check_no_secret("the metrics file", metrics);

        // A node down: its reason on stderr, its label in the file.
        const std::string file2 = dir / "down.prom";
        const strings args2{
            "run", "--metrics-file", file2, "-N", live + "," + dead, "secrets-down", "--", "true"};
        const run_result r2 = agent(args2);
        INFO(show(args2, r2));
        CHECK(r2.status == exit_unavailable);
        CHECK(contains(r2.err, "node redis://" + host_port(down) + ": "));
        check_no_secret("run with a node down", r2);
        const std::string metrics2 = read_file(file2);
        CHECK(contains(metrics2, "redis://" + host_port(down)));
        check_no_secret("the metrics file with a node down", metrics2);
    }
}

TEST_CASE("cli secrets: a bad URL's message hides what may be a password", "[cli][secrets]") {
    // A raw '@' in the password: refused, and named without what precedes
    // its last '@'.
    const std::string bad = "redis://app:s3cr,etPW@x@127.0.0.1:6379";
    for (const strings& args : {strings{"acquire", "-N", bad, "k"},
                                strings{"config", "-N", "redis://127.0.0.1:6379,," + bad}}) {
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_usage);
        check_no_secret("a usage error", r);
    }
}
