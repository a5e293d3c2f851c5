// The agent's stderr cannot hold up its loop: the job shares it, and a job
// that fills a pipe whose reader stopped reading must not stop the renewals.
// What does not fit while stderr is stuck is dropped and counted, and the
// count is said once the pipe drains. Node URLs in messages and status go
// without their user and password. Against a real redis-server.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdlib>
#include <string>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/net.hpp"
#include "tools/url.hpp"

using edgelock_test::agent;
using edgelock_test::agent_run;
using edgelock_test::contains;
using edgelock_test::file_exists;
using edgelock_test::free_port;
using edgelock_test::lock_pttl;
using edgelock_test::mono_s;
using edgelock_test::redis_client;
using edgelock_test::redis_server;
using edgelock_test::redis_url;
using edgelock_test::run_result;
using edgelock_test::show;
using edgelock_test::sleep_ms;
using edgelock_test::strings;
using edgelock_test::temp_dir;

namespace {

std::size_t occurrences(const std::string& hay, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t at = hay.find(needle); at != std::string::npos;
         at = hay.find(needle, at + needle.size())) {
        ++n;
    }
    return n;
}

// The sum of the counts in the agent's "edgelock: N message(s) dropped: ..."
// notes, and how many notes there were.
struct dropped_notes {
    unsigned long total = 0;
    std::size_t notes = 0;
};

// A field of the server's INFO stats; -1 when missing.
long long stat_of(redis_client& admin, const std::string& field) {
    const std::string text = admin.command({"INFO", "stats"}).text;
    const std::size_t at = text.find(field + ":");
    return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + field.size() + 1);
}

dropped_notes dropped_in(const std::string& err) {
    static const std::string head = "edgelock: ";
    static const std::string tail = " dropped: stderr was not taking them\n";
    dropped_notes d;
    for (std::size_t at = err.find(head); at != std::string::npos; at = err.find(head, at + 1)) {
        std::size_t p = at + head.size();
        unsigned long count = 0;
        const std::size_t digits = p;
        while (p < err.size() && err[p] >= '0' && err[p] <= '9' && p - digits < 12) {
            count = count * 10 + static_cast<unsigned long>(err[p] - '0');
            ++p;
        }
        const std::string word = count == 1 ? " message" : " messages";
        if (p == digits || err.compare(p, word.size(), word) != 0 ||
            err.compare(p + word.size(), tail.size(), tail) != 0) {
            continue;
        }
        d.total += count;
        ++d.notes;
    }
    return d;
}

// The agent's own lines: stderr without the job's NUL bytes, the end of it.
std::string agent_lines(const std::string& err) {
    std::string text;
    for (char c : err) {
        if (c != '\0') {
            text += c;
        }
    }
    return text.size() <= 1500 ? text : "..." + text.substr(text.size() - 1500);
}

}  // namespace

TEST_CASE("cli stderr: a stalled stderr pipe stops neither the renewals nor the lock",
          "[cli][asan]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string started = dir / "started";
    const std::string ended = dir / "ended";
    const std::string name = "stderr-stalled";
    // agent_run's pipes are read by finish() only: until then the agent's
    // stderr is a pipe nobody reads, and the job fills it (64 KB) at once.
    // Renewals every 2 ms at -v give far more lines than the agent can keep
    // while the pipe is stuck, so some must be dropped and counted.
    const double renew_s = 0.002;
    agent_run a(
        {"run", "-v", "-t", "2s", "--renew-every", "2ms", "-N", redis_url(srv), name, "--", "sh",
         "-c", "touch " + started + "; head -c 200000 /dev/zero >&2; sleep 1; touch " + ended},
        {});
    // Over twice the ttl: a loop that waits on stderr loses the key meanwhile.
    const double stall_s = 4.5;
    const double stall_end = mono_s() + stall_s;
    int gone_samples = 0;  // the job ran and the key was not there
    double gone_s = 0;     // for how long, roughly
    double last = mono_s();
    while (mono_s() < stall_end) {
        // Started before the look and not ended after it: the job ran meanwhile.
        const bool job_started = file_exists(started);
        const long long pttl = lock_pttl(admin, name);
        const bool job_ended = file_exists(ended);
        const double now = mono_s();
        if (job_started && !job_ended && pttl == -2) {
            ++gone_samples;
            gone_s += now - last;
        }
        last = now;
        sleep_ms(50);
    }
    const bool job_started = file_exists(started);
    const bool job_blocked = !file_exists(ended);  // still writing: the pipe was stuck
    const run_result r = a.finish(10.0);

    const std::size_t renewed = occurrences(r.err, "edgelock: renewed (");
    const dropped_notes dropped = dropped_in(r.err);
    INFO("exit " << r.status << " after " << r.seconds << " s; the job ran without its key for ~"
                 << gone_s << " s (" << gone_samples << " looks); " << renewed << " renewal lines, "
                 << dropped.total << " dropped in " << dropped.notes
                 << " notes\nthe agent's stderr: " << agent_lines(r.err));
    REQUIRE(job_started);
    REQUIRE(job_blocked);  // else the test proves nothing
    CHECK(gone_samples == 0);
    CHECK(r.status == 0);  // the job completed under its lock
    CHECK(dropped.total > 0);
    // Every renewal is a line, said or counted: nominally one per 2 ms
    // through the run. At least a tenth of that (a slow machine's round
    // trips), and no more (a count that is not made up).
    const double lines = static_cast<double>(renewed + dropped.total);
    CHECK(lines >= r.seconds / renew_s / 10);
    CHECK(lines <= r.seconds / renew_s + 5);
}

