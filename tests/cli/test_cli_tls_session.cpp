// The agent's TLS sessions kept between runs (--tls-session-cache), against a
// real TLS redis-server behind the fault proxy, whose byte counts show what a
// run cost on the wire: a second run resumes the first's session (its
// handshake carries no certificate, and -v says so), the file is private
// (0600, its default directory 0700), a file open to others, owned by
// another user, or reached through a symbolic link is ignored with a warning
// and left as it is, a server restarted with new keys costs one full
// handshake and the file is updated, a damaged file is ignored and
// rewritten, one that is not a session cache is left alone, and a node is
// never offered another node's session; the file keeps 16 nodes' sessions.
// Built only with the TLS transport.
#include <catch2/catch.hpp>

#ifdef EDGELOCK_TEST_TLS

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "integration/redis_server.hpp"
#include "integration/tls_fixture.hpp"
#include "tools/files.hpp"
#include "tools/net.hpp"
#include "tools/proc.hpp"
#include "tools/skip.hpp"

#ifndef EDGELOCK_FAULT_PROXY_PATH
#error "build with -DEDGELOCK_FAULT_PROXY_PATH=\"/path/to/fault_proxy\""
#endif

using namespace edgelock_test;

namespace {

// The fault proxy in front of a port, asked for its byte counts.
class counting_proxy {
public:
    explicit counting_proxy(std::uint16_t target)
        : proc_({EDGELOCK_FAULT_PROXY_PATH, "--target", "127.0.0.1:" + std::to_string(target),
                 "--max-seconds", "300"},
                {}) {
        const std::string line = proc_.read_line(5.0);
        unsigned listen = 0;
        unsigned control = 0;
        REQUIRE(std::sscanf(line.c_str(), "%u %u", &listen, &control) == 2);
        port_ = static_cast<std::uint16_t>(listen);
        control_ = connect_loopback(static_cast<std::uint16_t>(control));
        REQUIRE(control_ >= 0);
    }
    ~counting_proxy() {
        if (control_ >= 0) {
            ::close(control_);
        }
    }
    counting_proxy(const counting_proxy&) = delete;
    counting_proxy& operator=(const counting_proxy&) = delete;

    std::uint16_t port() const { return port_; }

    // Bytes delivered server to client so far (status: bytes_down=N).
    long long bytes_down() {
        const std::string cmd = "status\n";
        REQUIRE(::write(control_, cmd.data(), cmd.size()) == static_cast<ssize_t>(cmd.size()));
        const std::string reply = read_line(control_, 2000);
        const std::size_t at = reply.find("bytes_down=");
        INFO(reply);
        REQUIRE(at != std::string::npos);
        return std::atoll(reply.c_str() + at + 11);
    }

private:
    process proc_;
    std::uint16_t port_ = 0;
    int control_ = -1;
};

// The -v line on the run's handshakes.
struct handshakes {
    long done = -1;
    long offered = -1;
    long resumed = -1;
};

handshakes handshakes_in(const std::string& err) {
    handshakes h;
    for (const std::string& line : lines_of(err)) {
        const std::size_t at = line.find("TLS: ");
        if (at != std::string::npos) {
            std::sscanf(line.c_str() + at,
                        "TLS: %ld handshakes, %ld with a kept session offered, %ld resumed",
                        &h.done, &h.offered, &h.resumed);
        }
    }
    return h;
}

// Lines of stderr that are warnings.
// How many names a directory holds, . and .. aside.
int entries_in(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    REQUIRE(d != nullptr);
    int n = 0;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        n += name != "." && name != ".." ? 1 : 0;
    }
    ::closedir(d);
    return n;
}

long warnings_in(const std::string& err) {
    long n = 0;
    for (const std::string& line : lines_of(err)) {
        n += contains(line, "warning:") ? 1 : 0;
    }
    return n;
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

// A TLS server behind a counting proxy, and a cache file's place.
struct tls_node {
    const tls_certs& certs;
    redis_server srv;
    counting_proxy proxy;
    temp_dir dir;
    std::string cache = dir / "sessions";

    explicit tls_node(const tls_certs& c)
        : certs(c), srv(c.server_files(), {}), proxy(srv.port()) {}

    std::string url() const { return "rediss://localhost:" + std::to_string(proxy.port()); }

    // `run -v` of `true` through the proxy, with `options`.
    strings args(const strings& options, const std::string& key = "cli-tls-session") const {
        strings a{"run", "-v", "--cacert", certs.ca_file(), "-N", url()};
        a.insert(a.end(), options.begin(), options.end());
        a.push_back(key);
        a.push_back("--");
        a.push_back("true");
        return a;
    }
};

// One run: its result, its handshakes, and what it cost downstream.
struct measured {
    run_result r;
    handshakes h;
    long long down = 0;
};

measured run_measured(tls_node& n, const strings& args, const strings& env = {},
                      long handshakes_made = 1) {
    const long long before = n.proxy.bytes_down();
    measured m;
    m.r = agent(args, env);
    m.h = handshakes_in(m.r.err);
    m.down = n.proxy.bytes_down() - before;
    INFO(show(args, m.r));
    CHECK(m.r.status == 0);
    CHECK(m.h.done == handshakes_made);
    return m;
}

}  // namespace

