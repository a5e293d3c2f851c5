/* include/edgelock/edgelock.h compiles as strict C11 (the test program
 * checks C99), and its sizing macros are constant expressions. */
#include "edgelock/edgelock.h"

_Static_assert(EDGELOCK_CLIENT_WORDS(1, 0) * sizeof(edgelock_align) >= EDGELOCK_CLIENT_BYTES(1, 0),
               "a client's words cover its bytes");
_Static_assert(EDGELOCK_LOCK_WORDS * sizeof(edgelock_align) >= EDGELOCK_LOCK_BYTES,
               "a lock's words cover its bytes");
_Static_assert(EDGELOCK_TOKEN_TEXT == 33, "32 hex digits and a NUL");

static edgelock_align client_storage[EDGELOCK_CLIENT_WORDS(EDGELOCK_MAX_NODES, 2)];
static edgelock_align lock_storage[EDGELOCK_LOCK_WORDS];

/* Every declaration used once, so a mismatch of the prototypes shows. */
int edgelock_header_c11_check(void);
int edgelock_header_c11_check(void) {
    const char* urls[1] = {"redis://127.0.0.1:6379"};
    struct edgelock_client_options co;
    struct edgelock_lock_options lo;
    struct edgelock_outcome outcome;
    struct edgelock_fd fd = {-1, EDGELOCK_WANT_READ, 0};
    edgelock_client* c = 0;
    edgelock_lock* l = 0;
    edgelock_lock_cb cb = 0;
    edgelock_client_options_init(&co);
    edgelock_lock_options_init(&lo);
    if (edgelock_client_init(client_storage, sizeof client_storage, 1, 0, urls, 1, &co, &c) !=
            EDGELOCK_OK ||
        edgelock_lock_init(lock_storage, sizeof lock_storage, c, "x", &lo, &l) != EDGELOCK_OK) {
        return -1;
    }
    edgelock_lock_set_callback(l, cb, 0);
    edgelock_client_on_ready(c, &fd, 1);
    edgelock_lock_outcome(l, &outcome);
    edgelock_lock_deinit(l);
    edgelock_client_deinit(c);
    return outcome.op;
}
