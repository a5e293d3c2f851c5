// Reading the replies of the lock scripts. Everything from the wire is
// untrusted: indexes are checked against count before each use.
#include "lock_wire.hpp"

namespace edgelock {
namespace detail {

namespace {

// Index of the value at i (past any attributes), or count when there is none.
std::size_t value_at(const resp_node* nodes, std::size_t count, std::size_t i) noexcept {
    if (i >= count) {
        return count;
    }
    return skip_attributes(nodes, count, i);
}

}  // namespace

lock_reply read_lock_reply(const resp_node* nodes, std::size_t count) noexcept {
    lock_reply out;
    if (nodes == nullptr || count == 0) {
        return out;
    }
    const std::size_t i = value_at(nodes, count, 0);
    if (i >= count) {
        return out;
    }
    const resp_node& top = nodes[i];
    if (top.is_error()) {
        out.shape = starts_with(top.text, "NOSCRIPT")           ? reply_shape::noscript
                    : starts_with(top.text, "TRYAGAIN")         ? reply_shape::tryagain
                    : starts_with(top.text, "WRONGTYPE")        ? reply_shape::wrongtype
                    : starts_with(top.text, "ERR syntax error") ? reply_shape::syntax
                                                                : reply_shape::error;
        return out;
    }
    if (top.type == resp_type::null) {
        out.shape = reply_shape::nil;
        return out;
    }
    if (top.type == resp_type::simple_string) {
        out.shape = reply_shape::status;
        out.text = top.text;
        return out;
    }
    if (top.type == resp_type::bulk_string || top.type == resp_type::verbatim_string) {
        out.shape = reply_shape::text;
        out.text = top.text;
        return out;
    }
    if (top.type == resp_type::integer) {
        out.shape = reply_shape::integer;
        out.first = top.integer;
        return out;
    }
    if (top.type != resp_type::array || (top.count != 2 && top.count != 3)) {
        return out;
    }
    const std::size_t a = value_at(nodes, count, i + 1);
    if (a >= count || nodes[a].type != resp_type::integer) {
        return out;
    }
    const std::size_t b = value_at(nodes, count, nodes[a].end > a ? nodes[a].end : a + 1);
    if (b >= count || nodes[b].type != resp_type::integer) {
        return out;
    }
    if (top.count == 3) {
        const std::size_t c = value_at(nodes, count, nodes[b].end > b ? nodes[b].end : b + 1);
        if (c >= count || nodes[c].type != resp_type::integer) {
            return out;
        }
        out.third = nodes[c].integer;
        out.three = true;
    }
    out.shape = reply_shape::pair;
    out.first = nodes[a].integer;
    out.second = nodes[b].integer;
    return out;
}

}  // namespace detail
}  // namespace edgelock
