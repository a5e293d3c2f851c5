// The agent's messages: a ring of whole lines between the poll loop and a
// writer thread. The loop only formats and copies under a mutex held for that
// copy; every write() to stderr, which may block for as long as its reader
// pleases, happens on the writer thread with the mutex released.
#include "messages.hpp"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "edgelock/port.hpp"

namespace edgelock_cli {

using namespace edgelock;

namespace {

// One write() of at most PIPE_BUF bytes to a pipe is atomic: the agent's
// lines never interleave with the job's output mid-line.
#ifdef PIPE_BUF
constexpr std::size_t batch_max = PIPE_BUF;
#else
constexpr std::size_t batch_max = _POSIX_PIPE_BUF;  // the least any system gives
#endif
// Longer messages are cut: a server's error text can be long, and a line
// must fit one atomic write.
constexpr std::size_t line_max = batch_max < 1024 ? batch_max : 1024;
// About 450 renewal lines at -v: over an hour of them at the default pace,
// a couple of minutes at a fast one. A reader stuck for longer loses lines,
// counted, rather than the agent its lock. Small enough to be static.
constexpr std::size_t ring_size = 16384;
static_assert(line_max <= ring_size, "a line must fit in the ring");
// How long the exit waits for a reader to take what is queued: a live reader
// (a terminal, journald) takes a full ring in a few milliseconds; one that
// has not in half a second is stuck, and whoever waits for the exit status
// (a shell, a service manager, the next job of a timer) should not wait on it.
constexpr duration exit_wait = duration::millis(500);

// The writer needs a few kilobytes; the default stack (often 8 MB) would be
// committed memory on a gateway that does not overcommit.
constexpr std::size_t writer_stack = 64 * 1024;

const char prefix[] = "edgelock: ";
constexpr std::size_t prefix_size = sizeof prefix - 1;
static_assert(prefix_size + 4 < line_max, "room for a message");

// Set by start_messages() before any other thread exists; read by the main
// thread only.
int verbosity = 1;
bool threaded = false;

// The ring and what goes with it, guarded by ring_lock.
pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t ring_queued = PTHREAD_COND_INITIALIZER;  // the writer waits on it
char ring[ring_size];
std::size_t ring_head = 0;  // the oldest byte
std::size_t ring_used = 0;  // whole lines only
unsigned long dropped = 0;  // lines that did not fit, not yet said
bool writing = false;       // the writer holds lines taken out of the ring

// Copies n bytes in after the last line; false when they do not fit.
bool put(const char* s, std::size_t n) {
    if (n > ring_size - ring_used) {
        return false;
    }
    const std::size_t tail = (ring_head + ring_used) % ring_size;
    const std::size_t first = n < ring_size - tail ? n : ring_size - tail;
    std::memcpy(ring + tail, s, first);
    std::memcpy(ring, s + first, n - first);
    ring_used += n;
    return true;
}

// The note for `count` dropped lines, into out; its length (0 if it does not fit).
std::size_t format_note(char* out, std::size_t size, unsigned long count) {
    const int n = std::snprintf(out, size, "%s%lu message%s dropped: stderr was not taking them\n",
                                prefix, count, count == 1 ? "" : "s");
    return n > 0 && static_cast<std::size_t>(n) < size ? static_cast<std::size_t>(n) : 0;
}

// The count of dropped lines goes in before anything queued after them:
// false (and nothing queued) when it does not fit either.
bool put_note() {
    if (dropped == 0) {
        return true;
    }
    char note[96];
    const std::size_t n = format_note(note, sizeof note, dropped);
    if (n == 0 || !put(note, n)) {
        return false;
    }
    dropped = 0;
    return true;
}

// What to write next, into out (batch_max bytes): the oldest whole lines;
// or, once they are all out, the count of the lines dropped since. Its
// length; 0 when there is nothing to write.
std::size_t take(char* out) {
    if (ring_used == 0) {
        const std::size_t n = dropped == 0 ? 0 : format_note(out, batch_max, dropped);
        dropped = n == 0 ? dropped : 0;
        return n;
    }
    std::size_t n = ring_used < batch_max ? ring_used : batch_max;
    const std::size_t first = n < ring_size - ring_head ? n : ring_size - ring_head;
    std::memcpy(out, ring + ring_head, first);
    std::memcpy(out + first, ring, n - first);
    while (out[n - 1] != '\n') {
        --n;  // a line is at most line_max <= batch_max: some line ends in here
    }
    ring_head = (ring_head + n) % ring_size;
    ring_used -= n;
    return n;
}

// Writes out all n bytes, unless stderr fails. `wait_ms` bounds the wait for
// a stderr another process made non-blocking (-1: as long as it takes).
// Whatever cannot be written is lost: there is nowhere else to say it.
void write_out(const char* p, std::size_t n, int wait_ms) {
    while (n > 0) {
        const ssize_t w = ::write(STDERR_FILENO, p, n);
        if (w > 0) {
            p += w;
            n -= static_cast<std::size_t>(w);
            continue;
        }
        if (w < 0 && errno == EINTR) {
            continue;
        }
        pollfd pf{STDERR_FILENO, POLLOUT, 0};
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && ::poll(&pf, 1, wait_ms) > 0) {
            continue;
        }
        return;  // EPIPE, EBADF, EIO, ENOSPC, ...
    }
}

void* writer(void*) {
    char batch[batch_max];
    pthread_mutex_lock(&ring_lock);
    for (;;) {
        const std::size_t n = take(batch);
        if (n == 0) {
            writing = false;
            pthread_cond_wait(&ring_queued, &ring_lock);
            continue;
        }
        writing = true;
        pthread_mutex_unlock(&ring_lock);
        write_out(batch, n, -1);
        pthread_mutex_lock(&ring_lock);
    }
    return nullptr;
}

int ms_until(instant end) {
    const std::uint64_t ms = (end - port::now()).ms();
    return ms > 1000 ? 1000 : static_cast<int>(ms);
}

// Without the writer thread (it could not be started): the loop itself
// writes what stderr takes at once, until `end`. poll() says whether a
// write would block now; the lines it would block on stay in the ring, and
// those that do not fit are counted, as with the thread. A job that fills
// the pipe between the poll() and the write() can still block that one
// write: only in this fallback, and only for that window.
void write_ready(instant end) {
    char batch[batch_max];
    for (;;) {
        pollfd pf{STDERR_FILENO, POLLOUT, 0};
        const int ready = ::poll(&pf, 1, ms_until(end));
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready == 0) {
            return;  // it would block: maybe later
        }
        // Ready, or an error the write will report: either way it does not block.
        pthread_mutex_lock(&ring_lock);
        const std::size_t n = take(batch);
        pthread_mutex_unlock(&ring_lock);
        if (n == 0) {
            return;
        }
        write_out(batch, n, 0);
    }
}

}  // namespace

