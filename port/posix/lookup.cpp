// POSIX port: host name lookups that never block the caller.
//
// A name is looked up by getaddrinfo() on a helper thread of its own, so that
// whatever the system resolver honours applies (/etc/hosts, nsswitch,
// gai.conf's address order, AI_ADDRCONFIG) and a name server that never
// answers holds up that thread only. Chosen over a stub resolver of our own,
// which would see DNS alone (no nsswitch: mDNS, LDAP, systemd-resolved), and
// over glibc's getaddrinfo_a(), which musl lacks. The thread writes a byte to
// a pipe when it is done; the caller waits on the pipe's read end like on a
// socket. Numeric hosts never start a thread.
//
// Slots are a static table (EDGELOCK_PORT_LOOKUPS), guarded by one mutex held
// only to copy a result in or out. A slot released while its thread still
// runs is abandoned: the thread frees it when getaddrinfo() returns. What a
// lookup of a name allocates (the thread, getaddrinfo()'s own lists) is the
// C library's; numeric hosts are read with inet_pton() and allocate nothing
// (a scoped IPv6 address goes through getaddrinfo(AI_NUMERICHOST), which
// never asks the network).
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "edgelock/config.hpp"
#include "edgelock/port.hpp"
#include "posix_internal.hpp"

namespace edgelock {
namespace port {
namespace {

constexpr std::size_t slot_count = EDGELOCK_PORT_LOOKUPS;
// An id is a slot's index and its generation, so a stale id (released, its
// slot reused) matches nothing.
constexpr int index_bits = 12;
constexpr int index_mask = (1 << index_bits) - 1;
constexpr unsigned generation_limit = 1u << (30 - index_bits);
static_assert(slot_count <= (1u << index_bits), "EDGELOCK_PORT_LOOKUPS too large for an id");

enum class slot_state : std::uint8_t {
    free,
    running,    // its thread is in getaddrinfo()
    done,       // the result is in
    abandoned,  // released while running: its thread frees it
};

union inet_address {
    sockaddr sa;
    sockaddr_in in4;
    sockaddr_in6 in6;
};

struct lookup_slot {
    slot_state state = slot_state::free;
    std::uint8_t count = 0;  // addresses
    net_status status = net_status::error;
    int code = 0;
    unsigned generation = 0;
    int read_fd = -1;
    int write_fd = -1;
    std::size_t host_size = 0;
    char host[max_host_size + 1] = {};
    inet_address addresses[lookup_max_addresses] = {};
};

pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
lookup_slot slots[slot_count];

struct locked {
    locked() { pthread_mutex_lock(&table_lock); }
    ~locked() { pthread_mutex_unlock(&table_lock); }
    locked(const locked&) = delete;
    locked& operator=(const locked&) = delete;
};

int make_id(std::size_t index, unsigned generation) {
    return static_cast<int>((generation << index_bits) | static_cast<unsigned>(index));
}

// The slot an id names, if it is still the caller's; under table_lock.
lookup_slot* slot_of(int id) {
    if (id < 0) {
        return nullptr;
    }
    const auto index = static_cast<std::size_t>(id & index_mask);
    const auto generation = static_cast<unsigned>(id) >> index_bits;
    if (index >= slot_count) {
        return nullptr;
    }
    lookup_slot& s = slots[index];
    if (s.generation != generation || s.state == slot_state::free ||
        s.state == slot_state::abandoned) {
        return nullptr;
    }
    return &s;
}

// Frees a slot whose thread, if any, is done; under table_lock.
void free_slot(lookup_slot& s) {
    if (s.read_fd >= 0) {
        ::close(s.read_fd);
    }
    if (s.write_fd >= 0) {
        ::close(s.write_fd);
    }
    s.read_fd = -1;
    s.write_fd = -1;
    s.state = slot_state::free;
    s.count = 0;
    s.generation = (s.generation + 1) % generation_limit;
}

bool open_pipe(int fds[2]) {
#ifdef __linux__
    return ::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0;
#else
    if (::pipe(fds) != 0) {
        return false;
    }
    for (int i = 0; i < 2; ++i) {
        const int flags = ::fcntl(fds[i], F_GETFL);
        if (flags < 0 || ::fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0 ||
            ::fcntl(fds[i], F_SETFL, flags | O_NONBLOCK) != 0) {
            const int err = errno;
            ::close(fds[0]);
            ::close(fds[1]);
            errno = err;
            return false;
        }
    }
    return true;
#endif
}

// What one getaddrinfo() list holds for stream sockets, in its order.
struct addresses {
    std::uint8_t count = 0;
    inet_address list[lookup_max_addresses] = {};
};

void collect(const addrinfo* list, addresses& out) {
    for (const addrinfo* e = list; e != nullptr && out.count < lookup_max_addresses;
         e = e->ai_next) {
        const bool usable = e->ai_addr != nullptr &&
                            ((e->ai_family == AF_INET && e->ai_addrlen >= sizeof(sockaddr_in)) ||
                             (e->ai_family == AF_INET6 && e->ai_addrlen >= sizeof(sockaddr_in6)));
        if (!usable) {
            continue;
        }
        inet_address& a = out.list[out.count++];
        std::memset(&a, 0, sizeof a);
        std::memcpy(&a, e->ai_addr, e->ai_family == AF_INET ? sizeof a.in4 : sizeof a.in6);
    }
}

// getaddrinfo() as a connect needs it: a numeric form first (never the
// network), then the name. Returns ok, no_address or resolve_failed (code:
// the EAI_* value).
net_status resolve(const char* host, bool numeric_only, addresses& out, int& code) {
    addrinfo hints = stream_hints(AI_NUMERICHOST);
    addrinfo* list = nullptr;
    int rc = ::getaddrinfo(host, nullptr, &hints, &list);
    if (rc == EAI_NONAME && !numeric_only) {
        // A name, then. AI_ADDRCONFIG skips address families this host has no
        // address in, so a v4-only gateway does not try AAAA records first.
        hints.ai_flags = AI_ADDRCONFIG;
        list = nullptr;
        rc = ::getaddrinfo(host, nullptr, &hints, &list);
        // But glibc does not count loopback addresses: on a gateway whose only
        // uplink is IPv6, "localhost" listed as 127.0.0.1 alone would vanish.
        // A second query without the filter costs only on this failure path.
        bool retry = rc == EAI_NONAME;
#ifdef EAI_NODATA
        retry = retry || rc == EAI_NODATA;
#endif
#ifdef EAI_ADDRFAMILY
        retry = retry || rc == EAI_ADDRFAMILY;
#endif
        if (retry) {
            hints.ai_flags = 0;
            list = nullptr;
            rc = ::getaddrinfo(host, nullptr, &hints, &list);
        }
    }
    if (rc != 0) {
        code = rc;
        return net_status::resolve_failed;
    }
    collect(list, out);
    ::freeaddrinfo(list);
    code = 0;
    return out.count > 0 ? net_status::ok : net_status::no_address;
}

// Under table_lock: the result into the slot.
void store(lookup_slot& s, net_status status, int code, const addresses& found) {
    s.status = status;
    s.code = code;
    s.count = found.count;
    for (std::uint8_t i = 0; i < found.count; ++i) {
        s.addresses[i] = found.list[i];
    }
    s.state = slot_state::done;
}

void* run_lookup(void* arg) {
    lookup_slot& s = slots[reinterpret_cast<std::uintptr_t>(arg)];
    // The host stays as it is while the thread runs: only the thread frees a
    // slot it runs for.
    addresses found;
    int code = 0;
    const net_status status = resolve(s.host, false, found, code);
    const locked guard;
    if (s.state == slot_state::abandoned) {
        free_slot(s);
        return nullptr;
    }
    store(s, status, code, found);
    const char byte = 1;
    // An empty non-blocking pipe takes one byte; nothing to do if it did not.
    const ssize_t w = ::write(s.write_fd, &byte, 1);
    (void)w;
    return nullptr;
}

// Starts the slot's thread, with every signal blocked in it (the caller's
// handlers run on the caller's threads) and a small stack. errno on failure.
bool start_thread(std::size_t index) {
    pthread_attr_t attr;
    const int init = pthread_attr_init(&attr);
    if (init != 0) {
        errno = init;
        return false;
    }
    std::size_t stack = EDGELOCK_PORT_LOOKUP_STACK;
#ifdef PTHREAD_STACK_MIN
    if (stack < static_cast<std::size_t>(PTHREAD_STACK_MIN)) {
        stack = static_cast<std::size_t>(PTHREAD_STACK_MIN);
    }
#endif
    (void)pthread_attr_setstacksize(&attr, stack);
    (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    const int rc = pthread_create(&thread, &attr, run_lookup, reinterpret_cast<void*>(index));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    pthread_attr_destroy(&attr);
    errno = rc;
    return rc == 0;
}

// A host inet_pton() takes, as one address; false for anything else.
bool parse_numeric(const char* host, addresses& out) {
    inet_address& a = out.list[0];
    std::memset(&a, 0, sizeof a);
    if (::inet_pton(AF_INET, host, &a.in4.sin_addr) == 1) {
        a.in4.sin_family = AF_INET;
    } else if (::inet_pton(AF_INET6, host, &a.in6.sin6_addr) == 1) {
        a.in6.sin6_family = AF_INET6;
    } else {
        return false;
    }
    out.count = 1;
    return true;
}

}  // namespace

net_result lookup_start(str_view host, int& id, bool numeric_only) noexcept {
    id = -1;
    if (host.empty() || host.size > max_host_size || contains_nul(host)) {
        return make_result(net_status::bad_argument);
    }
    const locked guard;
    std::size_t index = 0;
    while (index < slot_count && slots[index].state != slot_state::free) {
        ++index;
    }
    if (index == slot_count) {
        return make_result(net_status::error, EAGAIN);
    }
    lookup_slot& s = slots[index];
    std::memcpy(s.host, host.data, host.size);
    s.host[host.size] = '\0';
    s.host_size = host.size;
    s.count = 0;
    // A host with ':' is an IPv6 address (a scoped one, when inet_pton()
    // refused it): never a name.
    const bool colon = std::strchr(s.host, ':') != nullptr;
    addresses found;
    if (parse_numeric(s.host, found) || colon) {
        // No thread and no fd: done now, whatever the outcome.
        int code = 0;
        const net_status status =
            found.count > 0 ? net_status::ok : resolve(s.host, true, found, code);
        store(s, status, code, found);
        id = make_id(index, s.generation);
        return make_result(status, code);
    }
    if (numeric_only) {
        return make_result(net_status::would_block);  // a name: not now
    }
    int fds[2];
    if (!open_pipe(fds)) {
        return make_result(net_status::error, errno);
    }
    s.read_fd = fds[0];
    s.write_fd = fds[1];
    s.state = slot_state::running;
    if (!start_thread(index)) {
        const int err = errno;
        free_slot(s);
        return make_result(net_status::error, err);
    }
    id = make_id(index, s.generation);
    return make_result(net_status::in_progress);
}

int lookup_fd(int id) noexcept {
    const locked guard;
    const lookup_slot* s = slot_of(id);
    return s != nullptr ? s->read_fd : -1;
}

net_result lookup_result(int id) noexcept {
    const locked guard;
    const lookup_slot* s = slot_of(id);
    if (s == nullptr) {
        return make_result(net_status::bad_argument);
    }
    if (s->state == slot_state::running) {
        return make_result(net_status::in_progress);
    }
    net_result r = make_result(s->status, s->code);
    r.size = s->status == net_status::ok ? s->count : 0;
    return r;
}

bool lookup_is_for(int id, str_view host) noexcept {
    const locked guard;
    const lookup_slot* s = slot_of(id);
    return s != nullptr && str_view(s->host, s->host_size) == host;
}

std::size_t lookup_address(int id, unsigned index, char* buf, std::size_t capacity) noexcept {
    const locked guard;
    const lookup_slot* s = slot_of(id);
    if (s == nullptr || s->state != slot_state::done || s->status != net_status::ok ||
        index >= s->count || buf == nullptr || capacity == 0) {
        return 0;
    }
    const inet_address& a = s->addresses[index];
    char text[address_text_capacity];
    const void* raw = a.sa.sa_family == AF_INET ? static_cast<const void*>(&a.in4.sin_addr)
                                                : static_cast<const void*>(&a.in6.sin6_addr);
    if (::inet_ntop(a.sa.sa_family, raw, text, static_cast<socklen_t>(sizeof text)) == nullptr) {
        return 0;
    }
    std::size_t size = std::strlen(text);
    if (a.sa.sa_family == AF_INET6 && a.in6.sin6_scope_id != 0) {
        // The scope as a number: getaddrinfo(AI_NUMERICHOST) reads it back
        // without asking for interface names.
        const int n = std::snprintf(text + size, sizeof text - size, "%%%u",
                                    static_cast<unsigned>(a.in6.sin6_scope_id));
        if (n < 0 || static_cast<std::size_t>(n) >= sizeof text - size) {
            return 0;
        }
        size += static_cast<std::size_t>(n);
    }
    if (size + 1 > capacity) {
        return 0;
    }
    std::memcpy(buf, text, size + 1);
    return size;
}

void lookup_release(int id) noexcept {
    const locked guard;
    lookup_slot* s = slot_of(id);
    if (s == nullptr) {
        return;
    }
    if (s->state == slot_state::running) {
        s->state = slot_state::abandoned;  // its thread frees it
        return;
    }
    free_slot(*s);
}

}  // namespace port
}  // namespace edgelock
