/* The blocking calls against a real redis-server: a lock's whole life, two
 * clients contending, fencing tokens, a semaphore, resume, a node down. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "capi_test.h"

/* Event kinds the blocking calls leave in edgelock_lock_last_event(). */
static int last_kind(const edgelock_lock* lock) {
    struct edgelock_event e;
    edgelock_lock_last_event(lock, &e);
    return e.kind;
}

int case_blocking(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* lock = NULL;
    struct edgelock_event e;
    char token[EDGELOCK_TOKEN_TEXT];
    char value[64];
    const uint32_t ttl = 10000;

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    CHECK_INT(edgelock_client_node_count(t.c), ==, 1);
    edgelock_lock_options_init(&lo);
    lo.ttl_ms = ttl;
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-job", &lo, &lock), EDGELOCK_OK);
    CHECK(lock != NULL);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    CHECK_INT(edgelock_lock_validity_ms(lock), ==, 0);
    CHECK_INT(edgelock_lock_permit(lock), ==, -1);

    /* Acquired: the key holds the lock's token with the ttl. */
    const uint64_t before_us = edgelock_now_us();
    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    CHECK_INT(edgelock_lock_held(lock), ==, 1);
    CHECK_INT(edgelock_lock_validity_ms(lock), >, 0);
    CHECK_INT(edgelock_lock_validity_ms(lock), <=, ttl);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_ACQUIRED);
    CHECK_INT(e.reason, ==, EDGELOCK_REASON_NONE);
    CHECK(e.validity_deadline_us > edgelock_now_us());
    CHECK(e.validity_deadline_us <= before_us + (uint64_t)ttl * 1000u);
    CHECK_INT(e.permit, ==, -1);
    CHECK(lock_token(lock, token) == 0);
    CHECK(server_get(&s, "c-api-job", value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);
    const long long pttl1 = server_integer(&s, "PTTL", "c-api-job", (const char*)NULL);
    CHECK_INT(pttl1, >, 0);
    CHECK_INT(pttl1, <=, ttl);
    CHECK_INT(edgelock_client_node_state(t.c, 0), ==, EDGELOCK_NODE_READY);

    /* Renewed: the key's ttl goes back up, the validity moves on. */
    test_sleep_ms(300);
    const long long pttl2 = server_integer(&s, "PTTL", "c-api-job", (const char*)NULL);
    CHECK_INT(pttl2, <, pttl1);
    const uint64_t deadline1 = e.validity_deadline_us;
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_OK);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_RENEWED);
    CHECK(e.validity_deadline_us > deadline1);
    const long long pttl3 = server_integer(&s, "PTTL", "c-api-job", (const char*)NULL);
    CHECK_INT(pttl3, >, pttl2);
    CHECK_INT(pttl3, <=, ttl);
    CHECK_INT(edgelock_lock_held(lock), ==, 1);
    /* The same hold: the token did not change. */
    char again[EDGELOCK_TOKEN_TEXT];
    CHECK(lock_token(lock, again) == 0);
    CHECK(strcmp(again, token) == 0);

    /* Released: the key is gone, from the one node. */
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_RELEASED);
    CHECK_INT(e.nodes, ==, 1);
    CHECK_INT(e.absent, ==, 0);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    CHECK_INT(edgelock_lock_validity_ms(lock), ==, 0);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-job", (const char*)NULL), ==, 0);

    /* Acquired again, with a new token. */
    CHECK_RC(edgelock_lock_try_acquire(lock), EDGELOCK_OK);
    CHECK(lock_token(lock, again) == 0);
    CHECK(strcmp(again, token) != 0);
    CHECK(server_get(&s, "c-api-job", value, sizeof value) == 0);
    CHECK(strcmp(value, again) == 0);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-job", (const char*)NULL), ==, 0);

    CHECK_RC(edgelock_client_settle(t.c, 2000), EDGELOCK_OK);
    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}

