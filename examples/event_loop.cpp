// A daemon that holds a lock from its own epoll loop, with the event-loop API.
//
//   event_loop SECONDS URL [URL...]
//
// It acquires "event-loop-demo" (retrying for up to SECONDS), keeps it for
// SECONDS while the watchdog renews it, prints every lock event, and releases
// it on the way out, also on SIGINT/SIGTERM (read from a signalfd in the same
// loop). Exit status: 0 released normally, 1 not acquired, 2 lost, 64 usage.
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "edgelock/client.hpp"

namespace {

struct app {
    bool acquired = false;
    bool finished = false;  // released, failed, busy or lost: nothing more to wait for
    int status = 0;
};

void on_event(void* ctx, edgelock::client_lock& l, const edgelock::lock_event& ev) {
    app& a = *static_cast<app*>(ctx);
    const edgelock::instant now = edgelock::port::now();
    std::printf("event: %-12s", edgelock::describe(ev.kind));
    switch (ev.kind) {
    case edgelock::lock_event_kind::acquired:
    case edgelock::lock_event_kind::renewed:
        std::printf(" valid for %llu ms",
                    static_cast<unsigned long long>((ev.validity_deadline - now).ms()));
        a.acquired = true;
        break;
    case edgelock::lock_event_kind::lost:
        std::printf(" (%s)", edgelock::describe(ev.reason));
        a.finished = true;
        a.status = 2;
        break;
    case edgelock::lock_event_kind::failed:
        std::printf(" (%s)", edgelock::describe(ev.reason));
        a.finished = true;
        a.status = 1;
        break;
    case edgelock::lock_event_kind::busy:
        a.finished = true;
        a.status = 1;
        break;
    case edgelock::lock_event_kind::released:
        a.finished = true;
        break;
    case edgelock::lock_event_kind::renew_failed:
        break;
    }
    std::printf(" [state %s]\n", edgelock::describe(l.state()));
    std::fflush(stdout);
}

// The client's fds change when connections are made or dropped, and a closed
// fd's number can come back for a new connection (which epoll would then not
// know). Re-registering the few fds on every turn is the simple correct way.
using nodes_client = edgelock::client<edgelock::lock_max_nodes>;

int sync_epoll(int ep, edgelock::client_base& c, int* registered, int count) {
    for (int i = 0; i < count; ++i) {
        epoll_ctl(ep, EPOLL_CTL_DEL, registered[i], nullptr);
    }
    // The most fds the client can want at once (a RESP2 node's waiters are
    // told through a second connection, a Sentinel node keeps a watch):
    // wanted() writes no more than that.
    edgelock::port::wait_entry want[nodes_client::max_fds];
    const std::size_t n = c.wanted(want, nodes_client::max_fds);
    int k = 0;
    for (std::size_t i = 0; i < n; ++i) {
        epoll_event ev{};
        ev.events = ((want[i].want & edgelock::port::want_read) ? EPOLLIN : 0u) |
                    ((want[i].want & edgelock::port::want_write) ? EPOLLOUT : 0u);
        ev.data.fd = want[i].fd;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, want[i].fd, &ev) == 0) {
            registered[k++] = want[i].fd;
        }
    }
    return k;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || argc - 2 > edgelock::lock_max_nodes) {
        std::fprintf(stderr, "usage: event_loop SECONDS URL [URL...] (at most %d URLs)\n",
                     edgelock::lock_max_nodes);
        return 64;
    }
    const long seconds = std::strtol(argv[1], nullptr, 10);
    if (seconds <= 0 || seconds > 3600) {
        std::fprintf(stderr, "event_loop: SECONDS must be 1..3600\n");
        return 64;
    }
    edgelock::str_view urls[edgelock::lock_max_nodes];
    const int nodes = argc - 2;
    for (int i = 0; i < nodes; ++i) {
        urls[i] = edgelock::str_view(argv[2 + i]);
    }

    static nodes_client client;  // ~8 KB per node: not on the stack
    const edgelock::client_errc ce =
        client.configure(urls, static_cast<std::size_t>(nodes), edgelock::client_options{});
    if (ce != edgelock::client_errc::ok) {
        std::fprintf(stderr, "event_loop: %s: %s\n", argv[2 + client.bad_url_index()],
                     edgelock::describe(ce));
        return 64;
    }
    edgelock::lock_options options;
    options.ttl = edgelock::duration::seconds(3);
    edgelock::client_lock lock;
    app state;
    if (lock.attach(client, "event-loop-demo", options) != edgelock::client_errc::ok) {
        std::fprintf(stderr, "event_loop: %s\n", edgelock::describe(lock.lock_error()));
        return 64;
    }
    lock.set_callback(on_event, &state);

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    const int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    if (sfd < 0 || ep < 0) {
        std::perror("event_loop");
        return 70;
    }
    epoll_event sev{};
    sev.events = EPOLLIN;
    sev.data.fd = sfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &sev);

    lock.start_acquire(UINT32_MAX,
                       edgelock::duration::seconds(static_cast<std::uint64_t>(seconds)));
    edgelock::instant stop_at = edgelock::instant::never();
    bool releasing = false;
    int registered[nodes_client::max_fds];
    int nregistered = 0;

    while (!state.finished) {
        const edgelock::instant now = edgelock::port::now();
        if (state.acquired && stop_at.is_never()) {
            stop_at = now + edgelock::duration::seconds(static_cast<std::uint64_t>(seconds));
        }
        if (!releasing && now >= stop_at) {
            releasing = true;
            if (lock.start_release() != edgelock::client_errc::ok) {
                break;  // nothing held, nothing in flight
            }
            continue;
        }
        nregistered = sync_epoll(ep, client, registered, nregistered);
        const edgelock::instant wake = edgelock::earliest(client.next_deadline(), stop_at);
        int timeout_ms = -1;
        if (!wake.is_never()) {
            const std::uint64_t ms = ((wake - now).us + 999) / 1000;
            timeout_ms = ms > 60000 ? 60000 : static_cast<int>(ms);
        }
        epoll_event events[edgelock::lock_max_nodes + 1];
        const int n = epoll_wait(ep, events, edgelock::lock_max_nodes + 1, timeout_ms);
        for (int i = 0; i < n; ++i) {
            if (events[i].data.fd == sfd) {
                signalfd_siginfo si;
                while (read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                }
                std::printf("signal: releasing\n");
                stop_at = edgelock::port::now();
                continue;
            }
            std::uint8_t ready = 0;
            if (events[i].events & (EPOLLIN | EPOLLHUP)) {
                ready |= edgelock::port::want_read;
            }
            if (events[i].events & EPOLLOUT) {
                ready |= edgelock::port::want_write;
            }
            if (events[i].events & EPOLLERR) {
                ready |= edgelock::port::ready_error;
            }
            client.on_ready(events[i].data.fd, ready);
        }
        client.on_timeout();
    }
    close(ep);
    close(sfd);
    return state.status;
}
