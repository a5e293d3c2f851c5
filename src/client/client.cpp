// The driver: connections, set-up, pipelining and the service loop.
//
// Everything happens in service(): lock timeouts, the watchdog, connection
// deadlines, starting operations once their nodes are settled, and moving
// requests from the machines into the connections. It loops until a pass
// changes nothing, because every step can make work for another (a failed
// connection fails a round, which queues cleanups for the other nodes).
#include "edgelock/client.hpp"

#include <string.h>

#include "edgelock/lock_scripts.hpp"
#include "edgelock/resp_encoder.hpp"
#include "edgelock/server_info.hpp"

namespace edgelock {

namespace {

// Set-up steps, in the order they go out; each may be skipped.
enum : std::uint32_t {
    step_auth = 0,  // HELLO 3 [AUTH] [SETNAME], or AUTH
    step_select,
    step_setname,
    step_info_replication,  // a replica fails the node
    step_info_memory,       // an evicting policy is a warning
    step_script,            // + i for lock_scripts_all[i]
    step_end = step_script + lock_scripts_count,
    step_command = 0xfffffffeu,  // the reply to command()
    step_discard = 0xffffffffu,  // a reply whose lock was detached, or a command given up
};

constexpr std::size_t max_client_name = 64;
constexpr unsigned max_service_passes = 16;
constexpr unsigned max_addresses = 8;  // of one host name, tried in turn

bool fill_system_random(void*, void* buf, std::size_t size) {
    return port::random_bytes(buf, size);
}

bool starts_with_icase(str_view s, str_view prefix) {
    return s.size >= prefix.size && equals_icase(str_view(s.data, prefix.size), prefix);
}

bool valid_client_name(str_view name) {
    if (name.size > max_client_name) {
        return false;
    }
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == ':';
        if (!ok) {
            return false;
        }
    }
    return true;
}

node_error from_net(port::net_status s) {
    switch (s) {
    case port::net_status::refused:
        return node_error::refused;
    case port::net_status::unreachable:
    case port::net_status::no_address:
        return node_error::unreachable;
    case port::net_status::timed_out:
        return node_error::connect_timeout;
    case port::net_status::resolve_failed:
    case port::net_status::bad_argument:
        return node_error::resolve_failed;
    case port::net_status::closed:
        return node_error::closed;
    case port::net_status::reset:
        return node_error::reset;
    default:
        return node_error::io_error;
    }
}

resp_limits reply_limits() {
    resp_limits l;
    l.max_bulk = EDGELOCK_CLIENT_RX_BUFFER;
    l.max_line = EDGELOCK_CLIENT_RX_BUFFER;
    l.max_elements = EDGELOCK_CLIENT_REPLY_NODES;
    return l;
}

bool is_info_step(std::uint32_t step) {
    return step == step_info_replication || step == step_info_memory;
}

// The whole size of the bulk or verbatim string starting at `data` once its
// header is in, for a reply too long to buffer; 0 when it is not one, its
// header is not all there, or it is longer than any bulk string accepted
// (EDGELOCK_RESP_MAX_BULK: no INFO is that long).
std::size_t bulk_reply_size(const char* data, std::size_t size) {
    if (size == 0 || (data[0] != '$' && data[0] != '=')) {
        return 0;
    }
    bool header = false;
    for (std::size_t i = 1; i + 1 < size && !header; ++i) {
        header = data[i] == '\r' && data[i + 1] == '\n';
    }
    if (!header) {
        return 0;
    }
    resp_limits l = reply_limits();
    l.max_bulk = EDGELOCK_RESP_MAX_BULK;
    resp_decoder measure(l);
    const resp_result r = measure.decode(data, size, nullptr, 0);
    // With the header in, "incomplete" waits for the payload: needed is exact.
    return r.status == resp_status::incomplete ? r.needed : 0;
}

// Copies a server's text into a fixed buffer, control bytes made visible.
std::size_t copy_text(char* out, std::size_t capacity, str_view text) {
    const std::size_t k = text.size < capacity ? text.size : capacity;
    for (std::size_t i = 0; i < k; ++i) {
        const char ch = text.data[i];
        out[i] = (ch < 0x20 || ch == 0x7f) ? '?' : ch;
    }
    return k;
}

// Appends to a message being built, as much as fits.
void append_text(detail::connection& c, str_view text) {
    c.message_size +=
        copy_text(c.message + c.message_size, sizeof c.message - c.message_size, text);
}

// An error that says what the server told us keeps its message.
bool keeps_message(node_error why) {
    return why == node_error::auth_failed || why == node_error::select_failed ||
           why == node_error::hello_failed || why == node_error::setup_failed ||
           why == node_error::replica;
}

// A reply to a lock request: an error is the node's latest reason (the
// connection stays), anything else clears it.
void note_lock_reply(detail::connection& c, const resp_node* nodes, std::size_t count) {
    const std::size_t i = count > 0 ? skip_attributes(nodes, count, 0) : 0;
    if (i < count && nodes[i].is_error()) {
        c.error = node_error::server_error;
        c.code = 0;
        c.message_size = copy_text(c.message, sizeof c.message, nodes[i].text);
    } else if (c.error == node_error::server_error) {
        c.error = node_error::none;
        c.message_size = 0;
    }
}

}  // namespace

const char* describe(client_errc code) noexcept {
    switch (code) {
    case client_errc::ok:
        return "ok";
    case client_errc::not_configured:
        return "client not configured";
    case client_errc::bad_node_count:
        return "bad node count";
    case client_errc::bad_url:
        return "bad node URL";
    case client_errc::tls_not_built_in:
        return "TLS (rediss://) is not built in";
    case client_errc::secret_too_long:
        return "user name or password too long";
    case client_errc::user_without_password:
        return "a user name needs a password";
    case client_errc::bad_option:
        return "bad client option";
    case client_errc::in_use:
        return "locks are attached";
    case client_errc::already_attached:
        return "lock already attached";
    case client_errc::not_attached:
        return "lock not attached";
    case client_errc::lock_rejected:
        return "the lock refused the operation";
    case client_errc::busy:
        return "another operation of the lock is in progress";
    case client_errc::not_held:
        return "lock not held";
    case client_errc::deadline:
        return "operation exceeded its deadline";
    case client_errc::wait_failed:
        return "waiting for sockets failed";
    case client_errc::reentered:
        return "blocking call from inside a callback";
    case client_errc::node_unavailable:
        return "node unavailable";
    case client_errc::timed_out:
        return "no reply in time";
    }
    return "unknown client error";
}

