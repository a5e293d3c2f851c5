// The agent's command line: subcommand, options and operands, checked up
// front so that a usage error (exit 64) never touches the network.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgelock/time.hpp"
#include "settings.hpp"

namespace edgelock_cli {

// sysexits(3), as flock(1) and friends use them.
enum exit_code : int {
    exit_ok = 0,
    exit_conflict = 1,  // not acquired in time (or -E)
    exit_usage = 64,
    exit_unavailable = 69,  // no quorum of nodes reachable
    exit_software = 70,     // internal error
    exit_lost = 75,         // the lock was lost while the child ran
    exit_config = 78,       // --permits differs from the semaphore's limit on a node
};

enum class command { none, run, acquire, renew, release, status, list, config, help, version };

// --wait forever: a standby's wait, until the holder releases or dies (told
// by the server). A hundred years: every deadline stays exact arithmetic.
constexpr edgelock::duration wait_forever = edgelock::duration::seconds(100ULL * 365 * 24 * 3600);

struct options {
    command cmd = command::none;
    std::vector<std::string> nodes;  // URLs
    edgelock::duration ttl = edgelock::duration::seconds(30);
    edgelock::duration wait{};  // 0: one try; wait_forever
    bool nonblock = false;
    int conflict_exit = exit_conflict;
    bool fencing = false;
    unsigned permits = 0;              // run: a semaphore of this many permits; 0: a lock
    unsigned min_replicas = 0;         // WAIT for this many replicas after acquire and renew
    edgelock::duration renew_every{};  // 0: ttl / 3
    edgelock::duration grace = edgelock::duration::seconds(5);
    bool grace_given = false;       // set by the command line or the file, not the default
    edgelock::duration max_hold{};  // run: the job is stopped once held this long; 0: never
    std::string password;           // from password-file, password or $REDISCLI_AUTH
    std::string sentinel_password;  // from sentinel-password-file
    std::string password_file;      // read once every layer is in
    std::string sentinel_password_file;
    bool have_password = false;
    // TLS, with redis-cli's option names: --tls, --cacert, --cacertdir,
    // --cert, --key, --sni, --insecure. rediss:// and rediss-sentinel:// nodes use
    // TLS without --tls.
    bool tls = false;
    std::string cacert;
    std::string cacertdir;
    std::string cert;
    std::string tls_key;
    std::string sni;
    bool insecure = false;
    // --tls-session-cache FILE: TLS sessions kept between runs
    // (session_cache.hpp); "" when off (none, or no default).
    std::string tls_session_cache;
    bool tls_session_cache_default = false;  // the default path: its directory is made
    int verbosity = 1;                       // 0 quiet, 1 normal, 2 verbose
    // run, acquire: the holder record's label (default: the command's name,
    // or "acquire"); "" when not given.
    std::string label;
    bool json = false;  // status, list, config: JSON on stdout
    // run: the Prometheus text file written at the end of the run
    // (metrics_file.hpp); "" when off.
    std::string metrics_file;
    std::string key;                 // list: the pattern ("*" when none)
    std::string token;               // renew, release
    std::vector<std::string> child;  // run: COMMAND [ARG...]
    settings_shown shown;            // config: where each setting came from
};

// The configuration file read when neither --config nor $EDGELOCK_CONFIG
// names one; its absence is no error.
#ifndef EDGELOCK_DEFAULT_CONFIG
#define EDGELOCK_DEFAULT_CONFIG "/etc/edgelock.conf"
#endif

// Longest --label; the holder record (host, pid, label) stays within the
// library's lock_max_holder.
constexpr std::size_t max_label = 64;
bool label_ok(const std::string& v);

// Parses "250ms", "10s", "2m", "1h", or a bare number of seconds. Whole
// milliseconds only; false on anything else (empty, negative, overflow).
bool parse_duration(const std::string& text, edgelock::duration& out);

// Fills `out` from its layers (settings.hpp): defaults, the configuration
// file, the environment, argv. On a usage error returns false with a
// one-line message in `error`.
bool parse_command_line(int argc, char** argv, options& out, std::string& error);

const char* usage_text();

// edgelock config: the effective settings, one a line, and where each came
// from; secrets masked. Returns the exit status.
int config_command(const options& o);

// A node list (or one URL) with every URL's user and password removed
// (redis://user:pw@host -> redis://host), for the command's environment, the
// agent's messages, status and the metrics file. The library redacts it
// (edgelock/node_list.hpp), so a password holding ',' or '@' goes whole.
std::string without_credentials(const std::string& list);

// A node list (or one URL) for edgelock config and usage errors: every URL's
// password replaced by "****" (redis://user:****@host); the user name stays.
std::string mask_passwords(const std::string& list);

// True when the agent must speak TLS to some node: --tls, or a rediss:// or
// rediss-sentinel:// URL.
bool wants_tls(const options& o);

}  // namespace edgelock_cli
