// The agent's shared machinery: its options, its client, the poll loop's
// turn, what the lock's callback saw, and set-up (what it says of nodes is
// in report.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "agent.hpp"
#include "edgelock/redlock.hpp"
#include "holder.hpp"
#include "job.hpp"
#include "messages.hpp"
#include "new_file.hpp"
#include "service_status.hpp"
#include "session_cache.hpp"
#include "terminal_text.hpp"
#ifdef EDGELOCK_CLI_TLS
#include "edgelock/tls_mbedtls.hpp"
#endif

namespace edgelock_cli {

using namespace edgelock;

options opt;
client<lock_max_nodes, extra_connections>
    driver;  // the connections to the nodes, ~8 KB each: static, not on the stack
lock_watch watch;

namespace {

std::vector<str_view> urls;  // views of opt.nodes, which outlive the client
#ifdef EDGELOCK_CLI_TLS
// For rediss:// (or --tls): room for every session the client may hold, and
// a kept session for as many peers as the cache file holds.
tls_mbedtls<decltype(driver)::max_sessions, session_cache_max> tls;
#endif

// --tls-session-cache: the file as read before the loop, and what became of
// its entries.
struct session_file {
    bool in_use = false;    // TLS is on and a file is named
    bool writable = false;  // it may be replaced after the loop
    std::string raw;        // its bytes as read
    std::vector<cached_session> entries;
    std::vector<bool> imported;  // entries[i] went into the transport
};
session_file sessions;

}  // namespace

std::string text(str_view v) {
    return v.empty() ? std::string() : std::string(v.data, v.size);
}

std::string node_shown(std::size_t i) {
    return without_credentials(opt.nodes[i]);
}

// --- the loop -------------------------------------------------------------------------------

bool turn(instant until, bool watch_signals, bool& signalled) {
    constexpr std::size_t client_fds = decltype(driver)::max_fds;
    port::wait_entry e[client_fds + 1];  // the client's and the signal pipe
    std::size_t n = driver.wanted(e, client_fds);
    const std::size_t client_entries = n;
    if (watch_signals) {
        e[n].fd = signal_fd();
        e[n].want = port::want_read;
        ++n;
    }
    const instant wake = earliest(driver.next_deadline(), until);
    if (port::wait(e, n, wake) < 0) {
        return false;
    }
    signalled = watch_signals && e[client_entries].ready != 0;
    driver.on_ready(e, client_entries);  // timeouts too: one service per wake-up
    return true;
}

namespace {

void on_lock_event(void*, client_lock& l, const lock_event& ev) {
    watch.last = ev;
    switch (ev.kind) {
    case lock_event_kind::acquired:
        watch.validity = ev.validity_deadline;
        say(2, "acquired '%s'%s (valid %llu ms%s)", opt.key.c_str(),
            ev.permit >= 0
                ? (", permit " + std::to_string(ev.permit) + " of " + std::to_string(opt.permits))
                      .c_str()
                : "",
            static_cast<unsigned long long>((ev.validity_deadline - port::now()).ms()),
            opt.fencing ? (", fencing token " + std::to_string(ev.fence)).c_str() : "");
        break;
    case lock_event_kind::renewed:
        watch.validity = ev.validity_deadline;
        if (watch.at_risk) {
            service_status_holding();
        }
        watch.at_risk = false;
        say(2, "renewed (valid %llu ms)",
            static_cast<unsigned long long>((ev.validity_deadline - port::now()).ms()));
        break;
    case lock_event_kind::renew_failed:
        say(watch.at_risk ? 2 : 1,
            "renew missed its quorum (%s); retrying until the lock's validity ends",
            describe(ev.reason));
        if (!watch.at_risk) {
            report_nodes();  // why, once per spell at risk
            service_status("holding %s: renewals failing (%s)", opt.key.c_str(),
                           describe(ev.reason));
        }
        watch.at_risk = true;
        break;
    case lock_event_kind::lost:
        watch.lost = true;
        say(1, "lock '%s' lost (%s)", opt.key.c_str(), describe(ev.reason));
        service_status("lost %s (%s)", opt.key.c_str(), describe(ev.reason));
        break;
    case lock_event_kind::busy:
        service_status("not acquired: %s is held by another holder", opt.key.c_str());
        break;
    default:
        break;
    }
    (void)l;
}

}  // namespace

const lock_event& ended_with(const client_lock& l) {
    return l.outcome().result.error == client_errc::ok ? l.outcome().result.event : watch.last;
}

// --- set-up -----------------------------------------------------------------------------------

namespace {

// The lock as the options describe it; the lock keeps it from then on.
lock_options lock_options_from(const options& o) {
    lock_options lo;
    lo.mode = o.fencing ? lock_mode::fenced : lock_mode::plain;
    lo.permits = static_cast<std::uint8_t>(o.permits);
    lo.ttl = o.ttl;
    // No node_timeout: each round waits as long as the lock can use its
    // replies (try_allowance; a renew until the validity ends).
    // WAIT is the server's own wait for its replicas, whatever the link: a
    // twentieth of the ttl within [25 ms, 500 ms], in whole milliseconds.
    lo.min_replicas = static_cast<std::uint8_t>(o.min_replicas);
    const std::uint64_t wait_ms = o.ttl.ms() / 20;
    lo.replica_timeout = duration::millis(wait_ms < 25 ? 25 : wait_ms > 500 ? 500 : wait_ms);
    lo.wait = o.wait;
    lo.max_tries = o.wait.us == 0 ? 1 : UINT32_MAX;
    // Who holds it, beside the lock (status, list): for the commands that
    // take it. The lock keeps a view of the text.
    static std::string holder;
    if (o.cmd == command::run || o.cmd == command::acquire) {
        holder = holder_text();
        lo.holder = str_view(holder.data(), holder.size());
    }
    return lo;
}

}  // namespace

namespace {

#ifdef EDGELOCK_CLI_TLS
// Reads --tls-session-cache before the loop and hands its sessions to the
// transport, oldest first. A file that cannot be trusted or read is said
// once and ignored: the run goes on with full handshakes.
void load_sessions() {
    const std::string& path = opt.tls_session_cache;
    if (path.empty()) {
        return;
    }
    sessions.in_use = true;
    std::string why;
    switch (read_session_cache(path, opt.tls_session_cache_default, sessions.entries, sessions.raw,
                               why)) {
    case cache_read::absent:
    case cache_read::loaded:
        sessions.writable = true;
        break;
    case cache_read::damaged:
        sessions.writable = true;
        say(1, "warning: TLS session cache %s: damaged (%s): not used, rewritten after this run",
            path.c_str(), why.c_str());
        break;
    case cache_read::unsafe:
    case cache_read::unreadable:
    case cache_read::foreign:
        say(1, "warning: TLS session cache %s: %s: not used, left as it is", path.c_str(),
            why.c_str());
        break;
    }
    sessions.imported.assign(sessions.entries.size(), false);
    for (std::size_t i = sessions.entries.size(); i-- > 0;) {
        const cached_session& e = sessions.entries[i];
        const tls_import r = tls.import_session(
            str_view(e.host.data(), e.host.size()), e.port,
            str_view(e.server_name.data(), e.server_name.size()), e.data.data(), e.data.size());
        sessions.imported[i] = r == tls_import::ok;
        if (r != tls_import::ok) {
            say(2, "TLS session for %s:%u (%s) not used: %s", e.host.c_str(), e.port,
                e.server_name.c_str(), describe(r));
        }
    }
}
#endif

// The TLS transport, when some node needs it: exit_ok, or the exit status.
int setup_tls(client_options& co) {
    if (!wants_tls(opt)) {
        return exit_ok;
    }
#ifdef EDGELOCK_CLI_TLS
    // The TLS library opens these by name and blocks on a FIFO: each is
    // first opened non-blocking and must be a regular file.
    for (const std::string* file : {&opt.cacert, &opt.cert, &opt.tls_key}) {
        std::string why;
        if (!file->empty() && !is_regular_file(*file, why)) {
            say(0, "TLS: %s: %s", file->c_str(), why.c_str());
            return exit_usage;
        }
    }
    auto view = [](const std::string& s) { return str_view(s.data(), s.size()); };
    tls_options t;
    t.ca_file = view(opt.cacert);
    t.ca_dir = view(opt.cacertdir);
    t.cert_file = view(opt.cert);
    t.key_file = view(opt.tls_key);
    t.server_name = view(opt.sni);
    t.always = opt.tls;
    t.insecure_skip_verify = opt.insecure;
    const tls_errc e = tls.configure(t);
    if (e != tls_errc::ok) {
        say(0, "TLS: %s", describe(e));
        return exit_usage;
    }
    if (opt.insecure) {
        say(1, "warning: --insecure: no server certificate is checked");
    }
    co.via = &tls;
    load_sessions();
    return exit_ok;
#else
    (void)co;
    say(0, "this edgelock is built without TLS (rediss:// and --tls need it)");
    return exit_usage;
#endif
}

}  // namespace

int setup(client_lock& l) {
    for (const std::string& u : opt.nodes) {
        urls.emplace_back(u.data(), u.size());
    }
    client_options co;
    // Nine tenths of a try: a node whose connect or set-up cannot finish
    // fails, with its reason, before the try's round gives up on it.
    co.connect_timeout = duration::micros(try_allowance(opt.ttl).us / 10 * 9);
    // A sentinel has half of it to connect and answer, 2 s at most (two
    // round trips of a satellite link and a resend); the rest is the
    // master's connect and set-up, or the next sentinel's turn.
    const duration half = duration::micros(co.connect_timeout.us / 2);
    co.sentinel_timeout = half < duration::seconds(2) ? half : duration::seconds(2);
    if (opt.have_password) {
        co.password = str_view(opt.password.data(), opt.password.size());
    }
    co.sentinel_password = str_view(opt.sentinel_password.data(), opt.sentinel_password.size());
    const int tls_status = setup_tls(co);
    if (tls_status != exit_ok) {
        return tls_status;
    }
    const client_errc ce = driver.configure(urls.data(), urls.size(), co);
    if (ce == client_errc::tls_not_built_in) {
        say(0, "node URL '%s': %s", node_shown(driver.bad_url_index()).c_str(), describe(ce));
        return exit_usage;
    }
    if (ce == client_errc::bad_url) {
        say(0, "bad node URL '%s': %s", node_shown(driver.bad_url_index()).c_str(),
            describe(driver.bad_url_error()));
        return exit_usage;
    }
    if (ce != client_errc::ok) {
        say(0, "%s", describe(ce));
        return exit_usage;
    }
    watchdog_options w;
    w.renew_every = opt.renew_every;
    w.enabled = opt.cmd == command::run;
    const client_errc le =
        l.attach(driver, str_view(opt.key.data(), opt.key.size()), lock_options_from(opt), w);
    if (le == client_errc::bad_option) {
        say(0, "--renew-every must be shorter than the ttl");
        return exit_usage;
    }
    if (le != client_errc::ok) {
        if (l.lock_error() == lock_errc::bad_ttl) {
            say(0, "--ttl is too short: it must exceed the clock drift allowance (1%% + 2 ms)");
        } else if (l.lock_error() == lock_errc::bad_permits) {
            // Options checks the range: the requests, which name every
            // permit's key, are too long for this name.
            say(0,
                "--permits %u is too many for a name of %zu bytes: an acquire names every "
                "permit's key, and must fit one request (%zu bytes)",
                opt.permits, opt.key.size(), lock_max_request);
        } else {
            say(0, "%s", describe(l.lock_error()));
        }
        return exit_usage;
    }
    l.set_callback(on_lock_event, nullptr);
    // No wait for the nodes here: the operation starts once every node can
    // take its request (a quarter of the round's allowance at most), and
    // the connects go on within the round. A node's request goes as soon as
    // its set-up is written, in the same flight.
    warn_nodes(false);
    return exit_ok;
}

void save_tls_sessions() {
#ifdef EDGELOCK_CLI_TLS
    if (!tls.configured()) {
        return;
    }
    const tls_handshake_counts c = tls.handshake_counts();
    say(2, "TLS: %u handshakes, %u with a kept session offered, %u resumed", c.done, c.offered,
        c.resumed);
    if (!sessions.in_use || !sessions.writable) {
        return;
    }
    // What this run made or resumed first, then the file's entries in their
    // order (newest first): as the transport holds them now (it may have
    // replaced or forgotten those it took), or as they were when it never
    // took them. Sorted by time, ties in that order.
    const std::time_t clock = std::time(nullptr);
    const std::uint64_t now = clock > 0 ? static_cast<std::uint64_t>(clock) : 0;
    std::vector<cached_session> held;
    std::vector<bool> used;
    tls_saved_session k;
    for (std::size_t i = 0; i < tls.saved_capacity(); ++i) {
        if (tls.saved_session(i, k)) {
            cached_session e;
            e.host = text(k.host);
            e.port = k.port;
            e.server_name = text(k.server_name);
            e.data.assign(reinterpret_cast<const char*>(k.data), k.size);
            e.saved = now;
            held.push_back(e);
            used.push_back(k.used);
        }
    }
    std::vector<cached_session> keep;
    std::vector<bool> taken = used;  // each held entry once
    for (std::size_t i = 0; i < held.size(); ++i) {
        if (used[i]) {
            keep.push_back(held[i]);
        }
    }
    for (std::size_t i = 0; i < sessions.entries.size(); ++i) {
        const cached_session& old = sessions.entries[i];
        bool in_transport = false;
        for (std::size_t j = 0; j < held.size(); ++j) {
            if (held[j].same_peer(old)) {
                in_transport = true;
                if (!taken[j]) {
                    taken[j] = true;
                    keep.push_back(held[j]);
                    keep.back().saved = old.saved;
                }
            }
        }
        if (!in_transport && !sessions.imported[i]) {
            keep.push_back(old);
        }
    }
    std::stable_sort(
        keep.begin(), keep.end(),
        [](const cached_session& a, const cached_session& b) { return a.saved > b.saved; });
    if (keep.size() > session_cache_max) {
        keep.resize(session_cache_max);
    }
    const std::string bytes = encode_sessions(keep);
    if (bytes == sessions.raw || (keep.empty() && sessions.raw.empty())) {
        return;  // nothing new (or nothing at all): the file stays untouched
    }
    std::string why;
    if (!write_session_cache(opt.tls_session_cache, bytes, opt.tls_session_cache_default, why)) {
        say(1, "warning: TLS session cache %s: %s", opt.tls_session_cache.c_str(), why.c_str());
    }
#endif
}

// How long any one operation may take, all nodes and retries included: a
// backstop past the rounds' own bounds (a connect and a round, each within
// try_allowance, after the wait), so that the lock's own failure, with its
// reasons, is what ends a try.
instant op_bound(duration extra) {
    const duration allowance = try_allowance(opt.ttl);
    return port::now() + extra + allowance + allowance + duration::seconds(1);
}

}  // namespace edgelock_cli