const char* describe(node_state state) noexcept {
    switch (state) {
    case node_state::down:
        return "down";
    case node_state::backoff:
        return "waiting to reconnect";
    case node_state::connecting:
        return "connecting";
    case node_state::handshake:
        return "setting up";
    case node_state::ready:
        return "ready";
    }
    return "unknown node state";
}

const char* describe(node_error error) noexcept {
    switch (error) {
    case node_error::none:
        return "no error";
    case node_error::refused:
        return "connection refused";
    case node_error::unreachable:
        return "host unreachable";
    case node_error::resolve_failed:
        return "host name did not resolve";
    case node_error::connect_timeout:
        return "connect timed out";
    case node_error::auth_failed:
        return "authentication failed";
    case node_error::select_failed:
        return "SELECT failed";
    case node_error::setup_failed:
        return "server refused the connection set-up";
    case node_error::hello_failed:
        return "HELLO 3 failed (server without RESP3?)";
    case node_error::protocol_error:
        return "malformed reply";
    case node_error::reply_too_large:
        return "reply too large";
    case node_error::unexpected_reply:
        return "unexpected reply";
    case node_error::closed:
        return "connection closed by server";
    case node_error::reset:
        return "connection reset";
    case node_error::stalled:
        return "server stopped answering";
    case node_error::io_error:
        return "socket error";
    case node_error::replica:
        return "a replica (read-only): a lock needs a master";
    case node_error::server_error:
        return "the server refused the request";
    }
    return "unknown node error";
}

const char* describe(node_warning warning) noexcept {
    switch (warning) {
    case node_warning::none:
        return "no warning";
    case node_warning::may_evict:
        return "the server may evict lock keys (maxmemory with an evicting policy)";
    }
    return "unknown node warning";
}

random_source client_base::system_random() noexcept {
    random_source r;
    r.fill = fill_system_random;
    return r;
}

// --- configuration ----------------------------------------------------------------

client_errc client_base::configure(const str_view* urls, std::size_t count,
                                   const client_options& options) noexcept {
    if (locks_ != nullptr) {
        return client_errc::in_use;
    }
    if (count == 0 || count > capacity_ || urls == nullptr) {
        return client_errc::bad_node_count;
    }
    if (options.connect_timeout.us == 0 || options.stall_timeout.us == 0 ||
        options.reconnect_min.us == 0 || options.reconnect_min > options.reconnect_max ||
        !valid_client_name(options.client_name)) {
        return client_errc::bad_option;
    }
    if (options.username.size > node_url_max_secret ||
        options.password.size > node_url_max_secret) {
        return client_errc::secret_too_long;
    }
    node_address parsed[lock_max_nodes];
    for (std::size_t i = 0; i < count; ++i) {
        const url_errc e = parse_node_url(urls[i], parsed[i]);
        if (e != url_errc::ok) {
            bad_url_index_ = i;
            bad_url_error_ = e;
            return e == url_errc::tls_not_built_in ? client_errc::tls_not_built_in
                                                   : client_errc::bad_url;
        }
        char scratch[node_url_max_secret];
        if (node_url_decode(parsed[i].user, scratch, sizeof scratch) == SIZE_MAX ||
            node_url_decode(parsed[i].password, scratch, sizeof scratch) == SIZE_MAX) {
            bad_url_index_ = i;
            bad_url_error_ = url_errc::bad_userinfo;
            return client_errc::secret_too_long;
        }
        const bool user = !options.username.empty() || !parsed[i].user.empty();
        const bool password = !options.password.empty() || parsed[i].has_password;
        if (user && !password) {
            bad_url_index_ = i;
            bad_url_error_ = url_errc::ok;
            return client_errc::user_without_password;
        }
    }
    disconnect();
    for (std::uint8_t i = 0; i < capacity_; ++i) {
        detail::connection& c = conns_[i];
        c.address = i < count ? parsed[i] : node_address{};
        c.state = node_state::down;
        c.error = node_error::none;
        c.code = 0;
        c.failures = 0;
        c.message_size = 0;
        c.warning = node_warning::none;
        c.policy_size = 0;
    }
    node_count_ = static_cast<std::uint8_t>(count);
    options_ = options;
    bad_url_index_ = 0;
    bad_url_error_ = url_errc::ok;
    return client_errc::ok;
}

node_info client_base::node(std::uint8_t index) const noexcept {
    node_info info;
    if (index >= node_count_) {
        return info;
    }
    const detail::connection& c = conns_[index];
    info.state = c.state;
    info.error = c.error;
    info.code = c.code;
    info.message = str_view(c.message, c.message_size);
    info.warning = c.warning;
    info.maxmemory_policy = str_view(c.policy, c.policy_size);
    return info;
}

void client_base::shutdown() noexcept {
    disconnect();
    while (locks_ != nullptr) {
        locks_->detach();
    }
}

client_base::~client_base() {
    // client<N> has shut down already (its connections die before this runs).
    while (locks_ != nullptr) {
        locks_->detach();
    }
}

// --- lock list ----------------------------------------------------------------------

void client_base::link(client_lock& l) noexcept {
    l.next_ = locks_;
    locks_ = &l;
}

void client_base::unlink(client_lock& l) noexcept {
    for (client_lock** p = &locks_; *p != nullptr; p = &(*p)->next_) {
        if (*p == &l) {
            *p = l.next_;
            break;
        }
    }
    l.next_ = nullptr;
    // Replies still due for it are read and thrown away.
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        detail::connection& c = conns_[n];
        for (std::uint16_t i = 0; i < c.fifo_count; ++i) {
            detail::pending_reply& p = c.fifo[(c.fifo_head + i) % EDGELOCK_CLIENT_PIPELINE];
            if (p.lock == &l) {
                p.lock = nullptr;
                p.tag = step_discard;
            }
        }
    }
}

// --- connections ----------------------------------------------------------------------

void client_base::disconnect() noexcept {
    const instant now = port::now();
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        if (conns_[n].fd >= 0) {
            drop(n, now);
        }
        conns_[n].state = node_state::down;
        conns_[n].failures = 0;
    }
}

