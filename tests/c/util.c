/* What the cases share (capi_test.h): a client on one server, the event
 * recorder and the two ways of driving a client. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <string.h>

#include "capi_test.h"

int test_client_open(struct test_client* t, unsigned port,
                     const struct edgelock_client_options* options) {
    snprintf(t->url, sizeof t->url, "redis://127.0.0.1:%u", port);
    t->urls[0] = t->url;
    t->c = NULL;
    CHECK_RC(edgelock_client_init(t->mem, sizeof t->mem, 1, 0, t->urls, 1, options, &t->c),
             EDGELOCK_OK);
    CHECK(t->c != NULL);
    return 0;
}

int two_owners_open(struct two_owners* o, unsigned port, const char* name,
                    const struct edgelock_lock_options* options_a,
                    const struct edgelock_lock_options* options_b) {
    o->la = NULL;
    o->lb = NULL;
    CHECK(test_client_open(&o->a, port, NULL) == 0);
    CHECK(test_client_open(&o->b, port, NULL) == 0);
    CHECK_RC(edgelock_lock_init(o->mem_a, sizeof o->mem_a, o->a.c, name, options_a, &o->la),
             EDGELOCK_OK);
    CHECK_RC(edgelock_lock_init(o->mem_b, sizeof o->mem_b, o->b.c, name, options_b, &o->lb),
             EDGELOCK_OK);
    return 0;
}

void two_owners_close(struct two_owners* o) {
    edgelock_lock_deinit(o->la);
    edgelock_lock_deinit(o->lb);
    edgelock_client_deinit(o->a.c);
    edgelock_client_deinit(o->b.c);
}

void recorder_init(struct recorder* r) {
    memset(r, 0, sizeof *r);
    r->last.kind = -1;
}

void recorder_cb(void* ctx, edgelock_lock* lock, const struct edgelock_event* event) {
    struct recorder* r = (struct recorder*)ctx;
    if (event->kind >= 0 && event->kind < RECORDER_KINDS) {
        ++r->count[event->kind];
    } else {
        r->bad_kind = 1;
    }
    if (r->total < RECORDER_LOG) {
        r->kinds[r->total] = event->kind;
    }
    ++r->total;
    r->last = *event;
    if (r->reenter != NULL && !r->reentered) {
        /* Blocking calls are refused inside a callback, on any lock. */
        r->reentered = 1;
        r->reenter_rc = edgelock_lock_try_acquire(r->reenter);
    }
    (void)lock;
}

/* Room for the fds of a one-node client and more. */
#define POLL_FDS 16

int poll_until(edgelock_client* c, int (*done)(void*), void* arg, uint32_t bound_ms,
               unsigned* woke) {
    const uint64_t deadline = test_now_ms() + bound_ms;
    CHECK_INT(edgelock_client_fd_capacity(c), >=, 1);
    CHECK_INT(edgelock_client_fd_capacity(c), <=, POLL_FDS);
    while (!done(arg)) {
        const uint64_t now = test_now_ms();
        if (now >= deadline) {
            fprintf(stderr, "poll_until: not done within %u ms\n", (unsigned)bound_ms);
            return 1;
        }
        struct edgelock_fd fds[POLL_FDS];
        struct pollfd pfds[POLL_FDS];
        const size_t n = edgelock_client_wanted(c, fds, POLL_FDS);
        CHECK_INT(n, <=, edgelock_client_fd_capacity(c));
        for (size_t i = 0; i < n; ++i) {
            CHECK(fds[i].fd >= 0);
            CHECK(fds[i].want != 0);
            CHECK((fds[i].want & ~(EDGELOCK_WANT_READ | EDGELOCK_WANT_WRITE)) == 0);
            pfds[i].fd = fds[i].fd;
            pfds[i].events = (short)(((fds[i].want & EDGELOCK_WANT_READ) ? POLLIN : 0) |
                                     ((fds[i].want & EDGELOCK_WANT_WRITE) ? POLLOUT : 0));
            pfds[i].revents = 0;
        }
        /* The client's deadline, cut to the test's own bound. */
        int timeout = edgelock_client_timeout_ms(c);
        const uint64_t deadline_us = edgelock_client_next_deadline_us(c);
        CHECK(timeout >= -1);
        if (timeout >= 0) {
            CHECK(deadline_us != UINT64_MAX);
        } else {
            CHECK(deadline_us == UINT64_MAX);
        }
        const uint64_t left = deadline - now;
        if (timeout < 0 || (uint64_t)timeout > left) {
            timeout = (int)left;
        }
        const int r = poll(pfds, (nfds_t)n, timeout);
        if (r < 0) {
            CHECK(errno == EINTR);
            continue;
        }
        if (r == 0) {
            edgelock_client_on_timeout(c);
            continue;
        }
        for (size_t i = 0; i < n; ++i) {
            const short ev = pfds[i].revents;
            fds[i].ready =
                (unsigned char)(((ev & POLLIN) ? EDGELOCK_WANT_READ : 0) |
                                ((ev & POLLOUT) ? EDGELOCK_WANT_WRITE : 0) |
                                ((ev & (POLLERR | POLLHUP | POLLNVAL)) ? EDGELOCK_READY_ERROR : 0));
        }
        if (woke != NULL) {
            ++*woke;
        }
        edgelock_client_on_ready(c, fds, n);
    }
    return 0;
}

static int time_reached(void* arg) {
    return test_now_ms() >= *(const uint64_t*)arg;
}

int poll_for(edgelock_client* c, uint32_t ms) {
    uint64_t until = test_now_ms() + ms;
    return poll_until(c, time_reached, &until, ms + 1000, NULL);
}

int run_until(edgelock_client* c, int (*done)(void*), void* arg, uint32_t bound_ms) {
    const uint64_t deadline = test_now_ms() + bound_ms;
    while (!done(arg)) {
        if (test_now_ms() >= deadline) {
            fprintf(stderr, "run_until: not done within %u ms\n", (unsigned)bound_ms);
            return 1;
        }
        CHECK_RC(edgelock_client_run_for(c, 20), EDGELOCK_OK);
    }
    return 0;
}

int lock_token(const edgelock_lock* lock, char token[EDGELOCK_TOKEN_TEXT]) {
    CHECK_RC(edgelock_lock_token(lock, token, EDGELOCK_TOKEN_TEXT), EDGELOCK_OK);
    CHECK_INT(strlen(token), ==, EDGELOCK_TOKEN_TEXT - 1);
    CHECK(strspn(token, "0123456789abcdefABCDEF") == EDGELOCK_TOKEN_TEXT - 1);
    return 0;
}

int server_get(const struct test_server* s, const char* key, char* out, size_t size) {
    struct redis_reply r;
    CHECK(size > 0);
    CHECK(server_command(s, &r, "GET", key, (const char*)NULL) == 0);
    CHECK(r.type == '$');
    CHECK(r.len < size);
    memcpy(out, r.text, r.len);
    out[r.len] = '\0';
    return 0;
}
