// The set-up of a new connection, pipelined: AUTH (or HELLO 3), SELECT,
// CLIENT SETNAME, INFO replication and memory (a replica fails the node, an
// evicting policy is a warning), SCRIPT LOAD; and what each reply means.
#include "edgelock/client.hpp"

#include "client_internal.hpp"
#include "edgelock/resp_encoder.hpp"
#include "edgelock/server_info.hpp"

namespace edgelock {

using namespace detail;

namespace {

bool starts_with_icase(str_view s, str_view prefix) {
    return s.size >= prefix.size && equals_icase(str_view(s.data, prefix.size), prefix);
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

// Appends to a message being built, as much as fits.
void append_text(detail::connection& c, str_view text) {
    c.message_size +=
        copy_text(c.message + c.message_size, sizeof c.message - c.message_size, text);
}

}  // namespace

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
    while (c.setup_step < step_end && !c.fifo.full()) {
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

// A set-up INFO reply longer than the receive buffer (a future server's, say)
// does not fail the node: when the reply at `pos` is one, it is answered as
// "nothing known" now and its bytes are thrown away as they arrive.
bool client_base::skip_info(std::uint8_t n, std::size_t pos, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.fifo.empty()) {
        return false;
    }
    const detail::pending_reply p = c.fifo.front();
    if (p.lock != nullptr || !is_info_step(p.tag)) {
        return false;
    }
    const std::size_t size = bulk_reply_size(c.rx + pos, c.rx_size - pos);
    if (size == 0) {
        return false;
    }
    c.fifo.pop();
    c.skip = size;
    c.progress_at = now;
    setup_reply(n, p.tag, nullptr, 0, now);
    return true;
}

}  // namespace edgelock