// Closes the socket and tells every lock with a request on it.
void client_base::drop(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.fd >= 0) {
        port::close(c.fd);
        c.fd = -1;
    }
    c.rx_size = 0;
    c.tx_size = 0;
    c.skip = 0;
    c.want_write = false;
    c.setup_step = 0;
    c.setup_pending = 0;
    for (std::uint16_t i = 0; i < c.fifo_count; ++i) {
        const detail::pending_reply& p = c.fifo[(c.fifo_head + i) % EDGELOCK_CLIENT_PIPELINE];
        if (p.lock == nullptr && p.tag == step_command && command_fn_ != nullptr) {
            const reply_callback fn = command_fn_;
            command_fn_ = nullptr;
            fn(command_ctx_, nullptr, 0);
        }
    }
    c.fifo_count = 0;
    c.fifo_head = 0;
    // Every lock hears of it (once), whether or not it had a request out: the
    // machine ignores a disconnect that concerns nothing of its own.
    for (client_lock* l = locks_; l != nullptr;) {
        client_lock* next = l->next_;
        l->machine_.on_disconnected(n, now);
        pump_events(*l, now);
        l = next;
    }
}

void client_base::fail(std::uint8_t n, node_error why, int code, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.error = why;
    c.code = code;
    if (!keeps_message(why)) {
        c.message_size = 0;
    }
    drop(n, now);
    // Exponential backoff with jitter in [delay/2, delay].
    std::uint64_t delay = options_.reconnect_min.us;
    for (std::uint8_t i = 0; i < c.failures && delay < options_.reconnect_max.us; ++i) {
        delay *= 2;
    }
    if (delay > options_.reconnect_max.us) {
        delay = options_.reconnect_max.us;
    }
    std::uint64_t jittered = delay;
    if (!random_between(system_random(), delay / 2, delay, jittered)) {
        jittered = delay;
    }
    if (c.failures < 255) {
        ++c.failures;
    }
    c.state = node_state::backoff;
    c.deadline = now + duration::micros(jittered);
}

void client_base::fail_message(std::uint8_t n, node_error why, const resp_node* nodes,
                               std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.message_size = 0;
    if (count > 0 && nodes[0].has_text()) {
        c.message_size = copy_text(c.message, sizeof c.message, nodes[0].text);
    }
    fail(n, why, 0, now);
}

void client_base::start_connect(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.deadline = now + options_.connect_timeout;
    c.attempt = 0;
    try_addresses(n, now);
}

void client_base::connect_ready(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    const port::net_result r = port::connect_finish(c.fd);
    if (r.status == port::net_status::ok) {
        connected(n, now);
        return;
    }
    if (r.status == port::net_status::in_progress) {
        return;  // a stale readiness report; the connect goes on
    }
    port::close(c.fd);
    c.fd = -1;
    c.error = from_net(r.status);
    c.code = r.code;
    ++c.attempt;  // the next address, within the same deadline
    try_addresses(n, now);
}

// Starts connecting to the node's addresses from c.attempt on, keeping the
// first that connects or is in progress (a name may resolve to IPv6 and
// IPv4). When none is left the node fails with the last address's reason.
void client_base::try_addresses(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    port::endpoint where;
    where.host = c.address.host;
    where.port = c.address.port;
    where.unix_path = c.address.unix_path;
    for (; c.attempt < max_addresses; ++c.attempt) {
        int fd = -1;
        const port::net_result r = port::connect(where, c.attempt, fd);
        if (r.status == port::net_status::ok) {
            c.fd = fd;
            connected(n, now);
            return;
        }
        if (r.status == port::net_status::in_progress) {
            c.fd = fd;
            c.state = node_state::connecting;
            c.want_write = true;
            return;
        }
        if (r.status == port::net_status::no_address && c.attempt > 0) {
            break;
        }
        c.error = from_net(r.status);
        c.code = r.code;
        // Only another address of the same name can do better.
        if (!c.address.unix_path.empty() || r.status == port::net_status::resolve_failed ||
            r.status == port::net_status::bad_argument ||
            r.status == port::net_status::no_address) {
            break;
        }
    }
    fail(n, c.error, c.code, now);
}

void client_base::connected(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.state = node_state::handshake;
    c.want_write = false;
    c.rx_size = 0;
    c.tx_size = 0;
    c.fifo_head = 0;
    c.fifo_count = 0;
    c.setup_step = 0;
    c.setup_pending = 0;
    c.message_size = 0;
    c.skip = 0;
    c.warning = node_warning::none;  // this connection's INFO says anew
    c.policy_size = 0;
    c.progress_at = now;
    fill_setup(n, now);
}

bool client_base::push_pending(std::uint8_t n, client_lock* l, std::uint32_t tag,
                               instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.fifo_count == EDGELOCK_CLIENT_PIPELINE) {
        return false;
    }
    if (c.fifo_count == 0) {
        c.progress_at = now;
    }
    c.fifo[(c.fifo_head + c.fifo_count) % EDGELOCK_CLIENT_PIPELINE] = detail::pending_reply{l, tag};
    ++c.fifo_count;
    return true;
}

// Writes the set-up requests that fit; the rest follow as the buffer drains.
void client_base::fill_setup(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    const node_address& a = c.address;
    char user[node_url_max_secret];
    char password[node_url_max_secret];
    str_view user_view = options_.username;
    str_view password_view = options_.password;
    if (user_view.empty() && !a.user.empty()) {
        user_view = str_view(user, node_url_decode(a.user, user, sizeof user));
    }
    if (password_view.empty() && a.has_password) {
        password_view = str_view(password, node_url_decode(a.password, password, sizeof password));
    }
    const bool auth = !options_.password.empty() || a.has_password;
    while (c.setup_step < step_end && c.fifo_count < EDGELOCK_CLIENT_PIPELINE) {
        str_view args[8];
        std::size_t argc = 0;
        const std::uint32_t step = c.setup_step;
        decimal_arg db(static_cast<std::int64_t>(a.db));
        if (step == step_auth) {
            if (options_.resp3) {
                args[argc++] = "HELLO";
                args[argc++] = "3";
                if (auth) {
                    args[argc++] = "AUTH";
                    args[argc++] = user_view.empty() ? str_view("default") : user_view;
                    args[argc++] = password_view;
                }
                if (!options_.client_name.empty()) {
                    args[argc++] = "SETNAME";
                    args[argc++] = options_.client_name;
                }
            } else if (auth) {
                args[argc++] = "AUTH";
                if (!user_view.empty()) {
                    args[argc++] = user_view;
                }
                args[argc++] = password_view;
            }
        } else if (step == step_select) {
            if (a.db != 0) {
                args[argc++] = "SELECT";
                args[argc++] = db.view();
            }
        } else if (step == step_setname) {
            if (!options_.resp3 && !options_.client_name.empty()) {
                args[argc++] = "CLIENT";
                args[argc++] = "SETNAME";
                args[argc++] = options_.client_name;
            }
        } else if (step == step_info_replication) {
            args[argc++] = "INFO";
            args[argc++] = "replication";
        } else if (step == step_info_memory) {
            args[argc++] = "INFO";
            args[argc++] = "memory";
        } else {
            args[argc++] = "SCRIPT";
            args[argc++] = "LOAD";
            args[argc++] = lock_scripts_all[step - step_script]->text;
        }
        if (argc == 0) {
            ++c.setup_step;
            continue;
        }
        const resp_encoded e =
            resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, args, argc);
        if (e.error != resp_encode_errc::ok) {
            break;  // no room now; the rest goes once the buffer drains
        }
        c.tx_size += e.size;
        push_pending(n, nullptr, step, now);
        ++c.setup_pending;
        ++c.setup_step;
    }
    // Secrets do not linger on the stack longer than needed.
    volatile char* wipe_user = user;
    volatile char* wipe_password = password;
    for (std::size_t i = 0; i < sizeof user; ++i) {
        wipe_user[i] = 0;
        wipe_password[i] = 0;
    }
}

