// The set-up of a new connection, as a machine: the requests (HELLO [AUTH]
// [SETNAME], SELECT, CONFIG GET maxmemory*, and where those were refused
// AUTH, CLIENT SETNAME and INFO) and what each reply means. No socket, no
// clock: the pipeline carries the bytes. Key tracking is not part of it: a
// waiter asks for its name when it first waits (notify.cpp).
#include "edgelock/detail/handshake.hpp"

#include "edgelock/client.hpp"
#include "edgelock/detail/server_info.hpp"
#include "edgelock/resp_encoder.hpp"

namespace edgelock {
namespace detail {

namespace {

constexpr std::uint16_t bit(std::uint8_t request) {
    return static_cast<std::uint16_t>(1u << request);
}

bool starts_with_icase(str_view s, str_view prefix) {
    return s.size >= prefix.size && equals_icase(str_view(s.data, prefix.size), prefix);
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

// The secrets of one request, decoded from the URL unless the options give
// them; wiped when the request has been written.
class credentials {
public:
    credentials(const node_address& a, const client_options& o) noexcept
        : user_(o.username),
          password_(o.password),
          present_(!o.password.empty() || a.has_password) {
        if (user_.empty() && !a.user.empty()) {
            user_ = str_view(user_buf_, node_url_decode(a.user, user_buf_, sizeof user_buf_));
        }
        if (password_.empty() && a.has_password) {
            password_ = str_view(password_buf_,
                                 node_url_decode(a.password, password_buf_, sizeof password_buf_));
        }
    }
    ~credentials() {
        volatile char* u = user_buf_;
        volatile char* p = password_buf_;
        for (std::size_t i = 0; i < sizeof user_buf_; ++i) {
            u[i] = 0;
            p[i] = 0;
        }
    }
    credentials(const credentials&) = delete;
    credentials& operator=(const credentials&) = delete;

    str_view user() const { return user_; }
    str_view password() const { return password_; }
    bool present() const { return present_; }

private:
    char user_buf_[node_url_max_secret];
    char password_buf_[node_url_max_secret];
    str_view user_;
    str_view password_;
    bool present_;
};

}  // namespace

void detail::node_report::set_message(str_view text) noexcept {
    message_size = copy_text(message, sizeof message, text);
}

void detail::node_report::append_message(str_view text) noexcept {
    message_size += copy_text(message + message_size, sizeof message - message_size, text);
}

void detail::node_report::keep_server(const server_info& info) noexcept {
    version_size = static_cast<std::uint8_t>(copy_text(version, sizeof version, info.version));
    server_size = static_cast<std::uint8_t>(copy_text(server, sizeof server, info.server));
}

void handshake::start(const node_address& address, const client_options& options) noexcept {
    address_ = &address;
    options_ = &options;
    todo_ = static_cast<std::uint16_t>(bit(auth) | bit(config_memory));
    if (address.db != 0) {
        todo_ = static_cast<std::uint16_t>(todo_ | bit(select));
    }
    replies_due_ = 0;
    stale_ = 0;
    status_ = handshake_status::pending;
    resp2_ = false;
    hello_refused_ = false;
    doomed_ = false;
}

bool handshake::speaks_resp3() const noexcept {
    return options_->resp3 && !resp2_;
}

std::size_t handshake::poll_request(char* buf, std::size_t capacity,
                                    std::uint8_t& request) noexcept {
    if (status_ != handshake_status::pending || address_ == nullptr || todo_ == 0) {
        return 0;
    }
    const node_address& a = *address_;
    const client_options& o = *options_;
    const credentials secret(a, o);
    std::uint8_t next = 0;
    while ((todo_ & bit(next)) == 0) {
        ++next;
    }
    str_view args[8];
    std::size_t argc = 0;
    decimal_arg db(static_cast<std::int64_t>(a.db));
    switch (next) {
    case auth:
        if (!hello_refused()) {
            args[argc++] = "HELLO";
            args[argc++] = o.resp3 ? str_view("3") : str_view("2");
            if (secret.present()) {
                args[argc++] = "AUTH";
                args[argc++] = secret.user().empty() ? str_view("default") : secret.user();
                args[argc++] = secret.password();
            }
            if (!o.client_name.empty()) {
                args[argc++] = "SETNAME";
                args[argc++] = o.client_name;
            }
        } else {
            args[argc++] = "AUTH";
            if (!secret.user().empty()) {
                args[argc++] = secret.user();
            }
            args[argc++] = secret.password();
        }
        break;
    case select:
        args[argc++] = "SELECT";
        args[argc++] = db.view();
        break;
    case setname:
        args[argc++] = "CLIENT";
        args[argc++] = "SETNAME";
        args[argc++] = o.client_name;
        break;
    case config_memory:
        args[argc++] = "CONFIG";
        args[argc++] = "GET";
        args[argc++] = "maxmemory*";
        break;
    case info_memory:
        args[argc++] = "INFO";
        args[argc++] = "memory";
        break;
    case info_replication:
        args[argc++] = "INFO";
        args[argc++] = "replication";
        break;
    default:
        args[argc++] = "INFO";
        args[argc++] = "server";
        break;
    }
    const resp_encoded e = resp_encode_command(buf, capacity, args, argc);
    if (e.error != resp_encode_errc::ok) {
        return 0;  // no room now; it goes once the buffer drains
    }
    todo_ = static_cast<std::uint16_t>(todo_ & ~bit(next));
    request = next;
    ++replies_due_;
    return e.size;
}

handshake_status handshake::fail(node_error why, const resp_node* nodes, std::size_t count,
                                 detail::node_report& report) noexcept {
    report.message_size = 0;
    if (count > 0 && nodes[0].has_text()) {
        report.set_message(nodes[0].text);
    }
    report.error = why;
    report.code = 0;
    status_ = handshake_status::failed;
    return status_;
}

// No HELLO here (Redis before 6, a RESP2-only proxy): RESP2 it is. What HELLO
// carried goes as RESP2 commands (AUTH, CLIENT SETNAME), and INFO says the
// role and version. After a HELLO with a password, everything that followed
// it was answered NOAUTH: passed over, and sent again after the AUTH.
void handshake::fall_back(bool had_password) noexcept {
    if (options_->resp3) {
        resp2_ = true;
    } else {
        hello_refused_ = true;
    }
    std::uint16_t again = 0;
    if (had_password) {
        stale_ = replies_due_;
        again = static_cast<std::uint16_t>(bit(auth) | bit(config_memory) |
                                           (address_->db != 0 ? bit(select) : 0));
    }
    todo_ = static_cast<std::uint16_t>(todo_ | again | bit(info_replication) | bit(info_server) |
                                       (options_->client_name.empty() ? 0 : bit(setname)));
}

handshake_status handshake::on_reply(std::uint8_t request, const resp_node* nodes,
                                     std::size_t count, detail::node_report& report) noexcept {
    if (status_ != handshake_status::pending || replies_due_ == 0) {
        return status_;
    }
    --replies_due_;
    if (stale_ > 0) {
        --stale_;  // answered NOAUTH before the AUTH that follows: sent again
        return status_;
    }
    const bool error = count > 0 && nodes[0].is_error();
    if (error && request == auth && !hello_refused() &&
        (starts_with_icase(nodes[0].text, "NOPROTO") ||
         starts_with_icase(nodes[0].text, "ERR unknown command"))) {
        const credentials secret(*address_, *options_);
        fall_back(secret.present());
        report.resp2 = resp2_;
        return status_;
    }
    if (error) {
        const str_view text = nodes[0].text;
        // A server that wants a password says NOAUTH to whatever comes first.
        if (starts_with_icase(text, "NOAUTH") || starts_with_icase(text, "WRONGPASS")) {
            return fail(node_error::auth_failed, nodes, count, report);
        }
        if (request == auth) {
            node_error why = node_error::setup_failed;  // LOADING, max clients, ...
            if (starts_with_icase(text, "ERR invalid") || starts_with_icase(text, "ERR AUTH") ||
                starts_with_icase(text, "ERR Client sent AUTH")) {
                why = node_error::auth_failed;
            }
            return fail(why, nodes, count, report);
        }
        if (request == select) {
            return fail(node_error::select_failed, nodes, count, report);
        }
        if (request == config_memory) {
            todo_ = static_cast<std::uint16_t>(todo_ | bit(info_memory));  // INFO may be allowed
        }
        if (doomed_ && request == info_replication) {
            report.set_message("role:replica");
            status_ = handshake_status::failed;
            return status_;
        }
        // CLIENT SETNAME, CONFIG and INFO may be denied by an ACL: without
        // INFO nothing is known, and nothing said.
    } else if (request == auth && !hello_refused()) {
        // HELLO answers a map (RESP3) or an array (RESP2), never anything
        // else: a server that says +OK to it says so to anything, and a lock
        // request that followed must not count.
        const std::size_t top = count > 0 ? skip_attributes(nodes, count, 0) : count;
        if (top >= count ||
            (nodes[top].type != resp_type::map && nodes[top].type != resp_type::array)) {
            fail(node_error::unexpected_reply, nodes + top, top < count ? 1 : 0, report);
            report.message_size = 0;
            report.append_message("HELLO not answered with its map");
            return status_;
        }
        read_hello(nodes, count, report);
        // A RESP3 connection hears its own pushes: its waiters can be told.
        // Over RESP2, once a subscription is up (notify.cpp).
        report.tracking = speaks_resp3() && options_->notify;
    } else if (request == config_memory) {
        const server_info info = parse_config_reply(nodes, count);
        report.policy_size = static_cast<std::uint8_t>(
            copy_text(report.policy, sizeof report.policy, info.maxmemory_policy));
        report.warning = server_may_evict(info) ? node_warning::may_evict : node_warning::none;
    } else if (reply_optional(request)) {
        read_info(request, nodes, count, report);
    }
    if (status_ == handshake_status::pending && todo_ == 0 && replies_due_ == 0) {
        status_ = doomed_ ? handshake_status::failed : handshake_status::ready;
    }
    return status_;
}

// A replica fails the node (a Cluster's is kept: it answers a lock request
// with MOVED to its master, and it knows the slot map as well as any).
static void fail_replica(const server_info& info, detail::node_report& report) noexcept {
    report.message_size = 0;
    if (!info.master_host.empty()) {
        report.append_message("replica of ");
        report.append_message(info.master_host);
        if (!info.master_port.empty()) {
            report.append_message(":");
            report.append_message(info.master_port);
        }
    } else {
        report.append_message("role:replica");
    }
    report.error = node_error::replica;
    report.code = 0;
}

void handshake::read_hello(const resp_node* nodes, std::size_t count,
                           detail::node_report& report) noexcept {
    const server_info info = parse_hello_reply(nodes, count);
    report.keep_server(info);
    report.set_nx_get = server_takes_set_nx_get(info);
    report.tracks_keys = true;  // HELLO came with Redis 6, and so did tracking
    const bool cluster = address_->seed_count > 0;
    if (info.role == server_role::replica && !cluster) {
        // HELLO does not say whose: INFO does, for the message. Lock requests
        // that followed count for nothing from here.
        fail_replica(info, report);
        doomed_ = true;
        todo_ = static_cast<std::uint16_t>(todo_ | bit(info_replication));
    }
}

// INFO's text, where HELLO or CONFIG GET could not say (an oversized reply
// that was skipped, or not a string: nothing is known).
void handshake::read_info(std::uint8_t request, const resp_node* nodes, std::size_t count,
                          detail::node_report& report) noexcept {
    const server_info info = parse_server_info(server_info_text(nodes, count));
    const bool cluster = address_->seed_count > 0;
    if (request == info_replication && (doomed_ || info.role == server_role::replica) && !cluster) {
        fail_replica(info, report);
        status_ = handshake_status::failed;
    } else if (request == info_memory) {
        report.policy_size = static_cast<std::uint8_t>(
            copy_text(report.policy, sizeof report.policy, info.maxmemory_policy));
        report.warning = server_may_evict(info) ? node_warning::may_evict : node_warning::none;
    } else if (request == info_server) {
        report.keep_server(info);
        report.set_nx_get = server_takes_set_nx_get(info);
        report.tracks_keys = server_tracks_keys(info);
    }
}

std::size_t subscription_setup(char* buf, std::size_t capacity, const node_address& address,
                               const client_options& options, std::uint8_t& replies) noexcept {
    const credentials secret(address, options);
    std::size_t size = 0;
    replies = 0;
    if (secret.present()) {
        str_view auth[3] = {"AUTH"};
        std::size_t argc = 1;
        if (!secret.user().empty()) {
            auth[argc++] = secret.user();
        }
        auth[argc++] = secret.password();
        const resp_encoded e = resp_encode_command(buf, capacity, auth, argc);
        if (e.error != resp_encode_errc::ok) {
            return 0;
        }
        size += e.size;
        ++replies;
    }
    const str_view id[] = {"CLIENT", "ID"};
    const str_view subscribe[] = {"SUBSCRIBE", invalidation_channel()};
    const resp_encoded a = resp_encode_command(buf + size, capacity - size, id, 2);
    if (a.error != resp_encode_errc::ok) {
        return 0;
    }
    size += a.size;
    const resp_encoded b = resp_encode_command(buf + size, capacity - size, subscribe, 2);
    if (b.error != resp_encode_errc::ok) {
        return 0;
    }
    replies = static_cast<std::uint8_t>(replies + 2);
    return size + b.size;
}

}  // namespace detail
}  // namespace edgelock
