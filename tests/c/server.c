/* redis-server processes and a minimal RESP client (server.h). */
#define _POSIX_C_SOURCE 200809L

#include "server.h"

#include "proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* --- sockets ------------------------------------------------------------- */

static int loopback_socket(void) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    return fd;
}

static void loopback_address(struct sockaddr_in* a, unsigned port) {
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/* Ports the kernel just handed out on 127.0.0.1, all different, read back and
 * released. Another process may take one meanwhile: a server that fails to
 * start is tried again on fresh ones. */
static int free_ports(unsigned* ports, size_t count) {
    int fds[2] = {-1, -1};
    int ok = count <= 2;
    for (size_t i = 0; ok && i < count; ++i) {
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        loopback_address(&a, 0);
        fds[i] = loopback_socket();
        ok = fds[i] >= 0 && bind(fds[i], (struct sockaddr*)&a, sizeof a) == 0 &&
             getsockname(fds[i], (struct sockaddr*)&a, &len) == 0;
        ports[i] = ok ? ntohs(a.sin_port) : 0;
    }
    for (size_t i = 0; i < 2; ++i) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    return ok ? 0 : -1;
}

unsigned loopback_closed_port(void) {
    unsigned port = 0;
    return free_ports(&port, 1) == 0 ? port : 0;
}

static int connect_loopback(unsigned port) {
    const int fd = loopback_socket();
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in a;
    loopback_address(&a, port);
    if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Waits for fd to be ready for `events` until deadline (test_now_ms). */
static int wait_fd(int fd, short events, uint64_t deadline) {
    for (;;) {
        const uint64_t now = test_now_ms();
        if (now >= deadline) {
            return 0;
        }
        struct pollfd p;
        p.fd = fd;
        p.events = events;
        p.revents = 0;
        const int r = poll(&p, 1, (int)(deadline - now));
        if (r > 0) {
            return 1;
        }
        if (r < 0 && errno != EINTR) {
            return 0;
        }
    }
}

/* --- RESP ---------------------------------------------------------------- */

/* Parses one reply at the start of buf[0, len): 1 complete, 0 more needed,
 * -1 a type this helper does not read. */
static int parse_reply(const char* buf, size_t len, struct redis_reply* r) {
    const char* eol = NULL;
    for (size_t i = 0; i + 1 < len; ++i) {
        if (buf[i] == '\r' && buf[i + 1] == '\n') {
            eol = buf + i;
            break;
        }
    }
    if (eol == NULL) {
        return 0;
    }
    const size_t line = (size_t)(eol - buf) - 1;
    memset(r, 0, sizeof *r);
    r->type = buf[0];
    switch (buf[0]) {
    case '+':
    case '-':
        r->len = line < sizeof r->text - 1 ? line : sizeof r->text - 1;
        memcpy(r->text, buf + 1, r->len);
        return 1;
    case ':':
        r->integer = strtoll(buf + 1, NULL, 10);
        return 1;
    case '_':
        r->nil = 1;
        return 1;
    case '$': {
        const long long n = strtoll(buf + 1, NULL, 10);
        if (n < 0) {
            r->nil = 1;
            return 1;
        }
        const size_t start = (size_t)(eol - buf) + 2;
        if (len < start + (size_t)n + 2) {
            return 0;
        }
        r->len = (size_t)n < sizeof r->text - 1 ? (size_t)n : sizeof r->text - 1;
        memcpy(r->text, buf + start, r->len);
        return 1;
    }
    default:
        return -1;
    }
}

static int vcommand(unsigned port, struct redis_reply* reply, const char* arg, va_list ap) {
    char out[4096];
    size_t used = 0;
    const char* args[16];
    size_t argc = 0;
    for (const char* a = arg; a != NULL; a = va_arg(ap, const char*)) {
        if (argc == sizeof args / sizeof args[0]) {
            fprintf(stderr, "server_command: too many arguments\n");
            return -1;
        }
        args[argc++] = a;
    }
    int n = snprintf(out, sizeof out, "*%zu\r\n", argc);
    used = (size_t)n;
    for (size_t i = 0; i < argc; ++i) {
        const size_t len = strlen(args[i]);
        n = snprintf(out + used, sizeof out - used, "$%zu\r\n", len);
        if (n < 0 || used + (size_t)n + len + 2 > sizeof out) {
            fprintf(stderr, "server_command: command too long\n");
            return -1;
        }
        used += (size_t)n;
        memcpy(out + used, args[i], len);
        used += len;
        memcpy(out + used, "\r\n", 2);
        used += 2;
    }
    const int fd = connect_loopback(port);
    if (fd < 0) {
        fprintf(stderr, "server_command %s: connect to port %u: %s\n", args[0], port,
                strerror(errno));
        return -1;
    }
    const uint64_t deadline = test_now_ms() + 2000;
    int result = -1;
    size_t sent = 0;
    while (sent < used) {
        if (!wait_fd(fd, POLLOUT, deadline)) {
            fprintf(stderr, "server_command %s: send timed out\n", args[0]);
            goto done;
        }
        const ssize_t w = send(fd, out + sent, used - sent, MSG_NOSIGNAL);
        if (w < 0 && errno != EINTR && errno != EAGAIN) {
            fprintf(stderr, "server_command %s: send: %s\n", args[0], strerror(errno));
            goto done;
        }
        sent += w > 0 ? (size_t)w : 0;
    }
    {
        char in[4096];
        size_t got = 0;
        for (;;) {
            const int p = parse_reply(in, got, reply);
            if (p == 1) {
                result = 0;
                break;
            }
            if (p < 0) {
                fprintf(stderr, "server_command %s: unexpected reply type '%c'\n", args[0], in[0]);
                break;
            }
            if (got == sizeof in) {
                fprintf(stderr, "server_command %s: reply too long\n", args[0]);
                break;
            }
            if (!wait_fd(fd, POLLIN, deadline)) {
                fprintf(stderr, "server_command %s: no reply within 2 s\n", args[0]);
                break;
            }
            const ssize_t r = recv(fd, in + got, sizeof in - got, 0);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
                fprintf(stderr, "server_command %s: connection closed or broken\n", args[0]);
                break;
            }
            got += r > 0 ? (size_t)r : 0;
        }
    }
done:
    close(fd);
    return result;
}

int server_command(const struct test_server* s, struct redis_reply* reply, const char* arg, ...) {
    va_list ap;
    va_start(ap, arg);
    const int r = vcommand(s->port, reply, arg, ap);
    va_end(ap);
    return r;
}

long long server_integer(const struct test_server* s, const char* arg, ...) {
    struct redis_reply reply;
    va_list ap;
    va_start(ap, arg);
    const int r = vcommand(s->port, &reply, arg, ap);
    va_end(ap);
    if (r != 0 || reply.type != ':') {
        if (r == 0) {
            fprintf(stderr, "server_integer %s: reply '%c' %s\n", arg, reply.type, reply.text);
        }
        return LLONG_MIN;
    }
    return reply.integer;
}

/* --- servers ------------------------------------------------------------- */

/* Every server running, stopped at exit whatever the case returned. */
static struct test_server* live_servers[8];

void server_stop_all(void) {
    for (size_t i = 0; i < sizeof live_servers / sizeof live_servers[0]; ++i) {
        if (live_servers[i] != NULL) {
            server_stop(live_servers[i]);
        }
    }
}

static int track(struct test_server* s) {
    static int registered = 0;
    if (!registered) {
        if (atexit(server_stop_all) != 0) {
            return -1;
        }
        registered = 1;
    }
    for (size_t i = 0; i < sizeof live_servers / sizeof live_servers[0]; ++i) {
        if (live_servers[i] == NULL) {
            live_servers[i] = s;
            return 0;
        }
    }
    return -1;
}

static void untrack(const struct test_server* s) {
    for (size_t i = 0; i < sizeof live_servers / sizeof live_servers[0]; ++i) {
        if (live_servers[i] == s) {
            live_servers[i] = NULL;
        }
    }
}

static void print_log(const struct test_server* s) {
    char path[192];
    snprintf(path, sizeof path, "%s/redis.log", s->dir);
    FILE* f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    char line[256];
    while (fgets(line, sizeof line, f) != NULL) {
        fprintf(stderr, "  redis.log: %s", line);
    }
    fclose(f);
}

/* One attempt on the ports in s; 0 once it answers PING. */
static int start_once(struct test_server* s, const char* path, const struct test_tls_files* tls) {
    char port[16], tls_port[16], log[192];
    snprintf(port, sizeof port, "%u", s->port);
    snprintf(tls_port, sizeof tls_port, "%u", s->tls_port);
    snprintf(log, sizeof log, "%s/redis.log", s->dir);
    const char* base[] = {
        "redis-server", "--port",    port,    "--bind", "127.0.0.1",   "--save", "",
        "--appendonly", "no",        "--dir", s->dir,   "--daemonize", "no",     "--loglevel",
        "warning",      "--logfile", log};
    const char* with_tls[] = {"--tls-port",         tls_port, "--tls-cert-file",    NULL,
                              "--tls-key-file",     NULL,     "--tls-ca-cert-file", NULL,
                              "--tls-auth-clients", "no"};
    const char* argv[sizeof base / sizeof base[0] + sizeof with_tls / sizeof with_tls[0] + 1];
    size_t argc = sizeof base / sizeof base[0];
    memcpy(argv, base, sizeof base);
    if (tls != NULL) {
        with_tls[3] = tls->cert_file;
        with_tls[5] = tls->key_file;
        with_tls[7] = tls->ca_file;
        memcpy(argv + argc, with_tls, sizeof with_tls);
        argc += sizeof with_tls / sizeof with_tls[0];
    }
    argv[argc] = NULL;
    s->pid = proc_spawn(path, argv, NULL);
    if (s->pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        return -1;
    }
    const uint64_t deadline = test_now_ms() + 5000;
    while (test_now_ms() < deadline) {
        if (proc_reaped(s->pid, NULL)) {
            s->pid = -1;
            fprintf(stderr, "redis-server exited at start (port %u taken?)\n", s->port);
            print_log(s);
            return -1;
        }
        struct redis_reply r;
        const int fd = connect_loopback(s->port);
        if (fd >= 0) {
            close(fd);
            if (server_command(s, &r, "PING", (const char*)NULL) == 0 &&
                strcmp(r.text, "PONG") == 0) {
                return 0;
            }
        }
        test_sleep_ms(10);
    }
    fprintf(stderr, "redis-server did not answer PING within 5 s\n");
    print_log(s);
    return -1;
}

static int start(struct test_server* s, const struct test_tls_files* tls) {
    char path[512];
    memset(s, 0, sizeof *s);
    s->pid = -1;
    if (find_in_path("redis-server", path, sizeof path) != 0) {
        printf("skipped: redis-server is not installed (not found in PATH)\n");
        fflush(stdout);
        exit(TEST_SKIP);
    }
    const char* tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/edgelock-c-XXXXXX",
             tmp != NULL && *tmp != '\0' && strlen(tmp) < 64 ? tmp : "/tmp");
    if (mkdtemp(s->dir) == NULL) {
        fprintf(stderr, "mkdtemp %s: %s\n", s->dir, strerror(errno));
        s->dir[0] = '\0';
        return -1;
    }
    if (track(s) != 0) {
        fprintf(stderr, "too many servers at once\n");
        return -1;
    }
    for (int attempt = 0; attempt < 5; ++attempt) {
        unsigned ports[2] = {0, 0};
        if (free_ports(ports, tls != NULL ? 2 : 1) != 0) {
            fprintf(stderr, "no free loopback port: %s\n", strerror(errno));
            break;
        }
        s->port = ports[0];
        s->tls_port = ports[1];
        if (start_once(s, path, tls) == 0) {
            return 0;
        }
        proc_terminate(s->pid, 3000);
        s->pid = -1;
    }
    server_stop(s);
    return -1;
}

int server_start(struct test_server* s) {
    return start(s, NULL);
}

int server_start_tls(struct test_server* s, const struct test_tls_files* tls) {
    return start(s, tls);
}

void server_stop(struct test_server* s) {
    untrack(s);
    proc_terminate(s->pid, 3000);
    s->pid = -1;
    if (s->dir[0] != '\0') {
        char path[192];
        snprintf(path, sizeof path, "%s/redis.log", s->dir);
        unlink(path);
        rmdir(s->dir);
        s->dir[0] = '\0';
    }
}

void server_pause(struct test_server* s) {
    if (s->pid > 0) {
        kill(s->pid, SIGSTOP);
    }
}

void server_resume(struct test_server* s) {
    if (s->pid > 0) {
        kill(s->pid, SIGCONT);
    }
}
