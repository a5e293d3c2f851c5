// `run --permits N`: a semaphore, at most N jobs at once across the agents,
// each told its permit (EDGELOCK_PERMIT), with run's rules for the rest: a
// conflict exits 1, a lost permit stops the job and exits 75, and a limit
// other than the semaphore's is refused (exit 78). status and list show
// every permit's holder, as text and JSON; the waiting status line names the
// holders. On one node and on three (Redlock), against real redis-servers.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "cli/notify_listener.hpp"
#include "edgelock/lock.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

constexpr int exit_config = 78;

// The permits held on a node: those whose key exists.
unsigned permits_taken(redis_client& admin, const std::string& name, unsigned limit) {
    unsigned n = 0;
    for (unsigned i = 0; i < limit; ++i) {
        n += admin.command({"EXISTS", permit_key_of(name, i)}).integer == 1 ? 1U : 0U;
    }
    return n;
}

std::string nodes_of(const std::vector<std::unique_ptr<redis_server>>& servers) {
    std::string list;
    for (const auto& s : servers) {
        list += (list.empty() ? "" : ",") + redis_url(*s);
    }
    return list;
}

// A `run --permits` holding a permit of `key` until `go` exists.
std::unique_ptr<agent_run> holder_until(const std::string& nodes, const std::string& key,
                                        unsigned permits, const std::string& go,
                                        const strings& extra = {}) {
    strings args{"run", "-N", nodes, "--permits", std::to_string(permits)};
    args.insert(args.end(), extra.begin(), extra.end());
    const strings tail{key, "--", "sh", "-c", "while [ ! -e '" + go + "' ]; do sleep 0.02; done"};
    args.insert(args.end(), tail.begin(), tail.end());
    return std::make_unique<agent_run>(args, strings{});
}

}  // namespace

TEST_CASE("cli permits: at most N jobs at once, each with a permit of its own", "[cli][permits]") {
    for (const std::size_t node_count : {std::size_t{1}, std::size_t{3}}) {
        INFO(node_count << " node(s)");
        std::vector<std::unique_ptr<redis_server>> servers;
        for (std::size_t i = 0; i < node_count; ++i) {
            servers.push_back(std::make_unique<redis_server>());
            redis_client c(servers.back()->port());
            load_scripts(c);  // as an earlier run would have left them
        }
        temp_dir dir{"edgelock-cli-permits"};
        const std::string key = "cli-permits";
        // Each job claims its permit's directory (mkdir fails when another
        // job holds it) and counts the jobs running; more than two says so.
        const std::string job = "d='" + dir.path + "'; mkdir \"$d/p$EDGELOCK_PERMIT\" || exit 3; " +
                                "touch \"$d/live.$$\"; n=$(ls \"$d\" | grep -c '^live'); " +
                                "[ \"$n\" -le 2 ] || touch \"$d/overlap\"; " +
                                "echo \"$EDGELOCK_KEY $EDGELOCK_PERMIT\" >> \"$d/seen\"; " +
                                "sleep 0.3; rm \"$d/live.$$\"; rmdir \"$d/p$EDGELOCK_PERMIT\"";
        std::vector<std::unique_ptr<agent_run>> runs;
        for (int i = 0; i < 5; ++i) {
            runs.push_back(
                std::make_unique<agent_run>(strings{"run", "-N", nodes_of(servers), "--permits",
                                                    "2", "-w", "30s", key, "--", "sh", "-c", job},
                                            strings{}));
        }
        for (auto& r : runs) {
            const run_result res = r->finish(40.0);
            INFO(show(r->args, res));
            CHECK(res.status == 0);
        }
        CHECK_FALSE(file_exists(dir / "overlap"));
        const strings seen = lines_of(read_file(dir / "seen"));
        CHECK(seen.size() == 5);
        std::set<std::string> permits;
        for (const std::string& s : seen) {
            CHECK(starts_with(s, key + " "));
            permits.insert(s.substr(key.size() + 1));
        }
        CHECK(permits.size() <= 2);
        for (const std::string& p : permits) {
            CHECK((p == "0" || p == "1"));
        }
        for (const auto& s : servers) {
            redis_client admin(s->port());
            CHECK(permits_taken(admin, key, 2) == 0);  // every permit released
            CHECK(
                admin.command({"EXISTS", key_of(key, edgelock::lock_key_kind::permits)}).integer ==
                0);
        }
    }
}

