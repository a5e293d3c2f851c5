// The agent over TLS (rediss:// and --tls with redis-cli's option names),
// against real redis-servers listening with --tls-port and certificates made
// by the test (tests/integration/tls_fixture.hpp): a verified run, the
// reason for a refused certificate on stderr, racing agents, a lost lock,
// and --insecure; a rediss-sentinel:// node is a TLS node too. Built only
// with the TLS transport (EDGELOCK_TEST_TLS).
#include <catch2/catch.hpp>

#ifdef EDGELOCK_TEST_TLS

#include <memory>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "edgelock/client_errors.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"

using edgelock_test::agent;
using edgelock_test::agent_run;
using edgelock_test::contains;
using edgelock_test::exit_lost;
using edgelock_test::exit_unavailable;
using edgelock_test::file_exists;
using edgelock_test::lock_exists;
using edgelock_test::mono_s;
using edgelock_test::read_file;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::run_result;
using edgelock_test::show;
using edgelock_test::temp_dir;
using edgelock_test::tls_certs;
using edgelock_test::wait_for;
using edgelock_test::write_file;

namespace {

using strings = std::vector<std::string>;

// The certificates name DNS:localhost: the name the agent checks.
std::string tls_url(const redis_server& s) {
    return "rediss://localhost:" + std::to_string(s.port());
}

}  // namespace

TEST_CASE("cli tls: run over rediss:// with a CA file holds the lock for the command",
          "[cli][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    redis_client admin(srv.unix_path());  // plain TCP is off; the socket is not
    temp_dir dir;
    const std::string seen = dir / "seen";
    const std::string key = "cli-tls-run";
    const run_result r = agent({"run", "--cacert", certs.ca_file(), "-N", tls_url(srv), key, "--",
                                "sh", "-c", "echo \"$EDGELOCK_KEY\" > '" + seen + "'; exit 7"});
    INFO(show({}, r));
    CHECK(r.status == 7);
    CHECK(read_file(seen) == key + "\n");
    CHECK(lock_exists(admin, key) == 0);
    // The same with --tls on a redis:// URL and the CA as a hashed directory.
    const run_result d =
        agent({"run", "--tls", "--cacertdir", certs.ca_dir(), "-N",
               "redis://localhost:" + std::to_string(srv.port()), key, "--", "true"});
    INFO(show({}, d));
    CHECK(d.status == 0);
    CHECK(lock_exists(admin, key) == 0);
}

TEST_CASE("cli tls: a refused certificate is 69 with the reason on stderr", "[cli][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    temp_dir dir;
    const std::string ran = dir / "ran";
    const std::string command = "touch '" + ran + "'";
    SECTION("a CA the agent does not trust") {
        const run_result r = agent({"run", "--cacert", certs.other_ca_file(), "-N", tls_url(srv),
                                    "cli-tls-ca", "--", "sh", "-c", command});
        INFO(show({}, r));
        CHECK(r.status == exit_unavailable);
        CHECK(contains(r.err, edgelock::describe(edgelock::node_error::tls_untrusted)));
        CHECK(r.seconds < 5.0);
    }
    SECTION("a server name the certificate does not carry") {
        const run_result r = agent({"run", "--cacert", certs.ca_file(), "--sni", "other.example",
                                    "-N", tls_url(srv), "cli-tls-name", "--", "sh", "-c", command});
        INFO(show({}, r));
        CHECK(r.status == exit_unavailable);
        CHECK(contains(r.err, edgelock::describe(edgelock::node_error::tls_name_mismatch)));
    }
    SECTION("--insecure takes it, and says so") {
        const run_result r = agent({"run", "--insecure", "--cacert", certs.other_ca_file(), "-N",
                                    tls_url(srv), "cli-tls-insecure", "--", "sh", "-c", command});
        INFO(show({}, r));
        CHECK(r.status == 0);
        CHECK(contains(r.err, "--insecure"));
        CHECK(file_exists(ran));
        return;
    }
    CHECK_FALSE(file_exists(ran));
}

