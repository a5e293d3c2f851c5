// edgelock: a flock(1)-style agent for jobs that must not run twice across
// gateways. One poll loop, no threads: the Redis connections, the child's
// exit and forwarded signals all arrive as readable fds (signals through a
// self-pipe written by the handlers).
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "edgelock/client.hpp"
#include "options.hpp"

#ifndef EDGELOCK_VERSION_STRING
#define EDGELOCK_VERSION_STRING "unknown"
#endif

namespace {

using namespace edgelock;
using namespace edgelock_cli;

options opt;
client<lock_max_nodes> nodes;  // ~5 KB per node: static, not on the stack
std::vector<str_view> urls;

void say(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void say(int level, const char* fmt, ...) {
    if (opt.verbosity < level) {
        return;
    }
    std::fputs("edgelock: ", stderr);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
}

std::string text(str_view v) {
    return v.empty() ? std::string() : std::string(v.data, v.size);
}

// --- signals: handlers write into a pipe the loop watches ---------------------------------

int signal_pipe[2] = {-1, -1};

struct signal_note {
    int signo;
    int from_process;  // sent with kill() (systemd, a shell), not by the terminal
};

void on_signal(int signo, siginfo_t* info, void*) {
    const int saved = errno;
    signal_note n{signo,
                  info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE)};
    ssize_t w = ::write(signal_pipe[1], &n, sizeof n);
    (void)w;  // a full pipe already holds a wake-up
    errno = saved;
}

bool install_signals() {
    if (::pipe(signal_pipe) != 0) {
        return false;
    }
    for (int fd : signal_pipe) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) {
        if (::sigaction(s, &sa, nullptr) != 0) {
            return false;
        }
    }
    return true;
}

// --- the loop -------------------------------------------------------------------------------

// One turn: waits for the client's fds (and the signal pipe when watched)
// until `until`, then lets the client handle what happened. Returns false
// when waiting failed.
bool turn(instant until, bool watch_signals, bool& signalled) {
    port::wait_entry e[lock_max_nodes + 1];
    std::size_t n = nodes.wanted(e, lock_max_nodes);
    const std::size_t client_entries = n;
    if (watch_signals) {
        e[n].fd = signal_pipe[0];
        e[n].want = port::want_read;
        ++n;
    }
    const instant wake = earliest(nodes.next_deadline(), until);
    if (port::wait(e, n, wake) < 0) {
        return false;
    }
    signalled = watch_signals && e[client_entries].ready != 0;
    nodes.on_ready(e, client_entries);
    nodes.on_timeout();
    return true;
}

// What the lock's callback saw.
struct lock_watch {
    bool ended = false;  // the operation being waited for ended
    lock_event_kind want_end[3] = {};
    int want_count = 0;
    lock_event last;
    bool lost = false;
    bool at_risk = false;
};

lock_watch watch;

void on_lock_event(void*, client_lock& l, const lock_event& ev) {
    watch.last = ev;
    for (int i = 0; i < watch.want_count; ++i) {
        watch.ended = watch.ended || ev.kind == watch.want_end[i];
    }
    switch (ev.kind) {
    case lock_event_kind::acquired:
        say(2, "acquired '%s' (valid %llu ms%s)", opt.key.c_str(),
            static_cast<unsigned long long>((ev.validity_deadline - port::now()).ms()),
            opt.fencing ? (", fencing token " + std::to_string(ev.fence)).c_str() : "");
        break;
    case lock_event_kind::renewed:
        watch.at_risk = false;
        say(2, "renewed (valid %llu ms)",
            static_cast<unsigned long long>((ev.validity_deadline - port::now()).ms()));
        break;
    case lock_event_kind::renew_failed:
        say(watch.at_risk ? 2 : 1,
            "renew missed its quorum; retrying until the lock's validity ends");
        watch.at_risk = true;
        break;
    case lock_event_kind::lost:
        watch.lost = true;
        say(1, "lock '%s' lost (%s)", opt.key.c_str(), describe(ev.reason));
        break;
    default:
        break;
    }
    (void)l;
}

