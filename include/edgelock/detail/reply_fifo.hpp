// The requests in flight on one connection, oldest first: a fixed-capacity
// ring whose replies come back in the order the requests went out.
//
//   reply_fifo<in_flight, 64> fifo;
//   if (!fifo.push(p)) { /* full: wait for a reply */ }
//   in_flight oldest = fifo.front(); fifo.pop();   // when its reply arrives
//   for (std::size_t i = 0; i < fifo.size(); ++i) { fifo[i] ... }  // oldest first
//
// No heap; pop() and front() on an empty ring are the caller's bug, checked
// by the callers (a reply nobody asked for fails the connection first).
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgelock {
namespace detail {

template <class T, std::size_t N>
class reply_fifo {
    static_assert(N > 0 && N <= 0xffff, "reply_fifo: 1 to 65535 entries");

public:
    static constexpr std::size_t capacity = N;

    std::size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }
    bool full() const noexcept { return count_ == N; }

    // False, changing nothing, when full.
    bool push(const T& item) noexcept {
        if (full()) {
            return false;
        }
        items_[(head_ + count_) % N] = item;
        ++count_;
        return true;
    }

    T& front() noexcept { return items_[head_]; }
    void pop() noexcept {
        if (count_ > 0) {
            head_ = static_cast<std::uint16_t>((head_ + 1) % N);
            --count_;
        }
    }

    // The i-th oldest, i < size().
    T& operator[](std::size_t i) noexcept { return items_[(head_ + i) % N]; }
    const T& operator[](std::size_t i) const noexcept { return items_[(head_ + i) % N]; }

    void clear() noexcept {
        head_ = 0;
        count_ = 0;
    }

private:
    T items_[N] = {};
    std::uint16_t head_ = 0;
    std::uint16_t count_ = 0;
};

}  // namespace detail
}  // namespace edgelock
