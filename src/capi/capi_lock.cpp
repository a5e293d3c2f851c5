// The C API's locks: made in the caller's memory on a client, with their
// callback, blocking and event-loop operations, and what they hold.
#include <cstring>
#include <new>

#include "capi_internal.hpp"

using namespace edgelock;
using namespace edgelock::capi;

static_assert(sizeof(edgelock_lock) <= EDGELOCK_LOCK_BYTES,
              "EDGELOCK_LOCK_BYTES too small for this build");

namespace {

// Copies s (NUL-terminated) into the lock's own room; false when longer.
bool keep(const char* s, char* room, std::size_t capacity, str_view& out) noexcept {
    if (s == nullptr) {
        out = str_view();
        return true;
    }
    const std::size_t n = std::strlen(s);
    if (n > capacity) {
        return false;
    }
    std::memcpy(room, s, n);
    out = str_view(room, n);
    return true;
}

// A lock's call that may be refused by its machine: lock_error() says why
// once the call has returned.
int status_after(const edgelock_lock* l, client_errc e) noexcept {
    return capi::status_of(e, l->impl.lock_error());
}

void forward(void* ctx, client_lock&, const lock_event& ev) noexcept {
    auto* l = static_cast<edgelock_lock*>(ctx);
    if (l->callback != nullptr) {
        const edgelock_event e = event_of(ev);
        l->callback(l->callback_ctx, l, &e);
    }
}

}  // namespace

