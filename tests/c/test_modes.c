/* Beyond one plain lock on one node: Redlock over three servers, the
 * reentrant mode, renew_resurrects, the watchdog's max_hold_ms, and a lock
 * deinitialised while its acquisition is under way. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "capi_test.h"

/* The key's value on each server against a token ("" for absent). */
static int on_servers(const struct test_server* s, size_t count, const char* key,
                      const char* want) {
    char value[64];
    for (size_t i = 0; i < count; ++i) {
        if (server_get(&s[i], key, value, sizeof value) != 0) {
            return 1;
        }
        if (strcmp(value, want) != 0) {
            fprintf(stderr, "server %zu: %s is \"%s\", expected \"%s\"\n", i, key, value, want);
            return 1;
        }
    }
    return 0;
}

int case_redlock(void) {
    struct test_server s[3];
    edgelock_align cmem[EDGELOCK_CLIENT_WORDS(3, 0)];
    edgelock_align lmem[EDGELOCK_LOCK_WORDS];
    char urls_text[3][64];
    const char* urls[3];
    edgelock_client* c = NULL;
    edgelock_lock* lock = NULL;
    struct edgelock_lock_options lo;
    struct edgelock_event e;
    char token[EDGELOCK_TOKEN_TEXT];

    for (int i = 0; i < 3; ++i) {
        CHECK(server_start(&s[i]) == 0);
        snprintf(urls_text[i], sizeof urls_text[i], "redis://127.0.0.1:%u", s[i].port);
        urls[i] = urls_text[i];
    }
    CHECK_RC(edgelock_client_init(cmem, sizeof cmem, 3, 0, urls, 3, NULL, &c), EDGELOCK_OK);
    CHECK_INT(edgelock_client_node_count(c), ==, 3);
    CHECK_INT(edgelock_client_connect(c, 3000, 0), ==, 3);
    edgelock_lock_options_init(&lo);
    lo.node_timeout_ms = 200;
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, c, "c-api-redlock", &lo, &lock), EDGELOCK_OK);

    /* Every node holds the same token. */
    CHECK_RC(edgelock_lock_acquire(lock, 3000), EDGELOCK_OK);
    CHECK(lock_token(lock, token) == 0);
    CHECK(on_servers(s, 3, "c-api-redlock", token) == 0);
    /* Driven on while held (every node's reply in): every node keeps it,
     * and the release deletes it from each. */
    CHECK_RC(edgelock_client_run_for(c, 300), EDGELOCK_OK);
    CHECK(on_servers(s, 3, "c-api-redlock", token) == 0);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.nodes, ==, 3);
    CHECK_INT(e.absent, ==, 0);
    CHECK(on_servers(s, 3, "c-api-redlock", "") == 0);

    /* Released at once, the third node's acquire reply maybe not read yet:
     * gone from every node all the same. (That node may count as absent:
     * the late reply's own cleanup can delete the key before the release.) */
    CHECK_RC(edgelock_lock_acquire(lock, 3000), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.nodes, >=, 2);
    CHECK_INT(e.nodes + e.absent, ==, 3);
    CHECK_RC(edgelock_client_settle(c, 2000), EDGELOCK_OK);
    CHECK(on_servers(s, 3, "c-api-redlock", "") == 0);

    /* One node down: two of three are a quorum. */
    server_stop(&s[2]);
    CHECK_RC(edgelock_lock_acquire(lock, 3000), EDGELOCK_OK);
    CHECK(lock_token(lock, token) == 0);
    CHECK(on_servers(s, 2, "c-api-redlock", token) == 0);
    CHECK_INT(edgelock_client_node_state(c, 2), !=, EDGELOCK_NODE_READY);
    CHECK_INT(edgelock_client_node_state(c, 0), ==, EDGELOCK_NODE_READY);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.nodes, ==, 2);
    CHECK(on_servers(s, 2, "c-api-redlock", "") == 0);

    /* Two down: no quorum, and what the one node took is given back. */
    server_stop(&s[1]);
    CHECK_RC(edgelock_lock_acquire(lock, 500), EDGELOCK_ERR_FAILED);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.reason, ==, EDGELOCK_REASON_NO_QUORUM);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    CHECK_RC(edgelock_client_settle(c, 2000), EDGELOCK_OK);
    CHECK(on_servers(s, 1, "c-api-redlock", "") == 0);
    char text[256];
    CHECK(edgelock_client_node_text(c, 2, text, sizeof text) > 0);
    CHECK_STR_CONTAINS(text, "refused");

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(c);
    return 0;
}

