// A redis-cluster:// node's routing: seeds, the slot map's question and
// reply, MOVED and ASK (detail/cluster_router.hpp).
#include "edgelock/detail/cluster_router.hpp"

#include "client_internal.hpp"
#include "edgelock/key_slot.hpp"
#include "edgelock/resp_encoder.hpp"
#include "node_url_internal.hpp"

namespace edgelock {
namespace detail {

namespace {

// The header of an array reply: its element count and where the first
// element starts; false when it is not one.
bool array_header(const char* data, std::size_t size, std::size_t& count, std::size_t& first) {
    if (size < 4 || data[0] != '*') {
        return false;
    }
    count = 0;
    std::size_t i = 1;
    for (; i < size && data[i] >= '0' && data[i] <= '9' && count < 100000; ++i) {
        count = count * 10 + static_cast<std::size_t>(data[i] - '0');
    }
    if (i == 1 || i + 1 >= size || data[i] != '\r' || data[i + 1] != '\n') {
        return false;
    }
    first = i + 2;
    return true;
}

}  // namespace

std::size_t cluster_router::write_map_request(char* buf, std::size_t capacity,
                                              instant now) noexcept {
    const str_view ask[] = {"CLUSTER", "SLOTS"};
    if (capacity < resp_command_size(ask, 2)) {
        return 0;
    }
    map_due_ = false;
    map_out_ = true;
    map_after_ = now + map_interval;
    return resp_encode_command(buf, capacity, ask, 2).size;
}

void cluster_router::connection_lost(bool own, std::uint8_t seeds) noexcept {
    if (own && seeds > 0) {
        seed_ = static_cast<std::uint8_t>((seed_ + 1) % seeds);
    }
    map_due_ = true;
}

// [[first, last, [host, port, ...], [replica...]...], ...]: read where it
// lies, one range at a time, nothing of it kept.
void cluster_router::on_map(const char* data, std::size_t size, resp_node* nodes,
                            std::size_t capacity, range_fn fn, void* ctx) noexcept {
    map_out_ = false;
    std::size_t ranges = 0;
    std::size_t pos = 0;
    if (!array_header(data, size, ranges, pos)) {
        return;  // an error (a server not in cluster mode): MOVED will tell
    }
    for (std::size_t k = 0; k < ranges && pos < size; ++k) {
        const resp_result r =
            resp_decode_whole(data + pos, size - pos, nodes, capacity, reply_limits());
        if (r.status != resp_status::complete) {
            return;  // a range with more replicas than nodes to read it: MOVED will tell
        }
        pos += r.size;
        const resp_node* n = nodes;
        const bool shaped = r.nodes >= 6 && n[0].type == resp_type::array && n[0].count >= 3 &&
                            n[1].type == resp_type::integer && n[2].type == resp_type::integer &&
                            n[3].type == resp_type::array && n[3].count >= 2 && n[4].has_text() &&
                            n[5].type == resp_type::integer && n[5].integer > 0 &&
                            n[5].integer <= 65535;
        if (!shaped) {
            continue;
        }
        slot_range range;
        range.first = n[1].integer;
        range.last = n[2].integer;
        range.host = n[4].text == str_view("?") ? str_view() : n[4].text;
        range.port = static_cast<std::uint16_t>(n[5].integer);
        fn(ctx, range);
    }
}

bool cluster_router::parse_redirect(str_view text, redirect& out) noexcept {
    const bool ask = starts_with(text, "ASK ");
    if (!ask && !starts_with(text, "MOVED ")) {
        return false;
    }
    const str_view rest = url_detail::sub(text, ask ? 4 : 6, text.size);
    const std::size_t space = url_detail::find(rest, ' ');
    std::uint32_t slot = 0;
    if (space == rest.size ||
        !url_detail::parse_decimal(url_detail::sub(rest, 0, space), key_slot_count - 1, slot)) {
        return false;
    }
    const str_view where = url_detail::sub(rest, space + 1, rest.size);
    std::size_t colon = where.size;
    for (std::size_t i = 0; i < where.size; ++i) {
        colon = where[i] == ':' ? i : colon;  // the last: an IPv6 address has more
    }
    std::uint32_t port = 0;
    if (colon == where.size || colon > node_url_max_host ||
        !url_detail::parse_decimal(url_detail::sub(where, colon + 1, where.size), 65535, port) ||
        port == 0) {
        return false;
    }
    out.ask = ask;
    out.slot = slot;
    out.host = url_detail::sub(where, 0, colon);
    out.port = static_cast<std::uint16_t>(port);
    return true;
}

}  // namespace detail
}  // namespace edgelock