TEST_CASE("cli tls: a client certificate for a server that asks for one", "[cli][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files("server", true), {});
    const run_result without = agent(
        {"run", "--cacert", certs.ca_file(), "-N", tls_url(srv), "cli-tls-mtls", "--", "true"});
    INFO(show({}, without));
    CHECK(without.status == exit_unavailable);
    const run_result with =
        agent({"run", "--cacert", certs.ca_file(), "--cert", certs.cert("client"), "--key",
               certs.key("client"), "-N", tls_url(srv), "cli-tls-mtls", "--", "true"});
    INFO(show({}, with));
    CHECK(with.status == 0);
}

TEST_CASE("cli tls: racing agents over TLS exclude each other", "[cli][tls]") {
    tls_certs certs;
    std::vector<std::unique_ptr<redis_server>> servers;
    std::string nodes;
    for (int i = 0; i < 3; ++i) {
        servers.push_back(std::make_unique<redis_server>(certs.server_files(), strings{}));
        nodes += (i == 0 ? "" : ",") + tls_url(*servers.back());
    }
    temp_dir dir;
    const std::string counter = dir / "counter";
    write_file(counter, "0\n");
    const std::string racy =
        "n=$(cat '" + counter + "'); sleep 0.05; echo $((n+1)) > '" + counter + "'";
    std::vector<std::unique_ptr<agent_run>> runs;
    for (int i = 0; i < 6; ++i) {
        runs.push_back(std::make_unique<agent_run>(
            strings{"run", "-w", "20s", "--cacert", certs.ca_file(), "-N", nodes, "cli-tls-mutex",
                    "--", "sh", "-c", racy},
            strings{}));
    }
    for (auto& a : runs) {
        const run_result r = a->finish(40.0);
        INFO(show(a->args, r));
        CHECK(r.status == 0);
    }
    CHECK(read_file(counter) == "6\n");
    for (auto& s : servers) {
        redis_client admin(s->unix_path());
        CHECK(lock_exists(admin, "cli-tls-mutex") == 0);
    }
}

TEST_CASE("cli tls: a lost lock over TLS stops the command: 75", "[cli][tls]") {
    tls_certs certs;
    redis_server srv(certs.server_files(), {});
    redis_client admin(srv.unix_path());
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string key = "cli-tls-lost";
    agent_run a(
        {"run", "-t", "1s", "--grace", "300ms", "--cacert", certs.ca_file(), "-N", tls_url(srv),
         key, "--", "sh", "-c", "touch '" + started + "'; while :; do sleep 0.05; done"},
        {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    // Someone else takes the key: the next renew over TLS finds it not ours.
    REQUIRE(admin.command({"SET", edgelock_test::key_of(key), "other", "PX", "60000"}).text ==
            "OK");
    const double taken = mono_s();
    const run_result r = a.finish(15.0);
    INFO(show(a.args, r));
    CHECK(r.status == exit_lost);
    CHECK(mono_s() - taken < 6.0);
}

TEST_CASE("cli tls: a rediss-sentinel:// node takes the TLS options without --tls",
          "[cli][tls][sentinel]") {
    tls_certs certs;
    const std::string sentinels = "127.0.0.1:" + std::to_string(edgelock_test::free_port());
    for (const char* scheme : {"rediss-sentinel", "REDISS-Sentinel"}) {
        // No sentinel there: unavailable, not a usage error.
        const strings args = {"acquire",
                              "--cacert",
                              certs.ca_file(),
                              "-N",
                              std::string(scheme) + "://" + sentinels + "/mymaster",
                              "cli-tls-sentinel"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_unavailable);
        CHECK_FALSE(contains(r.err, "need --tls"));
        CHECK(r.seconds < 5.0);
    }
}

#endif  // EDGELOCK_TEST_TLS
