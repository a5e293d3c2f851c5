// A node's connection: looking its host up (without blocking: the port's
// lookup, learned through the wait), connecting to each address in turn, all
// within connect_timeout, opening its transport, failing with a reason and a
// backoff, and dropping, which every lock on the client hears of.
#include "edgelock/client.hpp"

#include "client_internal.hpp"
#include "edgelock/detail/backoff.hpp"

namespace edgelock {

using namespace detail;

namespace {

// An error that says what the server told us keeps its message.
bool keeps_message(node_error why) {
    return why == node_error::auth_failed || why == node_error::select_failed ||
           why == node_error::setup_failed || why == node_error::replica ||
           why == node_error::sentinel_failed;
}

// A plaintext connection the peer closed or reset before a byte came back.
bool hung_up_silent(const detail::connection& c, node_error why) {
    return c.state == node_state::handshake && !c.io.heard() && !c.address.tls &&
           (why == node_error::reset || why == node_error::closed);
}

// The evidence of a TLS port: a silent hang-up right on the set-up's first
// bytes. A TLS server reads a record header and, for bytes that are not TLS,
// closes without a word (OpenSSL sends no alert then), so the hang-up comes
// one round trip after them: as long as the connect took. Twice that, plus a
// tenth of the connect allowance for the server's turn on a busy machine, is
// "right on". A hang-up later (a proxy or a middlebox that resets
// connections, a server that closes idle ones) is no evidence: the hint
// would send an operator after TLS for a plaintext node. (A proxy that
// resets at once, its upstream down, looks the same as a TLS port.)
bool hung_up_on_first_bytes(const detail::connection& c, node_error why, instant now,
                            duration connect_timeout) {
    const duration round_trip = c.opened - c.dialed;
    const duration within = round_trip + round_trip + duration::micros(connect_timeout.us / 10);
    return hung_up_silent(c, why) && now - c.opened <= within;
}

}  // namespace

void client_base::disconnect() noexcept {
    const instant now = port::now();
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        detail::connection& c = conns_[n];
        if (c.io.fd() >= 0) {
            drop(n, now);
        }
        c.lookup.end();
        c.state = node_state::down;
        c.failures = 0;
        c.timers.stop_all();
        c.where.stop();
        c.watch.shut(*transport_);
        c.moving = detail::failover();
    }
}

// Closes the socket and tells every lock with a request on it.
void client_base::drop(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    ++churn_;
    c.io.close(*transport_);
    c.lookup.end();  // kept while it runs: the next attempt waits for it
    c.connected_size = 0;
    c.tx_size = 0;
    c.want_write = false;
    c.probing = false;
    c.timers.stop(connection_timer::connect);
    c.timers.stop(connection_timer::stall);
    // The subscription serves this connection's tracking, which ends here.
    c.sub.shut(*transport_);
    c.redirect_due = false;
    c.names.clear();
    for (std::size_t i = 0; i < c.fifo.size(); ++i) {
        if (c.fifo[i].to == reply_to::command && command_fn_ != nullptr) {
            const reply_callback fn = command_fn_;
            command_fn_ = nullptr;
            fn(command_ctx_, nullptr, 0);
        }
    }
    // Every lock it serves hears of it (once), whether or not it had a
    // request out: the machine ignores a disconnect that concerns nothing of
    // its own. A lock a Cluster node serves elsewhere is told only when it
    // had a request here (its route changed under it).
    for (client_lock* l = locks_; l != nullptr;) {
        client_lock* next = l->next_;
        bool concerned = serves(n, *l);
        for (std::size_t i = 0; i < c.fifo.size() && !concerned; ++i) {
            concerned = c.fifo[i].lock == l;
        }
        if (concerned) {
            l->machine_.on_disconnected(c.node, now);
            pump_events(*l, now);
        }
        l = next;
    }
    c.fifo.clear();
    c.cluster.map_lost();
}

