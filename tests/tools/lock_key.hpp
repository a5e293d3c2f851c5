// The Redis keys of a lock, for tests that look into Redis: taken from the
// library (edgelock::lock_key), never rebuilt by hand.
//
//   REQUIRE(admin.command({"DEL", key_of("jobs")}).integer == 1);
//   admin.command({"SET", fence_key_of("jobs"), "3"});
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/lock_scripts.hpp"

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

// The key of permit `index` of the semaphore `name` (lock_options::permits).
inline std::string permit_key_of(const std::string& name, unsigned index) {
    char out[edgelock::lock_key_capacity];
    const std::size_t n =
        edgelock::permit_key(edgelock::str_view(name.data(), name.size()),
                             static_cast<std::uint8_t>(index < 256 ? index : 255), out, sizeof out);
    if (n == 0) {
        throw std::invalid_argument("no permit key " + std::to_string(index) + " for the name '" +
                                    name + "'");
    }
    return std::string(out, n);
}

// The key of the lock's renewal mark, which also holds its holder record.
inline std::string renewal_mark_of(const std::string& name) {
    return key_of(name, edgelock::lock_key_kind::renewal_mark);
}

// The release an edgelock holder with this token sends: compare-and-delete
// with the renewal and release marks, which is what tells waiters.
inline std::vector<std::string> marked_release(const std::string& name, const std::string& token) {
    const edgelock::str_view text = edgelock::script_release.text;
    return {"EVAL",
            std::string(text.data, text.size),
            "3",
            key_of(name),
            key_of(name, edgelock::lock_key_kind::renewal_mark),
            key_of(name, edgelock::lock_key_kind::release_mark),
            token};
}

}  // namespace edgelock_test