TEST_CASE("cli tls session: a second run resumes the first's session, without a certificate",
          "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    const strings args = n.args({"--tls-session-cache", n.cache});
    const measured first = run_measured(n, args);
    CHECK(first.h.offered == 0);
    CHECK(first.h.resumed == 0);
    REQUIRE(file_exists(n.cache));
    CHECK(mode_of(n.cache) == 0600);
    const std::string kept = read_file(n.cache);
    CHECK(kept.compare(0, 24, "edgelock-tls-sessions 1\n") == 0);

    const measured second = run_measured(n, args);
    INFO("bytes down: full handshake run " << first.down << ", resumed run " << second.down);
    CHECK(second.h.offered == 1);
    CHECK(second.h.resumed == 1);
    // The server's certificate (and key exchange) stayed home.
    CHECK(second.down + 400 < first.down);
    CHECK(warnings_in(second.r.err) == 0);

    // Without the cache: a full handshake again, as many bytes as the first.
    const measured without = run_measured(n, n.args({"--tls-session-cache", "none"}));
    CHECK(without.h.offered == 0);
    CHECK(without.down > second.down + 400);
}

TEST_CASE("cli tls session: the default cache is under $XDG_RUNTIME_DIR and none turns it off",
          "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    const std::string runtime = n.dir / "runtime";
    REQUIRE(::mkdir(runtime.c_str(), 0700) == 0);
    const strings env{"XDG_RUNTIME_DIR=" + runtime};
    const std::string cache = runtime + "/edgelock/tls-sessions";

    const measured first = run_measured(n, n.args({}), env);
    CHECK(first.h.offered == 0);
    REQUIRE(file_exists(cache));
    CHECK(mode_of(runtime + "/edgelock") == 0700);
    CHECK(mode_of(cache) == 0600);
    const measured second = run_measured(n, n.args({}), env);
    CHECK(second.h.resumed == 1);

    // none: nothing offered, and the file is not touched.
    const std::string before = read_file(cache);
    const measured off = run_measured(n, n.args({"--tls-session-cache", "none"}), env);
    CHECK(off.h.offered == 0);
    CHECK(read_file(cache) == before);

    // Without XDG_RUNTIME_DIR there is no default: never offered.
    const measured bare = run_measured(n, n.args({}));
    CHECK(bare.h.offered == 0);
    const measured again = run_measured(n, n.args({}));
    CHECK(again.h.offered == 0);
}

TEST_CASE("cli tls session: a default directory that is a link, or not ours, is not used",
          "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    // Another user's $XDG_RUNTIME_DIR (su without -, sudo -E): its owner
    // made edgelock a link to a directory of their choosing.
    const std::string runtime = n.dir / "runtime";
    const std::string elsewhere = n.dir / "elsewhere";
    REQUIRE(::mkdir(runtime.c_str(), 0700) == 0);
    REQUIRE(::mkdir(elsewhere.c_str(), 0700) == 0);
    run_measured(n, n.args({"--tls-session-cache", elsewhere + "/tls-sessions"}));
    const std::string before = read_file(elsewhere + "/tls-sessions");
    REQUIRE_FALSE(before.empty());
    REQUIRE(::symlink(elsewhere.c_str(), (runtime + "/edgelock").c_str()) == 0);
    const strings env{"XDG_RUNTIME_DIR=" + runtime};

    const measured linked = run_measured(n, n.args({}), env);
    INFO(show({}, linked.r));
    CHECK(linked.h.offered == 0);
    CHECK(warnings_in(linked.r.err) == 1);  // not read, so not written either
    CHECK(contains(linked.r.err, runtime + "/edgelock: a symbolic link"));
    CHECK(read_file(elsewhere + "/tls-sessions") == before);
    CHECK(entries_in(elsewhere) == 1);  // no temporary left there

    if (::geteuid() != 0) {
        skip("giving the directory to another user (chown) needs root");
        return;
    }
    // A real directory, but another user's.
    REQUIRE(::unlink((runtime + "/edgelock").c_str()) == 0);
    REQUIRE(::rename(elsewhere.c_str(), (runtime + "/edgelock").c_str()) == 0);
    REQUIRE(::chown((runtime + "/edgelock").c_str(), 65534, 65534) == 0);
    const measured foreign = run_measured(n, n.args({}), env);
    INFO(show({}, foreign.r));
    CHECK(foreign.h.offered == 0);
    CHECK(contains(foreign.r.err, "owned by uid 65534"));
    CHECK(read_file(runtime + "/edgelock/tls-sessions") == before);
}

