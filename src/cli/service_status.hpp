// The agent's state in a systemd unit's status line (`systemctl status`):
// "STATUS=..." datagrams to $NOTIFY_SOCKET, sd_notify(3)'s protocol written
// directly (no libsystemd), when the variable is set. A datagram the socket
// does not take at once is dropped: the loop that renews the lock and stops
// the job never waits on it. The variable stays in the command's
// environment, for a command that speaks to systemd itself.
#pragma once

namespace edgelock_cli {

// Reads $NOTIFY_SOCKET: a path, or "@name" in the abstract namespace.
// Anything else (unset, empty, too long, another address family) turns the
// status off.
void open_service_status();
// Whether a status line goes anywhere ($NOTIFY_SOCKET was usable).
bool service_status_wanted();
// Sends "STATUS=" and the formatted text (cut at 200 bytes); nothing when
// off or when the same text went last.
void service_status(const char* format, ...) __attribute__((format(printf, 1, 2)));
// The same, kept as what the status says while the lock is held and well:
// said again by service_status_holding() when renewals recover.
void service_status_holding_is(const char* format, ...) __attribute__((format(printf, 1, 2)));
void service_status_holding();

}  // namespace edgelock_cli