void start_messages(int v) {
    verbosity = v;
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);  // it ends with the process
    (void)pthread_attr_setstacksize(&attr, writer_stack);  // refused below the minimum: the default
    pthread_t t;
    threaded = pthread_create(&t, &attr, writer, nullptr) == 0;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void say(int level, const char* fmt, ...) {
    if (verbosity < level) {
        return;
    }
    char line[line_max];
    std::memcpy(line, prefix, prefix_size);
    const std::size_t room = line_max - prefix_size;  // the text, and its '\0' or the '\n'
    va_list ap;
    va_start(ap, fmt);
    const int n = std::vsnprintf(line + prefix_size, room, fmt, ap);
    va_end(ap);
    std::size_t size = prefix_size;
    if (n > 0 && static_cast<std::size_t>(n) < room) {
        size += static_cast<std::size_t>(n);
    } else if (n > 0) {
        size = line_max - 1;
        std::memcpy(line + size - 3, "...", 3);  // cut: say so
    }
    line[size++] = '\n';

    pthread_mutex_lock(&ring_lock);
    if (!put_note() || !put(line, size)) {
        ++dropped;
    }
    pthread_mutex_unlock(&ring_lock);
    if (threaded) {
        pthread_cond_signal(&ring_queued);
    } else {
        write_ready(port::now());
    }
}

void finish_messages() {
    const instant end = port::now() + exit_wait;
    for (;;) {
        if (!threaded) {
            write_ready(end);
        }
        pthread_mutex_lock(&ring_lock);
        const bool idle = ring_used == 0 && dropped == 0 && !writing;
        pthread_mutex_unlock(&ring_lock);
        if (idle || port::now() >= end) {
            return;
        }
        // Exit only: a poll of a few milliseconds is simpler than a timed wait
        // on a condition variable, whose default clock is the wall clock.
        timespec pause{0, 5 * 1000 * 1000};
        ::nanosleep(&pause, nullptr);
    }
}

}  // namespace edgelock_cli
