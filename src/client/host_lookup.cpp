// A connection's host name lookup: the port's asynchronous lookup, kept
// across attempts while it runs (see host_lookup in client_connection.hpp).
#include "edgelock/client_connection.hpp"

namespace edgelock {
namespace detail {

port::net_result host_lookup::begin(str_view host) noexcept {
    if (id_ >= 0) {
        const port::net_result kept = port::lookup_result(id_);
        if (kept.status == port::net_status::in_progress) {
            if (!port::lookup_is_for(id_, host)) {
                waiting_ = false;
                port::net_result busy;
                busy.status = port::net_status::would_block;
                return busy;
            }
            // The same name, still asked: wait for that answer rather than
            // put a second question to a name server that may never answer.
            waiting_ = true;
            return kept;
        }
        // Done since its attempt gave up: an answer that old is not used,
        // the name is asked again (its address may have moved).
        abandon();
    }
    const port::net_result r = port::lookup_start(host, id_);
    if (r.status != port::net_status::ok && r.status != port::net_status::in_progress) {
        abandon();  // a failure at once may still hold a slot
        return r;
    }
    fd_ = port::lookup_fd(id_);
    waiting_ = r.status == port::net_status::in_progress;
    return r;
}

port::net_result host_lookup::result() const noexcept {
    if (id_ < 0) {
        port::net_result none;
        none.status = port::net_status::bad_argument;
        return none;
    }
    return port::lookup_result(id_);
}

std::size_t host_lookup::address(unsigned index, char* buf, std::size_t capacity) const noexcept {
    return id_ >= 0 ? port::lookup_address(id_, index, buf, capacity) : 0;
}

void host_lookup::end() noexcept {
    waiting_ = false;
    if (id_ >= 0 && port::lookup_result(id_).status != port::net_status::in_progress) {
        abandon();
    }
}

void host_lookup::tidy() noexcept {
    if (id_ >= 0 && !waiting_) {
        end();
    }
}

void host_lookup::abandon() noexcept {
    if (id_ >= 0) {
        port::lookup_release(id_);
    }
    id_ = -1;
    fd_ = -1;
    waiting_ = false;
}

}  // namespace detail
}  // namespace edgelock
