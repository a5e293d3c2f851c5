// The agent over TLS through the fault proxy (tests/tools/fault_proxy.cpp)
// in front of a real TLS redis-server: a link that splits every byte still
// carries the handshake and the job; one that trickles ends within the
// connect timeout; a reset under a running job is a new handshake and the
// job goes on; a partition ends the job (75) before the lock's validity and
// leaves nothing behind. Built only with the TLS transport.
#include <catch2/catch.hpp>

#ifdef EDGELOCK_TEST_TLS

#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/proc.hpp"

#ifndef EDGELOCK_FAULT_PROXY_PATH
#error "build with -DEDGELOCK_FAULT_PROXY_PATH=\"/path/to/fault_proxy\""
#endif

using namespace edgelock_test;

namespace {

// The certificates name DNS:localhost: the name the agent checks.
std::string tls_url(std::uint16_t port) {
    return "rediss://localhost:" + std::to_string(port);
}

struct tls_setup {
    tls_certs certs;
    redis_server srv{certs.server_files(), {}};
    redis_client admin{srv.unix_path()};
    fault_proxy proxy;

    tls_setup() { REQUIRE(proxy.start(EDGELOCK_FAULT_PROXY_PATH, srv.port(), 7, 120)); }

    strings run(const std::string& key, const strings& options, const strings& command) {
        strings a{"run", "--cacert", certs.ca_file(), "-N", tls_url(proxy.port())};
        a.insert(a.end(), options.begin(), options.end());
        a.push_back(key);
        a.push_back("--");
        a.insert(a.end(), command.begin(), command.end());
        return a;
    }
};

}  // namespace

TEST_CASE("cli tls faults: every byte in its own segment: the job runs", "[cli][tls]") {
    tls_setup t;
    REQUIRE(t.proxy.command("split"));
    const strings args = t.run("tls-split", {}, {"echo", "ran"});
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK(contains(r.out, "ran"));
    CHECK(lock_exists(t.admin, "tls-split") == 0);
}

TEST_CASE("cli tls faults: a trickling link ends within the connect timeout, named", "[cli][tls]") {
    tls_setup t;
    // One byte per 5 ms: the server's first flight alone takes seconds,
    // past the connect's share of a try at -t 4s (1.8 s).
    REQUIRE(t.proxy.command("trickle 5"));
    const strings args = t.run("tls-trickle", {"-t", "4s"}, {"echo", "ran"});
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == exit_unavailable);
    CHECK_FALSE(contains(r.out, "ran"));
    CHECK(contains(r.err, "TLS handshake"));
    CHECK(r.seconds < 5.0);
    CHECK(lock_exists(t.admin, "tls-trickle") == 0);
}

TEST_CASE("cli tls faults: a reset under a running job: a new handshake, the job goes on",
          "[cli][tls]") {
    tls_setup t;
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string done = dir / "done";
    const strings args =
        t.run("tls-reset", {"-t", "3s"},
              {"sh", "-c", "touch '" + started + "'; sleep 2.5; touch '" + done + "'"});
    agent_run a(args, {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 10.0));
    REQUIRE(t.proxy.command("reset"));
    const run_result r = a.finish(15.0);
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK(file_exists(done));
    CHECK(lock_exists(t.admin, "tls-reset") == 0);
}

TEST_CASE("cli tls faults: a partition stops the job before the validity ends (75)", "[cli][tls]") {
    tls_setup t;
    temp_dir dir;
    const std::string started = dir / "started";
    const strings args =
        t.run("tls-partition", {"-t", "1500ms", "--grace", "300ms"},
              {"sh", "-c", "touch '" + started + "'; while :; do sleep 0.05; done"});
    agent_run a(args, {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 10.0));
    REQUIRE(t.proxy.command("blackhole"));
    const double cut = mono_s();
    const run_result r = a.finish(15.0);
    INFO(show(args, r));
    CHECK(r.status == exit_lost);
    CHECK(mono_s() - cut < 1.5 + 1.0);
    // Nothing left behind: the key ends with its ttl, and then another
    // agent, straight to the server, takes it.
    CHECK(wait_for([&] { return lock_exists(t.admin, "tls-partition") == 0; }, 3.0));
    const strings direct{
        "run", "--cacert", t.certs.ca_file(), "-N", tls_url(t.srv.port()), "tls-partition",
        "--",  "true"};
    const run_result next = agent(direct);
    INFO(show(direct, next));
    CHECK(next.status == 0);
    REQUIRE(t.proxy.command("pass"));
}

#endif  // EDGELOCK_TEST_TLS