int case_reentrant(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[3][EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* l[3] = {NULL, NULL, NULL};
    struct edgelock_event e;
    struct redis_reply r;

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    edgelock_lock_options_init(&lo);
    lo.mode = EDGELOCK_MODE_REENTRANT;
    lo.owner = "worker-1";
    CHECK_RC(edgelock_lock_init(mem[0], sizeof mem[0], t.c, "c-api-nest", &lo, &l[0]), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_init(mem[1], sizeof mem[1], t.c, "c-api-nest", &lo, &l[1]), EDGELOCK_OK);
    lo.owner = "worker-2";
    CHECK_RC(edgelock_lock_init(mem[2], sizeof mem[2], t.c, "c-api-nest", &lo, &l[2]), EDGELOCK_OK);

    /* The same owner nests; the key is a hash of owners and their holds. */
    CHECK_RC(edgelock_lock_acquire(l[0], 2000), EDGELOCK_OK);
    edgelock_lock_last_event(l[0], &e);
    CHECK_INT(e.holds, ==, 1);
    CHECK_RC(edgelock_lock_acquire(l[1], 2000), EDGELOCK_OK);
    edgelock_lock_last_event(l[1], &e);
    CHECK_INT(e.holds, ==, 2);
    CHECK(server_command(&s, &r, "HGET", "c-api-nest", "worker-1", (const char*)NULL) == 0);
    CHECK(r.type == '$' && strcmp(r.text, "2") == 0);

    /* Another owner does not. */
    CHECK_RC(edgelock_lock_try_acquire(l[2]), EDGELOCK_ERR_HELD);
    edgelock_lock_last_event(l[2], &e);
    CHECK_INT(e.kind, ==, EDGELOCK_EVENT_BUSY);
    CHECK_INT(e.holder_ttl_ms, >, 0);

    /* Each release takes one hold back. */
    CHECK_RC(edgelock_lock_release(l[1]), EDGELOCK_OK);
    CHECK(server_command(&s, &r, "HGET", "c-api-nest", "worker-1", (const char*)NULL) == 0);
    CHECK(r.type == '$' && strcmp(r.text, "1") == 0);
    CHECK_INT(edgelock_lock_held(l[0]), ==, 1);
    CHECK_RC(edgelock_lock_try_acquire(l[2]), EDGELOCK_ERR_HELD);
    CHECK_RC(edgelock_lock_release(l[0]), EDGELOCK_OK);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-nest", (const char*)NULL), ==, 0);
    CHECK_RC(edgelock_lock_try_acquire(l[2]), EDGELOCK_OK);
    CHECK(server_command(&s, &r, "HGET", "c-api-nest", "worker-2", (const char*)NULL) == 0);
    CHECK(r.type == '$' && strcmp(r.text, "1") == 0);
    CHECK_RC(edgelock_lock_release(l[2]), EDGELOCK_OK);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-nest", (const char*)NULL), ==, 0);

    for (int i = 0; i < 3; ++i) {
        edgelock_lock_deinit(l[i]);
    }
    edgelock_client_deinit(t.c);
    return 0;
}

int case_resurrect(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* lock = NULL;
    char token[EDGELOCK_TOKEN_TEXT], value[64];

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    edgelock_lock_options_init(&lo);
    lo.renew_resurrects = 1;
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-phoenix", &lo, &lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    CHECK(lock_token(lock, token) == 0);

    /* The key vanished: the renew sets it again, with the same token. */
    CHECK_INT(server_integer(&s, "DEL", "c-api-phoenix", (const char*)NULL), ==, 1);
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_OK);
    CHECK(server_get(&s, "c-api-phoenix", value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);
    CHECK_INT(server_integer(&s, "PTTL", "c-api-phoenix", (const char*)NULL), >, 0);

    /* Taken by another owner meanwhile: lost, not stolen back. */
    struct redis_reply r;
    CHECK(server_command(&s, &r, "SET", "c-api-phoenix", "someone-else", "PX", "5000",
                         (const char*)NULL) == 0);
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_ERR_LOST);
    CHECK(server_get(&s, "c-api-phoenix", value, sizeof value) == 0);
    CHECK(strcmp(value, "someone-else") == 0);

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}