TEST_CASE("cli permits: every permit taken is a conflict, and another limit is refused",
          "[cli][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-permits-busy"};
    const std::string key = "cli-permits-busy";
    const std::string go = dir / "go";
    auto a = holder_until(redis_url(srv), key, 2, go);
    auto b = holder_until(redis_url(srv), key, 2, go);
    REQUIRE(wait_for([&] { return permits_taken(admin, key, 2) == 2; }, 10.0));

    const strings busy{"run", "-N", redis_url(srv), "--permits", "2", "-w", "0", key, "--", "true"};
    const run_result r = agent(busy);
    INFO(show(busy, r));
    CHECK(r.status == exit_conflict);
    CHECK(contains(r.err, "every permit of '" + key + "' (2) is held by another owner"));

    // Refused at once: a retry would wait out -w, past agent()'s bound.
    const strings other{"run", "-N", redis_url(srv), "--permits", "3",        "-w",
                        "60s", key,  "--",           "touch",     dir / "ran"};
    const run_result o = agent(other);
    INFO(show(other, o));
    CHECK(o.status == exit_config);
    CHECK(contains(o.err, "'" + key + "' is a semaphore of 2 permits on a node, not 3"));
    CHECK_FALSE(file_exists(dir / "ran"));
    CHECK(permits_taken(admin, key, 3) == 2);  // the holders' permits untouched

    REQUIRE(write_file(go, ""));
    CHECK(a->finish(10.0).status == 0);
    CHECK(b->finish(10.0).status == 0);
    // The last release took the limit with it: another limit is welcome now.
    const run_result after = agent(other);
    INFO(show(other, after));
    CHECK(after.status == 0);
    CHECK(file_exists(dir / "ran"));
}

TEST_CASE("cli permits: a permit lost under the job stops it, exit 75", "[cli][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-permits-lost"};
    const std::string key = "cli-permits-lost";
    agent_run r({"run", "-N", redis_url(srv), "--permits", "3", "-t", "3s", "--renew-every",
                 "200ms", "--grace", "500ms", key, "--", "sh", "-c",
                 "echo $EDGELOCK_PERMIT > '" + dir / "permit" + "'; sleep 30"},
                {});
    REQUIRE(wait_for([&] { return !read_file(dir / "permit").empty(); }, 10.0));
    const std::string permit = lines_of(read_file(dir / "permit")).at(0);
    // Taken from under it: the next renew finds the permit not ours.
    REQUIRE(admin.command({"DEL", permit_key_of(key, static_cast<unsigned>(std::stoi(permit)))})
                .integer == 1);
    const run_result res = r.finish(20.0);
    INFO(show(r.args, res));
    CHECK(res.status == exit_lost);
    CHECK(contains(res.err, "lost"));
}

