// The agent's promise covers the whole job: a lost lock stops every process
// of the command, the agent survives the signals it can, takes its job with
// it when it is killed, reports a lock that vanished under the command, keeps
// secrets out of the command's environment, and says why each node failed.
// Against real redis-server processes; each case replays a scenario in which
// two jobs could run under one lock.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"

using edgelock_test::agent;
using edgelock_test::agent_run;
using edgelock_test::contains;
using edgelock_test::exit_conflict;
using edgelock_test::exit_lost;
using edgelock_test::exit_unavailable;
using edgelock_test::file_exists;
using edgelock_test::mono_s;
using edgelock_test::process;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::run_result;
using edgelock_test::show;
using edgelock_test::temp_dir;
using edgelock_test::url;

namespace {

using strings = std::vector<std::string>;

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

template <class F>
bool wait_for(F cond, double timeout_s) {
    const double deadline = mono_s() + timeout_s;
    while (mono_s() < deadline) {
        if (cond()) {
            return true;
        }
        ::usleep(10000);
    }
    return cond();
}

// The pid a child wrote to `path` (`echo $$ > path`), once it is there.
pid_t pid_in(const std::string& path) {
    pid_t pid = 0;
    wait_for(
        [&] {
            std::istringstream in(read_file(path));
            return static_cast<bool>(in >> pid) && pid > 0;
        },
        5.0);
    return pid;
}

bool alive(pid_t pid) {
    return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

// Makes sure a process a failing case left behind does not outlive it.
struct reaper {
    std::vector<pid_t> pids;
    ~reaper() {
        for (pid_t p : pids) {
            if (alive(p)) {
                ::kill(p, SIGKILL);
            }
        }
    }
};

std::string lock_key(const std::string& name) {
    return "{" + name + "}";
}

long long exists(redis_client& c, const std::string& name) {
    return c.command({"EXISTS", lock_key(name)}).integer;
}

}  // namespace

// --- 1. a lost lock stops the whole job ----------------------------------------------

TEST_CASE("cli safety: a lost lock stops the command's grandchildren too", "[cli]") {
    redis_server srv;
    temp_dir dir;
    reaper r;
    const std::string inner_pid = dir / "inner.pid";
    const std::string late = dir / "late";
    // The outer sh waits for an inner one that would write inside the next
    // holder's section.
    agent_run a(
        {"run", "--ttl", "2s", "--grace", "500ms", "-N", url(srv), "safety-group", "--", "sh", "-c",
         "sh -c 'echo $$ > " + inner_pid + "; sleep 4; echo late >> " + late + "'; true"},
        {});
    const pid_t inner = pid_in(inner_pid);
    r.pids.push_back(inner);
    REQUIRE(inner > 0);
    srv.pause();  // renewals fail from here on
    const run_result res = a.finish(15.0);
    const bool inner_alive = alive(inner);
    srv.resume();
    INFO(show(a.args, res));
    CHECK(res.status == exit_lost);
    CHECK_FALSE(inner_alive);  // nothing of the group runs once the agent exits 75
    ::usleep(200000);
    CHECK_FALSE(file_exists(late));
}

TEST_CASE("cli safety: what the command leaves in its group is stopped before the release",
          "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    reaper r;
    const std::string bg_pid = dir / "bg.pid";
    // The leader exits at once, leaving a background process in its group.
    agent_run a({"run", "--grace", "1s", "-N", url(srv), "safety-leftover", "--", "sh", "-c",
                 "sleep 30 & echo $! > " + bg_pid + "; exit 3"},
                {});
    const run_result res = a.finish(15.0);
    const pid_t bg = pid_in(bg_pid);
    r.pids.push_back(bg);
    INFO(show(a.args, res));
    REQUIRE(bg > 0);
    CHECK(res.status == 3);                        // the leader's status
    CHECK_FALSE(alive(bg));                        // stopped, not left running without the lock
    CHECK(exists(admin, "safety-leftover") == 0);  // and only then released
    CHECK(res.seconds < 5.0);
}

TEST_CASE("cli safety: a signal to the agent reaches every process of the group", "[cli]") {
    redis_server srv;
    temp_dir dir;
    reaper r;
    const std::string marks = dir / "marks";
    const std::string inner_pid = dir / "inner.pid";
    agent_run a({"run", "-N", url(srv), "safety-forward", "--", "sh", "-c",
                 "trap 'echo outer >> " + marks + "' TERM; sh -c 'trap \"echo inner >> " + marks +
                     "; exit 0\" TERM; echo $$ > " + inner_pid +
                     "; while :; do sleep 0.05; done' & wait; wait"},
                {});
    const pid_t inner = pid_in(inner_pid);
    r.pids.push_back(inner);
    REQUIRE(inner > 0);
    ::usleep(100000);  // the inner trap is set before its pid is written; let the outer's be too
    a.proc.signal(SIGTERM);  // the agent alone
    const run_result res = a.finish(10.0);
    INFO(show(a.args, res) << "\nmarks: " << read_file(marks));
    CHECK(contains(read_file(marks), "inner"));
    CHECK(contains(read_file(marks), "outer"));
    CHECK_FALSE(alive(inner));
}

// --- 2. the agent survives what it can; killed, it takes its job along ---------------

TEST_CASE("cli safety: QUIT, USR1, USR2 and ALRM are forwarded, not fatal to the agent", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    struct row {
        int sig;
        const char* name;
    };
    const row rows[] = {{SIGQUIT, "QUIT"}, {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"}, {SIGALRM, "ALRM"}};
    for (const row& w : rows) {
        const std::string started = dir / (std::string("started-") + w.name);
        agent_run a({"run", "-N", url(srv), "safety-signals", "--", "sh", "-c",
                     std::string("trap 'exit 7' ") + w.name + "; touch '" + started +
                         "'; while :; do sleep 0.05; done"},
                    {});
        REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
        a.proc.signal(w.sig);
        const run_result res = a.finish(10.0);
        INFO(w.name << "\n" << show(a.args, res));
        CHECK(res.status == 7);  // the agent lived to report the command's status
        CHECK(exists(admin, "safety-signals") == 0);
    }
}

TEST_CASE("cli safety: a reader that goes away does not kill the agent (SIGPIPE)", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string status = dir / "status";
    const std::string done = dir / "done";
    // -v says something at every renewal (ttl 1 s: every 333 ms); head
    // leaves after the first line, so the next message meets a closed pipe.
    const std::string script = "{ '" + std::string(EDGELOCK_CLI_PATH) + "' run -v -t 1s -N " +
                               url(srv) + " safety-pipe -- sh -c 'sleep 2.5; touch " + done +
                               "' 2>&1 >/dev/null; echo $? > " + status + "; } | head -n 1";
    process p({"/bin/sh", "-c", script}, {});
    // Well past the ttl: the lock must still be held, renewed by the agent.
    ::usleep(1800000);
    const run_result other = agent({"run", "-N", url(srv), "safety-pipe", "--", "true"});
    const run_result res = p.finish(15.0);
    INFO("pipeline: " << res.out << res.err << "\nother: " << show({"run"}, other));
    CHECK(other.status == exit_conflict);
    CHECK(file_exists(done));
    CHECK(read_file(status) == "0\n");
    CHECK(exists(admin, "safety-pipe") == 0);
}

TEST_CASE("cli safety: kill -9 of the agent takes the command with it", "[cli]") {
    redis_server srv;
    temp_dir dir;
    reaper r;
    const std::string leader_pid = dir / "leader.pid";
    agent_run a({"run", "-N", url(srv), "safety-kill9", "--", "sh", "-c",
                 "echo $$ > " + leader_pid + "; while :; do sleep 0.05; done"},
                {});
    const pid_t leader = pid_in(leader_pid);
    r.pids.push_back(leader);
    REQUIRE(leader > 0);
    a.proc.signal(SIGKILL);
    // Not reaped yet: reaping kills the agent's own process group, which on
    // a build without the command's own group would hide the survivor.
    CHECK(wait_for([&] { return !alive(leader); }, 2.0));
}

// --- 4. a lock that vanished under the command -----------------------------------------

TEST_CASE("cli safety: a key deleted under the command makes run exit 75", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string go = dir / "go";
    // ttl 30 s: no renewal comes before the command ends; only the release
    // can find the key gone.
    agent_run a({"run", "-N", url(srv), "safety-deleted", "--", "sh", "-c",
                 "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.02; done"},
                {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    REQUIRE(admin.command({"DEL", lock_key("safety-deleted")}).integer == 1);
    std::ofstream(go).put('\n');
    const run_result res = a.finish(10.0);
    INFO(show(a.args, res));
    CHECK(res.status == exit_lost);
    CHECK(contains(res.err, "no longer held"));
}

TEST_CASE("cli safety: a key evicted under memory pressure makes run exit 75", "[cli]") {
    redis_server srv({"--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"});
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string go = dir / "go";
    agent_run a({"run", "-N", url(srv), "safety-evicted", "--", "sh", "-c",
                 "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.02; done"},
                {});
    REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
    const std::string big(64 * 1024, 'x');
    int writes = 0;
    while (exists(admin, "safety-evicted") == 1 && writes < 2000) {
        admin.command({"SET", "filler:" + std::to_string(writes++), big});
    }
    INFO("filler writes: " << writes);
    REQUIRE(exists(admin, "safety-evicted") == 0);
    std::ofstream(go).put('\n');
    const run_result res = a.finish(10.0);
    INFO(show(a.args, res));
    CHECK(res.status == exit_lost);
    CHECK(contains(res.err, "no longer held"));
    // Said at set-up, before the command ran.
    CHECK(contains(res.err, "warning: node " + url(srv) + ": maxmemory-policy allkeys-lru"));
}

// --- 5. and 6. what Redis cannot promise, and each node's reason -------------------------

TEST_CASE("cli safety: an evicting maxmemory-policy is a warning, silenced by -q", "[cli]") {
    redis_server srv({"--maxmemory", "100mb", "--maxmemory-policy", "volatile-ttl"});
    const run_result loud = agent({"run", "-N", url(srv), "safety-warn", "--", "true"});
    INFO(show({"run"}, loud));
    CHECK(loud.status == 0);
    CHECK(contains(loud.err, "maxmemory-policy volatile-ttl"));
    const run_result quiet = agent({"run", "-q", "-N", url(srv), "safety-warn", "--", "true"});
    CHECK(quiet.status == 0);
    CHECK(quiet.err.empty());
    redis_server safe({"--maxmemory", "100mb", "--maxmemory-policy", "noeviction"});
    const run_result fine = agent({"run", "-N", url(safe), "safety-warn", "--", "true"});
    CHECK(fine.status == 0);
    CHECK(fine.err.empty());
}

TEST_CASE("cli safety: a replica is refused with its reason (69)", "[cli]") {
    redis_server master;
    redis_server replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
    const run_result res = agent({"run", "-N", url(replica), "safety-replica", "--", "true"});
    INFO(show({"run"}, res));
    CHECK(res.status == exit_unavailable);
    CHECK(contains(res.err, "node " + url(replica) + ": a replica"));
}

TEST_CASE("cli safety: a server's error reply to the lock request reaches stderr", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    // A hash where the plain lock's string belongs: the script fails with WRONGTYPE.
    REQUIRE(admin.command({"HSET", lock_key("safety-wrongtype"), "f", "v"}).integer == 1);
    const run_result res = agent({"run", "-N", url(srv), "safety-wrongtype", "--", "true"});
    INFO(show({"run"}, res));
    CHECK(res.status == exit_unavailable);
    CHECK(contains(res.err, "node " + url(srv) + ": the server refused the request: WRONGTYPE"));

    SECTION("one of three nodes refusing, two busy: exit 1 and the refusing node's reason") {
        redis_server b;
        redis_server c;
        redis_client admin_b(b.port());
        redis_client admin_c(c.port());
        for (redis_client* x : {&admin_b, &admin_c}) {
            REQUIRE(
                x->command({"SET", lock_key("safety-wrongtype"), "someone", "PX", "60000"}).text ==
                "OK");
        }
        const run_result mixed = agent({"run", "-N", url(srv) + "," + url(b) + "," + url(c),
                                        "safety-wrongtype", "--", "true"});
        INFO(show({"run", "3 nodes"}, mixed));
        CHECK(mixed.status == exit_conflict);
        CHECK(contains(mixed.err,
                       "node " + url(srv) + ": the server refused the request: WRONGTYPE"));
    }
}

// --- 7. secrets stay out of the command's environment -----------------------------------

TEST_CASE("cli safety: the command's environment carries no password", "[cli]") {
    const std::string secret = "s3cret-Pw-4711";
    redis_server srv({"--requirepass", secret});
    const std::string plain = "redis://127.0.0.1:" + std::to_string(srv.port());
    const std::string with_pw = "redis://:" + secret + "@127.0.0.1:" + std::to_string(srv.port());

    SECTION("REDISCLI_AUTH") {
        const run_result res =
            agent({"run", "-N", plain, "safety-env", "--", "env"}, {"REDISCLI_AUTH=" + secret});
        INFO(show({"run", "--", "env"}, res));
        REQUIRE(res.status == 0);
        CHECK(contains(res.out, "EDGELOCK_KEY=safety-env"));
        CHECK_FALSE(contains(res.out, secret));
    }
    SECTION("a password in EDGELOCK_NODES") {
        const run_result res =
            agent({"run", "safety-env", "--", "env"}, {"EDGELOCK_NODES=" + with_pw});
        INFO(show({"run", "--", "env"}, res));
        REQUIRE(res.status == 0);
        CHECK_FALSE(contains(res.out, secret));
        CHECK(contains(res.out, "EDGELOCK_NODES=" + plain + "\n"));
    }
    SECTION("every URL of the list, with -N in charge") {
        // -N names the node; the list in the environment only passes through.
        const std::string list = "redis://:" + secret + "@127.0.0.2:6380,redis://user:" + secret +
                                 "%40x@[::1]:6381/2,unix:///run/r@dis.sock?db=1";
        const run_result res =
            agent({"run", "-N", with_pw, "safety-env", "--", "env"}, {"EDGELOCK_NODES=" + list});
        INFO(show({"run", "--", "env"}, res));
        REQUIRE(res.status == 0);
        CHECK_FALSE(contains(res.out, secret));
        CHECK(contains(res.out,
                       "EDGELOCK_NODES=redis://127.0.0.2:6380,redis://[::1]:6381/2,"
                       "unix:///run/r@dis.sock?db=1\n"));
    }
}
