// The C API's counters: the C++ structs (client_stats.hpp) copied field by
// field into the C ones, so neither layout depends on the other.
#include "capi_internal.hpp"

using namespace edgelock;

extern "C" int edgelock_client_node_stats(const edgelock_client* c, unsigned i,
                                          struct edgelock_node_stats* out) {
    if (c == nullptr || out == nullptr || i >= c->impl.node_count()) {
        return EDGELOCK_ERR_ARG;
    }
    const node_stats s = c->impl.node_stats(static_cast<std::uint8_t>(i));
    out->requests = s.requests;
    out->connects = s.connects;
    out->reconnects = s.reconnects;
    out->connect_errors = s.connect_errors;
    out->timeouts = s.timeouts;
    out->closed = s.closed;
    out->protocol_errors = s.protocol_errors;
    out->tls_errors = s.tls_errors;
    out->refusals = s.refusals;
    out->server_errors = s.server_errors;
    out->io_errors = s.io_errors;
    out->rtt_count = s.rtt_count;
    out->rtt_sum_us = s.rtt_sum_us;
    out->rtt_last_us = s.rtt_last_us;
    out->rtt_min_us = s.rtt_min_us;
    out->rtt_max_us = s.rtt_max_us;
    out->rtt_smoothed_us = s.rtt_smoothed_us;
    out->rtt_variation_us = s.rtt_variation_us;
    return EDGELOCK_OK;
}

extern "C" int edgelock_lock_get_stats(const edgelock_lock* l, struct edgelock_lock_stats* out) {
    if (l == nullptr || out == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    const lock_stats s = l->impl.stats();
    out->acquisitions = s.acquisitions;
    out->contended = s.contended;
    out->busy = s.busy;
    out->acquire_failures = s.acquire_failures;
    out->renewals = s.renewals;
    out->renewals_failed = s.renewals_failed;
    out->losses = s.losses;
    out->releases = s.releases;
    return EDGELOCK_OK;
}