TEST_CASE("cli permits: status and list show every permit's holder, as text and JSON",
          "[cli][permits][holder]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-permits-status"};
    const std::string key = "cli-permits-status";
    const std::string go = dir / "go";
    auto a = holder_until(redis_url(srv), key, 3, go, {"--label", "upload a"});
    auto b = holder_until(redis_url(srv), key, 3, go, {"--label", "upload b"});
    REQUIRE(wait_for([&] { return permits_taken(admin, key, 3) == 2; }, 10.0));
    admin.command({"SET", "cli-permits-plain", "x", "PX", "30000"});

    const strings text_args{"status", "-N", redis_url(srv), key};
    const run_result t = agent(text_args);
    INFO(show(text_args, t));
    CHECK(t.status == 0);
    const strings rows = lines_of(t.out);
    REQUIRE(rows.size() == 4);
    CHECK(rows[0] == key + ": semaphore of 3 permits, 2 held (quorum 1 of 1 nodes)");
    unsigned free = 0;
    std::string labels;
    for (unsigned i = 0; i < 3; ++i) {
        const std::string head = "  permit " + std::to_string(i) + ": ";
        REQUIRE(starts_with(rows[i + 1], head));
        if (rows[i + 1] == head + "free") {
            ++free;
            continue;
        }
        CHECK(contains(rows[i + 1], "held, ttl "));
        CHECK(contains(rows[i + 1],
                       ", token " + admin.command({"GET", permit_key_of(key, i)}).text + ", by "));
        labels += contains(rows[i + 1], " (upload a) since ") ? "a" : "";
        labels += contains(rows[i + 1], " (upload b) since ") ? "b" : "";
    }
    CHECK(free == 1);
    CHECK((labels == "ab" || labels == "ba"));

    const strings json_args{"status", "--json", "-N", redis_url(srv), key};
    const run_result j = agent(json_args);
    INFO(show(json_args, j));
    CHECK(j.status == 0);
    CHECK(
        starts_with(j.out, "{\"key\":\"" + key + "\",\"semaphore\":true,\"limit\":3,\"held\":2,"));
    CHECK(contains(j.out, "\"label\":\"upload a\""));
    CHECK(contains(j.out, "\"label\":\"upload b\""));
    CHECK(lines_of(j.out).size() == 1);

    const strings list_args{"list", "-N", redis_url(srv), "cli-permits-*"};
    const run_result l = agent(list_args);
    INFO(show(list_args, l));
    CHECK(l.status == 0);
    const strings listed = lines_of(l.out);
    REQUIRE(listed.size() == 2);  // the plain key and the semaphore; no permit keys
    CHECK(starts_with(listed[0], "cli-permits-plain  held on 1/1 nodes"));
    CHECK(starts_with(listed[1], key + "  semaphore, 2 of 3 permits held ("));
    CHECK(contains(listed[1], "(upload a)"));
    CHECK(contains(listed[1], "(upload b)"));

    const strings list_json{"list", "--json", "-N", redis_url(srv), "cli-permits-*"};
    const run_result lj = agent(list_json);
    INFO(show(list_json, lj));
    CHECK(contains(lj.out, "{\"key\":\"" + key + "\",\"semaphore\":true,\"limit\":3,\"held\":2,"));

    REQUIRE(write_file(go, ""));
    CHECK(a->finish(10.0).status == 0);
    CHECK(b->finish(10.0).status == 0);
    const run_result after = agent(text_args);
    CHECK(starts_with(after.out, key + ": free"));  // no semaphore left: a free name
}

TEST_CASE("cli permits: a waiter's status line names the holders, then holds a permit",
          "[cli][permits]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-permits-notify"};
    const std::string key = "cli-permits-notify";
    const std::string go = dir / "go";
    auto a = holder_until(redis_url(srv), key, 1, go, {"--label", "uplink"});
    REQUIRE(wait_for([&] { return permits_taken(admin, key, 1) == 1; }, 10.0));
    notify_listener listener(dir / "notify");
    agent_run waiter(
        {"run", "-w", "30s", "--permits", "1", "-N", redis_url(srv), key, "--", "true"},
        {"NOTIFY_SOCKET=" + listener.name});
    sleep_ms(300);
    CHECK(waiter.proc.running());
    REQUIRE(write_file(go, ""));
    CHECK(a->finish(10.0).status == 0);
    const run_result r = waiter.finish(10.0);
    INFO(show(waiter.args, r));
    CHECK(r.status == 0);
    const std::vector<std::string> got = listener.take();
    std::string all;
    for (const std::string& g : got) {
        all += g + "\n";
    }
    INFO(all);
    REQUIRE(got.size() >= 4);
    CHECK(starts_with(got[1], "STATUS=waiting for a permit of " + key + ", all 1 held by "));
    CHECK(contains(got[1], " pid " + std::to_string(a->proc.pid()) + " (uplink) for "));
    CHECK(starts_with(got[got.size() - 2], "STATUS=holding permit 0 of " + key + " since "));
}

TEST_CASE("cli permits: bad --permits values are usage errors", "[cli][permits]") {
    const std::string too_many = std::to_string(edgelock::lock_max_permits + 1U);
    for (const strings& args :
         {strings{"run", "--permits", "0", "k", "--", "true"},
          strings{"run", "--permits", too_many, "k", "--", "true"},
          strings{"run", "--permits", "x", "k", "--", "true"},
          strings{"run", "--permits", "-1", "k", "--", "true"},
          strings{"acquire", "--permits", "2", "k"}, strings{"status", "--permits", "2", "k"},
          // Each request names every permit's key: too long for this name.
          strings{"run", "--fencing", "--permits", "16", std::string(60, 'k'), "--", "true"}}) {
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == exit_usage);
        CHECK(one_line(r.err));
        CHECK(contains(r.err, "--permits"));
    }
}
