// What the agent's commands share: the parsed options, the client and its
// lock's events, one turn of the poll loop, and the per-node reports
// (report.cpp, said with messages.hpp). One agent per process, so these are
// process-wide.
#pragma once

#include <initializer_list>
#include <string>

#include "edgelock/client.hpp"
#include "options.hpp"

namespace edgelock_cli {

extern options opt;
// The client: one connection per node, and as many extra ones for the
// masters a redis-cluster:// node's slots put the lock on (or an ASK).
constexpr std::uint8_t extra_connections = edgelock::lock_max_nodes;
extern edgelock::client<edgelock::lock_max_nodes, extra_connections> driver;

// What the lock's callback saw.
struct lock_watch {
    edgelock::lock_event last;
    bool lost = false;
    bool at_risk = false;        // a renew round missed its quorum since the last renewal
    edgelock::instant validity;  // of the last acquisition or renewal
};

extern lock_watch watch;

std::string text(edgelock::str_view v);
// Node i's URL as messages and status show it: without a user and password
// (stderr goes to logs that others read).
std::string node_shown(std::size_t i);

// One turn: waits for the client's fds (and the signal pipe when watched)
// until `until`, then lets the client handle what happened. Returns false
// when waiting failed; `signalled` says whether the signal pipe is readable.
bool turn(edgelock::instant until, bool watch_signals, bool& signalled);

// The event an ended operation of `l` came to: the outcome's, or the
// callback's last when it could not even start (no random bytes, say).
const edgelock::lock_event& ended_with(const edgelock::client_lock& l);

// What the agent says of its nodes (report.cpp). Every failing node's
// reason, one line each; how many nodes it named. With the lock's quorum,
// and whether the others' answers decided the try, a node not waited for
// says so.
int report_nodes(std::uint8_t quorum = 0, bool decided = false);
// What one try may spend on connecting and on each round at this ttl: the
// library's round allowance without a node_timeout.
edgelock::duration try_allowance(edgelock::duration ttl);
// Warnings about what a node's set-up found, once per node; replicas only
// once `acquired` (else they are among the reasons of a failure).
void warn_nodes(bool acquired);
// Exit 69, with the reasons.
int unavailable(const edgelock::client_lock& l);
// The exit status of an acquisition that ended in `ev` (busy or failed).
int not_acquired(const edgelock::client_lock& l, const edgelock::lock_event& ev);

// How long any one operation may take, all nodes and retries included.
edgelock::instant op_bound(edgelock::duration extra);

// Configures the client and attaches the lock; exit_ok or the exit status.
// With TLS, the kept sessions (--tls-session-cache) are read here, before
// the loop.
int setup(edgelock::client_lock& l);
// After the loop: says how the TLS handshakes went (-v) and writes the kept
// sessions back to --tls-session-cache when they changed.
void save_tls_sessions();

int run_command(edgelock::client_lock& l);
int acquire_command(edgelock::client_lock& l);
int renew_command(edgelock::client_lock& l);
int release_command(edgelock::client_lock& l);
int status_command(edgelock::client_lock& l);
int list_command();

}  // namespace edgelock_cli
