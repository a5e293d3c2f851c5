/* redis-server processes for the C API's tests, and a minimal RESP client to
 * look at what the library left on them.
 *
 *   struct test_server s;
 *   if (server_start(&s, 0) != 0) return 1;   // exits 77 without redis-server
 *   struct redis_reply r;
 *   server_command(&s, &r, "PTTL", "job", (const char *)NULL);
 *   server_stop(&s);                          // also done at exit
 *
 * Servers listen on 127.0.0.1 only, on ports picked free by the kernel, and
 * die with the test process. */
#ifndef EDGELOCK_C_TEST_SERVER_H
#define EDGELOCK_C_TEST_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc.h"

/* The exit status ctest reports as skipped. */
#define TEST_SKIP 77

struct test_server {
    pid_t pid;
    unsigned port;     /* plain TCP */
    unsigned tls_port; /* TLS (server_start_tls), else 0 */
    char dir[128];     /* its working directory (log file) */
};

/* TLS files for a server started with server_start_tls(). */
struct test_tls_files {
    const char* cert_file;
    const char* key_file;
    const char* ca_file;
};

/* Starts redis-server and waits (about 5 s at most) until it answers PING.
 * 0 when it runs; -1, said on stderr, when it would not start. Exits the
 * process with TEST_SKIP when redis-server is not in PATH. */
int server_start(struct test_server* s);
/* The same with a TLS port beside the plain one. */
int server_start_tls(struct test_server* s, const struct test_tls_files* tls);
/* SIGTERM, SIGKILL after 3 s, reaped; the directory removed. Harmless twice. */
void server_stop(struct test_server* s);
/* Stops every server still running (main, after each case). */
void server_stop_all(void);
/* SIGSTOP / SIGCONT: a server that accepts connections but never answers. */
void server_pause(struct test_server* s);
void server_resume(struct test_server* s);

/* One reply: '+' simple string, '-' error, ':' integer, '$' bulk (nil set
 * for a null bulk, '_' a RESP3 null). Longer texts are cut to fit. */
struct redis_reply {
    char type;
    int nil;
    long long integer;
    size_t len;
    char text[512];
};

/* Sends one command (NULL-terminated arguments) on a connection of its own
 * and reads its reply within 2 s. 0, or -1 said on stderr (I/O, timeout, a
 * reply type this helper does not read). */
int server_command(const struct test_server* s, struct redis_reply* reply, const char* arg, ...);
/* Shorthands: the integer reply of a command (PTTL, EXISTS, DEL, ...), or
 * LLONG_MIN on any failure or another reply type. */
long long server_integer(const struct test_server* s, const char* arg, ...);

/* A 127.0.0.1 port nothing listens on right now; 0 on failure. */
unsigned loopback_closed_port(void);

#endif /* EDGELOCK_C_TEST_SERVER_H */
