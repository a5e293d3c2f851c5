/* Every refusal of set-up returns its code: null arguments, memory too
 * small or misaligned, client and lock options, resume's tokens and modes. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "capi_test.h"

/* A client on a closed loopback port: enough for everything that does not
 * reach a server. */
static int open_offline(struct test_client* t) {
    const unsigned port = loopback_closed_port();
    CHECK(port != 0);
    return test_client_open(t, port, NULL);
}

static void fill(char* buf, char c, size_t n) {
    memset(buf, c, n);
    buf[n] = '\0';
}

int case_errors_memory(void) {
    static edgelock_align cmem[EDGELOCK_CLIENT_WORDS(EDGELOCK_MAX_NODES, 3) + 1];
    static edgelock_align lmem[EDGELOCK_LOCK_WORDS + 1];
    const char* urls[1] = {"redis://127.0.0.1:1"};
    edgelock_client* c = NULL;
    edgelock_lock* lock = NULL;

    /* The header's figures cover the exact ones. */
    CHECK_INT(edgelock_client_size(0, 0), ==, 0);
    CHECK_INT(edgelock_client_size(EDGELOCK_MAX_NODES + 1, 0), ==, 0);
    for (unsigned n = 1; n <= EDGELOCK_MAX_NODES; ++n) {
        for (unsigned e = 0; e <= 3; ++e) {
            const size_t size = edgelock_client_size(n, e);
            CHECK_INT(size, >, 0);
            CHECK_INT(size, <=, EDGELOCK_CLIENT_BYTES(n, e));
            CHECK_INT(size, <=, sizeof(edgelock_align) * EDGELOCK_CLIENT_WORDS(n, e));
            if (n > 1) {
                CHECK_INT(size, >, edgelock_client_size(n - 1, e));
            }
        }
    }
    CHECK_INT(edgelock_lock_size(), >, 0);
    CHECK_INT(edgelock_lock_size(), <=, EDGELOCK_LOCK_BYTES);

    /* A byte short, or a byte off the alignment: refused. */
    const size_t need = edgelock_client_size(1, 0);
    CHECK_RC(edgelock_client_init(cmem, need - 1, 1, 0, urls, 1, NULL, &c), EDGELOCK_ERR_MEMORY);
    CHECK_RC(edgelock_client_init((char*)cmem + 1, sizeof cmem - 1, 1, 0, urls, 1, NULL, &c),
             EDGELOCK_ERR_MEMORY);
    CHECK_RC(edgelock_client_init(cmem, edgelock_client_size(2, 0) - 1, 2, 0, urls, 1, NULL, &c),
             EDGELOCK_ERR_MEMORY);
    /* Exactly enough: made. */
    CHECK_RC(edgelock_client_init(cmem, need, 1, 0, urls, 1, NULL, &c), EDGELOCK_OK);
    CHECK(c != NULL);
    CHECK_INT(edgelock_client_node_count(c), ==, 1);

    const size_t lneed = edgelock_lock_size();
    CHECK_RC(edgelock_lock_init(lmem, lneed - 1, c, "c-api-mem", NULL, &lock), EDGELOCK_ERR_MEMORY);
    CHECK_RC(edgelock_lock_init((char*)lmem + 1, sizeof lmem - 1, c, "c-api-mem", NULL, &lock),
             EDGELOCK_ERR_MEMORY);
    CHECK_RC(edgelock_lock_init((char*)lmem + sizeof(edgelock_align) / 2, sizeof lmem / 2, c,
                                "c-api-mem", NULL, &lock),
             EDGELOCK_ERR_MEMORY);
    CHECK_RC(edgelock_lock_init(lmem, lneed, c, "c-api-mem", NULL, &lock), EDGELOCK_OK);
    CHECK(lock != NULL);
    edgelock_lock_deinit(lock);
    edgelock_client_deinit(c);

    /* The largest client: every node and extra connection. */
    const char* nine[EDGELOCK_MAX_NODES];
    for (unsigned i = 0; i < EDGELOCK_MAX_NODES; ++i) {
        nine[i] = "redis://127.0.0.1:1";
    }
    CHECK_RC(edgelock_client_init(cmem, sizeof cmem, EDGELOCK_MAX_NODES, 3, nine,
                                  EDGELOCK_MAX_NODES, NULL, &c),
             EDGELOCK_OK);
    CHECK_INT(edgelock_client_node_count(c), ==, EDGELOCK_MAX_NODES);
    CHECK_INT(edgelock_client_fd_capacity(c), >=, EDGELOCK_MAX_NODES);
    edgelock_client_deinit(c);
    return 0;
}

