// The port: everything edgelock needs from the platform, in one header.
//
// The core (codec, lock state machine) never includes this file; it is given
// time and random bytes as arguments. The driver calls these functions, and a
// port implementation defines them. Link exactly one: edgelock::port_posix
// (port/posix) on Linux and other POSIX systems, or your own on an RTOS, the
// way lwIP links a sys_arch.
//
// Sockets are plain int handles (POSIX and lwIP alike). The calls do not wait
// for the network: connect() starts a connection, send()/recv() move what they
// can and say would_block otherwise, and wait() is the one place the driver
// sleeps. The exception is name resolution: connect() to a host *name* asks
// the system resolver, which blocks (for seconds when DNS is unreachable).
// Give nodes numeric addresses where that matters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"

namespace edgelock {
namespace port {

// The monotonic clock. Never goes back; its origin is arbitrary, so only
// differences mean anything. It must count time spent suspended: a lock's
// keys expire on the server while the device sleeps, and a clock that stood
// still would report a lock as held long after it was gone. The POSIX port
// uses CLOCK_BOOTTIME where it exists (Linux), CLOCK_MONOTONIC elsewhere
// (whether that counts suspend depends on the platform: check yours).
instant now() noexcept;

// Fills buf with size bytes from the platform's CSPRNG. Returns false, with
// buf in an unspecified state, when no secure randomness could be had; callers
// must then fail rather than fall back to a weak source.
bool random_bytes(void* buf, std::size_t size) noexcept;

// --- stream sockets -------------------------------------------------------------

enum class net_status : std::uint8_t {
    ok,              // done (send/recv: size bytes moved; connect: connected)
    in_progress,     // connect: wait until writable, then call connect_finish()
    would_block,     // send/recv: nothing moved now; wait for readiness
    closed,          // recv: the peer closed its side (end of stream)
    refused,         // connect: nobody listens there (ECONNREFUSED, ENOENT)
    unreachable,     // connect: no route, network down, address unusable
    timed_out,       // connect: the port's own timeout fired
    reset,           // send/recv: the connection was reset or broke (EPIPE)
    no_address,      // connect: the host has no (further) address
    resolve_failed,  // connect: name resolution failed (temporary or permanent)
    bad_argument,    // host or path too long, empty, or otherwise unusable
    error,           // anything else; `code` has the platform's error number
};

const char* describe(net_status status) noexcept;

struct net_result {
    net_status status = net_status::error;
    std::size_t size = 0;  // send/recv: bytes moved
    int code = 0;          // the platform's error number, 0 when none
};

// Where a node listens: a TCP host (name or numeric IPv4/IPv6, no brackets)
// and port, or a Unix domain socket path (when `unix_path` is not empty).
struct endpoint {
    str_view host;
    std::uint16_t port = 0;
    str_view unix_path;
};

// Starts a non-blocking connection to the attempt-th address of the endpoint
// (0 first; a host name may resolve to several, IPv6 and IPv4). Numeric
// addresses never touch the resolver; a name is resolved here, on every call,
// so a gateway whose DNS changes follows it on reconnect. On ok and in_progress
// `fd` holds the new socket, which the caller owns. no_address: no address left
// to try. The socket is set up for a request/reply protocol: TCP_NODELAY,
// keepalive, close-on-exec, and never a SIGPIPE.
net_result connect(const endpoint& where, unsigned attempt, int& fd) noexcept;

// After an in_progress connect() reported writable: ok, or why it failed;
// in_progress again when it is in fact still connecting (keep waiting).
net_result connect_finish(int fd) noexcept;

// Partial sends and receives are normal; EINTR is retried inside.
net_result send(int fd, const void* data, std::size_t size) noexcept;
net_result recv(int fd, void* buf, std::size_t capacity) noexcept;

void close(int fd) noexcept;

// Readiness, for wait().
enum : std::uint8_t {
    want_read = 1,
    want_write = 2,
    ready_error = 4,  // in `ready` only: error or hang-up; a recv/send says which
};

struct wait_entry {
    int fd = -1;  // negative: ignored
    std::uint8_t want = 0;
    std::uint8_t ready = 0;  // set by wait()
};

// Sleeps until one of the entries is ready or `deadline` passes, whichever is
// first (instant::never(): no deadline). Returns the number of ready entries,
// 0 at the deadline, -1 on an error other than an interruption. A signal ends
// the wait early with 0 ready entries, so a caller's loop can look at its flags.
// The deadline is on now()'s clock, which counts suspend; a port whose wait
// primitive does not must notice a deadline that passed during a suspend soon
// after the resume (the POSIX port polls in slices of at most a second).
int wait(wait_entry* entries, std::size_t count, instant deadline) noexcept;

}  // namespace port
}  // namespace edgelock
