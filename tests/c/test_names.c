/* The texts of the C API: every status code, event kind, failure reason and
 * node state named, each its own; and the defaults the header documents. */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <string.h>

#include "capi_test.h"

int case_strerror(void) {
    static const int codes[] = {
        EDGELOCK_OK,
        EDGELOCK_ERR_ARG,
        EDGELOCK_ERR_MEMORY,
        EDGELOCK_ERR_HELD,
        EDGELOCK_ERR_FAILED,
        EDGELOCK_ERR_LOST,
        EDGELOCK_ERR_NOT_CONFIGURED,
        EDGELOCK_ERR_NODE_COUNT,
        EDGELOCK_ERR_URL,
        EDGELOCK_ERR_TLS_NOT_BUILT_IN,
        EDGELOCK_ERR_SECRET_TOO_LONG,
        EDGELOCK_ERR_USER_WITHOUT_PASSWORD,
        EDGELOCK_ERR_OPTION,
        EDGELOCK_ERR_NOT_ATTACHED,
        EDGELOCK_ERR_BUSY,
        EDGELOCK_ERR_NOT_HELD,
        EDGELOCK_ERR_DEADLINE,
        EDGELOCK_ERR_WAIT_FAILED,
        EDGELOCK_ERR_REENTERED,
        EDGELOCK_ERR_LOCK_QUORUM,
        EDGELOCK_ERR_LOCK_NAME,
        EDGELOCK_ERR_LOCK_NAME_SLOT,
        EDGELOCK_ERR_LOCK_OWNER,
        EDGELOCK_ERR_LOCK_HOLDER,
        EDGELOCK_ERR_LOCK_TTL,
        EDGELOCK_ERR_LOCK_NODE_TIMEOUT,
        EDGELOCK_ERR_LOCK_DRIFT,
        EDGELOCK_ERR_LOCK_RETRY,
        EDGELOCK_ERR_LOCK_MODE,
        EDGELOCK_ERR_LOCK_RANDOM,
        EDGELOCK_ERR_LOCK_REPLICAS,
        EDGELOCK_ERR_LOCK_PERMITS,
        EDGELOCK_ERR_LOCK_TOKEN,
        EDGELOCK_ERR_TLS_PATH,
        EDGELOCK_ERR_TLS_CA_FILE,
        EDGELOCK_ERR_TLS_CA_DIR,
        EDGELOCK_ERR_TLS_NO_CA,
        EDGELOCK_ERR_TLS_CERT,
        EDGELOCK_ERR_TLS_KEY,
        EDGELOCK_ERR_TLS_KEY_MISMATCH,
        EDGELOCK_ERR_TLS_CERT_WITHOUT_KEY,
        EDGELOCK_ERR_TLS_INIT,
    };
    const size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; ++i) {
        const char* text = edgelock_strerror(codes[i]);
        CHECK(text != NULL);
        if (text[0] == '\0' || strcmp(text, "unknown status") == 0) {
            fprintf(stderr, "code %d has no text of its own: \"%s\"\n", codes[i], text);
        }
        CHECK(text[0] != '\0');
        CHECK(strcmp(text, "unknown status") != 0);
        for (size_t j = 0; j < i; ++j) {
            if (strcmp(text, edgelock_strerror(codes[j])) == 0) {
                fprintf(stderr, "codes %d and %d share the text \"%s\"\n", codes[i], codes[j],
                        text);
            }
            CHECK(strcmp(text, edgelock_strerror(codes[j])) != 0);
        }
    }
    /* Anything else, in the gaps and beyond. */
    static const int others[] = {12345, 1,   -6,  -9,    -26,     -39,
                                 -54,   -59, -69, -1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; ++i) {
        const char* text = edgelock_strerror(others[i]);
        CHECK(text != NULL);
        if (strcmp(text, "unknown status") != 0) {
            fprintf(stderr, "code %d: \"%s\"\n", others[i], text);
        }
        CHECK(strcmp(text, "unknown status") == 0);
    }
    return 0;
}

