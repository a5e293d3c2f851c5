/* Time and child processes for the C API's tests: their own bounds, and the
 * programs they start (redis-server, openssl), which die with the test. */
#ifndef EDGELOCK_C_TEST_PROC_H
#define EDGELOCK_C_TEST_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Monotonic milliseconds, for the tests' own bounds. */
uint64_t test_now_ms(void);
void test_sleep_ms(uint32_t ms);

/* A program's full path from PATH into buf; 0 when found, -1 otherwise. */
int find_in_path(const char* name, char* buf, size_t size);
/* Runs argv (argv[0] looked up in PATH) with stdout and stderr to log_path
 * (NULL: /dev/null), waits at most timeout_ms; its exit status, or -1. */
int run_program(const char* const* argv, const char* log_path, uint32_t timeout_ms);

/* Starts path with argv, stdout and stderr to log_path (NULL: /dev/null), in
 * a child that dies with this process; its pid, or -1. */
pid_t proc_spawn(const char* path, const char* const* argv, const char* log_path);
/* Non-blocking: 1 once pid has exited (reaped, its status in *status when not NULL). */
int proc_reaped(pid_t pid, int* status);
/* SIGTERM (after SIGCONT), SIGKILL after grace_ms; reaped either way. */
void proc_terminate(pid_t pid, uint32_t grace_ms);

#endif /* EDGELOCK_C_TEST_PROC_H */