TEST_CASE("cli tls session: a cache others can open is ignored with a warning, left as it is",
          "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    const strings args = n.args({"--tls-session-cache", n.cache});
    run_measured(n, args);
    REQUIRE(::chmod(n.cache.c_str(), 0644) == 0);
    const std::string before = read_file(n.cache);

    const measured r = run_measured(n, args);
    INFO(show(args, r.r));
    CHECK(r.h.offered == 0);
    CHECK(warnings_in(r.r.err) == 1);
    CHECK(contains(r.r.err, "mode 0644"));
    CHECK(mode_of(n.cache) == 0644);
    CHECK(read_file(n.cache) == before);
}

TEST_CASE("cli tls session: a cache owned by another user is ignored with a warning",
          "[cli][tls][resume]") {
    if (::geteuid() != 0) {
        skip("giving the cache file to another user (chown) needs root");
        return;
    }
    tls_certs certs;
    tls_node n(certs);
    const strings args = n.args({"--tls-session-cache", n.cache});
    run_measured(n, args);
    REQUIRE(::chown(n.cache.c_str(), 65534, 65534) == 0);  // nobody
    const std::string before = read_file(n.cache);

    const measured r = run_measured(n, args);
    INFO(show(args, r.r));
    CHECK(r.h.offered == 0);
    CHECK(warnings_in(r.r.err) == 1);
    CHECK(contains(r.r.err, "owned by uid 65534"));
    struct stat st {};
    REQUIRE(::stat(n.cache.c_str(), &st) == 0);
    CHECK(st.st_uid == 65534);
    CHECK(read_file(n.cache) == before);
}

