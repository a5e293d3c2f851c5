// Who holds a lock, as an operator asks it: `status KEY` and `list [PATTERN]`,
// as text and as JSON, on locks taken by `run` and `acquire` (which record
// their host, pid and label beside the lock) and on one held by redis-py's
// Lock (token and ttl, no record). Against real redis-servers.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "edgelock/lock.hpp"
#include "integration/redis_server.hpp"
#include "tools/clock.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/redis_py.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

std::string this_host() {
    char h[256] = {};
    REQUIRE(::gethostname(h, sizeof h - 1) == 0);
    h[64] = '\0';
    return h;
}

// A `run` holding `key` on `url` until `go` exists.
std::unique_ptr<agent_run> holder_until(const std::string& url, const std::string& key,
                                        const std::string& go, const strings& extra = {}) {
    strings args{"run", "-N", url};
    args.insert(args.end(), extra.begin(), extra.end());
    const strings tail{key, "--", "sh", "-c", "while [ ! -e '" + go + "' ]; do sleep 0.02; done"};
    args.insert(args.end(), tail.begin(), tail.end());
    return std::make_unique<agent_run>(args, strings{});
}

}  // namespace

TEST_CASE("cli inspect: status names the holder that run recorded, as text and JSON",
          "[cli][holder][asan]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-inspect"};
    const std::string key = "cli-inspect-run";
    const std::string go = dir / "go";
    auto holder = holder_until(redis_url(srv), key, go, {"--label", "nightly upload"});
    REQUIRE(wait_for([&] { return lock_exists(admin, key) == 1; }, 10.0));
    const std::string token = lock_value(admin, key);
    REQUIRE(is_token(token));  // the lock's key is what it always was
    const std::string pid = std::to_string(holder->proc.pid());

    const strings text_args{"status", "-N", redis_url(srv), key};
    const run_result t = agent(text_args);
    INFO(show(text_args, t));
    CHECK(t.status == 0);
    CHECK(starts_with(t.out, key + ": held (1 of 1 nodes hold it, quorum 1)\n"));
    CHECK(contains(t.out, "token " + token));
    CHECK(contains(t.out, ", by " + this_host() + " pid " + pid + " (nightly upload) since 20"));
    CHECK(contains(t.out, " UTC, for "));

    const strings json_args{"status", "--json", "-N", redis_url(srv), key};
    const run_result j = agent(json_args);
    INFO(show(json_args, j));
    CHECK(j.status == 0);
    CHECK(starts_with(j.out, "{\"key\":\"" + key + "\",\"held\":true,\"holding\":1,"));
    CHECK(contains(j.out, "\"state\":\"held\",\"type\":\"string\",\"ttl_ms\":"));
    CHECK(contains(j.out, "\"token\":\"" + token + "\""));
    CHECK(contains(j.out, "\"holder\":{\"host\":\"" + this_host() + "\",\"pid\":" + pid +
                              ",\"label\":\"nightly upload\",\"since\":"));
    CHECK(lines_of(j.out).size() == 1);

    REQUIRE(write_file(go, ""));
    CHECK(holder->finish(10.0).status == 0);
    // Released: the record went with the lock.
    CHECK(admin.command({"EXISTS", renewal_mark_of(key)}).integer == 0);
    const run_result after = agent(text_args);
    CHECK(starts_with(after.out, key + ": free"));
    CHECK_FALSE(contains(after.out, "pid"));
}

TEST_CASE("cli inspect: a lock held by redis-py shows its token and ttl, and no holder",
          "[cli][holder][interop]") {
    redis_server srv;
    const std::string key = "cli-inspect-py";
    const std::string said = redis_py(srv.port(), key, {"acquire", "30000"});
    REQUIRE(starts_with(said, "acquired "));
    const std::string token = said.substr(9);

    const strings text_args{"status", "-N", redis_url(srv), key};
    const run_result t = agent(text_args);
    INFO(show(text_args, t));
    CHECK(t.status == 0);
    CHECK(contains(t.out, ": held, ttl "));
    CHECK(contains(t.out, " ms, token " + token + "\n"));
    CHECK_FALSE(contains(t.out, ", by "));

    const strings json_args{"status", "--json", "-N", redis_url(srv), key};
    const run_result j = agent(json_args);
    INFO(show(json_args, j));
    CHECK(contains(j.out, "\"token\":\"" + token + "\",\"holder\":null"));

    const strings list_args{"list", "-N", redis_url(srv), "cli-inspect-*"};
    const run_result l = agent(list_args);
    INFO(show(list_args, l));
    CHECK(l.status == 0);
    CHECK(starts_with(l.out, key + "  held on 1/1 nodes, ttl "));
    CHECK(contains(l.out, "token " + token + ", no record"));
}