int case_contention(void) {
    struct test_server s;
    struct two_owners o;
    struct edgelock_lock_options lo;
    struct edgelock_event e;
    char token[EDGELOCK_TOKEN_TEXT], value[64];

    CHECK(server_start(&s) == 0);
    edgelock_lock_options_init(&lo);
    lo.ttl_ms = 10000;
    CHECK(two_owners_open(&o, s.port, "c-api-shared", &lo, &lo) == 0);

    CHECK_RC(edgelock_lock_try_acquire(o.la), EDGELOCK_OK);
    CHECK(lock_token(o.la, token) == 0);

    /* The second owner is told who holds it, and for how long. */
    CHECK_RC(edgelock_lock_try_acquire(o.lb), EDGELOCK_ERR_HELD);
    edgelock_lock_last_event(o.lb, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_BUSY);
    CHECK_INT(e.holder_ttl_ms, >, 0);
    CHECK_INT(e.holder_ttl_ms, <=, 10000);
    CHECK_INT(edgelock_lock_held(o.lb), ==, 0);
    /* A bounded wait while the holder keeps it ends busy too. */
    const uint64_t start = test_now_ms();
    CHECK_RC(edgelock_lock_acquire(o.lb, 300), EDGELOCK_ERR_HELD);
    CHECK_INT(test_now_ms() - start, <, 5000);
    CHECK_INT(last_kind(o.lb), ==, EDGELOCK_EVENT_BUSY);
    CHECK(server_get(&s, "c-api-shared", value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);
    CHECK_INT(edgelock_lock_held(o.la), ==, 1);

    /* Once the first releases, the second's wait succeeds. */
    CHECK_RC(edgelock_lock_release(o.la), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_acquire(o.lb, 3000), EDGELOCK_OK);
    CHECK_INT(edgelock_lock_held(o.lb), ==, 1);
    CHECK(lock_token(o.lb, token) == 0);
    CHECK(server_get(&s, "c-api-shared", value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);

    /* And now the first is the one refused. */
    CHECK_RC(edgelock_lock_try_acquire(o.la), EDGELOCK_ERR_HELD);
    CHECK_INT(last_kind(o.la), ==, EDGELOCK_EVENT_BUSY);
    CHECK_RC(edgelock_lock_release(o.lb), EDGELOCK_OK);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-shared", (const char*)NULL), ==, 0);

    two_owners_close(&o);
    return 0;
}

int case_expired_holder(void) {
    struct test_server s;
    struct two_owners o;
    struct edgelock_lock_options short_ttl, long_ttl;
    char token[EDGELOCK_TOKEN_TEXT], value[64];

    CHECK(server_start(&s) == 0);
    edgelock_lock_options_init(&short_ttl);
    short_ttl.ttl_ms = 800;
    edgelock_lock_options_init(&long_ttl);
    long_ttl.ttl_ms = 10000;
    CHECK(two_owners_open(&o, s.port, "c-api-dead", &short_ttl, &long_ttl) == 0);

    /* A holder that is never driven again: nothing renews its key. */
    CHECK_RC(edgelock_lock_try_acquire(o.la), EDGELOCK_OK);
    const long long left = server_integer(&s, "PTTL", "c-api-dead", (const char*)NULL);
    CHECK_INT(left, >, 0);
    const uint64_t start = test_now_ms();
    CHECK_RC(edgelock_lock_acquire(o.lb, 5000), EDGELOCK_OK);
    /* Not before the first's key expired (the server's clock, a little slack). */
    CHECK_INT(test_now_ms() - start + 50, >=, left);
    CHECK(lock_token(o.lb, token) == 0);
    CHECK(server_get(&s, "c-api-dead", value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);

    /* The first's validity has ended: not held, and its release deletes
     * nothing of the new holder's. */
    CHECK_INT(edgelock_lock_held(o.la), ==, 0);
    CHECK_INT(edgelock_lock_validity_ms(o.la), ==, 0);
    CHECK_RC(edgelock_lock_release(o.la), EDGELOCK_ERR_NOT_HELD);
    CHECK_RC(edgelock_lock_renew(o.la), EDGELOCK_ERR_NOT_HELD);
    CHECK(server_get(&s, "c-api-dead", value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);

    CHECK_RC(edgelock_lock_release(o.lb), EDGELOCK_OK);
    two_owners_close(&o);
    return 0;
}

int case_fenced(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* lock = NULL;
    struct edgelock_event e;
    char counter[32];

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    edgelock_lock_options_init(&lo);
    lo.mode = EDGELOCK_MODE_FENCED;
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-fenced", &lo, &lock), EDGELOCK_OK);

    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    const uint64_t first = edgelock_lock_fence(lock);
    CHECK(first > 0);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_ACQUIRED);
    CHECK(e.fence == first);
    /* One node: the token is the counter's value, {name}:fence. */
    CHECK(server_get(&s, "{c-api-fenced}:fence", counter, sizeof counter) == 0);
    CHECK(strtoull(counter, NULL, 10) == first);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);

    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    const uint64_t second = edgelock_lock_fence(lock);
    CHECK(second > first);
    edgelock_lock_last_event(lock, &e);
    CHECK(e.fence == second);
    CHECK(server_get(&s, "{c-api-fenced}:fence", counter, sizeof counter) == 0);
    CHECK(strtoull(counter, NULL, 10) == second);
    /* A renew keeps the token of the hold. */
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_OK);
    CHECK(edgelock_lock_fence(lock) == second);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-fenced", (const char*)NULL), ==, 0);

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}

int case_semaphore(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[3][EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* l[3] = {NULL, NULL, NULL};
    struct edgelock_event e;
    char token[EDGELOCK_TOKEN_TEXT], value[64], key[64];

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    edgelock_lock_options_init(&lo);
    lo.permits = 2;
    for (int i = 0; i < 3; ++i) {
        CHECK_RC(edgelock_lock_init(mem[i], sizeof mem[i], t.c, "c-api-sem", &lo, &l[i]),
                 EDGELOCK_OK);
    }

    /* Two holders at once, on different permits, each permit's key holding
     * its holder's token. */
    for (int i = 0; i < 2; ++i) {
        CHECK_RC(edgelock_lock_try_acquire(l[i]), EDGELOCK_OK);
        const int p = edgelock_lock_permit(l[i]);
        CHECK(p == 0 || p == 1);
        edgelock_lock_last_event(l[i], &e);
        CHECK_INT(e.kind, ==, EDGELOCK_EVENT_ACQUIRED);
        CHECK_INT(e.permit, ==, p);
        snprintf(key, sizeof key, "{c-api-sem}:permit:%d", p);
        CHECK(lock_token(l[i], token) == 0);
        CHECK(server_get(&s, key, value, sizeof value) == 0);
        CHECK(strcmp(value, token) == 0);
    }
    const int p0 = edgelock_lock_permit(l[0]);
    CHECK_INT(p0, !=, edgelock_lock_permit(l[1]));

    /* A third is refused while both are held. */
    CHECK_RC(edgelock_lock_try_acquire(l[2]), EDGELOCK_ERR_HELD);
    CHECK_INT(last_kind(l[2]), ==, EDGELOCK_EVENT_BUSY);
    CHECK_INT(edgelock_lock_held(l[2]), ==, 0);
    CHECK_INT(edgelock_lock_permit(l[2]), ==, -1);

    /* The first's permit freed is the one the third gets. */
    CHECK_RC(edgelock_lock_release(l[0]), EDGELOCK_OK);
    snprintf(key, sizeof key, "{c-api-sem}:permit:%d", p0);
    CHECK_INT(server_integer(&s, "EXISTS", key, (const char*)NULL), ==, 0);
    CHECK_RC(edgelock_lock_try_acquire(l[2]), EDGELOCK_OK);
    CHECK_INT(edgelock_lock_permit(l[2]), ==, p0);
    CHECK(lock_token(l[2], token) == 0);
    CHECK(server_get(&s, key, value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);

    CHECK_RC(edgelock_lock_release(l[1]), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_release(l[2]), EDGELOCK_OK);
    CHECK_INT(server_integer(&s, "EXISTS", "{c-api-sem}:permit:0", "{c-api-sem}:permit:1",
                             "{c-api-sem}:permits", (const char*)NULL),
              ==, 0);
    for (int i = 0; i < 3; ++i) {
        edgelock_lock_deinit(l[i]);
    }
    edgelock_client_deinit(t.c);
    return 0;
}

int case_resume(void) {
    struct test_server s;
    struct two_owners o;
    char token[EDGELOCK_TOKEN_TEXT], resumed[EDGELOCK_TOKEN_TEXT];

    CHECK(server_start(&s) == 0);
    CHECK(two_owners_open(&o, s.port, "c-api-handover", NULL, NULL) == 0);

    /* Another client takes over the hold by its token, renews and releases
     * it. */
    CHECK_RC(edgelock_lock_acquire(o.la, 2000), EDGELOCK_OK);
    CHECK(lock_token(o.la, token) == 0);
    CHECK_RC(edgelock_lock_resume(o.lb, token), EDGELOCK_OK);
    CHECK(lock_token(o.lb, resumed) == 0);
    CHECK(strcmp(resumed, token) == 0);
    CHECK_RC(edgelock_lock_renew(o.lb), EDGELOCK_OK);
    CHECK_INT(edgelock_lock_held(o.lb), ==, 1);
    CHECK_RC(edgelock_lock_release(o.lb), EDGELOCK_OK);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-handover", (const char*)NULL), ==, 0);

    /* The first's renew now finds the key gone. */
    CHECK_RC(edgelock_lock_renew(o.la), EDGELOCK_ERR_LOST);
    struct edgelock_event e;
    edgelock_lock_last_event(o.la, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_LOST);
    CHECK_INT(e.reason, ==, EDGELOCK_REASON_NOT_OURS);
    CHECK_INT(edgelock_lock_held(o.la), ==, 0);

    two_owners_close(&o);
    return 0;
}

int case_node_down(void) {
    edgelock_align cmem[EDGELOCK_CLIENT_WORDS(1, 0)];
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    struct edgelock_client_options co;
    struct edgelock_lock_options lo;
    edgelock_client* c = NULL;
    edgelock_lock* lock = NULL;
    struct edgelock_event e;
    char url[64], text[256], small[8];
    const char* urls[1] = {url};

    const unsigned port = loopback_closed_port();
    CHECK(port != 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%u", port);
    edgelock_client_options_init(&co);
    co.connect_timeout_ms = 500;
    CHECK_RC(edgelock_client_init(cmem, sizeof cmem, 1, 0, urls, 1, &co, &c), EDGELOCK_OK);
    edgelock_lock_options_init(&lo);
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, c, "c-api-nowhere", &lo, &lock), EDGELOCK_OK);

    const uint64_t start = test_now_ms();
    CHECK_RC(edgelock_lock_acquire(lock, 300), EDGELOCK_ERR_FAILED);
    CHECK_INT(test_now_ms() - start, <, 5000);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_FAILED);
    CHECK_INT(e.reason, ==, EDGELOCK_REASON_NO_QUORUM);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    CHECK_RC(edgelock_lock_try_acquire(lock), EDGELOCK_ERR_FAILED);

    /* The node says why. */
    const int state = edgelock_client_node_state(c, 0);
    CHECK(state == EDGELOCK_NODE_DOWN || state == EDGELOCK_NODE_BACKOFF);
    const size_t len = edgelock_client_node_text(c, 0, text, sizeof text);
    CHECK_INT(len, >, 0);
    CHECK_INT(len, ==, strlen(text));
    CHECK_STR_CONTAINS(text, "refused");
    CHECK_STR_CONTAINS(text, edgelock_node_state_name(state));
    /* Cut to fit, its whole length still told. */
    CHECK_INT(edgelock_client_node_text(c, 0, small, sizeof small), ==, len);
    CHECK_INT(strlen(small), ==, sizeof small - 1);
    CHECK(strncmp(small, text, sizeof small - 1) == 0);
    CHECK_INT(edgelock_client_node_text(c, 0, NULL, 0), ==, len);
    CHECK_INT(edgelock_client_node_text(c, 1, text, sizeof text), ==, 0);
    CHECK_RC(edgelock_client_node_state(c, 1), EDGELOCK_ERR_ARG);

    /* Connecting: no node ready, within the bound. */
    const uint64_t connect_start = test_now_ms();
    CHECK_INT(edgelock_client_connect(c, 1000, 0), ==, 0);
    CHECK_INT(test_now_ms() - connect_start, <, 3000);

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(c);
    return 0;
}
