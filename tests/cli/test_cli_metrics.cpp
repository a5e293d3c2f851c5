// edgelock run --metrics-file: the Prometheus text the agent leaves after a
// clean run, a conflict, a loss, a node down and a job killed by a signal;
// keys sharing a file; a reader that never sees a file half written; a write
// that fails without changing the run's status. Every file is read by a
// strict parser of the text format written here, and by `promtool check
// metrics` when the build names one (EDGELOCK_TEST_PROMTOOL,
// tests/tools/fetch_promtool.sh).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/exposition.hpp"
#include "integration/redis_server.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"
#include "tools/skip.hpp"
#include "tools/url.hpp"

#ifndef EDGELOCK_TEST_PROMTOOL
#define EDGELOCK_TEST_PROMTOOL ""
#endif

using namespace edgelock_test;

namespace {

// The file's text, checked by the parser and by promtool when there is one.
exposition checked(const std::string& path) {
    const std::string text = read_file(path);
    exposition e = parse_exposition(text);
    INFO(path << ":\n" << text);
    INFO(e.error);
    REQUIRE(e.ok);
    const std::string promtool = EDGELOCK_TEST_PROMTOOL;
    if (!promtool.empty() && ::access(promtool.c_str(), X_OK) == 0) {
        process p({"/bin/sh", "-c", "\"$0\" check metrics < \"$1\"", promtool, path}, {});
        const run_result r = p.finish(30.0);
        INFO("promtool check metrics: " << r.status << "\n" << r.out << r.err);
        CHECK(r.status == 0);
    }
    return e;
}

const char* const families[] = {
    "edgelock_job_start_time_seconds",
    "edgelock_job_end_time_seconds",
    "edgelock_job_wait_seconds",
    "edgelock_job_hold_seconds",
    "edgelock_job_exit_status",
    "edgelock_job_acquired",
    "edgelock_job_lost",
    "edgelock_job_renewals_failed",
};

std::string of(const std::string& family, const std::string& key) {
    return family + "{key=\"" + key + "\"}";
}

std::string node_errors(const std::string& key, const std::string& node) {
    return "edgelock_job_node_errors{key=\"" + key + "\",node=\"" + node + "\"}";
}

// Every family of a key is there, once, with its TYPE gauge.
void check_families(const exposition& e, const std::string& key) {
    for (const char* f : families) {
        INFO(f);
        CHECK(e.has(of(f, key)));
        CHECK(e.types.at(f) == "gauge");
    }
    CHECK(e.types.at("edgelock_job_node_errors") == "gauge");
}

double unix_now() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

ino_t inode_of(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace

TEST_CASE("cli metrics: the strict parser refuses what the format does not allow",
          "[cli][metrics]") {
    const std::string head = "# HELP m x\n# TYPE m gauge\n";
    CHECK(parse_exposition(head + "m{key=\"a\"} 1\n").ok);
    CHECK(parse_exposition(head + "m{key=\"a\\\"b\\\\c\\n\"} 1.5\n").ok);
    CHECK_FALSE(parse_exposition("m{key=\"a\"} 1\n").ok);            // no HELP, TYPE
    CHECK_FALSE(parse_exposition(head + "m{key=\"a\"} 1").ok);       // no final newline
    CHECK_FALSE(parse_exposition(head + "m{key=\"a\"} x\n").ok);     // not a float
    CHECK_FALSE(parse_exposition(head + "m{key=\"a\\q\"} 1\n").ok);  // a bad escape
    CHECK_FALSE(parse_exposition(head + "m{key=\"a\"} 1\nm{key=\"a\"} 2\n").ok);  // twice
    CHECK_FALSE(parse_exposition(head + "m{key=\"a\"").ok);                       // cut short
    CHECK_FALSE(parse_exposition(head + "1m{key=\"a\"} 1\n").ok);                 // a bad name
    CHECK_FALSE(parse_exposition(head + "m{key=\"a\"} 1\n# HELP n y\n# TYPE n gauge\nn 1\n"
                                        "m{key=\"b\"} 1\n")
                    .ok);  // not contiguous
}

TEST_CASE("cli metrics: a clean run", "[cli][metrics]") {
    redis_server srv;
    temp_dir dir;
    const std::string file = dir / "edgelock.prom";
    const double before = unix_now();
    const strings args{"run",          "--metrics-file", file, "-N",
                       redis_url(srv), "metrics-clean",  "--", "sh",
                       "-c",           "sleep 0.3"};
    const run_result r = agent(args);
    INFO(show(args, r));
    REQUIRE(r.status == 0);
    const double after = unix_now();
    const exposition e = checked(file);
    const std::string k = "metrics-clean";
    check_families(e, k);
    CHECK(e.at(of("edgelock_job_exit_status", k)) == 0);
    CHECK(e.at(of("edgelock_job_acquired", k)) == 1);
    CHECK(e.at(of("edgelock_job_lost", k)) == 0);
    CHECK(e.at(of("edgelock_job_renewals_failed", k)) == 0);
    const double start = e.at(of("edgelock_job_start_time_seconds", k));
    const double end = e.at(of("edgelock_job_end_time_seconds", k));
    CHECK(start >= before - 0.01);
    CHECK(start <= end);
    CHECK(end <= after + 0.01);
    CHECK(e.at(of("edgelock_job_hold_seconds", k)) >= 0.3);
    CHECK(e.at(of("edgelock_job_hold_seconds", k)) <= end - start + 0.002);
    CHECK(e.at(of("edgelock_job_wait_seconds", k)) < 1.0);
    CHECK(e.at(node_errors(k, redis_url(srv))) == 0);
    // No temporary file left; the sidecar lock file stays (it is reused).
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir.path.c_str())) {
        while (const dirent* ent = ::readdir(d)) {
            const std::string name = ent->d_name;
            if (name != "." && name != "..") {
                names.push_back(name);
            }
        }
        ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    CHECK(names == strings{"edgelock.prom", "edgelock.prom.lock"});
}

TEST_CASE("cli metrics: a conflict, a loss, a node down, a job killed", "[cli][metrics]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir;
    const std::string file = dir / "edgelock.prom";

    SECTION("conflict: acquired 0, exit status 1") {
        const strings hold{"acquire", "-t", "10s", "-N", redis_url(srv), "metrics-busy"};
        REQUIRE(agent(hold).status == 0);
        const strings args{"run",          "--metrics-file", file, "-N",
                           redis_url(srv), "metrics-busy",   "--", "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        REQUIRE(r.status == exit_conflict);
        const exposition e = checked(file);
        check_families(e, "metrics-busy");
        CHECK(e.at(of("edgelock_job_exit_status", "metrics-busy")) == 1);
        CHECK(e.at(of("edgelock_job_acquired", "metrics-busy")) == 0);
        CHECK(e.at(of("edgelock_job_hold_seconds", "metrics-busy")) == 0);
        CHECK(e.at(of("edgelock_job_lost", "metrics-busy")) == 0);
    }
    SECTION("loss: the key deleted under the holder, lost 1, exit 75") {
        const std::string started = dir / "started";
        agent_run a({"run", "--metrics-file", file, "-t", "1500ms", "-N", redis_url(srv),
                     "metrics-lost", "--", "sh", "-c", "touch " + started + "; sleep 10"},
                    {});
        REQUIRE(wait_for([&] { return file_exists(started); }, 5.0));
        REQUIRE(admin.command({"DEL", key_of("metrics-lost")}).integer == 1);
        const run_result r = a.finish(20.0);
        INFO(show(a.args, r));
        REQUIRE(r.status == exit_lost);
        const exposition e = checked(file);
        check_families(e, "metrics-lost");
        CHECK(e.at(of("edgelock_job_exit_status", "metrics-lost")) == exit_lost);
        CHECK(e.at(of("edgelock_job_acquired", "metrics-lost")) == 1);
        CHECK(e.at(of("edgelock_job_lost", "metrics-lost")) == 1);
        CHECK(e.at(of("edgelock_job_hold_seconds", "metrics-lost")) > 0);
    }
    SECTION("node down: errors for the closed port, exit 69") {
        const std::string down = redis_url(free_port());
        const strings args{
            "run", "--metrics-file", file, "-N", redis_url(srv) + "," + down, "metrics-down", "--",
            "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        REQUIRE(r.status == exit_unavailable);
        const exposition e = checked(file);
        check_families(e, "metrics-down");
        CHECK(e.at(of("edgelock_job_exit_status", "metrics-down")) == exit_unavailable);
        CHECK(e.at(of("edgelock_job_acquired", "metrics-down")) == 0);
        CHECK(e.at(node_errors("metrics-down", down)) > 0);
        CHECK(e.at(node_errors("metrics-down", redis_url(srv))) == 0);
    }
    SECTION("a job killed by a signal: its status, 128 + 9") {
        const strings args{"run",          "--metrics-file", file, "-N",
                           redis_url(srv), "metrics-killed", "--", "sh",
                           "-c",           "kill -KILL $$"};
        const run_result r = agent(args);
        INFO(show(args, r));
        REQUIRE(r.status == 128 + SIGKILL);
        const exposition e = checked(file);
        CHECK(e.at(of("edgelock_job_exit_status", "metrics-killed")) == 128 + SIGKILL);
        CHECK(e.at(of("edgelock_job_acquired", "metrics-killed")) == 1);
        CHECK(e.at(of("edgelock_job_lost", "metrics-killed")) == 0);
    }
}

TEST_CASE("cli metrics: keys share a file, a key's new run replaces only its own samples",
          "[cli][metrics]") {
    redis_server srv;
    temp_dir dir;
    const std::string file = dir / "edgelock.prom";
    // A key with characters the format escapes, and the node's URL with a
    // password, which the file must not show.
    const std::string odd = "metrics \"odd\" \\ key";
    const std::string odd_escaped = "metrics \\\"odd\\\" \\\\ key";
    const std::string secret_url = redis_url(srv.port(), ":hunter2");
    REQUIRE(agent({"run", "--metrics-file", file, "-N", redis_url(srv), "metrics-a", "--", "true"})
                .status == 0);
    REQUIRE(agent({"run", "--metrics-file", file, "-N", redis_url(srv), odd, "--", "sh", "-c",
                   "exit 4"})
                .status == 4);
    REQUIRE(agent({"run", "--metrics-file", file, "-N", redis_url(srv), "metrics-a", "--", "sh",
                   "-c", "exit 3"})
                .status == 3);
    const exposition e = checked(file);
    check_families(e, "metrics-a");
    check_families(e, odd_escaped);
    CHECK(e.at(of("edgelock_job_exit_status", "metrics-a")) == 3);
    CHECK(e.at(of("edgelock_job_exit_status", odd_escaped)) == 4);
    // Nine families, two keys, one node: 18 samples, nothing left of the first run.
    CHECK(e.series.size() == 18);
    // Credentials never reach the file (the default user has no password
    // set: any is taken).
    const run_result r =
        agent({"run", "--metrics-file", file, "-N", secret_url, "metrics-a", "--", "true"});
    CHECK(r.status == 0);
    CHECK(read_file(file).find("hunter2") == std::string::npos);
    const exposition again = checked(file);
    CHECK(again.has(node_errors("metrics-a", redis_url(srv))));
    CHECK(again.at(of("edgelock_job_exit_status", "metrics-a")) == r.status);
}

TEST_CASE("cli metrics: agents of different keys ending at once keep every key", "[cli][metrics]") {
    redis_server srv;
    temp_dir dir;
    const std::string file = dir / "edgelock.prom";
    constexpr int agents = 6;
    std::vector<std::unique_ptr<agent_run>> runs;
    for (int i = 0; i < agents; ++i) {
        runs.push_back(
            std::make_unique<agent_run>(strings{"run", "--metrics-file", file, "-N", redis_url(srv),
                                                "metrics-many-" + std::to_string(i), "--", "true"},
                                        strings{}));
    }
    for (auto& a : runs) {
        const run_result r = a->finish(20.0);
        INFO(show(a->args, r));
        CHECK(r.status == 0);
    }
    const exposition e = checked(file);
    for (int i = 0; i < agents; ++i) {
        check_families(e, "metrics-many-" + std::to_string(i));
    }
}

TEST_CASE("cli metrics: a reader never sees the file half written", "[cli][metrics]") {
    redis_server srv;
    temp_dir dir;
    const std::string file = dir / "edgelock.prom";
    REQUIRE(agent({"run", "--metrics-file", file, "-N", redis_url(srv), "metrics-r0", "--", "true"})
                .status == 0);
    std::atomic<bool> stop{false};
    std::atomic<int> reads{0};
    std::string bad;
    std::thread reader([&] {
        while (!stop.load()) {
            const std::string text = read_file(file);
            const exposition e = parse_exposition(text);
            if (!e.ok || !e.has(of("edgelock_job_acquired", "metrics-r0"))) {
                bad = e.ok ? "a key missing:\n" + text : e.error + "\n" + text;
                return;
            }
            ++reads;
        }
    });
    int replaced = 0;
    for (int i = 0; i < 20; ++i) {
        // The file as it was, held open: a write in place would change what
        // it reads; a rename leaves it whole, and the path another file.
        const int old = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(old >= 0);
        const std::string before = read_file(file);
        struct stat st {};
        REQUIRE(::fstat(old, &st) == 0);
        const std::string key = "metrics-r" + std::to_string(1 + i % 3);
        const run_result r =
            agent({"run", "--metrics-file", file, "-N", redis_url(srv), key, "--", "true"});
        CHECK(r.status == 0);
        std::string kept;
        char buf[4096];
        for (ssize_t got = 0;
             (got = ::pread(old, buf, sizeof buf, static_cast<off_t>(kept.size()))) > 0;) {
            kept.append(buf, static_cast<std::size_t>(got));
        }
        ::close(old);
        CHECK(kept == before);
        replaced += inode_of(file) != st.st_ino ? 1 : 0;
    }
    stop = true;
    reader.join();
    INFO(bad);
    CHECK(bad.empty());
    CHECK(reads.load() > 20);
    CHECK(replaced == 20);
    const exposition e = checked(file);
    for (int i = 0; i < 4; ++i) {
        check_families(e, "metrics-r" + std::to_string(i));
    }
}

TEST_CASE("cli metrics: a file that cannot be written is said, the run's status unchanged",
          "[cli][metrics]") {
    redis_server srv;
    temp_dir dir;
    const std::string file = dir / "missing/edgelock.prom";
    const strings args{"run",          "--metrics-file",  file, "-N",
                       redis_url(srv), "metrics-nowrite", "--", "sh",
                       "-c",           "exit 5"};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == 5);
    CHECK(contains(r.err, "metrics file not written"));
    CHECK(contains(r.err, dir / "missing"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(file_exists(file));
}

TEST_CASE("cli metrics: a usage error writes no file", "[cli][metrics]") {
    temp_dir dir;
    const std::string file = dir / "edgelock.prom";
    const run_result r = agent({"run", "--metrics-file", file, "-N", "redis://127.0.0.1:1"});
    CHECK(r.status == exit_usage);
    CHECK_FALSE(file_exists(file));
}

TEST_CASE("cli metrics: promtool checks the files when the build has it", "[cli][metrics]") {
    const std::string promtool = EDGELOCK_TEST_PROMTOOL;
    if (promtool.empty()) {
        skip(
            "no promtool: configure with EDGELOCK_TEST_PROMTOOL=PATH "
            "(tests/tools/fetch_promtool.sh OUT_DIR puts one at OUT_DIR/promtool)");
        return;
    }
    if (::access(promtool.c_str(), X_OK) != 0) {
        const std::string why = "no promtool at " + promtool +
                                " (tests/tools/fetch_promtool.sh could not fetch it; it said why)";
        skip(why.c_str());
        return;
    }
    // promtool itself refuses what is wrong: a check that can fail.
    temp_dir dir;
    const std::string bad = dir / "bad.prom";
    REQUIRE(write_file(bad, "# TYPE m gauge\nm{key=\"a} 1\n"));
    process p({"/bin/sh", "-c", "\"$0\" check metrics < \"$1\"", promtool, bad}, {});
    CHECK(p.finish(30.0).status != 0);
    redis_server srv;
    const std::string file = dir / "edgelock.prom";
    REQUIRE(agent({"run", "--metrics-file", file, "-N", redis_url(srv), "metrics-promtool", "--",
                   "true"})
                .status == 0);
    checked(file);  // promtool's verdict included
}

TEST_CASE("cli metrics: a key's control bytes and bytes that are not UTF-8 are escaped",
          "[cli][metrics][escape]") {
    redis_server srv;
    temp_dir dir;
    const std::string file = dir / "edgelock.prom";
    // A label value must be UTF-8, and a raw \r or ESC is no text for the
    // collector or a person reading the file.
    const std::string odd = "metrics\rcr\x1b[2J\xff";
    const std::string odd_escaped = "metrics\\\\x0dcr\\\\x1b[2J\xef\xbf\xbd";
    REQUIRE(
        agent({"run", "--metrics-file", file, "-N", redis_url(srv), odd, "--", "true"}).status ==
        0);
    const std::string text = read_file(file);
    INFO(text);
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find('\xff') == std::string::npos);
    CHECK(text.find("{key=\"" + odd_escaped + "\"}") != std::string::npos);
    const exposition e = checked(file);
    check_families(e, odd_escaped);
}
