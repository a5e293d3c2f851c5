// The port: everything edgelock needs from the platform, in one header.
//
// The core (codec, lock state machine) never includes this file; it is given
// time and random bytes as arguments. The driver calls these functions, and a
// port implementation defines them. Link exactly one: edgelock::port_posix
// (port/posix) on Linux and other POSIX systems, or your own on an RTOS, the
// way lwIP links a sys_arch.
//
// Nothing here waits, but wait() itself: connect() starts a connection,
// send()/recv() move what they can and say would_block otherwise, a host name
// lookup is started and its result learned later (through wait(), like a
// socket's readiness), and wait() is the one place the driver sleeps. A loop
// built on these calls is never held up by the network, the name server
// included, longer than the deadline it gives wait().
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
    no_address,      // lookup: the name has no address a stream socket can use
    resolve_failed,  // lookup: name resolution failed (temporary or permanent)
    bad_argument,    // host or path too long, empty, not numeric (connect), ...
    error,           // anything else; `code` has the platform's error number
};

const char* describe(net_status status) noexcept;

struct net_result {
    net_status status = net_status::error;
    std::size_t size = 0;  // send/recv: bytes moved
    int code = 0;          // the platform's error number, 0 when none
};

// Where a node listens: a TCP host and port, or a Unix domain socket path
// (when `unix_path` is not empty). connect() takes numeric hosts only (IPv4,
// IPv6, a scoped IPv6 such as fe80::1%eth0; no brackets); a name is looked up
// first (lookup_start() below).
struct endpoint {
    str_view host;
    std::uint16_t port = 0;
    str_view unix_path;
};

// Starts a non-blocking connection to the endpoint. On ok and in_progress
// `fd` holds the new socket, which the caller owns. A host that is not a
// numeric address is a bad_argument: connect() never asks the resolver. The
// socket is set up for a request/reply protocol: TCP_NODELAY, keepalive,
// close-on-exec, and never a SIGPIPE.
net_result connect(const endpoint& where, int& fd) noexcept;

// After an in_progress connect() reported writable: ok, or why it failed;
// in_progress again when it is in fact still connecting (keep waiting).
net_result connect_finish(int fd) noexcept;

// Partial sends and receives are normal; EINTR is retried inside.
net_result send(int fd, const void* data, std::size_t size) noexcept;
net_result recv(int fd, void* buf, std::size_t capacity) noexcept;

void close(int fd) noexcept;

// --- host name lookup ------------------------------------------------------------
//
// A lookup never blocks its caller: lookup_start() begins it and returns at
// once; the lookup's fd becomes readable once it is done (wait() on it with
// want_read, or register it in your own loop); lookup_result() then says how
// it went, and lookup_address() gives the addresses one by one, in the order
// to try them, as numeric text for connect(). A numeric host is done at once,
// without the resolver and without an fd. Resolve on every connect: a
// managed Redis moves its primary by changing its name's address.
//
// Lookups are few, and each takes one of the port's slots from lookup_start()
// until it is released (the POSIX port has EDGELOCK_PORT_LOOKUPS, config.hpp).
// A lookup released before it is
// done is abandoned: its result is thrown away when it comes, and its slot is
// taken until then. A caller that must bound what a name server that never
// answers can cost (the driver does) keeps its lookup instead, and at its next
// attempt waits for that one again (lookup_is_for()) rather than starting
// another: one slot per connection, however long the name server hangs.
//
// The POSIX port runs each lookup on a helper thread of its own, around
// getaddrinfo(), so /etc/hosts, nsswitch, gai.conf's address order and
// AI_ADDRCONFIG apply as for any program on the machine; the fd is a pipe the
// thread writes a byte to. An MCU port maps this to lwIP's
// dns_gethostbyname(): ERR_OK fills the result at once (a cached or numeric
// name), ERR_INPROGRESS leaves the lookup running until lwIP's callback stores
// the address and marks it done, and the lookup's fd is one the port's own
// wait() reports readable then (a loopback socket the callback sends a byte
// to, say); an abandoned lookup's callback only frees its slot.

// The addresses one lookup keeps, in order; further ones are not tried.
constexpr std::size_t lookup_max_addresses = 8;
// The longest numeric address text, NUL included (a scoped IPv6 address:
// 45 characters, '%' and an interface name of up to 15).
constexpr std::size_t address_text_capacity = 64;

// Starts looking `host` up. ok: done already (a numeric host); in_progress:
// wait for lookup_fd(). Either way `id` holds the lookup, which the caller
// releases. With `numeric_only`, a host that needs the resolver is not looked
// up: would_block, and no id. bad_argument: empty, longer than a DNS name, a
// NUL inside. error: no free slot, or the port could not start the lookup
// (`code`: the platform's error number).
net_result lookup_start(str_view host, int& id, bool numeric_only = false) noexcept;

// Readable once the lookup is done; -1 for one done at once.
int lookup_fd(int id) noexcept;

// in_progress while the lookup runs; once done, ok (`size` addresses, at
// least one), no_address, or resolve_failed (`code`: the resolver's own,
// EAI_* for getaddrinfo()).
net_result lookup_result(int id) noexcept;

// Whether the lookup is of `host`.
bool lookup_is_for(int id, str_view host) noexcept;

// The index-th address of a lookup that ended ok, as NUL-terminated numeric
// text in `buf` ("10.0.0.5", "fe80::1%eth0"); its length, or 0 when there is
// no such address or it does not fit (address_text_capacity always does).
std::size_t lookup_address(int id, unsigned index, char* buf, std::size_t capacity) noexcept;

// Ends the caller's use of the lookup, done or not (see above). -1: nothing.
void lookup_release(int id) noexcept;

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

// The most entries one wait() takes (more: -1). A client<N, M> needs at most
// its fd_capacity(), 2 * 64 + N for the largest one; the rest is the caller's.
constexpr std::size_t wait_capacity = 256;

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
