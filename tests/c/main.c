/* The C API's test program: `edgelock_c_tests CASE` runs one case (ctest
 * registers each), `--list` names them. Exit 0 passed, 1 failed, 77 skipped
 * (no redis-server, no TLS), 2 for an unknown case. */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

static const struct {
    const char* name;
    int (*run)(void);
} cases[] = {
    {"blocking", case_blocking},
    {"contention", case_contention},
    {"expired-holder", case_expired_holder},
    {"fenced", case_fenced},
    {"semaphore", case_semaphore},
    {"resume", case_resume},
    {"node-down", case_node_down},
    {"event-loop", case_event_loop},
    {"lost", case_lost},
    {"settle-deadline", case_settle_deadline},
    {"redlock", case_redlock},
    {"reentrant", case_reentrant},
    {"resurrect", case_resurrect},
    {"max-hold", case_max_hold},
    {"deinit-in-flight", case_deinit_in_flight},
    {"errors-memory", case_errors_memory},
    {"errors-args", case_errors_args},
    {"errors-client", case_errors_client},
    {"errors-lock-options", case_errors_lock_options},
    {"errors-resume", case_errors_resume},
    {"errors-operations", case_errors_operations},
    {"reentered", case_reentered},
    {"strerror", case_strerror},
    {"names", case_names},
    {"tls-config", case_tls_config},
    {"tls-lock", case_tls_lock},
    {"stats", case_stats},
    {"redact", case_redact},
};

int main(int argc, char** argv) {
    const size_t n = sizeof cases / sizeof cases[0];
    /* Lines in order with what the checks print on stderr. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; ++i) {
            printf("%s\n", cases[i].name);
        }
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE | --list\n", argv[0]);
        return 2;
    }
    /* A server that closes on the raw helper's connection must not kill the
     * test. */
    signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; i < n; ++i) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            const int rc = cases[i].run();
            server_stop_all();
            if (rc == 0) {
                printf("passed: %s\n", cases[i].name);
            } else if (rc == TEST_SKIP) {
                printf("skipped: %s\n", cases[i].name);
            } else {
                printf("FAILED: %s\n", cases[i].name);
            }
            return rc == 0 || rc == TEST_SKIP ? rc : 1;
        }
    }
    fprintf(stderr, "%s: no case named \"%s\" (--list names them)\n", argv[0], argv[1]);
    return 2;
}
