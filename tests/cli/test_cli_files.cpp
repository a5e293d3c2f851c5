// The files the agent (root, from cron or systemd) writes and reads as data,
// in directories others may own: the metrics file, its lock and temporary,
// the password file, the configuration file. Links planted by the
// directory's owner are not followed, a FIFO or a device is refused without
// waiting on it, a password file others can read and a configuration file
// others can write are usage errors with the chmod to run. Every run is
// bounded (agent() kills it and fails the test past its timeout): a hang is
// a failure, never a stuck test.
#include <grp.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/config_helpers.hpp"
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

TEST_CASE("cli files: a password file others can open, or not a file, is a usage error",
          "[cli][files]") {
    temp_dir dir{"edgelock-files"};
    const std::string fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    struct row {
        const char* what;
        std::string path;
        std::string message;  // "" when accepted
    };
    const auto file = [&](const std::string& name, mode_t mode) {
        return conf(dir, name, "s3cret\n", mode);
    };
    const std::vector<row> rows = {
        {"0644", file("pw644", 0644), "has mode 0644: group or others have access (chmod 600 "},
        {"0640", file("pw640", 0640), "has mode 0640: group or others have access (chmod 600 "},
        {"0604", file("pw604", 0604), "has mode 0604: group or others have access (chmod 600 "},
        {"0620", file("pw620", 0620), "has mode 0620: group or others have access (chmod 600 "},
        {"a FIFO", fifo, "is not a regular file"},
        {"/dev/zero", "/dev/zero", "is not a regular file"},
        {"0600", file("pw600", 0600), ""},
        {"0400", file("pw400", 0400), ""},
    };
    for (const char* option : {"--password-file", "--sentinel-password-file"}) {
        for (const row& w : rows) {
            // config reads the password files as every command does, and
            // touches no node.
            const strings args{"config", option, w.path};
            const run_result r = agent(args, {}, 10.0);
            INFO(option << ", " << w.what << "\n" << show(args, r));
            if (w.message.empty()) {
                CHECK(r.status == 0);
                CHECK(r.err.empty());
            } else {
                CHECK(r.status == exit_usage);
                CHECK(one_line(r.err));
                CHECK(contains(r.err, "password file '" + w.path + "' " + w.message));
                if (w.path != fifo && w.path != "/dev/zero") {
                    CHECK(contains(r.err, "(chmod 600 " + w.path + ")"));
                }
            }
            CHECK_FALSE(contains(r.out + r.err, "s3cret"));
        }
    }
    // From the configuration file: the same refusal, naming the line.
    const std::string c = conf(dir, "edgelock.conf", "password-file = " + dir / "pw644" + "\n");
    const strings args{"config", "--config", c};
    const run_result r = agent(args, {}, 10.0);
    INFO(show(args, r));
    CHECK(r.status == exit_usage);
    CHECK(contains(r.err, c + ":1: password file '" + dir / "pw644" + "' has mode 0644"));
}

TEST_CASE("cli files: a configuration file others can write is refused, whatever it holds",
          "[cli][files]") {
    temp_dir dir{"edgelock-files"};
    struct row {
        mode_t mode;
        bool refused;
    };
    const std::vector<row> rows = {
        {0666, true},  {0646, true},  {0620, true},  {0602, true},
        {0644, false}, {0600, false}, {0444, false},
    };
    for (const row& w : rows) {
        char name[16];
        std::snprintf(name, sizeof name, "c%04o", static_cast<unsigned>(w.mode));
        const std::string path = conf(dir, name, "ttl = 5s\n", w.mode);
        const strings args{"config", "--config", path};
        const run_result r = agent(args, {}, 10.0);
        INFO(name << "\n" << show(args, r));
        if (w.refused) {
            CHECK(r.status == exit_usage);
            CHECK(r.err == "edgelock: " + path + ": writable by group or others (chmod go-w " +
                               path + ")\n");
            CHECK(r.out.empty());
        } else {
            CHECK(r.status == 0);
            CHECK(r.err.empty());
        }
    }
    // A run from it touches no node.
    const std::string path = conf(dir, "run.conf", "nodes = redis://127.0.0.1:1\n", 0666);
    const strings args{"run", "--config", path, "k", "--", "true"};
    const run_result r = agent(args, {}, 10.0);
    INFO(show(args, r));
    CHECK(r.status == exit_usage);
    CHECK(contains(r.err, "writable by group or others"));
}

#ifdef EDGELOCK_TEST_TLS
TEST_CASE("cli files: a FIFO as a TLS file is refused, never waited on", "[cli][files]") {
    temp_dir dir{"edgelock-files"};
    const std::string fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const std::string pem = conf(dir, "some.pem", "not read\n");
    const std::vector<strings> rows = {
        {"--cacert", fifo},
        {"--cert", fifo, "--key", pem},
        {"--cert", pem, "--key", fifo},
    };
    for (const strings& files : rows) {
        strings args{"acquire", "-N", "rediss://127.0.0.1:1"};
        args.insert(args.end(), files.begin(), files.end());
        args.push_back("k");
        const run_result r = agent(args, {}, 10.0);
        INFO(show(args, r));
        CHECK(r.status == exit_usage);
        CHECK(r.err == "edgelock: TLS: " + fifo + ": not a regular file\n");
    }
}
#endif
