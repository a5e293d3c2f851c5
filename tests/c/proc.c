/* Time and child processes for the C API's tests (proc.h). */
#define _POSIX_C_SOURCE 200809L

#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* --- time ---------------------------------------------------------------- */

uint64_t test_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void test_sleep_ms(uint32_t ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000u);
    ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* --- processes ----------------------------------------------------------- */

int find_in_path(const char* name, char* buf, size_t size) {
    const char* path = getenv("PATH");
    if (path == NULL) {
        path = "/usr/bin:/bin";
    }
    while (*path != '\0') {
        const char* end = strchr(path, ':');
        const size_t len = end != NULL ? (size_t)(end - path) : strlen(path);
        const int n = snprintf(buf, size, "%.*s/%s", (int)len, len == 0 ? "." : path, name);
        if (n > 0 && (size_t)n < size && access(buf, X_OK) == 0) {
            return 0;
        }
        path += len;
        if (*path == ':') {
            ++path;
        }
    }
    return -1;
}

/* fork() for a child that dies with this process (Linux), so a test killed
 * by its timeout leaves no server running. */
static pid_t fork_dying_with_parent(void) {
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
        if (getppid() != parent) {
            _exit(127); /* the parent died before the request took hold */
        }
    }
    return pid;
}

pid_t proc_spawn(const char* path, const char* const* argv, const char* log_path) {
    const pid_t pid = fork_dying_with_parent();
    if (pid != 0) {
        return pid;
    }
    const int fd =
        open(log_path != NULL ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2) {
            close(fd);
        }
    }
    /* execv takes char *const[]: the strings are not written to. */
    union {
        const char* const* in;
        char* const* out;
    } args;
    args.in = argv;
    execv(path, args.out);
    _exit(127);
}

/* Non-blocking: 1 once pid has exited (and is reaped). */
int proc_reaped(pid_t pid, int* status) {
    int st = 0;
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
        if (status != NULL) {
            *status = st;
        }
        return 1;
    }
    return 0;
}

/* SIGTERM (after SIGCONT: a stopped process cannot act on it), SIGKILL after
 * grace_ms; reaped either way. */
void proc_terminate(pid_t pid, uint32_t grace_ms) {
    if (pid <= 0) {
        return;
    }
    kill(pid, SIGCONT);
    kill(pid, SIGTERM);
    const uint64_t deadline = test_now_ms() + grace_ms;
    while (test_now_ms() < deadline) {
        if (proc_reaped(pid, NULL)) {
            return;
        }
        test_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

int run_program(const char* const* argv, const char* log_path, uint32_t timeout_ms) {
    char path[512];
    if (find_in_path(argv[0], path, sizeof path) != 0) {
        return -1;
    }
    const pid_t pid = proc_spawn(path, argv, log_path);
    if (pid < 0) {
        return -1;
    }
    const uint64_t deadline = test_now_ms() + timeout_ms;
    int status = 0;
    while (!proc_reaped(pid, &status)) {
        if (test_now_ms() >= deadline) {
            proc_terminate(pid, 1000);
            return -1;
        }
        test_sleep_ms(5);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
