/* Operations at the wrong time: not held, one at a time, a release that
 * cancels an acquisition not yet sent; and what a callback may and may not
 * call. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "capi_test.h"

/* Waits for n events of a kind in a recorder. */
struct wait_kind {
    const struct recorder* rec;
    int kind;
    unsigned n;
};

static int kind_seen(void* arg) {
    const struct wait_kind* w = (const struct wait_kind*)arg;
    return w->rec->count[w->kind] >= w->n;
}

int case_errors_operations(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    edgelock_lock* lock = NULL;
    struct recorder rec;
    struct wait_kind w;
    struct edgelock_outcome o;
    char token[EDGELOCK_TOKEN_TEXT];

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-ops", NULL, &lock), EDGELOCK_OK);
    recorder_init(&rec);
    edgelock_lock_set_callback(lock, recorder_cb, &rec);
    w.rec = &rec;

    /* Not held: renew and release refused, in both styles. */
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_ERR_NOT_HELD);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_ERR_NOT_HELD);
    CHECK_RC(edgelock_lock_start_renew(lock), EDGELOCK_ERR_NOT_HELD);
    CHECK_RC(edgelock_lock_start_release(lock), EDGELOCK_ERR_NOT_HELD);

    /* One operation at a time. */
    CHECK_RC(edgelock_lock_start_acquire(lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_start_acquire(lock), EDGELOCK_ERR_BUSY);
    CHECK_RC(edgelock_lock_start_acquire_tries(lock, 3, 1000), EDGELOCK_ERR_BUSY);
    CHECK_RC(edgelock_lock_try_acquire(lock), EDGELOCK_ERR_BUSY);
    CHECK_RC(edgelock_lock_start_renew(lock), EDGELOCK_ERR_BUSY);
    CHECK_RC(edgelock_lock_resume(lock, "0123456789abcdef0123456789abcdef"), EDGELOCK_ERR_BUSY);
    w.kind = EDGELOCK_EVENT_ACQUIRED;
    w.n = 1;
    CHECK(poll_until(t.c, kind_seen, &w, 5000, NULL) == 0);
    /* Held: acquiring again is refused, the hold untouched. */
    CHECK(lock_token(lock, token) == 0);
    CHECK_RC(edgelock_lock_start_acquire(lock), EDGELOCK_ERR_BUSY);
    CHECK_RC(edgelock_lock_try_acquire(lock), EDGELOCK_ERR_BUSY);
    CHECK_INT(edgelock_lock_held(lock), ==, 1);
    edgelock_lock_outcome(lock, &o);
    CHECK_INT(o.op, ==, EDGELOCK_OP_ACQUIRE);
    CHECK_INT(o.done, ==, 1);
    CHECK_RC(o.status, EDGELOCK_OK);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-ops", (const char*)NULL), ==, 0);

    /* A release started before the acquisition went out cancels it. */
    const unsigned acquired = rec.count[EDGELOCK_EVENT_ACQUIRED];
    CHECK_RC(edgelock_lock_start_acquire(lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_start_release(lock), EDGELOCK_OK);
    CHECK(poll_for(t.c, 300) == 0);
    edgelock_lock_outcome(lock, &o);
    CHECK_INT(o.op, ==, EDGELOCK_OP_RELEASE);
    CHECK_INT(o.done, ==, 1);
    CHECK_RC(o.status, EDGELOCK_OK);
    CHECK_INT(rec.count[EDGELOCK_EVENT_ACQUIRED], ==, acquired);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-ops", (const char*)NULL), ==, 0);

    /* The client deinitialised first: the lock, still initialised, is no
     * longer on a client, and says so. */
    edgelock_client_deinit(t.c);
    CHECK_RC(edgelock_lock_try_acquire(lock), EDGELOCK_ERR_NOT_ATTACHED);
    CHECK_RC(edgelock_lock_start_acquire(lock), EDGELOCK_ERR_NOT_ATTACHED);
    CHECK_RC(edgelock_lock_start_release(lock), EDGELOCK_ERR_NOT_ATTACHED);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    edgelock_lock_deinit(lock);
    return 0;
}

/* A callback that calls blocking functions (refused) and starts an
 * operation (allowed). */
struct reenter_ctx {
    struct recorder rec;
    edgelock_lock* self;
    edgelock_lock* other;
    edgelock_client* client;
    int rc[6];
    int tried;
    int release_rc;
};

static void reenter_cb(void* arg, edgelock_lock* lock, const struct edgelock_event* event) {
    struct reenter_ctx* x = (struct reenter_ctx*)arg;
    recorder_cb(&x->rec, lock, event);
    if (event->kind != EDGELOCK_EVENT_ACQUIRED || x->tried) {
        return;
    }
    x->tried = 1;
    x->rc[0] = edgelock_lock_try_acquire(x->other);
    x->rc[1] = edgelock_lock_acquire(x->other, 10);
    x->rc[2] = edgelock_lock_renew(x->self);
    x->rc[3] = edgelock_lock_release(x->self);
    x->rc[4] = edgelock_client_run_for(x->client, 10);
    x->rc[5] = edgelock_client_settle(x->client, 10);
    /* Held still (the refused release changed nothing): let it go. */
    x->release_rc = edgelock_lock_held(lock) ? edgelock_lock_start_release(lock) : -9999;
}

int case_reentered(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[2][EDGELOCK_LOCK_WORDS];
    struct reenter_ctx x;
    struct wait_kind w;

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    memset(&x, 0, sizeof x);
    recorder_init(&x.rec);
    x.client = t.c;
    CHECK_RC(edgelock_lock_init(mem[0], sizeof mem[0], t.c, "c-api-cb", NULL, &x.self),
             EDGELOCK_OK);
    CHECK_RC(edgelock_lock_init(mem[1], sizeof mem[1], t.c, "c-api-cb-other", NULL, &x.other),
             EDGELOCK_OK);
    edgelock_lock_set_callback(x.self, reenter_cb, &x);

    CHECK_RC(edgelock_lock_start_acquire(x.self), EDGELOCK_OK);
    w.rec = &x.rec;
    w.kind = EDGELOCK_EVENT_RELEASED;
    w.n = 1;
    CHECK(poll_until(t.c, kind_seen, &w, 5000, NULL) == 0);
    CHECK(x.tried);
    for (int i = 0; i < 6; ++i) {
        if (x.rc[i] != EDGELOCK_ERR_REENTERED) {
            fprintf(stderr, "blocking call %d from the callback returned %d (%s)\n", i, x.rc[i],
                    edgelock_strerror(x.rc[i]));
        }
        CHECK_RC(x.rc[i], EDGELOCK_ERR_REENTERED);
    }
    CHECK_RC(x.release_rc, EDGELOCK_OK);
    CHECK_INT(x.rec.count[EDGELOCK_EVENT_ACQUIRED], ==, 1);
    CHECK_INT(x.rec.count[EDGELOCK_EVENT_RELEASED], ==, 1);
    CHECK_INT(edgelock_lock_held(x.self), ==, 0);
    CHECK_INT(edgelock_lock_held(x.other), ==, 0);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-cb", "c-api-cb-other", (const char*)NULL), ==, 0);
    /* Outside the callback the same calls run. */
    CHECK_RC(edgelock_lock_try_acquire(x.other), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_release(x.other), EDGELOCK_OK);

    edgelock_lock_deinit(x.self);
    edgelock_lock_deinit(x.other);
    edgelock_client_deinit(t.c);
    return 0;
}