void client_base::fail(std::uint8_t n, node_error why, int code, instant now,
                       str_view text) noexcept {
    detail::connection& c = conns_[n];
    count_error(stats_of(n), why);  // each error met, a sentinel's too
    if (c.where.asking()) {
        // A sentinel that cannot be reached or did not answer in time: the
        // next one; when none is left, the node fails with the last reason.
        // One that hangs up on the question without a word is, most often, a
        // TLS sentinel given a plaintext connection.
        const bool hung_up = hung_up_on_first_bytes(c, why, now, options_.connect_timeout);
        if (ask_next(n, now)) {
            return;
        }
        text = hung_up ? str_view(
                             "the sentinel hung up before any reply (a TLS port? use "
                             "rediss-sentinel://)")
                       : describe(why);
        why = node_error::sentinel_failed;
        code = 0;
    }
    if (why == node_error::reply_too_large && !c.fifo.empty() &&
        c.fifo.front().to == reply_to::cluster) {
        c.cluster.map_unreadable();  // MOVED answers will do instead
    }
    c.report.error = why;
    c.report.code = code;
    // A server that hangs up on the set-up's first bytes without a word is,
    // most often, a TLS server given a plaintext connection.
    if (text.empty() && hung_up_silent(c, why)) {
        text = hung_up_on_first_bytes(c, why, now, options_.connect_timeout)
                   ? "before any reply to the set-up (a TLS port? use rediss://)"
                   : "before any reply to the set-up";
    }
    if (!text.empty()) {
        c.report.set_message(text);
    } else if (!keeps_message(why)) {
        c.report.message_size = 0;
    }
    drop(n, now);
    c.state = node_state::backoff;
    c.timers.set(connection_timer::backoff, backoff_until(options_, random_, c.failures, now));
    if (c.address.seed_count > 0 && c.node != no_connection) {
        // The next seed; the map asked again (a master may be gone).
        const bool own = n < node_count_;
        conns_[c.node].cluster.connection_lost(own, c.address.seed_count);
    }
}

namespace detail {

instant backoff_until(const client_options& o, const random_source& random, std::uint8_t& failures,
                      instant now) noexcept {
    // Exponential backoff with jitter in [delay/2, delay].
    std::uint64_t delay = o.reconnect_min.us;
    for (std::uint8_t i = 0; i < failures && delay < o.reconnect_max.us; ++i) {
        delay *= 2;
    }
    if (delay > o.reconnect_max.us) {
        delay = o.reconnect_max.us;
    }
    std::uint64_t jittered = delay;
    if (!random_between(random, delay / 2, delay, jittered)) {
        jittered = delay;
    }
    if (failures < 255) {
        ++failures;
    }
    return now + duration::micros(jittered);
}

}  // namespace detail

// A connection attempt: counted, and a reconnect unless it is the first.
static void count_attempt(detail::connection& c, node_stats& s) noexcept {
    ++s.connects;
    if (c.attempted) {
        ++s.reconnects;
    }
    c.attempted = true;
}

void client_base::start_connect(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    count_attempt(c, stats_of(n));
    c.timers.set(connection_timer::connect, now + options_.connect_timeout);
    c.timers.stop(connection_timer::backoff);
    if (c.address.sentinel_count > 0 && !c.moving.due) {
        // Where the master is, first (unless the watch heard it: a sentinel
        // asked now may still name the old master).
        c.where.begin(now, c.timers.get(connection_timer::connect), options_.sentinel_timeout);
    }
    c.moving.due = false;  // once: when this connect fails, the sentinels are asked
    resolve(n, now);
}

void client_base::reconnect(std::uint8_t n, instant now, instant deadline) noexcept {
    detail::connection& c = conns_[n];
    drop(n, now);
    count_attempt(c, stats_of(n));
    c.state = node_state::connecting;
    c.timers.set(connection_timer::connect, deadline);
    if (c.where.asking()) {
        c.where.restart(now, deadline, options_.sentinel_timeout);
    }
    resolve(n, now);
}

// Looks the host up (a Unix socket needs nothing), then connects. A lookup
// that is not done at once leaves the node resolving: wanted() gives its fd.
void client_base::resolve(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    const port::endpoint where = endpoint_of(n);
    c.attempt = 0;
    if (!where.unix_path.empty()) {
        try_addresses(n, now);
        return;
    }
    const port::net_result r = c.lookup.begin(where.host, now, lookup_max_age());
    if (r.status == port::net_status::ok) {
        try_addresses(n, now);
    } else if (r.status == port::net_status::in_progress) {
        c.state = node_state::resolving;
    } else if (r.status == port::net_status::would_block) {
        fail(n, node_error::resolve_timeout, 0, now,
             "an earlier lookup of another host name is still unanswered");
    } else {
        fail(n, node_error::resolve_failed, r.code, now,
             r.status == port::net_status::error ? str_view("no lookup could be started")
                                                 : str_view());
    }
}

// The lookup's fd was readable: connect once it is done.
void client_base::resolved(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    const port::net_result r = c.lookup.result();
    if (r.status == port::net_status::in_progress) {
        return;  // a stale readiness report
    }
    if (!c.lookup.is_for(endpoint_of(n).host)) {
        // Where the node is changed meanwhile (a sentinel's announcement):
        // this answer is for the old host.
        c.lookup.end();
        resolve(n, now);
        return;
    }
    if (r.status != port::net_status::ok) {
        c.lookup.end();
        fail(n, from_net(r.status), r.code, now);
        return;
    }
    c.state = node_state::connecting;
    try_addresses(n, now);
}

