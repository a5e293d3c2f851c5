// A redis-cluster:// node's routing (src/client/cluster_router.cpp): which
// seed its own connection tries, when the slot map is asked for, and what a
// map or a MOVED/ASK answer says. The client applies what it says to the
// routes of its locks and to its extra connections (cluster.cpp). Tested
// alone in tests/unit/test_cluster_router.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/resp.hpp"
#include "edgelock/str_view.hpp"
#include "edgelock/time.hpp"

namespace edgelock {
namespace detail {

// "MOVED 3999 127.0.0.1:6381" or "ASK ...". An empty host means the node
// that answered.
struct redirect {
    bool ask = false;
    std::uint32_t slot = 0;
    str_view host;
    std::uint16_t port = 0;
};

// A request is sent at most this many times in its round on a node: the
// answer to the last, if it is a MOVED or ASK again, is not followed but
// counts as that node's "no".
constexpr std::uint8_t max_redirects = 5;

// One range of a slot map: its slots and their master.
struct slot_range {
    std::int64_t first = 0;
    std::int64_t last = 0;
    str_view host;  // empty or "?": the node that answered
    std::uint16_t port = 0;
};

class cluster_router {
public:
    using range_fn = void (*)(void* ctx, const slot_range& r);

    // The map is asked at most once per this interval on a node: a server
    // whose every answer is a MOVED (to itself, naming another slot, or
    // back and forth with an ASK) would otherwise have each of them
    // followed by a CLUSTER SLOTS. A map wanted sooner is asked with the
    // first request the node's own connection sends once the interval is
    // over; meanwhile the MOVED answers move the routes they name.
    static constexpr duration map_interval = duration::seconds(1);

    // The seed the node's own connection tries now.
    std::uint8_t seed() const noexcept { return seed_; }
    // The map is to be asked at `now`: due, not out, readable, and the last
    // one asked at least map_interval ago.
    bool map_wanted(instant now) const noexcept {
        return map_due_ && !map_out_ && !map_unread_ && now.us >= map_after_.us;
    }
    bool map_out() const noexcept { return map_out_; }
    // More than one slot may have moved: ask for the map again.
    void want_map() noexcept { map_due_ = true; }
    // CLUSTER SLOTS into buf, the map then out and not asked again before
    // now + map_interval; 0 when it does not fit.
    std::size_t write_map_request(char* buf, std::size_t capacity, instant now) noexcept;
    // The map's reply did not fit the buffer: not asked again on this node
    // (MOVED answers teach the routes one slot at a time).
    void map_unreadable() noexcept { map_unread_ = true; }
    // The connection carrying the map question is gone.
    void map_lost() noexcept { map_out_ = false; }
    // A connection of the node failed: the own one tries the next of
    // `seeds`; the map is asked again (a master may be gone).
    void connection_lost(bool own, std::uint8_t seeds) noexcept;
    void reset() noexcept { *this = cluster_router{}; }

    // The CLUSTER SLOTS reply at data: each range whose master is readable
    // goes to fn, decoded with `nodes` as scratch. A reply that is not a map
    // (an error: a server not in cluster mode) gives none.
    void on_map(const char* data, std::size_t size, resp_node* nodes, std::size_t capacity,
                range_fn fn, void* ctx) noexcept;
    // A MOVED or ASK error text: false when it is not one.
    static bool parse_redirect(str_view text, redirect& out) noexcept;

private:
    instant map_after_;  // no map is asked before then
    std::uint8_t seed_ = 0;
    bool map_due_ = false;
    bool map_out_ = false;
    bool map_unread_ = false;
};

}  // namespace detail
}  // namespace edgelock
