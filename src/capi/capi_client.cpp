// The C API's client: made in the caller's memory, configured, driven by
// blocking calls or by the caller's own event loop.
#include <climits>
#include <cstring>
#include <new>

#include "capi_internal.hpp"

using namespace edgelock;
using namespace edgelock::capi;

static_assert(EDGELOCK_MAX_NODES == lock_max_nodes, "the C header's node limit");
static_assert(EDGELOCK_MAX_NAME == lock_max_name, "the C header's name limit");
static_assert(EDGELOCK_MAX_OWNER == lock_max_owner, "the C header's owner limit");
static_assert(EDGELOCK_MAX_HOLDER == lock_max_holder, "the C header's holder limit");
static_assert(EDGELOCK_TOKEN_TEXT == owner_token::hex_size + 1, "a token's text");
static_assert(EDGELOCK_WANT_READ == port::want_read && EDGELOCK_WANT_WRITE == port::want_write &&
                  EDGELOCK_READY_ERROR == port::ready_error,
              "the C header's readiness bits");

namespace {

// The most connections a client has (client<N, M>'s bound), and so the most
// fds it may want at once.
constexpr unsigned max_connections = 64;
constexpr std::size_t max_fds = client_base::fd_capacity_for(lock_max_nodes, max_connections);

constexpr std::size_t connections_at =
    align_up(sizeof(edgelock_client), alignof(detail::connection));

static_assert(sizeof(edgelock_client) <= EDGELOCK_CLIENT_BASE_BYTES,
              "EDGELOCK_CLIENT_BASE_BYTES too small for this build");
static_assert(connections_at - sizeof(edgelock_client) + sizeof(detail::connection) <=
                  EDGELOCK_CONNECTION_BYTES,
              "EDGELOCK_CONNECTION_BYTES too small for this build");

bool counts_ok(unsigned nodes, unsigned extra) noexcept {
    return nodes >= 1 && nodes <= lock_max_nodes && extra <= max_connections - nodes;
}

}  // namespace

