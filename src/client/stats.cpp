// The counters of client_stats.hpp: which kind an error is, and the round
// trips timed on idle connections. Counting is a few additions in place.
#include "edgelock/client.hpp"

#include "client_internal.hpp"

namespace edgelock {

using namespace detail;

namespace detail {

void count_error(node_stats& s, node_error why) noexcept {
    switch (why) {
    case node_error::none:
        return;
    case node_error::refused:
    case node_error::unreachable:
    case node_error::resolve_failed:
        ++s.connect_errors;
        return;
    case node_error::resolve_timeout:
    case node_error::connect_timeout:
    case node_error::stalled:
        ++s.timeouts;
        return;
    case node_error::closed:
    case node_error::reset:
        ++s.closed;
        return;
    case node_error::protocol_error:
    case node_error::reply_too_large:
    case node_error::unexpected_reply:
        ++s.protocol_errors;
        return;
    case node_error::tls_handshake_failed:
    case node_error::tls_untrusted:
    case node_error::tls_expired:
    case node_error::tls_name_mismatch:
    case node_error::tls_not_tls:
    case node_error::tls_session_failed:
        ++s.tls_errors;
        return;
    case node_error::auth_failed:
    case node_error::select_failed:
    case node_error::setup_failed:
    case node_error::replica:
    case node_error::sentinel_failed:
        ++s.refusals;
        return;
    case node_error::server_error:
        ++s.server_errors;
        return;
    case node_error::io_error:
        break;
    }
    ++s.io_errors;
}

namespace {

// RFC 6298's estimator: the first sample as it is, with half of it as the
// variation; each later one an eighth of the mean and a quarter of its
// distance from it.
void smooth(node_stats& s, std::uint64_t us, bool first) noexcept {
    if (first) {
        s.rtt_smoothed_us = us > 0 ? us : 1;
        s.rtt_variation_us = us / 2;
        return;
    }
    const std::uint64_t off =
        us > s.rtt_smoothed_us ? us - s.rtt_smoothed_us : s.rtt_smoothed_us - us;
    s.rtt_variation_us = s.rtt_variation_us - s.rtt_variation_us / 4 + off / 4;
    const std::uint64_t next = s.rtt_smoothed_us - s.rtt_smoothed_us / 8 + us / 8;
    s.rtt_smoothed_us = next > 0 ? next : 1;
}

}  // namespace

// A connect's round trip stands in until the first reply's: a proxy near
// the client (a satellite link's TCP accelerator) answers the SYN itself.
void connect_rtt(node_stats& s, duration rtt) noexcept {
    if (s.rtt_count == 0) {
        smooth(s, rtt.us, true);
    }
}

void count_rtt(node_stats& s, duration rtt) noexcept {
    smooth(s, rtt.us, s.rtt_count == 0);
    const std::uint64_t us = rtt.us;
    if (s.rtt_count == 0 || us < s.rtt_min_us) {
        s.rtt_min_us = us;
    }
    if (us > s.rtt_max_us) {
        s.rtt_max_us = us;
    }
    s.rtt_last_us = us;
    s.rtt_sum_us += us;
    ++s.rtt_count;
}

void count_event(lock_stats& s, const lock_event& ev, bool contended) noexcept {
    switch (ev.kind) {
    case lock_event_kind::acquired:
        ++s.acquisitions;
        break;
    case lock_event_kind::busy:
        ++s.busy;
        break;
    case lock_event_kind::failed:
        ++s.acquire_failures;
        break;
    case lock_event_kind::renewed:
        ++s.renewals;
        return;
    case lock_event_kind::renew_failed:
        ++s.renewals_failed;
        return;
    case lock_event_kind::lost:
        ++s.losses;
        return;
    case lock_event_kind::released:
        ++s.releases;
        return;
    }
    if (contended) {
        ++s.contended;
    }
}

}  // namespace detail

edgelock::node_stats client_base::node_stats(std::uint8_t index) const noexcept {
    if (index >= node_count_) {
        return edgelock::node_stats{};
    }
    return conns_[index].stats;
}

edgelock::node_stats& client_base::stats_of(std::uint8_t n) noexcept {
    const std::uint8_t node = conns_[n].node;
    return conns_[node < node_count_ ? node : n].stats;
}

}  // namespace edgelock