/* Names of the ints in [0, count): each non-empty and its own. */
static int distinct_names(const char* (*name)(int), int count, const char* what) {
    for (int i = 0; i < count; ++i) {
        const char* a = name(i);
        if (a == NULL || a[0] == '\0') {
            fprintf(stderr, "%s %d has no name\n", what, i);
            return 1;
        }
        for (int j = 0; j < i; ++j) {
            if (strcmp(a, name(j)) == 0) {
                fprintf(stderr, "%s %d and %d are both \"%s\"\n", what, i, j, a);
                return 1;
            }
        }
    }
    /* One past the end and a negative one: still a string, not any of them. */
    const int outside[2] = {count, -1};
    for (int k = 0; k < 2; ++k) {
        const char* x = name(outside[k]);
        CHECK(x != NULL);
        for (int i = 0; i < count; ++i) {
            CHECK(strcmp(x, name(i)) != 0);
        }
    }
    return 0;
}

int case_names(void) {
    CHECK(distinct_names(edgelock_event_name, EDGELOCK_EVENT_RENEW_FAILED + 1, "event") == 0);
    CHECK(distinct_names(edgelock_reason_name, EDGELOCK_REASON_PERMITS_DIFFER + 1, "reason") == 0);
    CHECK(distinct_names(edgelock_node_state_name, EDGELOCK_NODE_READY + 1, "node state") == 0);

    /* The defaults the header documents. */
    struct edgelock_client_options co;
    memset(&co, 0x5a, sizeof co);
    edgelock_client_options_init(&co);
    CHECK_INT(co.connect_timeout_ms, ==, 5000);
    CHECK_INT(co.sentinel_timeout_ms, ==, 2000);
    CHECK_INT(co.reconnect_min_ms, ==, 100);
    CHECK_INT(co.reconnect_max_ms, ==, 2000);
    CHECK_INT(co.stall_timeout_ms, ==, 5000);
    CHECK_INT(co.resp3, ==, 1);
    CHECK_INT(co.notify, ==, 1);
    CHECK(co.client_name != NULL && strcmp(co.client_name, "edgelock") == 0);
    CHECK(co.username == NULL && co.password == NULL);
    CHECK(co.sentinel_username == NULL && co.sentinel_password == NULL);
    CHECK(co.tls == NULL);

    struct edgelock_lock_options lo;
    memset(&lo, 0x5a, sizeof lo);
    edgelock_lock_options_init(&lo);
    CHECK_INT(lo.mode, ==, EDGELOCK_MODE_PLAIN);
    CHECK_INT(lo.permits, ==, 0);
    CHECK_INT(lo.ttl_ms, ==, 10000);
    CHECK_INT(lo.node_timeout_ms, ==, 0); /* from the ttl */
    CHECK_INT(lo.drift_ppm, ==, 10000);
    CHECK_INT(lo.drift_fixed_ms, ==, 2);
    CHECK_INT(lo.quorum, ==, 0);
    CHECK_INT(lo.renew_resurrects, ==, 0);
    CHECK_INT(lo.max_tries, ==, 1);
    CHECK_INT(lo.wait_ms, ==, 10000);
    CHECK_INT(lo.retry_min_ms, ==, 50);
    CHECK_INT(lo.retry_max_ms, ==, 200);
    CHECK(lo.owner == NULL && lo.holder == NULL);
    CHECK_INT(lo.min_replicas, ==, 0);
    CHECK_INT(lo.replica_timeout_ms, ==, 25);
    CHECK_INT(lo.watchdog, ==, 1);
    CHECK_INT(lo.renew_every_ms, ==, 0);
    CHECK_INT(lo.max_hold_ms, ==, 0);

    /* The library's clock moves on. */
    const uint64_t a = edgelock_now_us();
    test_sleep_ms(20);
    const uint64_t b = edgelock_now_us();
    CHECK_INT(b - a, >=, 15000);
    CHECK_INT(b - a, <, 5000000);
    return 0;
}