extern "C" {

void edgelock_client_options_init(struct edgelock_client_options* o) {
    if (o == nullptr) {
        return;
    }
    const client_options d;
    o->connect_timeout_ms = static_cast<std::uint32_t>(d.connect_timeout.us / 1000);
    o->sentinel_timeout_ms = static_cast<std::uint32_t>(d.sentinel_timeout.us / 1000);
    o->reconnect_min_ms = static_cast<std::uint32_t>(d.reconnect_min.us / 1000);
    o->reconnect_max_ms = static_cast<std::uint32_t>(d.reconnect_max.us / 1000);
    o->stall_timeout_ms = static_cast<std::uint32_t>(d.stall_timeout.us / 1000);
    o->resp3 = d.resp3 ? 1 : 0;
    o->notify = d.notify ? 1 : 0;
    o->client_name = "edgelock";
    o->username = nullptr;
    o->password = nullptr;
    o->sentinel_username = nullptr;
    o->sentinel_password = nullptr;
    o->tls = nullptr;
}

size_t edgelock_client_size(unsigned nodes, unsigned extra) {
    if (!counts_ok(nodes, extra)) {
        return 0;
    }
    return connections_at + (nodes + extra) * sizeof(detail::connection);
}

int edgelock_client_init(void* mem, size_t size, unsigned nodes, unsigned extra,
                         const char* const* urls, size_t count,
                         const struct edgelock_client_options* options, edgelock_client** out) {
    if (out == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    *out = nullptr;
    if (mem == nullptr || (urls == nullptr && count != 0)) {
        return EDGELOCK_ERR_ARG;
    }
    if (!counts_ok(nodes, extra)) {
        return EDGELOCK_ERR_NODE_COUNT;
    }
    if (count == 0 || count > nodes) {
        return EDGELOCK_ERR_NODE_COUNT;
    }
    for (std::size_t i = 0; i < count; ++i) {
        if (urls[i] == nullptr) {
            return EDGELOCK_ERR_ARG;
        }
    }
    if (size < edgelock_client_size(nodes, extra) || !aligned_for<edgelock_client>(mem) ||
        !aligned_for<detail::connection>(static_cast<char*>(mem) + connections_at)) {
        return EDGELOCK_ERR_MEMORY;
    }
    edgelock_client_options defaults;
    if (options == nullptr) {
        edgelock_client_options_init(&defaults);
        options = &defaults;
    }
    client_options co;
    co.connect_timeout = ms(options->connect_timeout_ms);
    co.sentinel_timeout = ms(options->sentinel_timeout_ms);
    co.reconnect_min = ms(options->reconnect_min_ms);
    co.reconnect_max = ms(options->reconnect_max_ms);
    co.stall_timeout = ms(options->stall_timeout_ms);
    co.resp3 = options->resp3 != 0;
    co.notify = options->notify != 0;
    co.client_name = str_view(options->client_name);
    co.username = str_view(options->username);
    co.password = str_view(options->password);
    co.sentinel_username = str_view(options->sentinel_username);
    co.sentinel_password = str_view(options->sentinel_password);
    if (options->tls != nullptr) {
        co.via = options->tls->via;
    }

    const unsigned total = nodes + extra;
    auto* conns = reinterpret_cast<detail::connection*>(static_cast<char*>(mem) + connections_at);
    for (unsigned i = 0; i < total; ++i) {
        new (conns + i) detail::connection();
    }
    auto* c = new (mem)
        edgelock_client(conns, static_cast<std::uint8_t>(nodes), static_cast<std::uint8_t>(extra));
    str_view views[lock_max_nodes];
    for (std::size_t i = 0; i < count; ++i) {
        views[i] = str_view(urls[i]);
    }
    const client_errc e = c->impl.configure(views, count, co);
    if (e != client_errc::ok && e != client_errc::bad_url && e != client_errc::tls_not_built_in) {
        edgelock_client_deinit(c);
        return status_of(e);
    }
    // A bad URL leaves the client made, so that edgelock_client_bad_url()
    // can say which and why; it is not configured, and the caller deinits it.
    *out = c;
    return status_of(e);
}

void edgelock_client_deinit(edgelock_client* c) {
    if (c == nullptr) {
        return;
    }
    detail::connection* conns = c->connections;
    const unsigned total = c->connection_count;
    c->~edgelock_client();
    for (unsigned i = total; i > 0; --i) {
        conns[i - 1].~connection();
    }
}

size_t edgelock_client_bad_url(const edgelock_client* c, const char** why) {
    if (c == nullptr) {
        if (why != nullptr) {
            *why = "";
        }
        return 0;
    }
    if (why != nullptr) {
        *why = describe(c->impl.bad_url_error());
    }
    return c->impl.bad_url_index();
}

int edgelock_client_connect(edgelock_client* c, uint32_t timeout_ms, unsigned enough) {
    if (c == nullptr || enough > lock_max_nodes) {
        return EDGELOCK_ERR_ARG;
    }
    if (c->impl.node_count() == 0) {
        return EDGELOCK_ERR_NOT_CONFIGURED;
    }
    return c->impl.connect(port::now() + ms(timeout_ms), static_cast<std::uint8_t>(enough));
}

int edgelock_client_run_for(edgelock_client* c, uint32_t run_ms) {
    if (c == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    return status_of(c->impl.run_for(ms(run_ms)));
}

int edgelock_client_settle(edgelock_client* c, uint32_t timeout_ms) {
    if (c == nullptr) {
        return EDGELOCK_ERR_ARG;
    }
    return status_of(c->impl.settle(port::now() + ms(timeout_ms)));
}

void edgelock_client_disconnect(edgelock_client* c) {
    if (c != nullptr) {
        c->impl.disconnect();
    }
}

unsigned edgelock_client_node_count(const edgelock_client* c) {
    return c == nullptr ? 0 : c->impl.node_count();
}

int edgelock_client_node_state(const edgelock_client* c, unsigned i) {
    if (c == nullptr || i >= c->impl.node_count()) {
        return EDGELOCK_ERR_ARG;
    }
    return static_cast<int>(c->impl.node(static_cast<std::uint8_t>(i)).state);
}

size_t edgelock_client_fd_capacity(const edgelock_client* c) {
    return c == nullptr ? 0 : c->impl.fd_capacity();
}

size_t edgelock_client_wanted(const edgelock_client* c, struct edgelock_fd* out, size_t capacity) {
    if (c == nullptr || out == nullptr) {
        return 0;
    }
    port::wait_entry entries[max_fds];
    const std::size_t n = c->impl.wanted(entries, capacity < max_fds ? capacity : max_fds);
    for (std::size_t i = 0; i < n; ++i) {
        out[i].fd = entries[i].fd;
        out[i].want = entries[i].want;
        out[i].ready = 0;
    }
    return n;
}

uint64_t edgelock_client_next_deadline_us(const edgelock_client* c) {
    return c == nullptr ? UINT64_MAX : c->impl.next_deadline().us;
}

int edgelock_client_timeout_ms(const edgelock_client* c) {
    if (c == nullptr) {
        return -1;
    }
    const instant d = c->impl.next_deadline();
    if (d.is_never()) {
        return -1;
    }
    const instant now = port::now();
    if (d.us <= now.us) {
        return 0;
    }
    const std::uint64_t left = (d.us - now.us + 999) / 1000;
    return left > static_cast<std::uint64_t>(INT_MAX) ? INT_MAX : static_cast<int>(left);
}

void edgelock_client_on_ready(edgelock_client* c, const struct edgelock_fd* fds, size_t count) {
    if (c == nullptr) {
        return;
    }
    port::wait_entry entries[max_fds];
    std::size_t n = 0;
    bool any = false;
    for (std::size_t i = 0; fds != nullptr && i < count; ++i) {
        if (fds[i].ready == 0 || fds[i].fd < 0) {
            continue;
        }
        entries[n].fd = fds[i].fd;
        entries[n].want = fds[i].want;
        entries[n].ready = fds[i].ready;
        ++n;
        if (n == max_fds) {  // more entries than the client ever wants: in batches
            c->impl.on_ready(entries, n);
            n = 0;
            any = true;
        }
    }
    if (n > 0 || !any) {
        c->impl.on_ready(entries, n);
    }
}

void edgelock_client_on_timeout(edgelock_client* c) {
    if (c != nullptr) {
        c->impl.on_timeout();
    }
}

uint64_t edgelock_now_us(void) {
    return port::now().us;
}

}  // extern "C"