extern "C" {

void edgelock_lock_options_init(struct edgelock_lock_options* o) {
    if (o == nullptr) {
        return;
    }
    const lock_options d;
    const watchdog_options w;
    o->mode = EDGELOCK_MODE_PLAIN;
    o->permits = d.permits;
    o->ttl_ms = static_cast<std::uint32_t>(d.ttl.us / 1000);
    o->node_timeout_ms = static_cast<std::uint32_t>(d.node_timeout.us / 1000);
    o->drift_ppm = d.drift_ppm;
    o->drift_fixed_ms = static_cast<std::uint32_t>(d.drift_fixed.us / 1000);
    o->quorum = d.quorum;
    o->renew_resurrects = d.renew_resurrects ? 1 : 0;
    o->max_tries = d.max_tries;
    o->wait_ms = static_cast<std::uint32_t>(d.wait.us / 1000);
    o->retry_min_ms = static_cast<std::uint32_t>(d.retry_min.us / 1000);
    o->retry_max_ms = static_cast<std::uint32_t>(d.retry_max.us / 1000);
    o->owner = nullptr;
    o->min_replicas = d.min_replicas;
    o->replica_timeout_ms = static_cast<std::uint32_t>(d.replica_timeout.us / 1000);
    o->holder = nullptr;
    o->watchdog = w.enabled ? 1 : 0;
    o->renew_every_ms = static_cast<std::uint32_t>(w.renew_every.us / 1000);
    o->max_hold_ms = static_cast<std::uint32_t>(w.max_hold.us / 1000);
}

size_t edgelock_lock_size(void) {
    return sizeof(edgelock_lock);
}

int edgelock_lock_init(void* mem, size_t size, edgelock_client* c, const char* name,
                       const struct edgelock_lock_options* options, edgelock_lock** out) {
    if (out == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    *out = nullptr;
    if (mem == nullptr || c == nullptr || name == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    if (size < sizeof(edgelock_lock) || !aligned_for<edgelock_lock>(mem)) {
        return EDGELOCK_ERR_MEMORY;
    }
    edgelock_lock_options defaults;
    if (options == nullptr) {
        edgelock_lock_options_init(&defaults);
        options = &defaults;
    }
    if (options->mode < EDGELOCK_MODE_PLAIN || options->mode > EDGELOCK_MODE_FENCED) {
        return EDGELOCK_ERR_ARG;
    }
    // Above any node count or replica count there is: refused as the lock
    // machine refuses a count above the nodes'.
    if (options->quorum > lock_max_nodes) {
        return EDGELOCK_ERR_LOCK_QUORUM;
    }
    if (options->min_replicas > 255) {
        return EDGELOCK_ERR_LOCK_REPLICAS;
    }
    lock_options lo;
    lo.mode = static_cast<lock_mode>(options->mode);
    // Above the maximum, and not cut to a valid count: configure refuses it.
    lo.permits = static_cast<std::uint8_t>(
        options->permits > lock_max_permits ? lock_max_permits + 1u : options->permits);
    lo.ttl = ms(options->ttl_ms);
    lo.node_timeout = ms(options->node_timeout_ms);
    lo.drift_ppm = options->drift_ppm;
    lo.drift_fixed = ms(options->drift_fixed_ms);
    lo.quorum = static_cast<std::uint8_t>(options->quorum);
    lo.renew_resurrects = options->renew_resurrects != 0;
    lo.max_tries = options->max_tries;
    lo.wait = ms(options->wait_ms);
    lo.retry_min = ms(options->retry_min_ms);
    lo.retry_max = ms(options->retry_max_ms);
    lo.min_replicas = static_cast<std::uint8_t>(options->min_replicas);
    lo.replica_timeout = ms(options->replica_timeout_ms);
    watchdog_options wo;
    wo.enabled = options->watchdog != 0;
    wo.renew_every = ms(options->renew_every_ms);
    wo.max_hold = ms(options->max_hold_ms);

    auto* l = new (mem) edgelock_lock();
    str_view name_view;
    int status = EDGELOCK_OK;
    if (!keep(name, l->name, sizeof l->name, name_view)) {
        status = EDGELOCK_ERR_LOCK_NAME;
    } else if (!keep(options->owner, l->owner, sizeof l->owner, lo.owner)) {
        status = EDGELOCK_ERR_LOCK_OWNER;
    } else if (!keep(options->holder, l->holder, sizeof l->holder, lo.holder)) {
        status = EDGELOCK_ERR_LOCK_HOLDER;
    } else {
        const client_errc e = l->impl.attach(c->impl, name_view, lo, wo);
        status = status_after(l, e);
    }
    if (status != EDGELOCK_OK) {
        l->~edgelock_lock();
        return status;
    }
    l->impl.set_callback(forward, l);
    *out = l;
    return EDGELOCK_OK;
}

void edgelock_lock_deinit(edgelock_lock* l) {
    if (l != nullptr) {
        l->~edgelock_lock();
    }
}

void edgelock_lock_set_callback(edgelock_lock* l, edgelock_lock_cb fn, void* ctx) {
    if (l != nullptr) {
        l->callback = fn;
        l->callback_ctx = ctx;
    }
}

int edgelock_lock_try_acquire(edgelock_lock* l) {
    return l == nullptr ? EDGELOCK_ERR_ARG : status_of(l->impl.try_acquire());
}

int edgelock_lock_acquire(edgelock_lock* l, uint32_t wait_ms) {
    return l == nullptr ? EDGELOCK_ERR_ARG : status_of(l->impl.acquire(ms(wait_ms)));
}

int edgelock_lock_renew(edgelock_lock* l) {
    return l == nullptr ? EDGELOCK_ERR_ARG : status_of(l->impl.renew());
}

int edgelock_lock_release(edgelock_lock* l) {
    return l == nullptr ? EDGELOCK_ERR_ARG : status_of(l->impl.release());
}

int edgelock_lock_resume(edgelock_lock* l, const char* token) {
    if (l == nullptr || token == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    owner_token t;
    if (!t.from_hex(token, std::strlen(token))) {
        return EDGELOCK_ERR_LOCK_TOKEN;
    }
    const client_errc e = l->impl.resume(t);
    return status_after(l, e);
}

int edgelock_lock_start_acquire(edgelock_lock* l) {
    if (l == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    const client_errc e = l->impl.start_acquire();
    return status_after(l, e);
}

int edgelock_lock_start_acquire_tries(edgelock_lock* l, uint32_t max_tries, uint32_t wait_ms) {
    if (l == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    if (max_tries == 0) {
        return EDGELOCK_ERR_LOCK_RETRY;  // as lock options with max_tries 0 are
    }
    const client_errc e = l->impl.start_acquire(max_tries, ms(wait_ms));
    return status_after(l, e);
}

int edgelock_lock_start_renew(edgelock_lock* l) {
    if (l == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    const client_errc e = l->impl.start_renew();
    return status_after(l, e);
}

int edgelock_lock_start_release(edgelock_lock* l) {
    if (l == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    const client_errc e = l->impl.start_release();
    return status_after(l, e);
}

void edgelock_lock_outcome(const edgelock_lock* l, struct edgelock_outcome* out) {
    if (out == nullptr) {
        return;
    }
    *out = edgelock_outcome{};
    if (l == nullptr) {
        out->status = EDGELOCK_ERR_ARG;
        return;
    }
    const op_outcome& o = l->impl.outcome();
    out->op = static_cast<int>(o.started);
    out->done = o.done ? 1 : 0;
    out->status = o.done ? status_of(o.result) : EDGELOCK_OK;
    out->event = event_of(o.result.event);
}

void edgelock_lock_last_event(const edgelock_lock* l, struct edgelock_event* out) {
    if (out != nullptr) {
        *out = l == nullptr ? edgelock_event{} : event_of(l->impl.last_event());
    }
}

int edgelock_lock_held(const edgelock_lock* l) {
    return l != nullptr && l->impl.held() ? 1 : 0;
}

uint64_t edgelock_lock_validity_ms(const edgelock_lock* l) {
    if (l == nullptr || !l->impl.held()) {
        return 0;
    }
    const instant v = l->impl.validity_deadline();
    const instant now = port::now();
    return v.us > now.us ? (v.us - now.us) / 1000 : 0;
}

uint64_t edgelock_lock_fence(const edgelock_lock* l) {
    return l == nullptr ? 0 : l->impl.fence();
}

int edgelock_lock_permit(const edgelock_lock* l) {
    return l == nullptr ? -1 : l->impl.permit();
}

int edgelock_lock_token(const edgelock_lock* l, char* buf, size_t size) {
    if (l == nullptr || buf == nullptr || size < EDGELOCK_TOKEN_TEXT) {
        return EDGELOCK_ERR_ARG;
    }
    l->impl.token().to_hex(buf);
    buf[owner_token::hex_size] = '\0';
    return EDGELOCK_OK;
}

}  // extern "C"