void client_base::connect_ready(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (c.io.phase() == stream_phase::opening) {
        open_session(n, c.io.proceed(*transport_), now);
        return;
    }
    const port::net_result r = c.io.finish_connect();
    if (r.status == port::net_status::ok) {
        c.lookup.end();  // no other address is needed now
        open_session(n, c.io.open(*transport_, session_peer_of(c.address, endpoint_of(n).host)),
                     now);
        return;
    }
    if (r.status == port::net_status::in_progress) {
        return;  // a stale readiness report; the connect goes on
    }
    c.io.close(*transport_);
    c.connected_size = 0;
    c.report.error = from_net(r.status);
    c.report.code = r.code;
    ++c.attempt;  // the next address, within the same deadline
    try_addresses(n, now);
}

// Starts connecting to the lookup's addresses from c.attempt on (a Unix
// socket has one), keeping the first that connects or is in progress (a name
// may resolve to IPv6 and IPv4). When none is left the node fails with the
// last address's reason.
void client_base::try_addresses(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    port::endpoint where = endpoint_of(n);
    const bool unix_socket = !where.unix_path.empty();
    // The last address's reason (connect_ready() leaves the previous one's).
    node_error why = c.attempt > 0 ? c.report.error : node_error::unreachable;
    int code = c.attempt > 0 ? c.report.code : 0;
    for (; c.attempt < port::lookup_max_addresses && (!unix_socket || c.attempt == 0);
         ++c.attempt) {
        c.connected_size = 0;
        if (!unix_socket) {
            const std::size_t size =
                c.lookup.address(c.attempt, c.connected_to, sizeof c.connected_to);
            if (size == 0) {
                break;
            }
            c.connected_size = static_cast<std::uint8_t>(size);
            where.host = str_view(c.connected_to, size);
        }
        int fd = -1;
        c.dialed = now;
        const port::net_result r = port::connect(where, fd);
        if (r.status == port::net_status::ok) {
            c.io.attach(fd, true);
            c.lookup.end();
            open_session(n, c.io.open(*transport_, session_peer_of(c.address, endpoint_of(n).host)),
                         now);
            return;
        }
        if (r.status == port::net_status::in_progress) {
            c.io.attach(fd, false);
            c.state = node_state::connecting;
            return;
        }
        why = from_net(r.status);
        code = r.code;
    }
    c.connected_size = 0;
    c.lookup.end();
    fail(n, why, code, now);
}

// The socket is up; the transport's open() (or proceed()) said `r`.
void client_base::open_session(std::uint8_t n, port::net_result r, instant now) noexcept {
    detail::connection& c = conns_[n];
    if (r.status == port::net_status::ok) {
        connected(n, now);
    } else if (r.status == port::net_status::in_progress) {
        c.state = node_state::connecting;
    } else {
        fail_io(n, r, now);
    }
}

void client_base::fail_io(std::uint8_t n, const port::net_result& r, instant now) noexcept {
    // The transport may know more than the status: a certificate that did
    // not verify, a server that does not speak TLS, an alert.
    const detail::connection& c = conns_[n];
    const node_error why = c.io.failure(*transport_);
    fail(n, why != node_error::none ? why : from_net(r.status), r.code, now,
         c.io.failure_text(*transport_));
}

void client_base::connected(std::uint8_t n, instant now) noexcept {
    detail::connection& c = conns_[n];
    c.state = node_state::handshake;
    c.opened = now;
    c.want_write = false;
    c.tx_size = 0;
    c.fifo.clear();
    c.probing = false;
    c.scripts_cold = false;
    if (!c.address.tls && !c.where.asking()) {
        // The SYN and its answer: the link's round trip until a reply's is
        // timed (a TLS handshake takes more than one; a sentinel is another
        // server).
        connect_rtt(stats_of(n), now - c.dialed);
    }
    c.timers.stop(connection_timer::stall);
    c.report.message_size = 0;
    c.report.warning = node_warning::none;  // this connection's INFO says anew
    c.report.policy_size = 0;
    c.report.version_size = 0;
    c.report.set_nx_get = false;
    c.report.tracking = false;
    c.names.clear();
    c.report.resp2 = false;
    c.report.tracks_keys = false;
    if (c.where.asking()) {
        // A sentinel: where is the master? [AUTH], then the question.
        bool auth = false;
        c.tx_size =
            detail::sentinel_resolver::write_question(c.tx, sizeof c.tx, c.address, options_, auth);
        detail::in_flight f;
        f.to = reply_to::sentinel;
        if (auth) {
            f.tag = detail::sentinel_resolver::tag_auth;
            push_in_flight(n, f, now);
        }
        f.tag = detail::sentinel_resolver::tag_master;
        push_in_flight(n, f, now);
        transmit(n, now);
        return;
    }
    c.setup_first = holds_setup(n);
    c.setup.start(c.address, options_);
    queue_setup(n, now);
}

}  // namespace edgelock