// Runs until the watched operation ends or `bound` passes.
bool await(instant bound) {
    bool signalled = false;
    while (!watch.ended && port::now() < bound) {
        if (!turn(bound, false, signalled)) {
            return false;
        }
    }
    return watch.ended;
}

void expect(std::initializer_list<lock_event_kind> ends) {
    watch.ended = false;
    watch.want_count = 0;
    for (lock_event_kind k : ends) {
        watch.want_end[watch.want_count++] = k;
    }
}

// Why nodes failed, one line each, for exit 69.
void report_nodes() {
    for (std::uint8_t i = 0; i < nodes.node_count(); ++i) {
        const node_info n = nodes.node(i);
        if (n.state == node_state::ready && n.error == node_error::none) {
            continue;
        }
        std::string why = describe(n.error);
        if (n.error == node_error::none) {
            why = std::string("no reply in time (") + describe(n.state) + ")";
        }
        if (!n.message.empty()) {
            why += ": " + text(n.message);
        } else if (n.code != 0 && n.error == node_error::io_error) {
            why += std::string(": ") + std::strerror(n.code);
        }
        say(1, "node %s: %s", opt.nodes[i].c_str(), why.c_str());
    }
}

int unavailable(const client_lock& l) {
    say(1, "no quorum of nodes reachable (%u of %u needed)", l.machine().quorum(),
        nodes.node_count());
    report_nodes();
    return exit_unavailable;
}

// Exit status for an acquisition that ended in `ev` (busy or failed).
int not_acquired(const client_lock& l, const lock_event& ev) {
    if (ev.kind == lock_event_kind::busy ||
        (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::fence_conflict)) {
        if (ev.holder_ttl_ms >= 0) {
            say(1, "'%s' is held by another owner (for %lld ms more)", opt.key.c_str(),
                static_cast<long long>(ev.holder_ttl_ms));
        } else {
            say(1, "'%s' is held by another owner", opt.key.c_str());
        }
        return opt.conflict_exit;
    }
    if (ev.kind == lock_event_kind::failed && ev.reason == lock_failure::random_failed) {
        say(1, "no secure random bytes for a token");
        return exit_software;
    }
    return unavailable(l);
}

// --- set-up -----------------------------------------------------------------------------------

lock_options lock_options_from(const options& o) {
    lock_options lo;
    lo.mode = o.fencing ? lock_mode::fenced : lock_mode::plain;
    lo.ttl = o.ttl;
    // A tenth of the ttl, within [50 ms, 1 s]: room for a gateway's uplink,
    // small against the ttl as Redlock asks.
    std::uint64_t t = o.ttl.us / 10;
    t = t < 50000 ? 50000 : (t > 1000000 ? 1000000 : t);
    if (t >= o.ttl.us) {
        t = o.ttl.us / 2;
    }
    lo.node_timeout = duration::micros(t);
    lo.wait = o.wait;
    lo.max_tries = o.wait.us == 0 ? 1 : UINT32_MAX;
    return lo;
}

