// A redis-sentinel:// node's watch: a connection to one sentinel, subscribed
// to +switch-master, so that a failover is followed the moment the sentinels
// announce it (src/client/sentinel_watch.cpp). It goes through the client's
// transport, so sentinels that speak TLS (rediss-sentinel://) are watched
// over TLS. Its owner drives it with service() on every pass and on_ready()
// when its fd is ready, and reads what happened from the watch_event bits
// they return. Tested alone in tests/unit/test_sentinel_resolver.cpp and test_sentinel_watch.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/detail/host_lookup.hpp"
#include "edgelock/detail/peer.hpp"
#include "edgelock/detail/stream.hpp"
#include "edgelock/detail/timer_table.hpp"
#include "edgelock/node_url.hpp"
#include "edgelock/port.hpp"
#include "edgelock/resp.hpp"
#include "edgelock/time.hpp"
#include "edgelock/token.hpp"
#include "edgelock/transport.hpp"

namespace edgelock {

struct client_options;

namespace detail {

enum class watch_phase : std::uint8_t {
    off,         // not wanted, or not begun
    resolving,   // the sentinel's host name is being looked up
    connecting,  // the socket (or its TLS handshake) is under way
    listening,   // SUBSCRIBE sent (or being sent), then confirmed
    backoff,     // failed: again once its timer ends, with the next sentinel
};

constexpr std::uint8_t watch_none = 0;
constexpr std::uint8_t watch_switched =
    1;  // +switch-master for this node's master: announced() is where
constexpr std::uint8_t watch_missed =
    2;  // a message could not be read: a switch may have been missed

// What the watch needs of its client for one call.
struct watch_link {
    transport* via = nullptr;
    const client_options* options = nullptr;
    const node_address* address = nullptr;  // the node's: sentinels, master name, TLS
    std::uint8_t front = 0;                 // the sentinel that answered last
    duration lookup_max_age;
    random_source* random = nullptr;
    resp_node* nodes = nullptr;
    std::size_t node_capacity = 0;
};

// A watch that hears nothing from its sentinel for this long PINGs it (in
// subscribed mode Redis answers ["pong", ""]); one whose SUBSCRIBE or PING
// is not answered within sentinel_timeout moves to the next sentinel. A
// sentinel that takes the connection and says nothing keeps a switch from
// being heard for at most sentinel_timeout after the SUBSCRIBE, one that
// falls silent later for at most watch_silence + sentinel_timeout.
constexpr duration watch_silence = duration::seconds(1);

class sentinel_watch {
public:
    sentinel_watch() noexcept = default;
    sentinel_watch(const sentinel_watch&) = delete;
    sentinel_watch& operator=(const sentinel_watch&) = delete;

    watch_phase phase() const noexcept { return phase_; }
    // The fd to wait on: the lookup's while resolving, else the socket's.
    int fd() const noexcept;
    std::uint8_t wants(const transport& t) const noexcept;
    instant next_deadline(bool wanted, instant now) const noexcept;
    // The master the latest +switch-master named.
    const peer& announced() const noexcept { return announced_; }

    std::uint8_t service(bool wanted, const watch_link& link, instant now) noexcept;
    std::uint8_t on_ready(std::uint8_t events, const watch_link& link, instant now) noexcept;
    // Not wanted any more (the client is disconnected): closed, off.
    void shut(transport& t) noexcept;
    // The client is configured anew: a lookup of an old host is not waited for.
    void forget() noexcept { lookup_.abandon(); }

    // The read loop's handler (stream_read.hpp).
    void on_message(const stream_message& m) noexcept;
    std::size_t oversize(const char*, std::size_t) noexcept { return 0; }
    void skipped() noexcept {}

private:
    // resolving, connecting: the deadline; listening: the confirmation's or
    // the PING's deadline, or when silence calls for a PING; backoff: its end.
    enum class timer : std::uint8_t { due };

    bool sentinel(const watch_link& link, str_view& host, std::uint16_t& port) const noexcept;
    std::uint8_t connect(const watch_link& link, instant now) noexcept;
    std::uint8_t dial(const watch_link& link, instant now) noexcept;
    std::uint8_t opened(port::net_result r, const watch_link& link, instant now) noexcept;
    std::uint8_t send_setup(const watch_link& link, instant now) noexcept;
    std::uint8_t read(const watch_link& link, instant now) noexcept;
    // The listening deadline passed: a PING, or the next sentinel.
    std::uint8_t silent(const watch_link& link, instant now) noexcept;
    std::uint8_t close(const watch_link& link, instant now) noexcept;

    // One message at a time: +switch-master with the longest names.
    buffered_stream<2 * node_url_max_host + node_url_max_master_name + 64> io_;
    timer_table<timer, 1> timers_;
    host_lookup lookup_;  // of the sentinel's host
    peer announced_;
    str_view named_;  // the sentinel's host as the URL names it
    watch_phase phase_ = watch_phase::off;
    std::uint8_t tried_ = 0;     // sentinels after the front one
    std::uint8_t failures_ = 0;  // consecutive, for the backoff
    std::uint16_t sent_ = 0;     // bytes of the set-up sent
    std::uint16_t setup_size_ = 0;
    // Set by on_message() during a read.
    std::uint8_t events_ = watch_none;
    bool refused_ = false;
    bool heard_ = false;      // a message came
    bool confirmed_ = false;  // SUBSCRIBE was confirmed
    bool pinged_ = false;     // a PING waits for its answer
    const watch_link* link_ = nullptr;
};

}  // namespace detail
}  // namespace edgelock
