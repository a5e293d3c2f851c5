// The agent's shared machinery: its options, its client, the poll loop's
// turn, what the lock's callback saw, per-node reports and set-up.
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

namespace {

// What one try may spend on connecting and on each round: half of what the
// ttl leaves after the drift allowance, the library's round allowance with
// no node_timeout (lock_options). A lock granted within it still has half
// its ttl; a slow link's late reply (a segment TCP resends after 200 ms or
// more, a SYN after 1 s) still counts, where a fixed cap failed the try.
duration try_allowance(duration ttl) {
    const lock_options d;  // the agent keeps the library's drift allowance
    const duration drift = redlock_drift(ttl, d.drift_ppm, d.drift_fixed);
    return duration::micros(ttl.us > drift.us ? (ttl.us - drift.us) / 2 : 0);
}

}  // namespace

// Why nodes failed, one line each, before exit 69 or 1.
int report_nodes() {
    int said = 0;
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        const node_info n = driver.node(i);
        if (n.state == node_state::ready && n.error == node_error::none) {
            continue;
        }
        ++said;
        std::string why = describe(n.error);
        if (n.error == node_error::none) {
            why = std::string("no reply in time (") + describe(n.state) + ")";
        }
        if (!n.message.empty()) {
            why += ": " + terminal_text(text(n.message));  // the node's error reply
        } else if (n.code != 0 && n.error == node_error::io_error) {
            why += std::string(": ") + std::strerror(n.code);
        }
        say(1, "node %s: %s", node_shown(i).c_str(), why.c_str());
    }
    return said;
}

// What a node's set-up found that Redis cannot promise, once per node: a
// node used with a warning, or (once acquired) a replica the quorum went
// without; when the acquisition fails, report_nodes() says it instead.
void warn_nodes(bool acquired) {
    static bool warned[lock_max_nodes] = {};
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        const node_info n = driver.node(i);
        if (warned[i]) {
            continue;
        }
        if (n.state == node_state::ready && n.warning == node_warning::may_evict) {
            warned[i] = true;
            say(1,
                "warning: node %s: maxmemory-policy %s with maxmemory set: Redis may evict the "
                "lock's key under memory pressure (use noeviction)",
                node_shown(i).c_str(), terminal_text(text(n.maxmemory_policy)).c_str());
        } else if (acquired && n.error == node_error::replica) {
            warned[i] = true;
            say(1, "warning: node %s: %s (%s): it cannot hold the lock", node_shown(i).c_str(),
                describe(n.error), terminal_text(text(n.message)).c_str());
        }
    }
}

int unavailable(const client_lock& l) {
    say(1, "no quorum of nodes reachable (%u of %u needed)", l.machine().quorum(),
        driver.node_count());
    if (report_nodes() == 0) {
        // Connected, and still no answer when the try's time was up.
        say(1,
            "no answer within the %llu ms a try has at -t %llu ms (half the ttl): a slower "
            "link needs a longer ttl",
            static_cast<unsigned long long>(try_allowance(opt.ttl).ms()),
            static_cast<unsigned long long>(opt.ttl.ms()));
    }
    return exit_unavailable;
}

// Exit status for an acquisition that ended in `ev` (busy or failed).
int not_acquired(const client_lock& l, const lock_event& ev) {
    if (ev.kind == lock_event_kind::busy ||
        (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::fence_conflict)) {
        const std::string what = opt.permits != 0 ? "every permit of '" + opt.key + "' (" +
                                                        std::to_string(opt.permits) + ") is"
                                                  : "'" + opt.key + "' is";
        if (ev.holder_ttl_ms >= 0) {
            say(1, "%s held by another owner (%s %lld ms more)", what.c_str(),
                opt.permits != 0 ? "the first for" : "for",
                static_cast<long long>(ev.holder_ttl_ms));
        } else {
            say(1, "%s held by another owner", what.c_str());
        }
        report_nodes();  // the nodes that did not answer "busy"
        return opt.conflict_exit;
    }
    if (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::permits_differ) {
        if (ev.permits_found > 0) {
            say(1, "'%s' is a semaphore of %d permits on a node, not %u (--permits)",
                opt.key.c_str(), static_cast<int>(ev.permits_found), opt.permits);
        } else {
            say(1, "'%s' has an unreadable limit of permits on a node", opt.key.c_str());
        }
        return exit_config;
    }
    if (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::random_failed) {
        say(1, "no secure random bytes for a token");
        return exit_software;
    }
    if (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::not_replicated) {
        say(1, "'%s': too few replicas acknowledged the key (--min-replicas %u within %llu ms)",
            opt.key.c_str(), opt.min_replicas,
            static_cast<unsigned long long>(l.machine().options().replica_timeout.ms()));
        report_nodes();
        return exit_unavailable;
    }
    return unavailable(l);
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