int case_errors_args(void) {
    struct test_client t;
    edgelock_align cmem[EDGELOCK_CLIENT_WORDS(1, 0)];
    edgelock_align lmem[EDGELOCK_LOCK_WORDS];
    const char* urls[1] = {"redis://127.0.0.1:1"};
    const char* null_url[1] = {NULL};
    edgelock_client* c = NULL;
    edgelock_lock* lock = NULL;
    struct edgelock_lock_options lo;
    char token[EDGELOCK_TOKEN_TEXT];

    CHECK_RC(edgelock_client_init(NULL, sizeof cmem, 1, 0, urls, 1, NULL, &c), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_init(cmem, sizeof cmem, 1, 0, urls, 1, NULL, NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_init(cmem, sizeof cmem, 1, 0, NULL, 1, NULL, &c), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_init(cmem, sizeof cmem, 1, 0, null_url, 1, NULL, &c),
             EDGELOCK_ERR_ARG);

    CHECK(open_offline(&t) == 0);
    CHECK_RC(edgelock_lock_init(NULL, sizeof lmem, t.c, "x", NULL, &lock), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, NULL, "x", NULL, &lock), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, t.c, NULL, NULL, &lock), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, t.c, "x", NULL, NULL), EDGELOCK_ERR_ARG);
    /* Unknown values. */
    edgelock_lock_options_init(&lo);
    lo.mode = 3;
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, t.c, "x", &lo, &lock), EDGELOCK_ERR_ARG);
    lo.mode = -1;
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, t.c, "x", &lo, &lock), EDGELOCK_ERR_ARG);

    CHECK_RC(edgelock_lock_try_acquire(NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_acquire(NULL, 10), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_renew(NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_release(NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_resume(NULL, "0123456789abcdef0123456789abcdef"), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_start_acquire(NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_start_acquire_tries(NULL, 1, 10), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_start_renew(NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_start_release(NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_token(NULL, token, sizeof token), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_connect(NULL, 10, 0), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_run_for(NULL, 10), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_settle(NULL, 10), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_node_state(NULL, 0), EDGELOCK_ERR_ARG);
    CHECK_INT(edgelock_client_node_text(NULL, 0, token, sizeof token), ==, 0);

    /* A lock's own: a null token, a token buffer too small, a node index out
     * of range. */
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, t.c, "c-api-args", NULL, &lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_resume(lock, NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_token(lock, NULL, EDGELOCK_TOKEN_TEXT), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_token(lock, token, EDGELOCK_TOKEN_TEXT - 1), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_node_state(t.c, 1), EDGELOCK_ERR_ARG);
    CHECK_INT(edgelock_client_node_text(t.c, 1, token, sizeof token), ==, 0);
    CHECK_INT(edgelock_client_node_state(t.c, 0), ==, EDGELOCK_NODE_DOWN);

    /* What takes no status is harmless with nulls. */
    edgelock_client_options_init(NULL);
    edgelock_lock_options_init(NULL);
    edgelock_lock_set_callback(NULL, recorder_cb, NULL);
    edgelock_client_on_timeout(NULL);
    edgelock_client_on_ready(NULL, NULL, 0);
    edgelock_client_on_ready(t.c, NULL, 0);
    edgelock_client_disconnect(NULL);
    edgelock_lock_deinit(NULL);
    edgelock_client_deinit(NULL);
    CHECK_INT(edgelock_client_wanted(NULL, NULL, 0), ==, 0);
    CHECK_INT(edgelock_lock_held(NULL), ==, 0);

    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}

/* The URL made to fail: index and reason, a client that stays unconfigured. */
static int bad_url(const char* const* urls, size_t count, size_t index, int code) {
    edgelock_align mem[EDGELOCK_CLIENT_WORDS(2, 0)];
    edgelock_align lmem[EDGELOCK_LOCK_WORDS];
    edgelock_client* c = NULL;
    edgelock_lock* lock = NULL;
    const char* why = NULL;
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, count, NULL, &c), code);
    CHECK(c != NULL);
    CHECK_INT(edgelock_client_bad_url(c, &why), ==, index);
    CHECK(why != NULL && why[0] != '\0');
    CHECK(strcmp(why, "ok") != 0);
    /* Nothing configured: what needs nodes says so. */
    CHECK_RC(edgelock_client_connect(c, 10, 0), EDGELOCK_ERR_NOT_CONFIGURED);
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, c, "x", NULL, &lock),
             EDGELOCK_ERR_NOT_CONFIGURED);
    return 0;
}

int case_errors_client(void) {
    edgelock_align mem[EDGELOCK_CLIENT_WORDS(2, 0)];
    edgelock_align lmem[EDGELOCK_LOCK_WORDS];
    const char* urls[2] = {"redis://127.0.0.1:1", "redis://127.0.0.1:2"};
    edgelock_client* c = NULL;
    edgelock_lock* lock = NULL;
    struct edgelock_client_options co;
    struct edgelock_lock_options lo;
    char secret[300], url[400];

    /* Node counts. */
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 0, NULL, &c),
             EDGELOCK_ERR_NODE_COUNT);
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 1, 0, urls, 2, NULL, &c),
             EDGELOCK_ERR_NODE_COUNT);
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 0, 0, urls, 1, NULL, &c),
             EDGELOCK_ERR_NODE_COUNT);
    CHECK_RC(edgelock_client_init(mem, sizeof mem, EDGELOCK_MAX_NODES + 1, 0, urls, 1, NULL, &c),
             EDGELOCK_ERR_NODE_COUNT);

    /* URLs that do not parse, and rediss:// without a TLS transport. */
    {
        const char* u1[2] = {"redis://127.0.0.1:1", "http://127.0.0.1:2"};
        const char* u2[1] = {"redis://127.0.0.1:99999"};
        const char* u3[1] = {""};
        const char* u4[2] = {"redis://127.0.0.1:1", "rediss://127.0.0.1:2"};
        CHECK(bad_url(u1, 2, 1, EDGELOCK_ERR_URL) == 0);
        CHECK(bad_url(u2, 1, 0, EDGELOCK_ERR_URL) == 0);
        CHECK(bad_url(u3, 1, 0, EDGELOCK_ERR_URL) == 0);
        CHECK(bad_url(u4, 2, 1, EDGELOCK_ERR_TLS_NOT_BUILT_IN) == 0);
    }

    /* Secrets: 256 bytes at most, in the options or the URL. */
    edgelock_client_options_init(&co);
    fill(secret, 'p', 256);
    co.password = secret;
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 2, &co, &c), EDGELOCK_OK);
    edgelock_client_deinit(c);
    fill(secret, 'p', 257);
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 2, &co, &c),
             EDGELOCK_ERR_SECRET_TOO_LONG);
    co.password = "pw";
    co.username = secret;
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 2, &co, &c),
             EDGELOCK_ERR_SECRET_TOO_LONG);
    /* In a URL, a password that long does not parse. */
    {
        const char* u[2] = {"redis://127.0.0.1:1", url};
        snprintf(url, sizeof url, "redis://:%s@127.0.0.1:1", secret);
        CHECK(bad_url(u, 2, 1, EDGELOCK_ERR_URL) == 0);
    }

    /* A user name needs a password from somewhere. */
    edgelock_client_options_init(&co);
    co.username = "alice";
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 2, &co, &c),
             EDGELOCK_ERR_USER_WITHOUT_PASSWORD);
    co.password = "secret";
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 2, &co, &c), EDGELOCK_OK);
    edgelock_client_deinit(c);
    {
        const char* u[1] = {"redis://alice@127.0.0.1:1"};
        const char* v[1] = {"redis://alice:secret@127.0.0.1:1"};
        CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, u, 1, NULL, &c),
                 EDGELOCK_ERR_USER_WITHOUT_PASSWORD);
        CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, v, 1, NULL, &c), EDGELOCK_OK);
        edgelock_client_deinit(c);
    }

    /* Bad client options. */
    edgelock_client_options_init(&co);
    co.connect_timeout_ms = 0;
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 2, &co, &c), EDGELOCK_ERR_OPTION);
    edgelock_client_options_init(&co);
    co.stall_timeout_ms = 0;
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 2, &co, &c), EDGELOCK_ERR_OPTION);
    edgelock_client_options_init(&co);
    co.reconnect_min_ms = 3000;
    co.reconnect_max_ms = 2000;
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 2, &co, &c), EDGELOCK_ERR_OPTION);

    /* A watchdog that would renew after the validity ended. */
    edgelock_client_options_init(&co);
    CHECK_RC(edgelock_client_init(mem, sizeof mem, 2, 0, urls, 1, &co, &c), EDGELOCK_OK);
    edgelock_lock_options_init(&lo);
    lo.ttl_ms = 1000;
    lo.renew_every_ms = 1000;
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, c, "c-api-dog", &lo, &lock),
             EDGELOCK_ERR_OPTION);
    lo.renew_every_ms = 500;
    CHECK_RC(edgelock_lock_init(lmem, sizeof lmem, c, "c-api-dog", &lo, &lock), EDGELOCK_OK);
    edgelock_lock_deinit(lock);
    edgelock_client_deinit(c);
    return 0;
}

