// --tls-session-cache: the TLS sessions the agent keeps between runs, so that
// a run's handshake with a node the last run reached is an abbreviated one
// (one round trip instead of two, no certificate on the wire). The file is
// read before the poll loop starts and written after it ends: nothing in
// the loop waits on it.
//
// It holds secrets (a session's master secret resumes it), so it is private:
// created 0600 (the default directory 0700), opened without following a
// symbolic link, and used only when it is a regular file owned by the
// effective user with no group or other permission bits. Anything else is
// ignored, with one warning, and left as it is; so is a file that is not a
// session cache (a wrong path must not cost the file it names). A cache
// that is damaged or cut short is not used, and rewritten. Writes go to a
// temporary file in the same directory, renamed over the cache.
//
// Format 1, numbers big-endian:
//   "edgelock-tls-sessions 1\n"
//   u8 count (at most session_cache_max)
//   count times: u64 saved (Unix time, s), u16 port, u8 host size, host,
//                u8 server name size, server name, u16 size, session bytes
//   u64 FNV-1a of all the bytes before it
// Entries are the newest first; keyed by host, port and server name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace edgelock_cli {

// Peers kept at most; the oldest saved goes first.
constexpr std::size_t session_cache_max = 16;

struct cached_session {
    std::string host;  // as the node, sentinel or master was named
    std::uint16_t port = 0;
    std::string server_name;  // sent and checked (--sni, else host)
    std::uint64_t saved = 0;  // when a run last made or resumed it
    std::string data;         // the TLS transport's bytes (import_session())

    bool same_peer(const cached_session& o) const {
        return port == o.port && host == o.host && server_name == o.server_name;
    }
};

// The file's bytes for these entries (at most session_cache_max of them).
std::string encode_sessions(const std::vector<cached_session>& entries);

enum class cache_read {
    absent,      // no such file yet
    loaded,      // entries read (maybe none)
    unsafe,      // a link, not a regular file, another owner, open to others: left alone
    unreadable,  // it could not be opened or read: left alone
    foreign,     // not a session cache: left alone
    damaged,     // a session cache, cut short or altered: rewritten
};

// Reads the cache at `path` into `entries`; `raw` gets the bytes read (to
// tell whether a rewrite changes anything), `why` the reason for anything
// but absent and loaded. With `own_dir` (the default cache's directory,
// which the agent makes), a directory that is a symbolic link, not owned by
// this user or writable by others makes the cache unsafe.
cache_read read_session_cache(const std::string& path, bool own_dir,
                              std::vector<cached_session>& entries, std::string& raw,
                              std::string& why);

// Replaces the cache at `path` with `bytes` (a temporary file under a
// random name, renamed over it). With `make_dir`, its directory is made
// (0700) when missing, and refused as read_session_cache's `own_dir` says.
// False, with `why`, when it could not.
bool write_session_cache(const std::string& path, const std::string& bytes, bool make_dir,
                         std::string& why);

// $XDG_RUNTIME_DIR/edgelock/tls-sessions, or "" when XDG_RUNTIME_DIR is
// unset or not an absolute path.
std::string default_session_cache();

}  // namespace edgelock_cli
