// The command `run` starts is a job the agent covers whole: a lost lock stops
// every process of it, grandchildren and processes that left its group
// included; what the command leaves behind is stopped before the release;
// signals reach every process of it; the agent survives the signals it can
// and takes the command along when it is killed; a stopped job still hears
// what it is asked; the command gets the terminal. Against real redis-servers;
// each case replays a way two jobs could run under one lock.
#include <signal.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/proc.hpp"
#include "tools/skip.hpp"
#include "tools/url.hpp"

using edgelock_test::agent;
using edgelock_test::agent_run;
using edgelock_test::alive;
using edgelock_test::contains;
using edgelock_test::exit_conflict;
using edgelock_test::exit_lost;
using edgelock_test::exit_unavailable;
using edgelock_test::file_exists;
using edgelock_test::key_of;
using edgelock_test::lock_exists;
using edgelock_test::mono_s;
using edgelock_test::pid_in;
using edgelock_test::process;
using edgelock_test::process_state;
using edgelock_test::read_file;
using edgelock_test::reaper;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::redis_url;
using edgelock_test::run_result;
using edgelock_test::show;
using edgelock_test::sleep_ms;
using edgelock_test::temp_dir;
using edgelock_test::wait_for;

TEST_CASE("cli job: a lost lock stops the command's grandchildren too", "[cli]") {
    redis_server srv;
    temp_dir dir;
    reaper r;
    const std::string inner_pid = dir / "inner.pid";
    const std::string late = dir / "late";
    // The outer sh waits for an inner one that would write inside the next
    // holder's section.
    agent_run a(
        {"run", "--ttl", "2s", "--grace", "500ms", "-N", redis_url(srv), "safety-group", "--", "sh",
         "-c", "sh -c 'echo $$ > " + inner_pid + "; sleep 4; echo late >> " + late + "'; true"},
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
    sleep_ms(200);
    CHECK_FALSE(file_exists(late));
}

TEST_CASE("cli job: the lock is held until what the command left behind has ended", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    reaper r;
    const std::string bg_pid = dir / "bg.pid";
    const std::string done = dir / "done";
    // The leader exits at once, leaving a background process in its group.
    agent_run a(
        {"run", "-N", redis_url(srv), "job-leftover", "--", "sh", "-c",
         "(echo $(sh -c 'echo $PPID') > " + bg_pid + "; sleep 1; touch " + done + ") & exit 3"},
        {});
    const pid_t bg = pid_in(bg_pid);
    r.pids.push_back(bg);
    REQUIRE(bg > 0);
    CHECK(lock_exists(admin, "job-leftover") == 1);  // still held: part of the job runs
    const run_result res = a.finish(15.0);
    INFO(show(a.args, res));
    CHECK(res.status == 3);    // the leader's status
    CHECK(file_exists(done));  // it was let finish, under the lock
    CHECK_FALSE(alive(bg));
    CHECK(lock_exists(admin, "job-leftover") == 0);  // and only then released
}

TEST_CASE("cli job: a signal to the agent reaches every process of the group", "[cli]") {
    redis_server srv;
    temp_dir dir;
    reaper r;
    const std::string marks = dir / "marks";
    const std::string inner_pid = dir / "inner.pid";
    agent_run a({"run", "-N", redis_url(srv), "safety-forward", "--", "sh", "-c",
                 "trap 'echo outer >> " + marks + "' TERM; sh -c 'trap \"echo inner >> " + marks +
                     "; exit 0\" TERM; echo $$ > " + inner_pid +
                     "; while :; do sleep 0.05; done' & wait; wait"},
                {});
    const pid_t inner = pid_in(inner_pid);
    r.pids.push_back(inner);
    REQUIRE(inner > 0);
    sleep_ms(100);  // the inner trap is set before its pid is written; let the outer's be too
    a.proc.signal(SIGTERM);  // the agent alone
    const run_result res = a.finish(10.0);
    INFO(show(a.args, res) << "\nmarks: " << read_file(marks));
    CHECK(contains(read_file(marks), "inner"));
    CHECK(contains(read_file(marks), "outer"));
    CHECK_FALSE(alive(inner));
}

TEST_CASE("cli job: QUIT, USR1, USR2 and ALRM are forwarded, not fatal to the agent", "[cli]") {
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
        agent_run a({"run", "-N", redis_url(srv), "safety-signals", "--", "sh", "-c",
                     std::string("trap 'exit 7' ") + w.name + "; touch '" + started +
                         "'; while :; do sleep 0.05; done"},
                    {});
        REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
        a.proc.signal(w.sig);
        const run_result res = a.finish(10.0);
        INFO(w.name << "\n" << show(a.args, res));
        CHECK(res.status == 7);  // the agent lived to report the command's status
        CHECK(lock_exists(admin, "safety-signals") == 0);
    }
}

