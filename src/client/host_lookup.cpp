// A connection's host name lookup: the port's asynchronous lookup, one name's
// at a time, kept across attempts (see host_lookup in client_connection.hpp).
#include "edgelock/detail/host_lookup.hpp"

namespace edgelock {
namespace detail {

namespace {

port::net_result status_only(port::net_status s) {
    port::net_result r;
    r.status = s;
    return r;
}

}  // namespace

port::net_result host_lookup::begin(str_view host, instant now, duration max_age) noexcept {
    if (id_ >= 0) {
        end();  // an attempt that did not say it was over
    }
    if (kept_ >= 0) {
        const port::net_result kept = port::lookup_result(kept_);
        const bool running = kept.status == port::net_status::in_progress;
        const bool fresh = kept.status == port::net_status::ok && now - kept_asked_ <= max_age;
        if ((running || fresh) && port::lookup_is_for(kept_, host)) {
            // The same name: wait for that answer, or take it, rather than
            // put a second question to a name server that may never answer.
            id_ = kept_;
            asked_ = kept_asked_;
            kept_ = -1;
            fd_ = port::lookup_fd(id_);
            waiting_ = running;
            return kept;
        }
        if (running) {
            // Another name's question is still unanswered: a numeric host
            // needs none and goes ahead; another name waits its turn.
            const port::net_result r = port::lookup_start(host, id_, true);
            if (r.status != port::net_status::ok) {
                port::lookup_release(id_);
                id_ = -1;
                return r;
            }
            fd_ = -1;
            waiting_ = false;
            return r;
        }
        port::lookup_release(kept_);  // stale, failed, or another name's
        kept_ = -1;
    }
    const port::net_result r = port::lookup_start(host, id_);
    if (r.status != port::net_status::ok && r.status != port::net_status::in_progress) {
        port::lookup_release(id_);  // a failure at once may still hold a slot
        id_ = -1;
        return r;
    }
    asked_ = now;
    fd_ = port::lookup_fd(id_);
    waiting_ = r.status == port::net_status::in_progress;
    return r;
}

port::net_result host_lookup::result() const noexcept {
    return id_ >= 0 ? port::lookup_result(id_) : status_only(port::net_status::bad_argument);
}

bool host_lookup::is_for(str_view host) const noexcept {
    return id_ >= 0 && port::lookup_is_for(id_, host);
}

std::size_t host_lookup::address(unsigned index, char* buf, std::size_t capacity) const noexcept {
    return id_ >= 0 ? port::lookup_address(id_, index, buf, capacity) : 0;
}

void host_lookup::end() noexcept {
    waiting_ = false;
    if (id_ < 0) {
        return;
    }
    if (port::lookup_result(id_).status == port::net_status::in_progress) {
        // Its answer, when it comes, is the next attempt's. kept_ is free
        // here: while this one ran, no other name's lookup began.
        if (kept_ >= 0) {
            port::lookup_release(kept_);
        }
        kept_ = id_;
        kept_asked_ = asked_;
    } else {
        port::lookup_release(id_);  // its answer was used (or was a failure)
    }
    id_ = -1;
    fd_ = -1;
}

void host_lookup::tidy(instant now, duration max_age) noexcept {
    if (kept_ < 0) {
        return;
    }
    const port::net_status s = port::lookup_result(kept_).status;
    if (s != port::net_status::in_progress &&
        (s != port::net_status::ok || now - kept_asked_ > max_age)) {
        port::lookup_release(kept_);
        kept_ = -1;
    }
}

void host_lookup::abandon() noexcept {
    if (id_ >= 0) {
        port::lookup_release(id_);
    }
    if (kept_ >= 0) {
        port::lookup_release(kept_);
    }
    id_ = -1;
    fd_ = -1;
    kept_ = -1;
    waiting_ = false;
}

}  // namespace detail
}  // namespace edgelock
