// Test fixture: a real redis-server on a free loopback port and a unix socket,
// started for one test and always stopped (destructor; and the kernel kills it
// if the test process dies first, via PR_SET_PDEATHSIG).
//
//   edgelock_test::redis_server srv;          // starts, waits for PING
//   edgelock_test::redis_client c(srv.port());
//   REQUIRE(c.command({"SET", "k", "v"}).text == "OK");
//
// Servers keep nothing on disk unless asked (--save "" --appendonly no) and
// work in a private temporary directory removed on stop.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tools/files.hpp"
#include "tools/url.hpp"

namespace edgelock_test {

// What a TLS server needs (PEM files; see tls_fixture.hpp for making them).
struct redis_tls_files {
    std::string cert_file;
    std::string key_file;
    std::string ca_file;        // the CAs it trusts for client certificates
    bool auth_clients = false;  // --tls-auth-clients yes: a client certificate is required
};

class redis_server {
public:
    // extra_args are appended to the command line (e.g. {"--requirepass", "pw"}).
    explicit redis_server(std::vector<std::string> extra_args = {});
    // TLS only on port() (--tls-port, plain TCP off); the unix socket stays
    // plain, so a redis_client(unix_path()) can look inside.
    redis_server(const redis_tls_files& tls, std::vector<std::string> extra_args);
    // A sentinel (redis-server --sentinel) with these configuration lines,
    // e.g. {"sentinel monitor m 127.0.0.1 6379 2"}; it answers on port().
    static redis_server sentinel(const std::vector<std::string>& config);
    // The same over TLS only (--tls-port on port(), plain TCP off; add
    // {"--tls-replication", "yes"} for TLS to the servers and sentinels it
    // talks to); the unix socket stays plain.
    static redis_server sentinel(const redis_tls_files& tls, const std::vector<std::string>& config,
                                 std::vector<std::string> extra_args = {});
    ~redis_server();
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    std::uint16_t port() const { return port_; }
    const std::string& unix_path() const { return unix_path_; }
    bool tls() const { return tls_; }
    pid_t pid() const { return pid_; }

    // SIGKILL and wait; the port stays reserved for restart().
    void kill();
    // SIGSTOP / SIGCONT: a server that accepts connections but never answers.
    void pause();
    void resume();
    // Starts again on the same port and socket (after kill()).
    void restart();

private:
    redis_server(std::vector<std::string> extra_args, const redis_tls_files* tls,
                 std::vector<std::string> sentinel_config = {});
    void start();
    void stop();

    std::vector<std::string> extra_args_;
    std::vector<std::string> sentinel_config_;  // non-empty: a sentinel
    bool tls_ = false;
    redis_tls_files tls_files_;
    temp_dir dir_{"edgelock-redis"};
    std::string unix_path_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

// The server's URL: redis://[userinfo@]127.0.0.1:PORT[path].
inline std::string redis_url(const redis_server& s, const std::string& userinfo = "",
                             const std::string& path = "") {
    return redis_url(s.port(), userinfo, path);
}

// A reply owned by the test: the decoded node tree copied out of the buffer.
struct reply {
    char type = 0;  // the RESP type byte: '+', '-', ':', '$', '*', '%', '_', ...
    std::string text;
    long long integer = 0;
    std::vector<reply> elements;  // maps: key, value, key, value...
};

// A blocking client for tests, on the project's own codec. Every call has a
// deadline (seconds); a test never hangs on a silent server.
class redis_client {
public:
    explicit redis_client(std::uint16_t port, double timeout_s = 5.0);
    explicit redis_client(const std::string& unix_path, double timeout_s = 5.0);
    ~redis_client();
    redis_client(const redis_client&) = delete;
    redis_client& operator=(const redis_client&) = delete;

    reply command(const std::vector<std::string>& args);
    void send_raw(const std::string& bytes);
    reply read_reply();
    // The bytes of the next whole reply, undecoded (for feeding a machine).
    std::string read_reply_bytes();

private:
    int fd_ = -1;
    double timeout_s_;
    std::vector<char> buf_;
    std::size_t start_ = 0;
};

// A test's client of the server: on its TCP port, or on its unix socket when
// the port speaks TLS only.
inline std::unique_ptr<redis_client> inside(const redis_server& s, double timeout_s = 5.0) {
    return std::unique_ptr<redis_client>(s.tls() ? new redis_client(s.unix_path(), timeout_s)
                                                 : new redis_client(s.port(), timeout_s));
}

// How many times the server ran `command` ("set", "evalsha",
// "client|caching") since its start or CONFIG RESETSTAT, from INFO
// commandstats; commands run by scripts count too. 0 when it never did.
inline long long command_calls(redis_client& c, const std::string& command) {
    const std::string text = c.command({"INFO", "commandstats"}).text;
    const std::string field = "cmdstat_" + command + ":calls=";
    const std::size_t at = text.find(field);
    return at == std::string::npos ? 0 : std::atoll(text.c_str() + at + field.size());
}

// Error replies of one kind (NOSCRIPT, NOPERM) since the last CONFIG
// RESETSTAT, from INFO errorstats.
inline long long error_calls(redis_client& c, const std::string& kind) {
    const std::string text = c.command({"INFO", "errorstats"}).text;
    const std::string field = "errorstat_" + kind + ":count=";
    const std::size_t at = text.find(field);
    return at == std::string::npos ? 0 : std::atoll(text.c_str() + at + field.size());
}

}  // namespace edgelock_test
