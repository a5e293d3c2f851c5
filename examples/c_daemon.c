/* A C daemon that owns its poll() loop and does its work only while it holds
 * a lock: the C API's event-loop style (include/edgelock/edgelock.h).
 *
 *   c_daemon [URL [NAME [SECONDS]]]
 *
 * It asks for the lock and keeps asking while another holds it; once held,
 * it "works" (a line a second) while the watchdog renews the lock inside the
 * loop; told `lost`, it stops working at once and asks again. SIGTERM or
 * SIGINT, or SECONDS (default 0: run until told), make it release and exit.
 * No heap, no threads: the client and the lock live in static storage. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "edgelock/edgelock.h"

static volatile sig_atomic_t stop_asked = 0;

static void on_signal(int sig) {
    (void)sig;
    stop_asked = 1;
}

struct daemon_state {
    int working;  /* holds the lock and works */
    int asking;   /* an acquire is under way */
    int released; /* the final release has ended */
    uint64_t next_work_us;
};

static void on_lock_event(void* ctx, edgelock_lock* lock, const struct edgelock_event* ev) {
    struct daemon_state* d = ctx;
    switch (ev->kind) {
    case EDGELOCK_EVENT_ACQUIRED:
        d->asking = 0;
        d->working = 1;
        d->next_work_us = edgelock_now_us();
        printf("acquired: working (fencing token %llu)\n", (unsigned long long)ev->fence);
        break;
    case EDGELOCK_EVENT_BUSY:
    case EDGELOCK_EVENT_FAILED:
        /* The options' max_tries rounds ended without the lock: ask again. */
        d->asking = 0;
        break;
    case EDGELOCK_EVENT_RENEW_FAILED:
        printf("renew failed: at risk, retrying (%s)\n", edgelock_reason_name(ev->reason));
        break;
    case EDGELOCK_EVENT_LOST:
        /* Stop acting as the holder before anything else. */
        d->working = 0;
        printf("lost (%s): stopped working\n", edgelock_reason_name(ev->reason));
        break;
    case EDGELOCK_EVENT_RELEASED:
        d->working = 0;
        d->released = 1;
        printf("released\n");
        break;
    default:
        break;
    }
    (void)lock;
}

/* One wait of the loop: the client's fds and deadline, then its calls. */
static int wait_once(edgelock_client* c, int cap_ms) {
    struct edgelock_fd fds[64];
    struct pollfd pfds[64];
    size_t n = edgelock_client_wanted(c, fds, 64);
    size_t i;
    int timeout = edgelock_client_timeout_ms(c);
    int ready;
    if (timeout < 0 || timeout > cap_ms) {
        timeout = cap_ms;
    }
    for (i = 0; i < n; ++i) {
        pfds[i].fd = fds[i].fd;
        pfds[i].events = (short)(((fds[i].want & EDGELOCK_WANT_READ) ? POLLIN : 0) |
                                 ((fds[i].want & EDGELOCK_WANT_WRITE) ? POLLOUT : 0));
        pfds[i].revents = 0;
    }
    ready = poll(pfds, (nfds_t)n, timeout);
    if (ready < 0 && errno != EINTR) {
        perror("poll");
        return -1;
    }
    for (i = 0; i < n; ++i) {
        short r = ready > 0 ? pfds[i].revents : 0;
        fds[i].ready =
            (unsigned char)(((r & POLLIN) ? EDGELOCK_WANT_READ : 0) |
                            ((r & POLLOUT) ? EDGELOCK_WANT_WRITE : 0) |
                            ((r & (POLLERR | POLLHUP | POLLNVAL)) ? EDGELOCK_READY_ERROR : 0));
    }
    /* One call does the ready fds and whatever else is due. */
    edgelock_client_on_ready(c, fds, n);
    return 0;
}

int main(int argc, char** argv) {
    static edgelock_align client_mem[EDGELOCK_CLIENT_WORDS(1, 0)];
    static edgelock_align lock_mem[EDGELOCK_LOCK_WORDS];
    const char* urls[1];
    const char* name = argc > 2 ? argv[2] : "c-daemon";
    const long seconds = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
    struct edgelock_client_options co;
    struct edgelock_lock_options lo;
    struct daemon_state d = {0, 0, 0, 0};
    struct sigaction sa;
    edgelock_client* c = NULL;
    edgelock_lock* job = NULL;
    uint64_t end_us;
    int rc;

    urls[0] = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    edgelock_client_options_init(&co);
    rc = edgelock_client_init(client_mem, sizeof client_mem, 1, 0, urls, 1, &co, &c);
    if (rc != EDGELOCK_OK) {
        const char* why = "";
        if (rc == EDGELOCK_ERR_URL) {
            edgelock_client_bad_url(c, &why);
        }
        fprintf(stderr, "c_daemon: %s %s\n", edgelock_strerror(rc), why);
        return 64;
    }
    edgelock_lock_options_init(&lo);
    lo.mode = EDGELOCK_MODE_FENCED;
    lo.ttl_ms = 3000;
    lo.max_tries = 5;
    lo.wait_ms = 2000;
    lo.holder = "c_daemon example";
    rc = edgelock_lock_init(lock_mem, sizeof lock_mem, c, name, &lo, &job);
    if (rc != EDGELOCK_OK) {
        fprintf(stderr, "c_daemon: %s\n", edgelock_strerror(rc));
        return 64;
    }
    edgelock_lock_set_callback(job, on_lock_event, &d);

    end_us = seconds > 0 ? edgelock_now_us() + (uint64_t)seconds * 1000000u : UINT64_MAX;
    while (!stop_asked && edgelock_now_us() < end_us) {
        if (!d.working && !d.asking) {
            rc = edgelock_lock_start_acquire(job);
            if (rc == EDGELOCK_OK) {
                d.asking = 1;
            } else if (rc != EDGELOCK_ERR_BUSY) {
                fprintf(stderr, "c_daemon: %s\n", edgelock_strerror(rc));
                break;
            }
        }
        if (d.working && edgelock_lock_held(job) && edgelock_now_us() >= d.next_work_us) {
            printf("working, %llu ms of validity left\n",
                   (unsigned long long)edgelock_lock_validity_ms(job));
            fflush(stdout);
            d.next_work_us += 1000000u;
        }
        if (wait_once(c, 100) != 0) {
            break;
        }
    }

    /* Let go: release (or cancel an acquire under way), bounded. */
    if (edgelock_lock_start_release(job) == EDGELOCK_OK) {
        const uint64_t give_up = edgelock_now_us() + 2000000u;
        while (!d.released && edgelock_now_us() < give_up) {
            struct edgelock_outcome o;
            edgelock_lock_outcome(job, &o);
            if (o.op == EDGELOCK_OP_RELEASE && o.done) {
                break;
            }
            if (wait_once(c, 100) != 0) {
                break;
            }
        }
    }
    edgelock_lock_deinit(job);
    edgelock_client_deinit(c);
    printf("c_daemon: stopped\n");
    return 0;
}
