// The lock through the standard's vocabulary: std::unique_lock with a timeout
// around a job, as with any std::timed_mutex.
//
//   std_lock URL [KEY]
//
// It waits up to 5 s for KEY (default "std-lock-demo"); holding it, it does
// three 300 ms work slices, each after checking that the lock is still held
// (a std::unique_lock does not drive the client, so nothing renews the lock
// meanwhile: the ttl, 10 s, covers the whole job), and the guard releases it
// at the end of the scope. Run two at once to see the second one wait.
// Exit status: 0 done, 1 not acquired within 5 s, 2 lost, 64 usage.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "edgelock/client.hpp"

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::fprintf(stderr, "usage: std_lock URL [KEY]\n");
        return 64;
    }
    const edgelock::str_view urls[] = {edgelock::str_view(argv[1])};
    static edgelock::client<1> client;  // a few KB: not on the stack
    if (client.configure(urls, 1, edgelock::client_options{}) != edgelock::client_errc::ok) {
        std::fprintf(stderr, "std_lock: bad URL %s\n", argv[1]);
        return 64;
    }
    edgelock::lock_options o;
    o.ttl = edgelock::duration::seconds(10);
    edgelock::client_lock job;
    if (job.attach(client, argc == 3 ? argv[2] : "std-lock-demo", o) != edgelock::client_errc::ok) {
        std::fprintf(stderr, "std_lock: bad lock name or options\n");
        return 64;
    }

    std::unique_lock<edgelock::client_lock> guard(job, std::chrono::seconds(5));
    if (!guard.owns_lock()) {
        // The error-returning API says why: last_event() and node(0).
        const edgelock::lock_event& ev = job.last_event();
        std::fprintf(stderr, "std_lock: not acquired within 5 s: %s", edgelock::describe(ev.kind));
        if (ev.kind == edgelock::lock_event_kind::failed) {
            std::fprintf(stderr, " (%s; node: %s)", edgelock::describe(ev.reason),
                         edgelock::describe(client.node(0).error));
        }
        std::fprintf(stderr, "\n");
        return 1;
    }
    std::printf("acquired; doing the job\n");
    for (int slice = 1; slice <= 3; ++slice) {
        if (!job.held()) {
            std::fprintf(stderr, "std_lock: lost before slice %d; stopping\n", slice);
            return 2;  // the guard's unlock finds nothing to release
        }
        std::printf("  work slice %d\n", slice);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    std::printf("done; the guard releases the lock\n");
    return 0;
}