void client_base::setup_reply(std::uint8_t n, std::uint32_t step, const resp_node* nodes,
                              std::size_t count, instant now) noexcept {
    detail::connection& c = conns_[n];
    --c.setup_pending;
    const bool error = count > 0 && nodes[0].is_error();
    if (error) {
        const str_view text = nodes[0].text;
        // A server that wants a password says NOAUTH to whatever comes first.
        if (starts_with_icase(text, "NOAUTH") || starts_with_icase(text, "WRONGPASS")) {
            fail_message(n, node_error::auth_failed, nodes, count, now);
            return;
        }
        if (step == step_auth) {
            node_error why = node_error::setup_failed;  // LOADING, max clients, ...
            if (options_.resp3 && (starts_with_icase(text, "NOPROTO") ||
                                   starts_with_icase(text, "ERR unknown command"))) {
                why = node_error::hello_failed;
            } else if (starts_with_icase(text, "ERR invalid") ||
                       starts_with_icase(text, "ERR AUTH") ||
                       starts_with_icase(text, "ERR Client sent AUTH")) {
                why = node_error::auth_failed;
            }
            fail_message(n, why, nodes, count, now);
            return;
        }
        if (step == step_select) {
            fail_message(n, node_error::select_failed, nodes, count, now);
            return;
        }
        // CLIENT SETNAME, INFO and SCRIPT LOAD may be denied by an ACL. The
        // scripts then go as EVAL on NOSCRIPT (or fail there, with the
        // server's reason); without INFO nothing is known, and nothing said.
    } else if (is_info_step(step)) {
        // No text (an oversized reply that was skipped, or not a string):
        // nothing is known.
        const server_info info = parse_server_info(server_info_text(nodes, count));
        if (step == step_info_replication && info.role == server_role::replica) {
            c.message_size = 0;
            if (!info.master_host.empty()) {
                append_text(c, "replica of ");
                append_text(c, info.master_host);
                if (!info.master_port.empty()) {
                    append_text(c, ":");
                    append_text(c, info.master_port);
                }
            } else {
                append_text(c, "role:slave");
            }
            fail(n, node_error::replica, 0, now);
            return;
        }
        if (step == step_info_memory) {
            c.policy_size = static_cast<std::uint8_t>(
                copy_text(c.policy, sizeof c.policy, info.maxmemory_policy));
            c.warning = server_may_evict(info) ? node_warning::may_evict : node_warning::none;
        }
    }
    if (c.setup_step == step_end && c.setup_pending == 0) {
        c.state = node_state::ready;
        c.error = node_error::none;
        c.code = 0;
        c.failures = 0;
    }
}

// --- I/O --------------------------------------------------------------------------------

// Moves requests from the machines into the buffer, then the buffer into the
// socket, until one of them is full or nothing is left.
void client_base::transmit(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    for (unsigned guard = 0; guard < 1024 && c.fd >= 0; ++guard) {
        if (c.state == node_state::handshake) {
            fill_setup(n, now);
        } else if (c.state == node_state::ready) {
            fill(n, now);
        }
        if (c.tx_size == 0) {
            c.want_write = false;
            return;
        }
        const port::net_result r = port::send(c.fd, c.tx, c.tx_size);
        if (r.status == port::net_status::would_block) {
            c.want_write = true;
            return;
        }
        if (r.status != port::net_status::ok) {
            fail(n, from_net(r.status), r.code, now);
            return;
        }
        if (r.size < c.tx_size) {
            memmove(c.tx, c.tx + r.size, c.tx_size - r.size);
        }
        c.tx_size -= r.size;
    }
}

void client_base::fill(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    for (client_lock* l = locks_; l != nullptr; l = l->next_) {
        while (c.fifo_count < EDGELOCK_CLIENT_PIPELINE) {
            // Fill the buffer to the brim: a request that does not fit is
            // left with its machine (nothing written) until the buffer has
            // gone out. An empty buffer always holds one (lock_max_request).
            const lock_transmit t =
                l->machine_.poll_transmit(n, c.tx + c.tx_size, sizeof c.tx - c.tx_size);
            if (t.error == lock_errc::buffer_too_small) {
                return;
            }
            if (t.error != lock_errc::ok || t.size == 0) {
                break;
            }
            c.tx_size += t.size;
            push_pending(n, l, t.tag, now);
        }
    }
}

void client_base::read(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    for (unsigned guard = 0; guard < 1024 && c.fd >= 0; ++guard) {
        if (c.rx_size == sizeof c.rx) {
            fail(n, node_error::reply_too_large, 0, now);
            return;
        }
        const std::size_t space = sizeof c.rx - c.rx_size;
        const port::net_result r = port::recv(c.fd, c.rx + c.rx_size, space);
        if (r.status == port::net_status::would_block) {
            return;
        }
        if (r.status != port::net_status::ok) {
            fail(n, from_net(r.status), r.code, now);
            return;
        }
        c.rx_size += r.size;
        process_replies(n, now);
        // A short read took everything the socket had: stop rather than pay
        // a system call for the would-block. Data arriving later makes the fd
        // readable again (level- and edge-triggered waits both report it).
        if (r.size < space) {
            return;
        }
    }
}