/* lock_init with these options: the code expected. */
static int lock_refused(edgelock_client* c, const char* name,
                        const struct edgelock_lock_options* lo, int code, int line) {
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    edgelock_lock* lock = NULL;
    const int rc = edgelock_lock_init(mem, sizeof mem, c, name, lo, &lock);
    if (rc != code) {
        fprintf(stderr, "%s:%d: edgelock_lock_init returned %d (%s), expected %d (%s)\n", __FILE__,
                line, rc, edgelock_strerror(rc), code, edgelock_strerror(code));
        if (rc == EDGELOCK_OK) {
            edgelock_lock_deinit(lock);
        }
        return 1;
    }
    if (rc == EDGELOCK_OK) {
        edgelock_lock_deinit(lock);
    }
    return 0;
}

/* Each refusal checked on its own: one that fails does not hide the next. */
#define LOCK_REFUSED(name, code) (failed |= lock_refused(t.c, (name), &lo, (code), __LINE__))

int case_errors_lock_options(void) {
    struct test_client t;
    struct edgelock_lock_options lo;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    edgelock_lock* lock = NULL;
    char text[EDGELOCK_MAX_HOLDER + 2];
    int failed = 0;

    CHECK(open_offline(&t) == 0);

    edgelock_lock_options_init(&lo);
    lo.quorum = 2; /* of 1 node */
    LOCK_REFUSED("q", EDGELOCK_ERR_LOCK_QUORUM);
    lo.quorum = 5;
    LOCK_REFUSED("q", EDGELOCK_ERR_LOCK_QUORUM);
    lo.quorum = 1;
    LOCK_REFUSED("q", EDGELOCK_OK);

    edgelock_lock_options_init(&lo);
    LOCK_REFUSED("", EDGELOCK_ERR_LOCK_NAME);
    fill(text, 'n', EDGELOCK_MAX_NAME + 1);
    LOCK_REFUSED(text, EDGELOCK_ERR_LOCK_NAME);
    fill(text, 'n', EDGELOCK_MAX_NAME);
    LOCK_REFUSED(text, EDGELOCK_OK);
    lo.mode = EDGELOCK_MODE_FENCED;
    LOCK_REFUSED("a}b", EDGELOCK_ERR_LOCK_NAME_SLOT);
    LOCK_REFUSED("{a}b", EDGELOCK_OK);

    edgelock_lock_options_init(&lo);
    lo.mode = EDGELOCK_MODE_REENTRANT;
    fill(text, 'o', EDGELOCK_MAX_OWNER + 1);
    lo.owner = text;
    LOCK_REFUSED("o", EDGELOCK_ERR_LOCK_OWNER);
    fill(text, 'o', EDGELOCK_MAX_OWNER);
    LOCK_REFUSED("o", EDGELOCK_OK);

    edgelock_lock_options_init(&lo);
    fill(text, 'h', EDGELOCK_MAX_HOLDER + 1);
    lo.holder = text;
    LOCK_REFUSED("h", EDGELOCK_ERR_LOCK_HOLDER);
    fill(text, 'h', EDGELOCK_MAX_HOLDER);
    LOCK_REFUSED("h", EDGELOCK_OK);

    edgelock_lock_options_init(&lo);
    lo.ttl_ms = 0;
    LOCK_REFUSED("t", EDGELOCK_ERR_LOCK_TTL);
    lo.ttl_ms = UINT32_MAX;
    LOCK_REFUSED("t", EDGELOCK_ERR_LOCK_TTL);

    edgelock_lock_options_init(&lo);
    lo.ttl_ms = 1000;
    lo.node_timeout_ms = 1000;
    LOCK_REFUSED("t", EDGELOCK_ERR_LOCK_NODE_TIMEOUT);

    edgelock_lock_options_init(&lo);
    lo.drift_ppm = 600000;
    LOCK_REFUSED("d", EDGELOCK_ERR_LOCK_DRIFT);

    edgelock_lock_options_init(&lo);
    lo.max_tries = 0;
    LOCK_REFUSED("r", EDGELOCK_ERR_LOCK_RETRY);
    lo.max_tries = 1;
    lo.retry_min_ms = 300;
    lo.retry_max_ms = 200;
    LOCK_REFUSED("r", EDGELOCK_ERR_LOCK_RETRY);

    edgelock_lock_options_init(&lo);
    lo.mode = EDGELOCK_MODE_FENCED;
    lo.renew_resurrects = 1;
    LOCK_REFUSED("m", EDGELOCK_ERR_LOCK_MODE);

    edgelock_lock_options_init(&lo);
    lo.min_replicas = 1;
    lo.replica_timeout_ms = 0;
    LOCK_REFUSED("w", EDGELOCK_ERR_LOCK_REPLICAS);

    edgelock_lock_options_init(&lo);
    lo.permits = 17;
    LOCK_REFUSED("p", EDGELOCK_ERR_LOCK_PERMITS);
    lo.permits = 256; /* not cut to 0, a plain lock */
    LOCK_REFUSED("p", EDGELOCK_ERR_LOCK_PERMITS);
    lo.permits = 2;
    lo.mode = EDGELOCK_MODE_REENTRANT;
    LOCK_REFUSED("p", EDGELOCK_ERR_LOCK_PERMITS);
    lo.mode = EDGELOCK_MODE_PLAIN;
    lo.permits = 16;
    LOCK_REFUSED("p", EDGELOCK_OK);

    /* Retries refused when an acquisition is started: nothing started. */
    edgelock_lock_options_init(&lo);
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-tries", &lo, &lock), EDGELOCK_OK);
    {
        const int rc = edgelock_lock_start_acquire_tries(lock, 0, 100);
        if (rc != EDGELOCK_ERR_LOCK_RETRY) {
            fprintf(stderr, "%s:%d: start_acquire_tries with max_tries 0 returned %d (%s)\n",
                    __FILE__, __LINE__, rc, edgelock_strerror(rc));
            failed = 1;
        }
        CHECK(rc != EDGELOCK_OK);
    }
    struct edgelock_outcome o;
    edgelock_lock_outcome(lock, &o);
    CHECK_INT(o.op, ==, EDGELOCK_OP_NONE);
    edgelock_lock_deinit(lock);

    /* A quorum above the nodes, however far: not cut to 0, the default. */
    edgelock_lock_options_init(&lo);
    lo.quorum = 256;
    LOCK_REFUSED("q", EDGELOCK_ERR_LOCK_QUORUM);
    lo.quorum = UINT32_MAX;
    LOCK_REFUSED("q", EDGELOCK_ERR_LOCK_QUORUM);

    edgelock_client_deinit(t.c);
    return failed;
}