TEST_CASE("cli tls session: a symbolic link to a cache is not followed", "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    const std::string real = n.dir / "real";
    run_measured(n, n.args({"--tls-session-cache", real}));
    REQUIRE(::symlink(real.c_str(), n.cache.c_str()) == 0);
    const std::string before = read_file(real);

    const measured r = run_measured(n, n.args({"--tls-session-cache", n.cache}));
    INFO(show({}, r.r));
    CHECK(r.h.offered == 0);
    CHECK(warnings_in(r.r.err) == 1);
    CHECK(contains(r.r.err, "symbolic link"));
    CHECK(read_file(real) == before);
    struct stat st {};
    REQUIRE(::lstat(n.cache.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
}

TEST_CASE("cli tls session: a server restarted with new keys: a full handshake, the file updated",
          "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    const strings args = n.args({"--tls-session-cache", n.cache});
    const measured first = run_measured(n, args);
    const std::string before = read_file(n.cache);

    n.srv.kill();
    n.srv.restart();
    const measured refused = run_measured(n, args);
    CHECK(refused.h.offered == 1);
    CHECK(refused.h.resumed == 0);
    CHECK(warnings_in(refused.r.err) == 0);
    CHECK(refused.down + 400 > first.down);  // the certificate came again
    const std::string after = read_file(n.cache);
    CHECK(after != before);
    CHECK(mode_of(n.cache) == 0600);

    const measured resumed = run_measured(n, args);
    CHECK(resumed.h.resumed == 1);
}

TEST_CASE(
    "cli tls session: a damaged cache is ignored and rewritten and another file is left alone",
    "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    const strings args = n.args({"--tls-session-cache", n.cache});
    run_measured(n, args);
    const std::string good = read_file(n.cache);
    REQUIRE(good.size() > 100);

    SECTION("cut short") {
        REQUIRE(write_file(n.cache, good.substr(0, good.size() / 2)));
    }
    SECTION("a byte changed") {
        std::string bad = good;
        bad[good.size() / 2] = static_cast<char>(bad[good.size() / 2] ^ 0x20);
        REQUIRE(write_file(n.cache, bad));
    }
    SECTION("only the first line") {
        REQUIRE(write_file(n.cache, "edgelock-tls-sessions 1\n"));
    }
    REQUIRE(::chmod(n.cache.c_str(), 0600) == 0);
    const measured r = run_measured(n, args);
    INFO(show(args, r.r));
    CHECK(r.h.offered == 0);
    CHECK(warnings_in(r.r.err) == 1);
    CHECK(contains(r.r.err, "damaged"));
    // Rewritten with this run's session: the next run resumes.
    const measured next = run_measured(n, args);
    CHECK(next.h.resumed == 1);
    CHECK(warnings_in(next.r.err) == 0);
}

TEST_CASE("cli tls session: a file that is not a session cache is ignored and left alone",
          "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    const std::string text = "-----BEGIN PRIVATE KEY-----\nnot to be overwritten\n";
    REQUIRE(write_file(n.cache, text));
    REQUIRE(::chmod(n.cache.c_str(), 0600) == 0);
    const strings args = n.args({"--tls-session-cache", n.cache});
    const measured r = run_measured(n, args);
    INFO(show(args, r.r));
    CHECK(warnings_in(r.r.err) == 1);
    CHECK(contains(r.r.err, "not an edgelock TLS session cache"));
    CHECK(read_file(n.cache) == text);
    // Nor a file of random bytes.
    std::string noise;
    for (int i = 0; i < 3000; ++i) {
        noise.push_back(static_cast<char>((i * 7919) & 0xff));
    }
    REQUIRE(write_file(n.cache, noise));
    const measured again = run_measured(n, args);
    CHECK(warnings_in(again.r.err) == 1);
    CHECK(read_file(n.cache) == noise);
}

TEST_CASE("cli tls session: one file, two nodes: each is offered only its own session",
          "[cli][tls][resume]") {
    tls_certs certs;
    tls_node a(certs);
    tls_node b(certs);
    const std::string cache = a.dir / "shared";
    const strings to_a = a.args({"--tls-session-cache", cache});
    const strings to_b = b.args({"--tls-session-cache", cache});
    run_measured(a, to_a);
    const measured first_b = run_measured(b, to_b);
    CHECK(first_b.h.offered == 0);  // a's session is not for b
    const measured again_a = run_measured(a, to_a);
    CHECK(again_a.h.resumed == 1);

    // Both nodes in one run (a Redlock of two): each resumes its own.
    const strings both{"run",
                       "-v",
                       "--cacert",
                       certs.ca_file(),
                       "--tls-session-cache",
                       cache,
                       "-N",
                       a.url() + "," + b.url(),
                       "cli-tls-session-both",
                       "--",
                       "true"};
    const measured r = run_measured(a, both, {}, 2);
    CHECK(r.h.offered == 2);
    CHECK(r.h.resumed == 2);
}

TEST_CASE("cli tls session: the file keeps the 16 newest nodes' sessions", "[cli][tls][resume]") {
    tls_certs certs;
    tls_node n(certs);
    // 17 peers: proxies in front of the one server, each its own port.
    std::vector<std::unique_ptr<counting_proxy>> peers;
    for (int i = 0; i < 17; ++i) {
        peers.push_back(std::make_unique<counting_proxy>(n.srv.port()));
    }
    auto run_to = [&](std::size_t i) {
        const strings args{"run",
                           "-v",
                           "--cacert",
                           certs.ca_file(),
                           "--tls-session-cache",
                           n.cache,
                           "-N",
                           "rediss://localhost:" + std::to_string(peers[i]->port()),
                           "cli-tls-session-many",
                           "--",
                           "true"};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        return handshakes_in(r.err);
    };
    for (std::size_t i = 0; i < peers.size(); ++i) {
        CHECK(run_to(i).offered == 0);
    }
    const std::string file = read_file(n.cache);
    REQUIRE(file.size() > 25);
    CHECK(static_cast<unsigned char>(file[24]) == 16);  // the count after the first line
    CHECK(run_to(16).resumed == 1);
    CHECK(run_to(1).resumed == 1);
    CHECK(run_to(0).offered == 0);  // the oldest went
}

TEST_CASE("cli tls session: a run that made no TLS session writes no file", "[cli][tls][resume]") {
    temp_dir dir;
    const std::string cache = dir / "sessions";
    const strings args{"acquire",
                       "--tls",
                       "--tls-session-cache",
                       cache,
                       "-t",
                       "1s",
                       "-N",
                       "redis://127.0.0.1:" + std::to_string(free_port()),
                       "k"};
    const run_result r = agent(args);
    INFO(show(args, r));
    CHECK(r.status == exit_unavailable);
    CHECK_FALSE(file_exists(cache));
    CHECK_FALSE(contains(r.err, "warning"));
}

TEST_CASE("cli tls session: the option needs TLS and a value", "[cli][tls][resume]") {
    const run_result no_tls =
        agent({"acquire", "--tls-session-cache", "/tmp/x", "-N", "redis://127.0.0.1:1", "k"});
    INFO(show({}, no_tls));
    CHECK(no_tls.status == exit_usage);
    CHECK(one_line(no_tls.err));
    const run_result empty =
        agent({"acquire", "--tls", "--tls-session-cache", "", "-N", "redis://127.0.0.1:1", "k"});
    INFO(show({}, empty));
    CHECK(empty.status == exit_usage);
    CHECK(contains(empty.err, "--tls-session-cache"));
}

#endif  // EDGELOCK_TEST_TLS
