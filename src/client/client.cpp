// The driver's client: configuration, node reports and the list of locks.
//
// The driver is split by concept: connection.cpp (connect, transport open,
// backoff, drop), handshake.cpp (the set-up sequence, a machine without a
// socket), pipeline.cpp (requests out, replies in), scheduler.cpp (the
// service loop, operations and the watchdog), event_loop.cpp (the event-loop
// API), blocking.cpp (the blocking calls), client_lock.cpp (a lock on a client),
// plain_transport.cpp (the socket as the transport), client_describe.cpp.
//
// Everything happens in service(): lock timeouts, the watchdog, connection
// deadlines, starting operations once their nodes are settled, and moving
// requests from the machines into the connections. It loops until a pass
// changes nothing, because every step can make work for another (a failed
// connection fails a round, which queues cleanups for the other nodes).
#include "edgelock/client.hpp"

#include "client_internal.hpp"

namespace edgelock {

using namespace detail;

namespace {

constexpr std::size_t max_client_name = 64;

bool fill_system_random(void*, void* buf, std::size_t size) {
    return port::random_bytes(buf, size);
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

}  // namespace

random_source client_base::system_random() noexcept {
    random_source r;
    r.fill = fill_system_random;
    return r;
}

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
            return client_errc::bad_url;
        }
        const transport* via = options.via != nullptr ? options.via : &plain_transport();
        if (parsed[i].tls && !via->secure()) {
            bad_url_index_ = i;
            bad_url_error_ = url_errc::tls_not_built_in;
            return client_errc::tls_not_built_in;
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
    bool cluster = false;
    for (std::uint8_t i = 0; i < conn_total_; ++i) {
        detail::connection& c = conns_[i];
        c.address = i < count ? parsed[i] : node_address{};
        c.node = i < count ? i : no_connection;
        c.state = node_state::down;
        c.failures = 0;
        // Lookups of the old hosts are not waited for again.
        c.lookup.abandon();
        c.watch.forget();
        c.report = detail::node_report{};
        c.stats = edgelock::node_stats{};
        c.attempted = false;
        c.probing = false;
        c.cluster.reset();
        c.where.stop();
        c.target = detail::peer{};
        cluster = cluster || c.address.seed_count > 0;
    }
    node_count_ = static_cast<std::uint8_t>(count);
    conn_count_ = cluster ? conn_total_ : node_count_;
    options_ = options;
    transport_ = options.via != nullptr ? options.via : &plain_transport();
    random_ = options.random.valid() ? options.random : system_random();
    bad_url_index_ = 0;
    bad_url_error_ = url_errc::ok;
    return client_errc::ok;
}

node_info client_base::node(std::uint8_t index) const noexcept {
    node_info info;
    if (index >= node_count_) {
        return info;
    }
    const detail::connection* reported = &conns_[index];
    // A Cluster node whose own connection is fine says why one of its
    // masters' is not.
    for (std::uint8_t n = node_count_;
         n < conn_count_ && reported->report.error == node_error::none; ++n) {
        if (conns_[n].node == index && conns_[n].report.error != node_error::none) {
            reported = &conns_[n];
        }
    }
    const detail::connection& c = *reported;
    info.state = conns_[index].state;
    info.error = c.report.error;
    info.code = c.report.code;
    info.message = str_view(c.report.message, c.report.message_size);
    info.warning = c.report.warning;
    info.maxmemory_policy = str_view(c.report.policy, c.report.policy_size);
    info.server = str_view(c.report.server, c.report.server_size);
    info.version = str_view(c.report.version, c.report.version_size);
    info.tracking = c.report.tracking;
    info.resp2 = c.report.resp2;
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

void client_base::link(client_lock& l) noexcept {
    l.next_ = locks_;
    locks_ = &l;
    failover_side::renumber(*this, 0, true);
}

void client_base::unlink(client_lock& l) noexcept {
    std::size_t at = 0;
    for (client_lock** p = &locks_; *p != nullptr; p = &(*p)->next_, ++at) {
        if (*p == &l) {
            *p = l.next_;
            failover_side::renumber(*this, at, false);
            break;
        }
    }
    l.next_ = nullptr;
    // Replies still due for it are read and thrown away.
    for (std::uint8_t n = 0; n < conn_count_; ++n) {
        detail::connection& c = conns_[n];
        for (std::size_t i = 0; i < c.fifo.size(); ++i) {
            detail::in_flight& f = c.fifo[i];
            if (f.lock == &l) {
                f.lock = nullptr;
                f.to = reply_to::discard;
            }
        }
    }
}

}  // namespace edgelock