int setup(client_lock& l) {
    for (const std::string& u : opt.nodes) {
        urls.emplace_back(u.data(), u.size());
    }
    client_options co;
    if (opt.have_password) {
        co.password = str_view(opt.password.data(), opt.password.size());
    }
    const client_errc ce = nodes.configure(urls.data(), urls.size(), co);
    if (ce == client_errc::bad_url || ce == client_errc::tls_not_built_in) {
        say(0, "bad node URL '%s': %s", opt.nodes[nodes.bad_url_index()].c_str(),
            describe(nodes.bad_url_error()));
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
        l.attach(nodes, str_view(opt.key.data(), opt.key.size()), lock_options_from(opt), w);
    if (le == client_errc::bad_option) {
        say(0, "--renew-every must be shorter than the ttl");
        return exit_usage;
    }
    if (le != client_errc::ok) {
        if (l.lock_error() == lock_errc::bad_ttl) {
            say(0, "--ttl is too short: it must exceed the clock drift allowance (1%% + 2 ms)");
        } else {
            say(0, "%s", describe(l.lock_error()));
        }
        return exit_usage;
    }
    l.set_callback(on_lock_event, nullptr);
    // A quorum is enough to start; a slow node gets the lock's node_timeout.
    nodes.connect(port::now() + duration::seconds(1), l.machine().quorum());
    return exit_ok;
}

// How long any one operation may take, all nodes and retries included.
instant op_bound(duration extra) {
    return port::now() + duration::seconds(3) + extra;
}

bool parse_token(owner_token& t) {
    if (!t.from_hex(opt.token.data(), opt.token.size())) {
        say(0, "TOKEN must be %zu hex digits", owner_token::hex_size);
        return false;
    }
    return true;
}

// --- commands ---------------------------------------------------------------------------------

int acquire_command(client_lock& l) {
    const op_result r = opt.wait.us == 0 ? l.try_acquire() : l.acquire(opt.wait);
    if (r.error != client_errc::ok) {
        return r.lock_error == lock_errc::random_failed ? exit_software : unavailable(l);
    }
    if (r.event.kind != lock_event_kind::acquired) {
        return not_acquired(l, r.event);
    }
    char hex[owner_token::hex_size];
    l.token().to_hex(hex);
    std::printf("%.*s\n", static_cast<int>(sizeof hex), hex);
    if (opt.fencing) {
        std::printf("%llu\n", static_cast<unsigned long long>(l.fence()));
    }
    return std::fflush(stdout) == 0 ? exit_ok : exit_software;
}

int renew_command(client_lock& l) {
    owner_token t;
    if (!parse_token(t)) {
        return exit_usage;
    }
    if (l.resume(t) != client_errc::ok) {
        return exit_software;
    }
    expect({lock_event_kind::renewed, lock_event_kind::lost, lock_event_kind::renew_failed});
    if (l.start_renew() != client_errc::ok) {
        return exit_software;
    }
    if (!await(op_bound(duration{}))) {
        return unavailable(l);
    }
    if (watch.last.kind == lock_event_kind::renewed) {
        return exit_ok;
    }
    if (watch.last.kind == lock_event_kind::lost && watch.last.reason == lock_failure::not_ours) {
        say(1, "'%s' is not held by that token", opt.key.c_str());
        return exit_conflict;
    }
    return unavailable(l);
}

int release_command(client_lock& l) {
    owner_token t;
    if (!parse_token(t)) {
        return exit_usage;
    }
    if (l.resume(t) != client_errc::ok) {
        return exit_software;
    }
    const op_result r = l.release();
    if (r.error != client_errc::ok) {
        return unavailable(l);
    }
    if (r.event.nodes >= l.machine().quorum()) {
        return exit_ok;
    }
    if (nodes.ready_count() < l.machine().quorum()) {
        return unavailable(l);
    }
    say(1, "'%s' was not held by that token", opt.key.c_str());
    return exit_conflict;
}

struct status_reply {
    bool answered = false;
    bool is_integer = false;  // PTTL must answer with one; anything else is not Redis
    long long integer = 0;
    std::string value;
    bool is_text = false;
};

void take_reply(void* ctx, const resp_node* n, std::size_t count) {
    status_reply& r = *static_cast<status_reply*>(ctx);
    if (count == 0) {
        return;
    }
    r.answered = true;
    if (n[0].type == resp_type::integer) {
        r.integer = n[0].integer;
        r.is_integer = true;
    } else if (n[0].has_text() && !n[0].is_error()) {
        r.value = text(n[0].text);
        r.is_text = true;
    }
}

int status_command(client_lock& l) {
    const std::string key = "{" + opt.key + "}";
    const std::string counter = key + ":fence";
    unsigned holding = 0;
    unsigned answered = 0;
    std::string lines;
    for (std::uint8_t i = 0; i < nodes.node_count(); ++i) {
        status_reply ttl;
        status_reply value;
        status_reply fence;
        const str_view pttl[] = {"PTTL", str_view(key.data(), key.size())};
        const str_view get[] = {"GET", str_view(key.data(), key.size())};
        const str_view getf[] = {"GET", str_view(counter.data(), counter.size())};
        const instant bound = port::now() + duration::seconds(2);
        nodes.command(i, pttl, 2, bound, take_reply, &ttl);
        if (ttl.is_integer) {
            nodes.command(i, get, 2, bound, take_reply, &value);
            nodes.command(i, getf, 2, bound, take_reply, &fence);
        }
        std::string line = "  " + opt.nodes[i] + ": ";
        if (!ttl.answered) {
            const node_info n = nodes.node(i);
            line += std::string("unreachable (") + describe(n.error) + ")";
        } else if (!ttl.is_integer) {
            line += "unexpected reply to PTTL";
        } else {
            ++answered;
            if (ttl.integer == -2) {
                line += "free";
            } else {
                ++holding;
                line += "held";
                line += ttl.integer >= 0 ? ", ttl " + std::to_string(ttl.integer) + " ms"
                                         : std::string(", no expiry");
                if (value.is_text) {
                    line += ", token " + value.value;
                }
            }
            if (fence.is_text) {
                line += ", fencing counter " + fence.value;
            }
        }
        lines += line + "\n";
    }
    const unsigned quorum = l.machine().quorum();
    std::printf("%s: %s (%u of %u nodes hold it, quorum %u)\n%s", opt.key.c_str(),
                holding >= quorum ? "held" : "free", holding, nodes.node_count(), quorum,
                lines.c_str());
    std::fflush(stdout);
    if (answered < quorum) {
        return unavailable(l);
    }
    return exit_ok;
}

// --- run ----------------------------------------------------------------------------------------

pid_t start_child(const client_lock& l) {
    const pid_t pid = ::fork();
    if (pid != 0) {
        return pid;
    }
    // The child: default signal handling, the lock's identity in its
    // environment, then the command.
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) {
        ::sigaction(s, &sa, nullptr);
    }
    ::setenv("EDGELOCK_KEY", opt.key.c_str(), 1);
    if (opt.fencing) {
        ::setenv("EDGELOCK_FENCING_TOKEN", std::to_string(l.fence()).c_str(), 1);
    } else {
        ::unsetenv("EDGELOCK_FENCING_TOKEN");
    }
    std::vector<char*> argv;
    for (std::string& a : opt.child) {
        argv.push_back(&a[0]);
    }
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    const int e = errno;
    std::fprintf(stderr, "edgelock: cannot run '%s': %s\n", argv[0], std::strerror(e));
    ::_exit(e == ENOENT ? 127 : 126);
}