struct seen_kind {
    const struct recorder* rec;
    int kind;
};

static int kind_seen(void* arg) {
    const struct seen_kind* w = (const struct seen_kind*)arg;
    return w->rec->count[w->kind] > 0;
}

int case_max_hold(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* lock = NULL;
    struct recorder rec;
    struct seen_kind w;

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    edgelock_lock_options_init(&lo);
    lo.ttl_ms = 5000;
    lo.max_hold_ms = 400;
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-capped", &lo, &lock), EDGELOCK_OK);
    recorder_init(&rec);
    edgelock_lock_set_callback(lock, recorder_cb, &rec);

    const uint64_t start = test_now_ms();
    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    /* Held for max_hold_ms, then let go: the owner told first, the key
     * released (long before its ttl). */
    w.rec = &rec;
    w.kind = EDGELOCK_EVENT_RELEASED;
    CHECK(poll_until(t.c, kind_seen, &w, 3000, NULL) == 0);
    CHECK_INT(test_now_ms() - start, >=, 400);
    CHECK_INT(rec.count[EDGELOCK_EVENT_LOST], ==, 1);
    CHECK_INT(rec.count[EDGELOCK_EVENT_RENEWED], ==, 0);
    int lost_at = -1, released_at = -1;
    for (unsigned i = 0; i < rec.total && i < RECORDER_LOG; ++i) {
        if (rec.kinds[i] == EDGELOCK_EVENT_LOST && lost_at < 0) {
            lost_at = (int)i;
        }
        if (rec.kinds[i] == EDGELOCK_EVENT_RELEASED && released_at < 0) {
            released_at = (int)i;
        }
    }
    CHECK(lost_at >= 0 && lost_at < released_at);
    CHECK_INT(rec.last.kind, ==, EDGELOCK_EVENT_RELEASED);
    CHECK_INT(edgelock_lock_held(lock), ==, 0);
    CHECK_INT(server_integer(&s, "EXISTS", "c-api-capped", (const char*)NULL), ==, 0);
    CHECK_INT(test_now_ms() - start, <, 5000);

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}

/* True once the client has nothing due: the acquisition went out. */
static int sent(void* arg) {
    const edgelock_client* c = (const edgelock_client*)arg;
    return edgelock_client_timeout_ms(c) != 0;
}

int case_deinit_in_flight(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    struct edgelock_lock_options lo;
    edgelock_lock* lock = NULL;

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    CHECK_INT(edgelock_client_connect(t.c, 3000, 0), ==, 1);
    edgelock_lock_options_init(&lo);
    lo.ttl_ms = 1000;
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-forgotten", &lo, &lock), EDGELOCK_OK);

    /* Its request out, its reply not read: forgotten, its memory reused. */
    CHECK_RC(edgelock_lock_start_acquire(lock), EDGELOCK_OK);
    CHECK(poll_until(t.c, sent, t.c, 2000, NULL) == 0);
    edgelock_lock_deinit(lock);
    memset(mem, 0xa5, sizeof mem);

    /* The client goes on: the late reply is no one's, and another lock in
     * the same memory works. */
    CHECK(poll_for(t.c, 200) == 0);
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-next", &lo, &lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    /* Whatever the forgotten one took expires with its ttl. */
    const long long left = server_integer(&s, "PTTL", "c-api-forgotten", (const char*)NULL);
    CHECK(left == -2 || (left > 0 && left <= 1000));
    CHECK_RC(edgelock_client_settle(t.c, 2000), EDGELOCK_OK);

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}
