// The prefixes a connection has the server track in broadcasting mode
// (CLIENT TRACKING ON BCAST NOLOOP PREFIX p; see src/client/notify.cpp), one
// per waiting lock's name: its renewal mark. Kept as a 64-bit hash of each:
// the locks may go, while the server keeps a prefix until tracking is
// switched off or the connection closes.
//
// A prefix is told when it, or a prefix of it, was accepted; one asked for
// and not yet answered counts as told (the request that needs it goes behind
// the CLIENT TRACKING). A refusal (an ACL, or a prefix the server finds
// overlapping one it holds, such as a longer one registered first) leaves
// that lock to poll on this connection. Room for
// EDGELOCK_CLIENT_TRACKED_NAMES prefixes: a lock past them polls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/client_config.hpp"
#include "edgelock/str_view.hpp"

namespace edgelock {
namespace detail {

class tracked_names {
public:
    enum class standing : std::uint8_t { none, asked, told, refused };

    standing of(str_view prefix) const noexcept {
        std::uint64_t h = hash_seed;
        for (std::size_t i = 0; i < prefix.size; ++i) {
            h = next(h, static_cast<unsigned char>(prefix.data[i]));
            for (std::size_t e = 0; e < count_; ++e) {
                const entry& x = entries_[e];
                if (x.hash != h || x.size != i + 1) {
                    continue;
                }
                if (x.state == standing::told || i + 1 == prefix.size) {
                    return x.state;  // a shorter one told covers it
                }
            }
        }
        return standing::none;
    }
    // Asks for `prefix`: the tag its CLIENT TRACKING's answer brings back to
    // answer(), or 0 when there is no room.
    std::uint32_t ask(str_view prefix) noexcept {
        if (count_ == EDGELOCK_CLIENT_TRACKED_NAMES) {
            return 0;
        }
        std::uint64_t h = hash_seed;
        for (std::size_t i = 0; i < prefix.size; ++i) {
            h = next(h, static_cast<unsigned char>(prefix.data[i]));
        }
        entries_[count_] = entry{h, static_cast<std::uint32_t>(prefix.size), standing::asked};
        ++count_;
        return (static_cast<std::uint32_t>(generation_) << 8) | count_;
    }
    void answer(std::uint32_t tag, bool accepted) noexcept {
        const std::size_t at = tag & 0xff;
        if ((tag >> 8) != generation_ || at == 0 || at > count_) {
            return;  // asked before a clear(): that tracking is gone
        }
        entries_[at - 1].state = accepted ? standing::told : standing::refused;
    }
    // Tracking was switched off, or the connection closed.
    void clear() noexcept {
        count_ = 0;
        generation_ = static_cast<std::uint16_t>(generation_ + 1);
    }
    bool empty() const noexcept { return count_ == 0; }
    bool full() const noexcept { return count_ == EDGELOCK_CLIENT_TRACKED_NAMES; }

private:
    // FNV-1a, one byte at a time, so every prefix's hash comes on the way.
    static constexpr std::uint64_t hash_seed = 14695981039346656037ULL;
    static std::uint64_t next(std::uint64_t h, unsigned char byte) noexcept {
        return (h ^ byte) * 1099511628211ULL;
    }
    struct entry {
        std::uint64_t hash;
        std::uint32_t size;
        standing state;
    };
    entry entries_[EDGELOCK_CLIENT_TRACKED_NAMES] = {};
    std::uint8_t count_ = 0;
    std::uint16_t generation_ = 0;
};

}  // namespace detail
}  // namespace edgelock
