/* What the C API's test cases share: the checks, a client on one server, an
 * event recorder for lock callbacks and a hand-written poll() loop. */
#ifndef EDGELOCK_C_TEST_CAPI_TEST_H
#define EDGELOCK_C_TEST_CAPI_TEST_H

#include <stdio.h>
#include <string.h>

#include "edgelock/edgelock.h"
#include "server.h"

/* A failed check says where and what, and ends the case with 1. */
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

/* Compares two integers, printing both when the comparison fails. */
#define CHECK_INT(a, op, b)                                                                       \
    do {                                                                                          \
        const long long a_ = (long long)(a);                                                      \
        const long long b_ = (long long)(b);                                                      \
        if (!(a_ op b_)) {                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s %s %s (%lld vs %lld)\n", __FILE__, __LINE__, \
                    #a, #op, #b, a_, b_);                                                         \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)

/* A call's status code against the one expected, both named. */
#define CHECK_RC(call, want)                                                                      \
    do {                                                                                          \
        const int rc_ = (call);                                                                   \
        const int want_ = (want);                                                                 \
        if (rc_ != want_) {                                                                       \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__, __LINE__, \
                    #call, rc_, edgelock_strerror(rc_), want_, edgelock_strerror(want_));         \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)

#define CHECK_STR_CONTAINS(text, part)                                                     \
    do {                                                                                   \
        const char* t_ = (text);                                                           \
        if (t_ == NULL || strstr(t_, (part)) == NULL) {                                    \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, \
                    t_ != NULL ? t_ : "(null)", (part));                                   \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

/* A client of one node, with its URL kept alive beside it (the client does
 * not copy it). Not to be moved once opened. */
struct test_client {
    edgelock_align mem[EDGELOCK_CLIENT_WORDS(1, 0)];
    char url[64];
    const char* urls[1];
    edgelock_client* c;
};

/* A client of redis://127.0.0.1:port; options NULL: the defaults. 0 or 1. */
int test_client_open(struct test_client* t, unsigned port,
                     const struct edgelock_client_options* options);

/* Two owners of one name: two clients of the same server, each with its lock
 * of that name (options NULL: the defaults). Not to be moved once opened. */
struct two_owners {
    struct test_client a, b;
    edgelock_align mem_a[EDGELOCK_LOCK_WORDS], mem_b[EDGELOCK_LOCK_WORDS];
    edgelock_lock *la, *lb;
};

/* 0, or 1 said on stderr. */
int two_owners_open(struct two_owners* o, unsigned port, const char* name,
                    const struct edgelock_lock_options* options_a,
                    const struct edgelock_lock_options* options_b);
void two_owners_close(struct two_owners* o);

/* What a lock's callback saw: counts per event kind, the latest event and
 * the kinds in order. */
#define RECORDER_KINDS 7
#define RECORDER_LOG 64
struct recorder {
    unsigned count[RECORDER_KINDS];
    unsigned total;
    struct edgelock_event last;
    int kinds[RECORDER_LOG];
    int bad_kind; /* an event kind outside the enum */
    /* Set by a test: call this blocking function from the callback on the
     * first event, and keep what it returned. */
    edgelock_lock* reenter;
    int reenter_rc;
    int reentered;
};

void recorder_init(struct recorder* r);
/* The edgelock_lock_cb to install with a struct recorder as its context. */
void recorder_cb(void* ctx, edgelock_lock* lock, const struct edgelock_event* event);

/* Drives the client with poll() only (no blocking edgelock call) until
 * done(arg) is true or bound_ms pass: 0 done, 1 not (said on stderr). When
 * woke is not NULL it counts the waits on which a file descriptor was ready. */
int poll_until(edgelock_client* c, int (*done)(void*), void* arg, uint32_t bound_ms,
               unsigned* woke);
/* Drives the client with poll() for ms (0, or 1 on a failed check). */
int poll_for(edgelock_client* c, uint32_t ms);
/* The same through edgelock_client_run_for() in short slices. */
int run_until(edgelock_client* c, int (*done)(void*), void* arg, uint32_t bound_ms);

/* The lock's token, or 1 when it cannot be read. */
int lock_token(const edgelock_lock* lock, char token[EDGELOCK_TOKEN_TEXT]);
/* A string key's value on the server ("" when absent); 0 or 1. */
int server_get(const struct test_server* s, const char* key, char* out, size_t size);

/* The cases (main.c lists them by name). Each returns 0 when it passed, 1
 * when a check failed, TEST_SKIP when it cannot run here. */
int case_blocking(void);
int case_contention(void);
int case_expired_holder(void);
int case_fenced(void);
int case_semaphore(void);
int case_event_loop(void);
int case_lost(void);
int case_node_down(void);
int case_resume(void);
int case_settle_deadline(void);
int case_redlock(void);
int case_reentrant(void);
int case_resurrect(void);
int case_max_hold(void);
int case_deinit_in_flight(void);
int case_errors_memory(void);
int case_errors_args(void);
int case_errors_client(void);
int case_errors_lock_options(void);
int case_errors_resume(void);
int case_errors_operations(void);
int case_redact(void);
int case_reentered(void);
int case_strerror(void);
int case_names(void);
int case_tls_config(void);
int case_tls_lock(void);
int case_stats(void);

#endif /* EDGELOCK_C_TEST_CAPI_TEST_H */
