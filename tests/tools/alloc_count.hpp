// Counting heap allocations: a program that links tools/alloc_count.cpp has
// malloc and friends replaced with counting versions that forward to the C
// library's own (glibc exports them as __libc_*), so every allocation in the
// process is seen: the library's, the C library's on its behalf (the
// resolver, stdio) and the caller's. Counting is on only inside a window.
// Needs a dynamically linked glibc (not static builds, not sanitizers).
#pragma once

namespace edgelock_test {

// Counts the allocations made while it exists (one window at a time).
class alloc_window {
public:
    alloc_window();
    ~alloc_window();
    alloc_window(const alloc_window&) = delete;
    alloc_window& operator=(const alloc_window&) = delete;
    // Allocations so far in this window.
    unsigned long count() const;
};

}  // namespace edgelock_test
