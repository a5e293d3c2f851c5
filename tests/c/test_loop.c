/* The event-loop style: a poll() loop of the test's own drives the client;
 * operations are started, and their outcome learnt from the callback and
 * edgelock_lock_outcome(). Also a lock lost under its holder, and the bound
 * of edgelock_client_settle(). */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "capi_test.h"

/* What a poll_until()/run_until() waits for: n events of a kind. */
struct wait_for {
    const struct recorder* rec;
    int kind;
    unsigned n;
};

static int seen(void* arg) {
    const struct wait_for* w = (const struct wait_for*)arg;
    return w->rec->count[w->kind] >= w->n;
}

static int outcome_is(const edgelock_lock* lock, int op, int done, int status) {
    struct edgelock_outcome o;
    edgelock_lock_outcome(lock, &o);
    CHECK_INT(o.op, ==, op);
    CHECK_INT(o.done, ==, done);
    if (done) {
        CHECK_RC(o.status, status);
    }
    return 0;
}

int case_event_loop(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* lock = NULL;
    struct recorder rec;
    struct wait_for w;
    struct edgelock_outcome o;
    char token[EDGELOCK_TOKEN_TEXT], value[64];
    unsigned woke = 0;

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    edgelock_lock_options_init(&lo);
    lo.ttl_ms = 600; /* the watchdog renews every 200 ms */
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-loop", &lo, &lock), EDGELOCK_OK);
    recorder_init(&rec);
    edgelock_lock_set_callback(lock, recorder_cb, &rec);
    w.rec = &rec;

    /* Nothing started yet. */
    CHECK(outcome_is(lock, EDGELOCK_OP_NONE, 0, EDGELOCK_OK) == 0);

    /* Started: nothing happens until the loop drives the client. */
    CHECK_RC(edgelock_lock_start_acquire(lock), EDGELOCK_OK);
    CHECK(outcome_is(lock, EDGELOCK_OP_ACQUIRE, 0, EDGELOCK_OK) == 0);
    CHECK_INT(rec.total, ==, 0);
    CHECK_INT(edgelock_client_timeout_ms(t.c), ==, 0);
    w.kind = EDGELOCK_EVENT_ACQUIRED;
    w.n = 1;
    CHECK(poll_until(t.c, seen, &w, 5000, &woke) == 0);
    CHECK_INT(woke, >, 0);
    CHECK_INT(rec.kinds[0], ==, EDGELOCK_EVENT_ACQUIRED);
    CHECK(outcome_is(lock, EDGELOCK_OP_ACQUIRE, 1, EDGELOCK_OK) == 0);
    edgelock_lock_outcome(lock, &o);
    CHECK_INT(o.event.kind, ==, EDGELOCK_EVENT_ACQUIRED);
    CHECK(o.event.validity_deadline_us == rec.last.validity_deadline_us);
    CHECK_INT(edgelock_lock_held(lock), ==, 1);
    CHECK(lock_token(lock, token) == 0);
    CHECK(server_get(&s, "c-api-loop", value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);

    /* The watchdog keeps it past its ttl: renewals, and nothing lost. */
    const uint64_t held_since = test_now_ms();
    w.kind = EDGELOCK_EVENT_RENEWED;
    w.n = 2;
    CHECK(poll_until(t.c, seen, &w, 5000, NULL) == 0);
    w.n = 4;
    CHECK(poll_until(t.c, seen, &w, 5000, NULL) == 0);
    CHECK_INT(test_now_ms() - held_since, >, 600);
    CHECK_INT(rec.count[EDGELOCK_EVENT_LOST], ==, 0);
    CHECK_INT(rec.count[EDGELOCK_EVENT_RENEW_FAILED], ==, 0);
    CHECK_INT(edgelock_lock_held(lock), ==, 1);
    CHECK_INT(edgelock_lock_validity_ms(lock), <=, 600);
    CHECK(rec.last.validity_deadline_us > edgelock_now_us());
    CHECK(server_get(&s, "c-api-loop", value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);
    const long long pttl = server_integer(&s, "PTTL", "c-api-loop", (const char*)NULL);
    CHECK_INT(pttl, >, 0);
    CHECK_INT(pttl, <=, 600);

    /* A renew of our own, then the release. */
    const unsigned renewed = rec.count[EDGELOCK_EVENT_RENEWED];
    CHECK_RC(edgelock_lock_start_renew(lock), EDGELOCK_OK);
    CHECK(outcome_is(lock, EDGELOCK_OP_RENEW, 0, EDGELOCK_OK) == 0);
    w.n = renewed + 1;
    CHECK(poll_until(t.c, seen, &w, 5000, NULL) == 0);
    CHECK(outcome_is(lock, EDGELOCK_OP_RENEW, 1, EDGELOCK_OK) == 0);

    CHECK_RC(edgelock_lock_start_release(lock), EDGELOCK_OK);
    CHECK(outcome_is(lock, EDGELOCK_OP_RELEASE, 0, EDGELOCK_OK) == 0);
    w.kind = EDGELOCK_EVENT_RELEASED;
    w.n = 1;
    CHECK(poll_until(t.c, seen, &w, 5000, NULL) == 0);
    CHECK(outcome_is(lock, EDGELOCK_OP_RELEASE, 1, EDGELOCK_OK) == 0);
    edgelock_lock_outcome(lock, &o);
    CHECK_INT(o.event.kind, ==, EDGELOCK_EVENT_RELEASED);
    CHECK_INT(o.event.nodes, ==, 1);
    CHECK_INT(rec.last.kind, ==, EDGELOCK_EVENT_RELEASED);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-loop", (const char*)NULL), ==, 0);
    CHECK(!rec.bad_kind);

    /* Released: no more renewals however long the loop runs. */
    const unsigned events = rec.total;
    CHECK(poll_for(t.c, 500) == 0);
    CHECK_INT(rec.total, ==, events);

    /* Two acquisitions by start_acquire_tries: the second, busy, ends busy
     * with the first's holder's ttl. */
    edgelock_align mem2[EDGELOCK_LOCK_WORDS];
    edgelock_lock* other = NULL;
    struct recorder rec2;
    struct wait_for w2;
    recorder_init(&rec2);
    CHECK_RC(edgelock_lock_init(mem2, sizeof mem2, t.c, "c-api-loop", &lo, &other), EDGELOCK_OK);
    edgelock_lock_set_callback(other, recorder_cb, &rec2);
    CHECK_RC(edgelock_lock_start_acquire(lock), EDGELOCK_OK);
    w.kind = EDGELOCK_EVENT_ACQUIRED;
    w.n = 2;
    CHECK(poll_until(t.c, seen, &w, 5000, NULL) == 0);
    CHECK_RC(edgelock_lock_start_acquire_tries(other, 1, 100), EDGELOCK_OK);
    w2.rec = &rec2;
    w2.kind = EDGELOCK_EVENT_BUSY;
    w2.n = 1;
    CHECK(poll_until(t.c, seen, &w2, 5000, NULL) == 0);
    CHECK(outcome_is(other, EDGELOCK_OP_ACQUIRE, 1, EDGELOCK_ERR_HELD) == 0);
    CHECK_INT(rec2.last.holder_ttl_ms, >, 0);
    CHECK_INT(rec2.count[EDGELOCK_EVENT_ACQUIRED], ==, 0);
    CHECK_RC(edgelock_lock_start_release(lock), EDGELOCK_OK);
    w.kind = EDGELOCK_EVENT_RELEASED;
    w.n = 2;
    CHECK(poll_until(t.c, seen, &w, 5000, NULL) == 0);

    edgelock_lock_deinit(other);
    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}

int case_lost(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* lock = NULL;
    struct recorder rec;
    struct wait_for w;
    struct edgelock_event e;

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    edgelock_lock_options_init(&lo);
    lo.ttl_ms = 1500; /* renewed every 500 ms */
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-lost", &lo, &lock), EDGELOCK_OK);
    recorder_init(&rec);
    edgelock_lock_set_callback(lock, recorder_cb, &rec);

    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    CHECK_INT(rec.count[EDGELOCK_EVENT_ACQUIRED], ==, 1);
    /* Someone deletes the key: the watchdog's next renew finds it gone. */
    CHECK_INT(server_integer(&s, "DEL", "c-api-lost", (const char*)NULL), ==, 1);
    w.rec = &rec;
    w.kind = EDGELOCK_EVENT_LOST;
    w.n = 1;
    CHECK(run_until(t.c, seen, &w, 3000) == 0);
    CHECK_INT(rec.last.kind, ==, EDGELOCK_EVENT_LOST);
    CHECK_INT(rec.last.reason, ==, EDGELOCK_REASON_NOT_OURS);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    CHECK_INT(edgelock_lock_validity_ms(lock), ==, 0);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_LOST);
    CHECK_INT(e.reason, ==, EDGELOCK_REASON_NOT_OURS);
    /* The renew did not set the key again. */
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-lost", (const char*)NULL), ==, 0);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_ERR_NOT_HELD);
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_ERR_NOT_HELD);
    CHECK_RC(edgelock_lock_start_release(lock), EDGELOCK_ERR_NOT_HELD);
    CHECK_INT(rec.count[EDGELOCK_EVENT_LOST], ==, 1);

    /* The same with the key taken by another owner meanwhile. */
    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    struct redis_reply r;
    CHECK(server_command(&s, &r, "SET", "c-api-lost", "someone-else", "PX", "5000",
                         (const char*)NULL) == 0);
    CHECK(r.type == '+');
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_ERR_LOST);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_LOST);
    CHECK_INT(e.reason, ==, EDGELOCK_REASON_NOT_OURS);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    char value[64];
    CHECK(server_get(&s, "c-api-lost", value, sizeof value) == 0);
    CHECK(strcmp(value, "someone-else") == 0);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_ERR_NOT_HELD);
    CHECK(server_get(&s, "c-api-lost", value, sizeof value) == 0);
    CHECK(strcmp(value, "someone-else") == 0);

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}