int exit_status_of(int status) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return exit_software;
}

int run_command(client_lock& l) {
    if (!install_signals()) {
        say(0, "cannot set up signal handling: %s", std::strerror(errno));
        return exit_software;
    }
    // Acquire, while a SIGTERM can still stop us cleanly.
    expect({lock_event_kind::acquired, lock_event_kind::busy, lock_event_kind::failed});
    if (l.start_acquire(lock_options_from(opt).max_tries, opt.wait) != client_errc::ok) {
        return exit_software;
    }
    const instant bound = op_bound(opt.wait);
    int stop_signal = 0;
    while (!watch.ended && port::now() < bound && stop_signal == 0) {
        bool signalled = false;
        if (!turn(bound, true, signalled)) {
            return exit_software;
        }
        signal_note n;
        while (signalled && ::read(signal_pipe[0], &n, sizeof n) == sizeof n) {
            if (n.signo != SIGCHLD) {
                stop_signal = n.signo;
            }
        }
    }
    if (stop_signal != 0 || !watch.ended) {
        l.release();  // whatever is under way; not_held when nothing is
        return stop_signal != 0 ? 128 + stop_signal : unavailable(l);
    }
    if (watch.last.kind != lock_event_kind::acquired) {
        return not_acquired(l, watch.last);
    }

    const pid_t child = start_child(l);
    if (child < 0) {
        say(0, "fork: %s", std::strerror(errno));
        l.release();
        return exit_software;
    }
    bool child_running = true;
    int child_status = 0;
    bool terminated = false;  // we sent SIGTERM because the lock was lost
    instant kill_at = instant::never();
    instant last_validity = watch.last.validity_deadline;
    while (child_running) {
        // At risk (renewals failing): the command gets its SIGTERM a grace
        // before the validity ends, so that SIGKILL, if needed, lands while
        // the lock is still ours, before anyone else can hold it.
        instant term_at = instant::never();
        if (watch.at_risk && !terminated) {
            term_at =
                instant{last_validity.us > opt.grace.us ? last_validity.us - opt.grace.us : 0};
        }
        bool signalled = false;
        if (!turn(earliest(kill_at, term_at), true, signalled)) {
            ::kill(child, SIGKILL);
        }
        if (watch.last.kind == lock_event_kind::acquired ||
            watch.last.kind == lock_event_kind::renewed) {
            last_validity = watch.last.validity_deadline;
        }
        signal_note n;
        while (signalled && ::read(signal_pipe[0], &n, sizeof n) == sizeof n) {
            if (n.signo == SIGCHLD) {
                continue;
            }
            // A terminal's signal reached the child already (same process group).
            if (n.from_process) {
                ::kill(child, n.signo);
            }
        }
        int status = 0;
        const pid_t r = ::waitpid(child, &status, WNOHANG);
        if (r == child) {
            child_running = false;
            child_status = status;
            break;
        }
        const instant now = port::now();
        const bool risk_due = watch.at_risk && !watch.lost && term_at <= now;
        if ((watch.lost || risk_due) && !terminated) {
            terminated = true;
            const duration left = last_validity - now;
            const duration grace = left < opt.grace ? left : opt.grace;
            say(1, "stopping the command (SIGTERM, SIGKILL in %llu ms)%s",
                static_cast<unsigned long long>(grace.ms()),
                watch.lost ? "" : ": the lock may be lost by then");
            ::kill(child, SIGTERM);
            kill_at = now + grace;
        }
        if (terminated && now >= kill_at) {
            ::kill(child, SIGKILL);
            kill_at = instant::never();
        }
    }
    if (watch.lost || terminated) {
        // Stopped for the lock's sake: whatever it exited with, the job did
        // not finish under the lock. Release what may still be held.
        l.release();  // not_held when it is already lost
        return exit_lost;
    }
    l.release();
    if (watch.lost) {
        // Lost between the child's exit and the release: it ran without the
        // lock for a moment at most, but it did.
        return exit_lost;
    }
    return exit_status_of(child_status);
}

}  // namespace

int main(int argc, char** argv) {
    std::string error;
    if (!parse_command_line(argc, argv, opt, error)) {
        std::fprintf(stderr, "edgelock: %s\n", error.c_str());
        return exit_usage;
    }
    if (opt.cmd == command::help) {
        std::fputs(usage_text(), stdout);
        return exit_ok;
    }
    if (opt.cmd == command::version) {
        std::printf("edgelock %s\n", EDGELOCK_VERSION_STRING);
        return exit_ok;
    }
    client_lock l;
    const int s = setup(l);
    if (s != exit_ok) {
        return s;
    }
    int status = exit_software;
    switch (opt.cmd) {
    case command::run:
        status = run_command(l);
        break;
    case command::acquire:
        status = acquire_command(l);
        break;
    case command::renew:
        status = renew_command(l);
        break;
    case command::release:
        status = release_command(l);
        break;
    case command::status:
        status = status_command(l);
        break;
    default:
        break;
    }
    l.detach();
    nodes.disconnect();
    return status;
}