void client_base::process_replies(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    std::size_t pos = 0;
    while (c.fd >= 0 && pos < c.rx_size) {
        if (c.skip > 0) {
            const std::size_t k = c.skip < c.rx_size - pos ? c.skip : c.rx_size - pos;
            pos += k;
            c.skip -= k;
            c.progress_at = now;
            continue;
        }
        resp_decoder decoder(reply_limits());
        resp_result r =
            decoder.decode(c.rx + pos, c.rx_size - pos, nodes_, EDGELOCK_CLIENT_REPLY_NODES);
        const bool too_long =
            (r.status == resp_status::incomplete && r.needed > sizeof c.rx) ||
            (r.status == resp_status::error && r.error == resp_errc::bulk_too_long);
        if (too_long && skip_info(n, pos, now)) {
            continue;  // its bytes are skipped as they come
        }
        if (r.status == resp_status::incomplete) {
            if (r.needed > sizeof c.rx) {
                fail(n, node_error::reply_too_large, 0, now);
                return;
            }
            break;
        }
        bool kept = true;
        if (r.status == resp_status::error) {
            if (r.error != resp_errc::node_capacity) {
                fail(n,
                     r.error == resp_errc::bulk_too_long || r.error == resp_errc::line_too_long ||
                             r.error == resp_errc::too_many_elements
                         ? node_error::reply_too_large
                         : node_error::protocol_error,
                     0, now);
                return;
            }
            // Too many nodes to keep (a large HELLO map): measure it instead.
            resp_decoder measure(reply_limits());
            r = measure.decode(c.rx + pos, c.rx_size - pos, nullptr, 0);
            if (r.status == resp_status::incomplete) {
                break;
            }
            if (r.status == resp_status::error) {
                fail(n, node_error::protocol_error, 0, now);
                return;
            }
            kept = false;
        }
        const char first = c.rx[pos];
        pos += r.size;
        c.progress_at = now;
        const bool push = kept ? nodes_[skip_attributes(nodes_, r.nodes, 0)].type == resp_type::push
                               : first == '>';
        if (push) {
            continue;  // a RESP3 push (tracking, pub/sub): nothing we asked for
        }
        if (c.fifo_count == 0) {
            fail(n, node_error::unexpected_reply, 0, now);
            return;
        }
        const detail::pending_reply p = c.fifo[c.fifo_head];
        c.fifo_head = static_cast<std::uint16_t>((c.fifo_head + 1) % EDGELOCK_CLIENT_PIPELINE);
        --c.fifo_count;
        if (p.lock == nullptr) {
            if (p.tag == step_discard) {
                continue;
            }
            if (p.tag == step_command) {
                if (command_fn_ != nullptr) {
                    const reply_callback fn = command_fn_;
                    command_fn_ = nullptr;
                    fn(command_ctx_, kept ? nodes_ : nullptr, kept ? r.nodes : 0);
                }
                continue;
            }
            if (!kept) {
                // Only an error needs reading, and an error is one node.
                resp_node err;
                err.type = first == '-' ? resp_type::simple_error : resp_type::map;
                setup_reply(n, p.tag, &err, first == '-' || first == '!' ? 1 : 0, now);
            } else {
                setup_reply(n, p.tag, nodes_, r.nodes, now);
            }
            continue;
        }
        if (!kept) {
            fail(n, node_error::unexpected_reply, 0, now);
            return;
        }
        // Before the machine: a callback it triggers may ask node(n) why.
        note_lock_reply(c, nodes_, r.nodes);
        p.lock->machine_.on_reply(n, p.tag, nodes_, r.nodes, now);
        pump_events(*p.lock, now);
    }
    if (c.fd < 0) {
        return;  // dropped meanwhile; the buffer is already empty
    }
    if (pos > 0) {
        memmove(c.rx, c.rx + pos, c.rx_size - pos);
        c.rx_size -= pos;
    }
}

// A set-up INFO reply longer than the receive buffer (a future server's, say)
// does not fail the node: when the reply at `pos` is one, it is answered as
// "nothing known" now and its bytes are thrown away as they arrive.
bool client_base::skip_info(std::uint8_t n, std::size_t pos, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.fifo_count == 0) {
        return false;
    }
    const detail::pending_reply p = c.fifo[c.fifo_head];
    if (p.lock != nullptr || !is_info_step(p.tag)) {
        return false;
    }
    const std::size_t size = bulk_reply_size(c.rx + pos, c.rx_size - pos);
    if (size == 0) {
        return false;
    }
    c.fifo_head = static_cast<std::uint16_t>((c.fifo_head + 1) % EDGELOCK_CLIENT_PIPELINE);
    --c.fifo_count;
    c.skip = size;
    c.progress_at = now;
    setup_reply(n, p.tag, nullptr, 0, now);
    return true;
}

// --- events and the service loop ----------------------------------------------------------

void client_base::pump_events(client_lock& l, instant now) noexcept {
    lock_event ev;
    while (l.machine_.poll_event(ev)) {
        l.last_event_ = ev;
        switch (ev.kind) {
        case lock_event_kind::acquired:
        case lock_event_kind::renewed: {
            duration every = l.watchdog_.renew_every;
            if (every.us == 0) {
                every = duration::micros(l.ttl_.us / 3);
            }
            l.renew_at_ = l.watchdog_.enabled ? now + every : instant::never();
            break;
        }
        case lock_event_kind::renew_failed:
            break;
        default:
            l.renew_at_ = instant::never();
            break;
        }
        if (l.running_ != client_lock::op::none) {
            bool ends = false;
            switch (l.running_) {
            case client_lock::op::acquire:
                ends = ev.kind == lock_event_kind::acquired || ev.kind == lock_event_kind::busy ||
                       ev.kind == lock_event_kind::failed;
                break;
            case client_lock::op::renew:
                ends = ev.kind == lock_event_kind::renewed || ev.kind == lock_event_kind::lost;
                break;
            case client_lock::op::release:
                ends = ev.kind == lock_event_kind::released;
                break;
            case client_lock::op::none:
                break;
            }
            if (ends) {
                l.running_ = client_lock::op::none;
                if (l.waiter_ != nullptr) {
                    l.waiter_->event = ev;
                    l.waiter_ = nullptr;
                }
            }
        }
        notify(l, ev);
    }
}

// Someone needs node n connected: an explicit connect(), a lock with an
// operation under way or held (the watchdog will need it), or a request or
// cleanup waiting for it.
bool client_base::node_wanted(std::uint8_t n) const noexcept {
    if (connect_wanted_) {
        return true;
    }
    for (const client_lock* l = locks_; l != nullptr; l = l->next_) {
        if (lock_active(*l) || l->machine_.pending_send(n) != lock::pending::none) {
            return true;
        }
    }
    return false;
}