TEST_CASE("cli job: a reader that goes away does not kill the agent (SIGPIPE)", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string status = dir / "status";
    const std::string done = dir / "done";
    // -v says something at every renewal (ttl 1 s: every 333 ms); head
    // leaves after the first line, so the next message meets a closed pipe.
    const std::string script = "{ '" + std::string(EDGELOCK_CLI_PATH) + "' run -v -t 1s -N " +
                               redis_url(srv) + " safety-pipe -- sh -c 'sleep 2.5; touch " + done +
                               "' 2>&1 >/dev/null; echo $? > " + status + "; } | head -n 1";
    process p({"/bin/sh", "-c", script}, {});
    // Well past the ttl: the lock must still be held, renewed by the agent.
    sleep_ms(1800);
    const run_result other = agent({"run", "-N", redis_url(srv), "safety-pipe", "--", "true"});
    const run_result res = p.finish(15.0);
    INFO("pipeline: " << res.out << res.err << "\nother: " << show({"run"}, other));
    CHECK(other.status == exit_conflict);
    CHECK(file_exists(done));
    CHECK(read_file(status) == "0\n");
    CHECK(lock_exists(admin, "safety-pipe") == 0);
}

TEST_CASE("cli job: kill -9 of the agent takes the command with it", "[cli]") {
    redis_server srv;
    temp_dir dir;
    reaper r;
    const std::string leader_pid = dir / "leader.pid";
    agent_run a({"run", "-N", redis_url(srv), "safety-kill9", "--", "sh", "-c",
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

TEST_CASE("cli job: a process that left the group (setsid) is still covered by the lock", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    reaper r;
    const std::string escaped_pid = dir / "escaped.pid";
    const std::string done = dir / "done";
    // setsid(1) forks when its caller leads a group, and its parent, the
    // command's leader, exits at once: the lock must cover the escaped child.
    agent_run a({"run", "-N", redis_url(srv), "job-setsid", "--", "setsid", "sh", "-c",
                 "echo $$ > " + escaped_pid + "; sleep 1; touch " + done},
                {});
    const pid_t escaped = pid_in(escaped_pid);
    r.pids.push_back(escaped);
    REQUIRE(escaped > 0);
    CHECK(lock_exists(admin, "job-setsid") == 1);  // held while it runs
    const run_result res = a.finish(15.0);
    INFO(show(a.args, res));
    CHECK(res.status == 0);  // the leader's (setsid's) status
    CHECK(file_exists(done));
    CHECK(res.seconds >= 1.0);
    CHECK(lock_exists(admin, "job-setsid") == 0);
}

TEST_CASE("cli job: a lost lock stops a process that left the group too", "[cli]") {
    redis_server srv;
    temp_dir dir;
    reaper r;
    const std::string escaped_pid = dir / "escaped.pid";
    // The outer sh waits for a child in a session of its own: when the lock
    // is lost the group's SIGTERM ends the outer sh, and the child, now the
    // agent's, gets its SIGKILL.
    agent_run a({"run", "--ttl", "2s", "--grace", "500ms", "-N", redis_url(srv), "job-setsid-lost",
                 "--", "sh", "-c",
                 "setsid sh -c 'trap \"\" TERM; echo $$ > " + escaped_pid +
                     "; while :; do sleep 0.05; done' & wait"},
                {});
    const pid_t escaped = pid_in(escaped_pid);
    r.pids.push_back(escaped);
    REQUIRE(escaped > 0);
    srv.pause();
    const run_result res = a.finish(15.0);
    const bool escaped_alive = alive(escaped);
    srv.resume();
    INFO(show(a.args, res));
    CHECK(res.status == exit_lost);
    CHECK_FALSE(escaped_alive);
}

TEST_CASE("cli job: a stopped command still hears a forwarded SIGTERM", "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    reaper r;
    const std::string leader_pid = dir / "leader.pid";
    // Stopped by someone (SIGSTOP): a SIGTERM left pending would keep it,
    // and the lock, forever; the agent continues it after forwarding.
    agent_run a({"run", "-N", redis_url(srv), "job-stopped", "--", "sh", "-c",
                 "trap 'exit 5' TERM; echo $$ > " + leader_pid +
                     "; kill -STOP $$; while :; do sleep 0.05; done"},
                {});
    const pid_t leader = pid_in(leader_pid);
    r.pids.push_back(leader);
    REQUIRE(leader > 0);
    REQUIRE(wait_for([&] { return process_state(leader) == 'T'; }, 5.0));
    a.proc.signal(SIGTERM);
    const run_result res = a.finish(10.0);
    INFO(show(a.args, res));
    CHECK(res.status == 5);
    CHECK(lock_exists(admin, "job-stopped") == 0);
}

TEST_CASE("cli job: the command reads the terminal even when stdin is not it", "[cli]") {
    if (::access("/usr/bin/script", X_OK) != 0) {
        edgelock_test::skip("no script(1) here to make a terminal");
        return;
    }
    redis_server srv;
    temp_dir dir;
    const std::string out = dir / "out";
    // script(1) gives the agent a controlling terminal; stdin is /dev/null,
    // and the command reads the terminal itself, as a password prompt does.
    const std::string inner = dir / "inner.sh";
    edgelock_test::write_file(
        inner, "exec '" + std::string(EDGELOCK_CLI_PATH) + "' run -N " + redis_url(srv) +
                   " job-tty -- sh -c 'read x < /dev/tty; echo \"got $x\" > " + out +
                   "' < /dev/null\n");
    process p({"/bin/sh", "-c",
               "sleep 0.5; printf 'hello\\n' | script -qec 'sh " + inner + "' /dev/null"},
              {});
    const run_result res = p.finish(15.0);
    INFO("status " << res.status << "\nout: " << res.out << "\nerr: " << res.err);
    CHECK(res.status == 0);
    CHECK(read_file(out) == "got hello\n");
}
