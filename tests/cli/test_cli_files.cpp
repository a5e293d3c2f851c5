// The files the agent (root, from cron or systemd) writes and reads as data,
// in directories others may own: the metrics file, its lock and temporary.
// Links planted by the directory's owner are not followed, a FIFO or a
// directory is refused without waiting on it. Every run is bounded (agent()
// kills it and fails the test past its timeout): a hang is a failure, never
// a stuck test.
#include <grp.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "integration/redis_server.hpp"
#include "tools/files.hpp"
#include "tools/skip.hpp"

using namespace edgelock_test;

namespace {

constexpr uid_t nobody = 65534;

long read_number(const char* path) {
    std::ifstream f(path);
    long n = -1;
    f >> n;
    return f ? n : -1;
}

// Makes each of `links` a symbolic link to `target`, as the user nobody
// (a forked child that drops root), as the owner of a textfile directory
// would. False when it could not.
bool plant_as_nobody(const std::string& target, const std::vector<std::string>& links) {
    const pid_t pid = ::fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        if (::setgroups(0, nullptr) != 0 || ::setgid(nobody) != 0 || ::setuid(nobody) != 0) {
            ::_exit(2);
        }
        for (const std::string& l : links) {
            if (::symlink(target.c_str(), l.c_str()) != 0) {
                ::_exit(1);
            }
        }
        ::_exit(0);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A directory owned by nobody, as node_exporter's textfile directory is
// owned by its user: protected_symlinks does not apply in it.
struct foreign_dir {
    temp_dir dir{"edgelock-files"};
    foreign_dir() {
        REQUIRE(::chown(dir.path.c_str(), nobody, nobody) == 0);
        REQUIRE(::chmod(dir.path.c_str(), 0755) == 0);
    }
};

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("cli files: links planted at the metrics temporary's names are not followed",
          "[cli][files]") {
    if (::geteuid() != 0) {
        skip("planting links as another user (setuid nobody) needs root");
        return;
    }
    const long last = read_number("/proc/sys/kernel/ns_last_pid");
    const long pid_max = read_number("/proc/sys/kernel/pid_max");
    if (last < 0 || pid_max <= 0) {
        skip("no /proc/sys/kernel/ns_last_pid here to aim the links at the next pids");
        return;
    }
    redis_server srv;
    foreign_dir d;
    temp_dir victim_dir{"edgelock-victim"};
    const std::string victim = victim_dir / "shadow";
    REQUIRE(write_file(victim, "root only\n"));
    REQUIRE(::chmod(victim.c_str(), 0600) == 0);
    const std::string file = d.dir / "edgelock.prom";
    // The next 2,000 pids: the agent's is among them.
    std::vector<std::string> links;
    for (long i = 1; i <= 2000; ++i) {
        const long pid = (last + i) % pid_max;
        links.push_back(file + ".tmp." + std::to_string(pid));
    }
    REQUIRE(plant_as_nobody(victim, links));

    const strings args{"run",          "--metrics-file", file, "-N",
                       redis_url(srv), "files-spray",    "--", "true"};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(read_file(victim) == "root only\n");
    CHECK(mode_of(victim) == 0600);
    struct stat st {};
    REQUIRE(::lstat(file.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK(contains(read_file(file), "edgelock_job_exit_status{key=\"files-spray\"} 0"));
}

TEST_CASE("cli files: a link planted at the metrics lock's name is not followed", "[cli][files]") {
    if (::geteuid() != 0) {
        skip("planting links as another user (setuid nobody) needs root");
        return;
    }
    redis_server srv;
    foreign_dir d;
    temp_dir victim_dir{"edgelock-victim"};
    const std::string created = victim_dir / "created-by-root";
    const std::string file = d.dir / "edgelock.prom";
    REQUIRE(plant_as_nobody(created, {file + ".lock"}));

    const strings args{"run",          "--metrics-file",  file, "-N",
                       redis_url(srv), "files-lock-link", "--", "sh",
                       "-c",           "exit 3"};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == 3);  // the job's status, whatever happens to the metrics
    CHECK_FALSE(file_exists(created));
    CHECK(contains(r.err, "metrics file not written"));
    CHECK(contains(r.err, file + ".lock: a symbolic link: not followed"));
    CHECK(one_line(r.err));
}

TEST_CASE("cli files: a metrics path that is not a regular file is refused, never waited on",
          "[cli][files]") {
    redis_server srv;
    struct row {
        const char* what;
        std::string name;  // made a FIFO or a directory
        bool fifo;
    };
    const std::vector<row> rows = {
        {"a FIFO at the file", "edgelock.prom", true},
        {"a FIFO at its lock", "edgelock.prom.lock", true},
        {"a directory at the file", "edgelock.prom", false},
    };
    for (const row& w : rows) {
        temp_dir dir{"edgelock-files"};
        const std::string file = dir / "edgelock.prom";
        const std::string odd = dir / w.name;
        REQUIRE((w.fifo ? ::mkfifo(odd.c_str(), 0644) : ::mkdir(odd.c_str(), 0755)) == 0);
        const strings args{"run",          "--metrics-file", file, "-N",
                           redis_url(srv), "files-fifo",     "--", "true"};
        const run_result r = agent(args, {}, 10.0);
        INFO(w.what << "\n" << show(args, r));
        CHECK(r.status == 0);
        CHECK(contains(r.err, "metrics file not written: " + odd + ": not a regular file"));
        CHECK(one_line(r.err));
        struct stat st {};
        REQUIRE(::lstat(odd.c_str(), &st) == 0);
        CHECK((w.fifo ? S_ISFIFO(st.st_mode) : S_ISDIR(st.st_mode)));
    }
}