void client_base::notify(client_lock& l, const lock_event& ev) noexcept {
    if (l.callback_ != nullptr) {
        const bool outer = in_callback_;
        in_callback_ = true;
        l.callback_(l.callback_ctx_, l, ev);
        in_callback_ = outer;
    }
}

// No node is connecting or setting up.
bool client_base::all_settled() const noexcept {
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        if (!node_settled(n)) {
            return false;
        }
    }
    return true;
}

std::uint8_t client_base::ready_count() const noexcept {
    std::uint8_t ready = 0;
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        ready = static_cast<std::uint8_t>(ready + (conns_[n].state == node_state::ready ? 1 : 0));
    }
    return ready;
}

bool client_base::node_settled(std::uint8_t n) const noexcept {
    const node_state s = conns_[n].state;
    return s == node_state::ready || s == node_state::backoff || s == node_state::down;
}

bool client_base::lock_active(const client_lock& l) const noexcept {
    return l.pending_ != client_lock::op::none || l.running_ != client_lock::op::none ||
           l.machine_.state() != lock_state::idle;
}

void client_base::begin(client_lock& l, instant now) noexcept {
    const client_lock::op kind = l.pending_;
    l.pending_ = client_lock::op::none;
    lock_errc e = lock_errc::ok;
    switch (kind) {
    case client_lock::op::acquire:
        e = l.machine_.set_retry(l.max_tries_, l.wait_);
        if (e == lock_errc::ok) {
            e = l.machine_.acquire(now);
        }
        break;
    case client_lock::op::renew:
        e = l.machine_.state() == lock_state::renewing ? lock_errc::ok : l.machine_.renew(now);
        break;
    case client_lock::op::release:
        e = l.machine_.state() == lock_state::idle ? lock_errc::not_held : l.machine_.release(now);
        break;
    case client_lock::op::none:
        return;
    }
    if (e != lock_errc::ok) {
        // The lock moved on while its nodes connected (lost, say, and that was
        // reported), or the machine refused (no random bytes for a token).
        l.lock_error_ = e;
        l.running_ = client_lock::op::none;
        if (l.waiter_ != nullptr) {
            l.waiter_->error =
                e == lock_errc::not_held ? client_errc::not_held : client_errc::lock_rejected;
            l.waiter_->lock_error = e;
            l.waiter_ = nullptr;
        }
        if (kind == client_lock::op::acquire) {
            // An event-loop owner waits for an outcome: give it one.
            lock_event ev;
            ev.kind = lock_event_kind::failed;
            ev.reason = e == lock_errc::random_failed ? lock_failure::random_failed
                                                      : lock_failure::no_quorum;
            notify(l, ev);
        }
        return;
    }
    l.running_ = kind;
    pump_events(l, now);  // renew can report lost at once
}

void client_base::service(instant now) noexcept {
    if (node_count_ == 0) {
        return;
    }
    for (unsigned pass = 0; pass < max_service_passes; ++pass) {
        bool changed = false;
        // Lock deadlines and the watchdog.
        for (client_lock* l = locks_; l != nullptr; l = l->next_) {
            if (l->machine_.next_deadline() <= now) {
                l->machine_.on_timeout(now);
                pump_events(*l, now);
            }
            if (l->renew_at_ <= now) {
                l->renew_at_ = instant::never();
                if (l->machine_.state() == lock_state::held &&
                    l->pending_ == client_lock::op::none && l->running_ == client_lock::op::none) {
                    l->pending_ = client_lock::op::renew;
                    l->pending_since_ = now;
                    changed = true;
                }
            }
        }
        // Connection deadlines.
        for (std::uint8_t n = 0; n < node_count_; ++n) {
            detail::connection& c = conns_[n];
            if ((c.state == node_state::connecting || c.state == node_state::handshake) &&
                c.deadline <= now) {
                fail(n, node_error::connect_timeout, 0, now);
                changed = true;
            } else if (c.state == node_state::ready && c.fifo_count > 0 &&
                       c.progress_at + options_.stall_timeout <= now) {
                fail(n, node_error::stalled, 0, now);
                changed = true;
            }
        }
        // Connect nodes someone needs.
        for (std::uint8_t n = 0; n < node_count_; ++n) {
            detail::connection& c = conns_[n];
            if ((c.state == node_state::down ||
                 (c.state == node_state::backoff && c.deadline <= now)) &&
                node_wanted(n)) {
                start_connect(n, now);
                changed = true;
            }
        }
        // Start operations once no node is still connecting, or once they
        // have waited a node_timeout for one: a node stuck in set-up (a frozen
        // server completes the TCP handshake) then counts as a "no" like any
        // node that does not answer in time, instead of holding up the round.
        const bool settled = all_settled();
        for (client_lock* l = locks_; l != nullptr; l = l->next_) {
            if (l->pending_ != client_lock::op::none &&
                (settled || l->pending_since_ + l->node_timeout_ <= now)) {
                begin(*l, now);
                changed = true;
            }
        }
        // Requests: out on ready connections; failed at once on nodes that
        // are down (a cleanup stays queued for when the node is back).
        for (std::uint8_t n = 0; n < node_count_; ++n) {
            detail::connection& c = conns_[n];
            if (c.state == node_state::ready || c.state == node_state::handshake) {
                const std::size_t before = c.fifo_count;
                transmit(n, now);
                changed = changed || c.fifo_count != before;
            } else if (c.state == node_state::backoff || c.state == node_state::down) {
                for (client_lock* l = locks_; l != nullptr; l = l->next_) {
                    if (l->machine_.pending_send(n) == lock::pending::request) {
                        char scratch[lock_max_request];
                        l->machine_.poll_transmit(n, scratch, sizeof scratch);
                        l->machine_.on_disconnected(n, now);
                        pump_events(*l, now);
                        changed = true;
                    }
                }
            }
        }
        if (!changed) {
            return;
        }
    }
}

// --- event-loop API ---------------------------------------------------------------------

std::size_t client_base::wanted(port::wait_entry* out, std::size_t capacity) const noexcept {
    std::size_t count = 0;
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        const detail::connection& c = conns_[n];
        if (c.fd < 0) {
            continue;
        }
        if (count < capacity) {
            port::wait_entry& e = out[count];
            e.fd = c.fd;
            e.ready = 0;
            if (c.state == node_state::connecting) {
                e.want = port::want_write;
            } else {
                e.want = static_cast<std::uint8_t>(port::want_read |
                                                   (c.want_write ? port::want_write : 0));
            }
        }
        ++count;
    }
    return count;
}