TEST_CASE("cli: an agent started with its stderr closed says nothing down a Redis connection",
          "[cli]") {
    redis_server srv;
    redis_client admin(srv.port());
    // fd 2 closed: the first socket the agent makes would take that number.
    const edgelock_test::strings args{"run",           "-v",    "-t",    "2s",
                                      "--renew-every", "200ms", "-N",    redis_url(srv),
                                      "stderr-closed", "--",    "sleep", "1"};
    edgelock_test::strings argv{"sh", "-c", "exec 2>&-; exec \"$@\"", "sh"};
    const edgelock_test::strings agent = edgelock_test::agent_argv(args);
    argv.insert(argv.end(), agent.begin(), agent.end());
    const long long connections = stat_of(admin, "total_connections_received");
    edgelock_test::process p(argv, {});
    const run_result r = p.finish(20.0);
    INFO(edgelock_test::show(args, r));
    CHECK(r.status == 0);
    CHECK(admin.command({"EXISTS", edgelock_test::key_of("stderr-closed")}).integer == 0);
    // No line of the agent's reached the server as a command (it would have
    // answered an error, and the agent made its connection anew). The only
    // errors are the NOSCRIPTs of a fresh server's empty script cache.
    INFO(admin.command({"INFO", "errorstats"}).text);
    const long long expected = edgelock_test::error_calls(admin, "NOSCRIPT");
    CHECK(expected <= 3);  // the acquire's, the renew's and the release's first use
    CHECK(stat_of(admin, "total_error_replies") == expected);
    CHECK(stat_of(admin, "total_connections_received") == connections + 1);
}

TEST_CASE("cli stderr: node URLs are shown without their user and password", "[cli]") {
    redis_server srv({"--requirepass", "s3cr3t-pw"});
    const std::uint16_t dead = free_port();
    // The password is right on the live node; the other one is down, and
    // its reason names it.
    const std::string nodes =
        redis_url(srv.port(), ":s3cr3t-pw") + "," + redis_url(dead, "gw:s3cr3t-pw");
    const std::string down = "redis://127.0.0.1:" + std::to_string(dead);
    {
        const strings args{"run", "-N", nodes, "cli-shown", "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 69);
        CHECK(contains(r.err, "node " + down + ":"));
        CHECK_FALSE(contains(r.err, "s3cr3t"));
    }
    {
        const strings args{"status", "-N", nodes, "cli-shown"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(contains(r.out, "  redis://127.0.0.1:" + std::to_string(srv.port()) + ": free"));
        CHECK(contains(r.out, "  " + down + ": unreachable"));
        CHECK_FALSE(contains(r.out + r.err, "s3cr3t"));
    }
    {
        const strings args{"run", "-N", "redis://gw:s3cr3t-pw@127.0.0.1:99999", "k", "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 64);
        CHECK(contains(r.err, "redis://127.0.0.1:99999"));
        CHECK_FALSE(contains(r.err, "s3cr3t"));
    }
}