int case_errors_resume(void) {
    struct test_client t;
    struct edgelock_lock_options lo;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    edgelock_lock* lock = NULL;
    int failed = 0;

    CHECK(open_offline(&t) == 0);

    /* Tokens that are not 32 hex digits. */
    edgelock_lock_options_init(&lo);
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-tok", &lo, &lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_resume(lock, "xyz"), EDGELOCK_ERR_LOCK_TOKEN);
    CHECK_RC(edgelock_lock_resume(lock, ""), EDGELOCK_ERR_LOCK_TOKEN);
    CHECK_RC(edgelock_lock_resume(lock, "0123456789abcdef0123456789abcdeg"),
             EDGELOCK_ERR_LOCK_TOKEN);
    CHECK_RC(edgelock_lock_resume(lock, "0123456789abcdef0123456789abcdef0"),
             EDGELOCK_ERR_LOCK_TOKEN);
    edgelock_lock_deinit(lock);

    /* Resume takes plain and fenced locks only: not a reentrant lock, not a
     * semaphore (refused, and nothing held after). */
    for (int k = 0; k < 2; ++k) {
        edgelock_lock_options_init(&lo);
        if (k == 0) {
            lo.mode = EDGELOCK_MODE_REENTRANT;
        } else {
            lo.permits = 2;
        }
        CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-tok", &lo, &lock), EDGELOCK_OK);
        const int rc = edgelock_lock_resume(lock, "0123456789abcdef0123456789abcdef");
        if (rc != EDGELOCK_ERR_LOCK_MODE) {
            fprintf(stderr, "%s:%d: resume of a %s returned %d (%s), expected %d (%s)\n", __FILE__,
                    __LINE__, k == 0 ? "reentrant lock" : "semaphore", rc, edgelock_strerror(rc),
                    EDGELOCK_ERR_LOCK_MODE, edgelock_strerror(EDGELOCK_ERR_LOCK_MODE));
            failed = 1;
        }
        CHECK_INT(edgelock_lock_held(lock), ==, 0);
        edgelock_lock_deinit(lock);
    }
    edgelock_lock_options_init(&lo);
    lo.mode = EDGELOCK_MODE_FENCED;
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-tok", &lo, &lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_resume(lock, "0123456789abcdef0123456789abcdef"), EDGELOCK_OK);
    CHECK_INT(edgelock_lock_held(lock), ==, 1);
    /* Held now: another resume is refused. */
    CHECK_RC(edgelock_lock_resume(lock, "fedcba9876543210fedcba9876543210"), EDGELOCK_ERR_BUSY);
    edgelock_lock_deinit(lock);

    edgelock_client_deinit(t.c);
    return failed;
}