instant client_base::next_deadline() const noexcept {
    instant next = instant::never();
    const bool settled = all_settled();
    for (const client_lock* l = locks_; l != nullptr; l = l->next_) {
        next = earliest(next, l->machine_.next_deadline());
        next = earliest(next, l->renew_at_);
        if (l->pending_ != client_lock::op::none) {
            // Started from a callback, say: due now unless a node is connecting.
            next = earliest(next, settled ? instant{0} : l->pending_since_ + l->node_timeout_);
        }
    }
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        const detail::connection& c = conns_[n];
        if (c.state == node_state::connecting || c.state == node_state::handshake) {
            next = earliest(next, c.deadline);
        } else if (c.state == node_state::down && node_wanted(n)) {
            next = instant{0};
        } else if (c.state == node_state::backoff && node_wanted(n)) {
            next = earliest(next, c.deadline);
        } else if (c.state == node_state::ready && c.fifo_count > 0) {
            next = earliest(next, c.progress_at + options_.stall_timeout);
        }
    }
    return next;
}

void client_base::handle_ready(int fd, std::uint8_t events, instant now) noexcept {
    for (std::uint8_t n = 0; n < node_count_; ++n) {
        detail::connection& c = conns_[n];
        if (c.fd != fd || fd < 0) {
            continue;
        }
        if (c.state == node_state::connecting) {
            if ((events & (port::want_write | port::ready_error)) != 0) {
                connect_ready(n, now);
            }
            return;
        }
        if ((events & (port::want_read | port::ready_error)) != 0) {
            // Fresh time for every connection: callbacks run in between, and a
            // validity is judged against the moment a reply is handled.
            read(n, port::now());
        }
        if (c.fd >= 0 && (events & port::want_write) != 0) {
            transmit(n, now);
        }
        return;
    }
}

void client_base::on_ready(int fd, std::uint8_t events) noexcept {
    const instant now = port::now();
    handle_ready(fd, events, now);
    service(now);
}

void client_base::on_ready(const port::wait_entry* entries, std::size_t count) noexcept {
    // Every event first, then one service: service() may open a connection
    // whose fd number an entry of this batch still names.
    for (std::size_t i = 0; i < count; ++i) {
        if (entries[i].ready != 0) {
            handle_ready(entries[i].fd, entries[i].ready, port::now());
        }
    }
    service(port::now());
}

void client_base::on_timeout() noexcept {
    service(port::now());
}

// One wait for I/O, at most until `until`, then service.
client_errc client_base::step(instant until) noexcept {
    port::wait_entry entries[lock_max_nodes];
    const std::size_t count = wanted(entries, lock_max_nodes);
    const instant deadline = earliest(next_deadline(), until);
    const int ready = port::wait(entries, count, deadline);
    if (ready < 0) {
        return client_errc::wait_failed;
    }
    if (ready > 0) {
        on_ready(entries, count);
    } else {
        service(port::now());
    }
    return client_errc::ok;
}

client_errc client_base::run_until(instant deadline) noexcept {
    if (in_callback_) {
        return client_errc::reentered;
    }
    if (node_count_ == 0) {
        return client_errc::not_configured;
    }
    service(port::now());
    while (port::now() < deadline) {
        const client_errc e = step(deadline);
        if (e != client_errc::ok) {
            return e;
        }
    }
    return client_errc::ok;
}

std::uint8_t client_base::connect(instant deadline, std::uint8_t enough) noexcept {
    if (in_callback_ || node_count_ == 0) {
        return 0;
    }
    connect_wanted_ = true;
    service(port::now());
    for (;;) {
        if (all_settled() || (enough > 0 && ready_count() >= enough) || port::now() >= deadline ||
            step(deadline) != client_errc::ok) {
            break;
        }
    }
    connect_wanted_ = false;
    return ready_count();
}

client_errc client_base::command(std::uint8_t index, const str_view* args, std::size_t argc,
                                 instant deadline, reply_callback fn, void* ctx) noexcept {
    if (in_callback_) {
        return client_errc::reentered;
    }
    if (node_count_ == 0) {
        return client_errc::not_configured;
    }
    // Arguments that can never go out are refused before anything is connected
    // or waited for: none at all, or more than the send buffer holds.
    const std::size_t size = resp_command_size(args, argc);
    if (index >= node_count_ || fn == nullptr || command_fn_ != nullptr || size == 0 ||
        size > EDGELOCK_CLIENT_TX_BUFFER) {
        return client_errc::bad_option;
    }
    detail::connection& c = conns_[index];
    if (c.state != node_state::ready) {
        connect(deadline);
    }
    // Room in the buffer and the pipeline: let what is queued drain first.
    while (c.state == node_state::ready &&
           (c.fifo_count == EDGELOCK_CLIENT_PIPELINE || size > sizeof c.tx - c.tx_size) &&
           port::now() < deadline) {
        if (step(deadline) != client_errc::ok) {
            break;
        }
    }
    if (c.state != node_state::ready) {
        return client_errc::node_unavailable;
    }
    const resp_encoded e =
        resp_encode_command(c.tx + c.tx_size, sizeof c.tx - c.tx_size, args, argc);
    if (e.error != resp_encode_errc::ok || c.fifo_count == EDGELOCK_CLIENT_PIPELINE) {
        return e.error == resp_encode_errc::ok ? client_errc::timed_out : client_errc::bad_option;
    }
    c.tx_size += e.size;
    push_pending(index, nullptr, step_command, port::now());
    command_fn_ = fn;
    command_ctx_ = ctx;
    transmit(index, port::now());
    while (command_fn_ != nullptr && port::now() < deadline) {
        if (step(deadline) != client_errc::ok) {
            break;
        }
    }
    if (command_fn_ == nullptr) {
        return client_errc::ok;
    }
    // Given up: its reply, if it ever comes, is read and thrown away.
    command_fn_ = nullptr;
    for (std::uint16_t i = 0; i < c.fifo_count; ++i) {
        detail::pending_reply& p = c.fifo[(c.fifo_head + i) % EDGELOCK_CLIENT_PIPELINE];
        if (p.lock == nullptr && p.tag == step_command) {
            p.tag = step_discard;
        }
    }
    return client_errc::timed_out;
}

// --- client_lock --------------------------------------------------------------------------

