// The Redis keys of a lock, for tests that look into Redis: taken from the
// library (edgelock::lock_key), never rebuilt by hand.
//
//   REQUIRE(admin.command({"DEL", key_of("jobs")}).integer == 1);
//   admin.command({"SET", fence_key_of("jobs"), "3"});
#pragma once

#include <stdexcept>
#include <string>

#include "edgelock/lock.hpp"

namespace edgelock_test {

inline std::string key_of(const std::string& name,
                          edgelock::lock_key_kind kind = edgelock::lock_key_kind::lock) {
    char out[edgelock::lock_key_capacity];
    const std::size_t n =
        edgelock::lock_key(edgelock::str_view(name.data(), name.size()), kind, out, sizeof out);
    if (n == 0) {
        throw std::invalid_argument("no lock key for the name '" + name + "'");
    }
    return std::string(out, n);
}

// The key of the lock's fencing counter.
inline std::string fence_key_of(const std::string& name) {
    return key_of(name, edgelock::lock_key_kind::fence_counter);
}

}  // namespace edgelock_test
