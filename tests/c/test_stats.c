/* The counters through the C API: a node's and a lock's after an acquire, a
 * renew and a release against a real redis-server, then a second lock
 * refused while the first holds; and their bad arguments. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "capi_test.h"

int case_stats(void) {
    struct test_server s;
    struct test_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    edgelock_align mem2[EDGELOCK_LOCK_WORDS];
    edgelock_lock* lock = NULL;
    edgelock_lock* other = NULL;
    struct edgelock_node_stats ns;
    struct edgelock_lock_stats ls;

    CHECK(server_start(&s) == 0);
    CHECK(test_client_open(&t, s.port, NULL) == 0);
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-stats", NULL, &lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_init(mem2, sizeof mem2, t.c, "c-api-stats", NULL, &other), EDGELOCK_OK);

    /* Nothing yet. */
    CHECK_RC(edgelock_client_node_stats(t.c, 0, &ns), EDGELOCK_OK);
    CHECK_INT(ns.requests, ==, 0);
    CHECK_INT(ns.connects, ==, 0);
    CHECK_RC(edgelock_lock_get_stats(lock, &ls), EDGELOCK_OK);
    CHECK_INT(ls.acquisitions, ==, 0);

    CHECK_RC(edgelock_lock_acquire(lock, 2000), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_try_acquire(other), EDGELOCK_ERR_HELD);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);

    CHECK_RC(edgelock_client_node_stats(t.c, 0, &ns), EDGELOCK_OK);
    CHECK_INT(ns.requests, >=, 4); /* set-up, acquire, renew, the refused try, release */
    CHECK_INT(ns.connects, ==, 1);
    CHECK_INT(ns.reconnects, ==, 0);
    CHECK_INT(ns.connect_errors + ns.timeouts + ns.closed + ns.protocol_errors + ns.tls_errors +
                  ns.refusals + ns.server_errors + ns.io_errors,
              ==, 0);
    CHECK_INT(ns.rtt_count, >=, 1);
    CHECK_INT(ns.rtt_min_us, >, 0);
    CHECK_INT(ns.rtt_min_us, <=, ns.rtt_max_us);
    CHECK_INT(ns.rtt_sum_us, >=, ns.rtt_min_us * ns.rtt_count);

    CHECK_RC(edgelock_lock_get_stats(lock, &ls), EDGELOCK_OK);
    CHECK_INT(ls.acquisitions, ==, 1);
    CHECK_INT(ls.renewals, ==, 1);
    CHECK_INT(ls.releases, ==, 1);
    CHECK_INT(ls.contended, ==, 0);
    CHECK_INT(ls.busy, ==, 0);
    CHECK_INT(ls.losses, ==, 0);
    CHECK_INT(ls.renewals_failed, ==, 0);
    CHECK_RC(edgelock_lock_get_stats(other, &ls), EDGELOCK_OK);
    CHECK_INT(ls.acquisitions, ==, 0);
    CHECK_INT(ls.busy, ==, 1);
    CHECK_INT(ls.contended, ==, 1);

    /* Bad arguments. */
    CHECK_RC(edgelock_client_node_stats(t.c, 1, &ns), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_node_stats(NULL, 0, &ns), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_client_node_stats(t.c, 0, NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_get_stats(NULL, &ls), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_lock_get_stats(lock, NULL), EDGELOCK_ERR_ARG);

    CHECK_RC(edgelock_client_settle(t.c, 2000), EDGELOCK_OK);
    edgelock_lock_deinit(other);
    edgelock_lock_deinit(lock);
    edgelock_client_deinit(t.c);
    return 0;
}