int case_settle_deadline(void) {
    struct test_server s;
    struct test_client t;
    struct edgelock_client_options co;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    edgelock_lock* lock = NULL;
    struct edgelock_event e;

    CHECK(server_start(&s) == 0);
    edgelock_client_options_init(&co);
    co.connect_timeout_ms = 10000;
    CHECK(test_client_open(&t, s.port, &co) == 0);
    CHECK_RC(edgelock_client_settle(t.c, 1000), EDGELOCK_OK);
    CHECK_INT(edgelock_client_connect(t.c, 2000, 0), ==, 1);
    CHECK_INT(edgelock_client_node_state(t.c, 0), ==, EDGELOCK_NODE_READY);
    edgelock_client_disconnect(t.c);
    CHECK_INT(edgelock_client_node_state(t.c, 0), !=, EDGELOCK_NODE_READY);

    /* A server that accepts but never answers: the acquisition, its
     * requests sent behind the connection's set-up, fails at its bound; the
     * replies still owed keep settle busy until its own bound. */
    server_pause(&s);
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-settle", NULL, &lock), EDGELOCK_OK);
    CHECK_INT(edgelock_client_connect(t.c, 200, 0), ==, 0);
    CHECK_INT(edgelock_client_node_state(t.c, 0), ==, EDGELOCK_NODE_HANDSHAKE);
    CHECK_RC(edgelock_lock_try_acquire(lock), EDGELOCK_ERR_FAILED);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.reason, ==, EDGELOCK_REASON_NO_QUORUM);
    const uint64_t start = test_now_ms();
    CHECK_RC(edgelock_client_settle(t.c, 300), EDGELOCK_ERR_DEADLINE);
    const uint64_t took = test_now_ms() - start;
    CHECK_INT(took, >=, 250);
    CHECK_INT(took, <, 3000);
    /* Once it answers, nothing is owed and nothing was left behind. */
    server_resume(&s);
    CHECK_RC(edgelock_client_settle(t.c, 3000), EDGELOCK_OK);
    CHECK_INT(edgelock_client_connect(t.c, 3000, 0), ==, 1);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-settle", (const char*)NULL), ==, 0);

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}