TEST_CASE("cli inspect: list finds the locks, not their marks and counters, as text and JSON",
          "[cli][holder][asan]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-list"};
    const std::string url = redis_url(srv);
    const std::string go = dir / "go";
    auto run_holder =
        holder_until(url, "fleet-upload", go, {"--fencing", "--renew-every", "200ms"});
    const run_result acquired = agent({"acquire", "-N", url, "--label", "by hand", "fleet-manual"});
    REQUIRE(acquired.status == 0);
    REQUIRE(wait_for([&] { return lock_exists(admin, "fleet-upload") == 1; }, 10.0));
    sleep_ms(500);  // renewed at least once: the record is kept
    REQUIRE(redis_py(srv.port(), "fleet-py", {"acquire", "30000"}).substr(0, 8) == "acquired");
    admin.command({"SET", "fleet-config", "no ttl: not a lock"});
    admin.command({"SET", "other-key", "x", "PX", "30000"});

    const strings list_args{"list", "-N", url, "fleet-*"};
    const run_result l = agent(list_args);
    INFO(show(list_args, l));
    CHECK(l.status == 0);
    const strings rows = lines_of(l.out);
    REQUIRE(rows.size() == 3);  // sorted by name; no mark, counter or config
    CHECK(starts_with(rows[0], "fleet-manual  held on 1/1 nodes, ttl "));
    CHECK(contains(rows[0], ", by " + this_host() + " pid "));
    CHECK(contains(rows[0], " (by hand) since "));
    CHECK(starts_with(rows[1], "fleet-py  held on 1/1 nodes"));
    CHECK(starts_with(rows[2], "fleet-upload  held on 1/1 nodes"));
    CHECK(contains(rows[2], " pid " + std::to_string(run_holder->proc.pid()) + " (sh) since "));

    // The pattern and the companions: every key of the lock is there, only
    // the lock is listed.
    CHECK(admin.command({"EXISTS", renewal_mark_of("fleet-upload")}).integer == 1);
    CHECK(admin.command({"EXISTS", "{fleet-upload}:fence"}).integer == 1);
    const run_result all = agent({"list", "-N", url});
    CHECK(lines_of(all.out).size() == 4);  // and other-key, a string with a ttl
    CHECK(contains(all.out, "other-key  held"));

    const strings json_args{"list", "--json", "-N", url, "fleet-u*"};
    const run_result j = agent(json_args);
    INFO(show(json_args, j));
    CHECK(starts_with(j.out, "{\"locks\":[{\"key\":\"fleet-upload\",\"held\":true,\"holding\":1,"));
    CHECK(contains(j.out, "\"label\":\"sh\""));
    CHECK(contains(j.out, "],\"truncated\":false}\n"));
    const run_result none = agent({"list", "--json", "-N", url, "nothing-*"});
    CHECK(none.out == "{\"locks\":[],\"truncated\":false}\n");

    REQUIRE(write_file(go, ""));
    CHECK(run_holder->finish(10.0).status == 0);
}

TEST_CASE("cli inspect: a Redlock's record is on every node", "[cli][holder]") {
    redis_server a;
    redis_server b;
    redis_server c;
    for (const redis_server* srv : {&a, &b, &c}) {
        redis_client admin(srv->port());
        load_scripts(admin);  // as an earlier run would: no node late for a NOSCRIPT
    }
    const std::string nodes = redis_url(a) + "," + redis_url(b) + "," + redis_url(c);
    const std::string key = "cli-inspect-redlock";
    const run_result acquired = agent({"acquire", "-N", nodes, "--label", "three", key});
    REQUIRE(acquired.status == 0);
    const strings args{"status", "-N", nodes, key};
    const run_result s = agent(args);
    INFO(show(args, s));
    CHECK(starts_with(s.out, key + ": held (3 of 3 nodes hold it, quorum 2)\n"));
    const strings rows = lines_of(s.out);
    REQUIRE(rows.size() == 4);
    for (std::size_t i = 1; i < rows.size(); ++i) {
        CHECK(contains(rows[i], " pid " + std::to_string(::getpid()) + " (three) since "));
    }
}

TEST_CASE("cli inspect: --label and --json are checked before any node", "[cli][holder]") {
    const strings n{"-N", "redis://127.0.0.1:1"};
    const std::vector<strings> bad = {
        {"status", "--label", "x", "k"},
        {"run", "--json", "k", "--", "true"},
        {"acquire", "--label", std::string("a\nb"), "k"},
        {"acquire", "--label", std::string(65, 'l'), "k"},
        {"acquire", "--label", "", "k"},
        {"list", "a*", "b*"},
    };
    for (strings args : bad) {
        args.insert(args.begin() + 1, n.begin(), n.end());
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 64);
        CHECK(one_line(r.err));
    }
}