client_errc client_lock::attach(client_base& c, str_view name, const lock_options& options,
                                const watchdog_options& watchdog) noexcept {
    if (client_ != nullptr) {
        return client_errc::already_attached;
    }
    if (c.node_count_ == 0) {
        return client_errc::not_configured;
    }
    if (watchdog.enabled && watchdog.renew_every.us != 0 &&
        watchdog.renew_every >=
            options.ttl - redlock_drift(options.ttl, options.drift_ppm, options.drift_fixed)) {
        return client_errc::bad_option;  // it would renew after the validity has ended
    }
    const lock_errc e =
        machine_.configure(name, c.node_count_, options, client_base::system_random());
    lock_error_ = e;
    if (e != lock_errc::ok) {
        return client_errc::lock_rejected;
    }
    client_ = &c;
    watchdog_ = watchdog;
    ttl_ = options.ttl;
    node_timeout_ = options.node_timeout;
    max_tries_ = options.max_tries;
    wait_ = options.wait;
    renew_at_ = instant::never();
    pending_ = op::none;
    running_ = op::none;
    c.link(*this);
    return client_errc::ok;
}

void client_lock::detach() noexcept {
    if (client_ == nullptr) {
        return;
    }
    client_->unlink(*this);
    client_ = nullptr;
    pending_ = op::none;
    running_ = op::none;
    renew_at_ = instant::never();
}

bool client_lock::held() const noexcept {
    return machine_.held() && port::now() < machine_.validity_deadline();
}

client_errc client_lock::start(op kind, std::uint32_t max_tries, duration wait) noexcept {
    if (client_ == nullptr) {
        return client_errc::not_attached;
    }
    const instant now = port::now();
    // Bring the machine up to date first: a lock whose validity ended while
    // nobody drove the client is lost, not busy. Only this lock: a full
    // service here would make starting n locks cost n^2.
    if (machine_.next_deadline() <= now) {
        machine_.on_timeout(now);
        client_->pump_events(*this, now);
    }
    const lock_state s = machine_.state();
    switch (kind) {
    case op::acquire:
        if (s != lock_state::idle || pending_ != op::none || running_ != op::none) {
            return client_errc::busy;
        }
        break;
    case op::renew:
        if (s == lock_state::idle) {
            return pending_ == op::none ? client_errc::not_held : client_errc::busy;
        }
        if (s != lock_state::held && s != lock_state::renewing) {
            return client_errc::busy;  // acquiring or releasing
        }
        if (pending_ != op::none && pending_ != op::renew) {
            return client_errc::busy;
        }
        if (pending_ == op::renew || running_ == op::renew || s == lock_state::renewing) {
            // The watchdog's renew is under way: its outcome is the answer.
            if (pending_ != op::renew) {
                running_ = op::renew;
            }
            return client_errc::ok;
        }
        break;
    case op::release:
        // Stops anything else of this lock, as the machine's release does.
        if (s == lock_state::idle) {
            if (pending_ == op::acquire) {
                pending_ = op::none;  // an acquisition not yet started is cancelled
                return client_errc::ok;
            }
            return client_errc::not_held;
        }
        break;
    case op::none:
        return client_errc::bad_option;
    }
    if (kind == op::acquire) {
        // Only now: a refused call must not rewrite the retries of an
        // acquisition that is still waiting for its nodes.
        max_tries_ = max_tries;
        wait_ = wait;
    }
    pending_ = kind;
    pending_since_ = now;
    running_ = op::none;
    // The operation begins at the client's next call: next_deadline() is now.
    // Starting many locks in a row therefore costs one service, not one each.
    return client_errc::ok;
}

client_errc client_lock::resume(const owner_token& token) noexcept {
    if (client_ == nullptr) {
        return client_errc::not_attached;
    }
    if (pending_ != op::none || running_ != op::none) {
        return client_errc::busy;
    }
    const lock_errc e = machine_.resume(token, port::now());
    lock_error_ = e;
    if (e != lock_errc::ok) {
        return e == lock_errc::busy ? client_errc::busy : client_errc::lock_rejected;
    }
    return client_errc::ok;
}

client_errc client_lock::start_acquire(std::uint32_t max_tries, duration wait) noexcept {
    if (max_tries == 0) {
        return client_errc::bad_option;
    }
    return start(op::acquire, max_tries, wait);
}

client_errc client_lock::start_renew() noexcept {
    return start(op::renew);
}

client_errc client_lock::start_release() noexcept {
    return start(op::release);
}

op_result client_lock::run(op kind, std::uint32_t max_tries, duration wait) noexcept {
    op_result out;
    if (client_ == nullptr) {
        out.error = client_errc::not_attached;
        return out;
    }
    if (client_->in_callback_) {
        out.error = client_errc::reentered;
        return out;
    }
    // A bound that no correct run reaches: connect, the operation's own time
    // (its wait, or the validity it can renew within), and slack.
    const client_options& co = client_->options_;
    duration span = co.connect_timeout + co.connect_timeout + ttl_ + duration::seconds(5);
    if (kind == op::acquire) {
        span = span + wait;
    }
    const instant bound = port::now() + span;
    // The outcome is written into `out` by whatever ends the operation, which
    // may happen inside start() already.
    waiter_ = &out;
    out.error = start(kind, max_tries, wait);
    if (out.error != client_errc::ok) {
        waiter_ = nullptr;
        return out;
    }
    client_->service(port::now());  // sends it now, before the first wait
    if (kind == op::release && pending_ == op::none && running_ == op::none && waiter_ == &out) {
        // A release that only cancelled an acquisition not yet started.
        waiter_ = nullptr;
        out.event.kind = lock_event_kind::released;
        return out;
    }
    while (waiter_ == &out) {
        client_errc e = client_errc::ok;
        if (client_ == nullptr) {
            e = client_errc::not_attached;
        } else if (port::now() >= bound) {
            e = client_errc::deadline;
        } else {
            e = client_->step(bound);
        }
        if (e != client_errc::ok) {
            waiter_ = nullptr;
            abandon();
            out.error = e;
            return out;
        }
    }
    return out;
}

// A blocking call gave up: nothing may go on in the background unseen. An
// acquisition still running is released (it might yet win); anything not yet
// started is dropped.
void client_lock::abandon() noexcept {
    pending_ = op::none;
    if (client_ != nullptr && running_ == op::acquire) {
        running_ = op::none;
        machine_.release(port::now());
        client_->pump_events(*this, port::now());
    }
}

op_result client_lock::try_acquire() noexcept {
    return run(op::acquire, 1, wait_);
}

op_result client_lock::acquire(duration wait) noexcept {
    return run(op::acquire, UINT32_MAX, wait);
}

op_result client_lock::renew() noexcept {
    return run(op::renew);
}

op_result client_lock::release() noexcept {
    return run(op::release);
}

}  // namespace edgelock
