// A connection's host name lookup, never blocking the loop.
#pragma once

#include <cstddef>

#include "edgelock/port.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"

namespace edgelock {
namespace detail {

// The host name lookup of a connection or a watch (host_lookup.cpp). At most
// one lookup of a name runs for it: one an attempt gave up on while it still
// ran is kept, and the next attempt for the same host waits for that answer
// rather than asking anew, so a name server that never answers costs one
// port lookup here, however long it hangs. Meanwhile a numeric host still
// connects (it needs no lookup) and another name waits its turn. An answer
// that came after its attempt gave up is used by the next attempt, if that
// comes within max_age of the question: a name server slower than the
// connect's allowance still gets a node connected.
class host_lookup {
public:
    host_lookup() noexcept = default;
    host_lookup(const host_lookup&) = delete;
    host_lookup& operator=(const host_lookup&) = delete;
    ~host_lookup() { abandon(); }

    // Begins an attempt's lookup of `host`: ok (the addresses are there),
    // in_progress (wait for fd(), then ask result()), would_block (a name,
    // while the lookup of another name, kept from an earlier attempt, still
    // runs), or why the port could not start one.
    port::net_result begin(str_view host, instant now, duration max_age) noexcept;
    // The fd an attempt waits on, readable once the lookup is done; -1 when
    // no attempt waits.
    int fd() const noexcept { return waiting_ ? fd_ : -1; }
    // What the attempt's lookup came to: in_progress while it runs.
    port::net_result result() const noexcept;
    // Whether the attempt's lookup is of `host`.
    bool is_for(str_view host) const noexcept;
    // The index-th address of the attempt's lookup, numeric and
    // NUL-terminated; 0 when there is none.
    std::size_t address(unsigned index, char* buf, std::size_t capacity) const noexcept;
    // The attempt is over (connected, failed, out of time): a lookup still
    // running is kept for the next attempt; an answered one is let go.
    void end() noexcept;
    // A kept lookup that answered more than max_age after its question (or
    // failed) is let go.
    void tidy(instant now, duration max_age) noexcept;
    // Let go whatever its state (the client goes away, or is configured anew).
    void abandon() noexcept;

private:
    int id_ = -1;    // this attempt's lookup
    int fd_ = -1;    // its fd; -1 for a host done at once
    int kept_ = -1;  // a name's lookup kept from an earlier attempt
    instant asked_;  // when id_ was begun
    instant kept_asked_;
    bool waiting_ = false;  // an attempt waits for id_
};

}  // namespace detail
}  // namespace edgelock
