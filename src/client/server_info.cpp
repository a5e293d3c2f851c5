// Reading INFO text; see server_info.hpp. Pure: no state, no I/O, nothing
// read outside the given bytes.
#include "edgelock/detail/server_info.hpp"

namespace edgelock {
namespace detail {

namespace {

// A decimal number of 1..20 digits that fits 64 bits, nothing else.
bool parse_decimal(str_view s, std::uint64_t& out) {
    if (s.empty()) {
        return false;
    }
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (v > (UINT64_MAX - digit) / 10) {
            return false;
        }
        v = v * 10 + digit;
    }
    out = v;
    return true;
}

// One field into `info`, when it is one we read. INFO names them with '_'
// (maxmemory_policy), CONFIG and HELLO with '-' or alone ("version").
void read_value(str_view name, str_view value, server_info& info) {
    if (name == "role") {
        if (value == "master") {
            info.role = server_role::master;
        } else if (value == "slave" || value == "replica") {
            info.role = server_role::replica;
        } else {
            info.role = server_role::unknown;
        }
    } else if (name == "master_host") {
        info.master_host = value;
    } else if (name == "master_port") {
        info.master_port = value;
    } else if (name == "maxmemory") {
        std::uint64_t v = 0;
        info.has_maxmemory = parse_decimal(value, v);
        info.maxmemory = info.has_maxmemory ? v : 0;
    } else if (name == "maxmemory_policy" || name == "maxmemory-policy") {
        info.maxmemory_policy = value;
    } else if (name == "redis_version") {
        info.redis_version = value;
    } else if (name == "version" || name == "valkey_version") {
        info.version = value;  // HELLO's; INFO's valkey_version
    } else if (name == "server_name" || name == "server") {
        info.server = value;  // INFO's; HELLO's
    }
}

bool is_valkey(const server_info& info) {
    return info.server == "valkey";
}

// What the fields say together, once all are read: the server's own version
// and name where only redis_version said them (Redis's INFO), and the Redis
// version of a server that gave only its own (HELLO from Redis).
void settle(server_info& info, bool hello) {
    if (hello) {
        if (!is_valkey(info) && !info.version.empty()) {
            info.redis_version = info.version;
        }
        return;
    }
    if (info.version.empty()) {
        info.version = info.redis_version;
    }
    if (info.server.empty() && !info.redis_version.empty()) {
        info.server = "redis";
    }
}

// One "name:value" line of INFO text into `info`.
void read_field(str_view line, server_info& info) {
    std::size_t colon = 0;
    while (colon < line.size && line[colon] != ':') {
        ++colon;
    }
    if (colon == line.size) {
        return;  // a section header, or not a field
    }
    read_value(str_view(line.data, colon), str_view(line.data + colon + 1, line.size - colon - 1),
               info);
}

// The name/value pairs of a map, or of an array of even length, each a
// string; anything else (an error, a nested value) is skipped.
server_info read_pairs(const resp_node* nodes, std::size_t count, bool hello) {
    server_info info;
    if (nodes == nullptr || count == 0) {
        return info;
    }
    const std::size_t top = skip_attributes(nodes, count, 0);
    if (top >= count ||
        (nodes[top].type != resp_type::map && nodes[top].type != resp_type::array)) {
        return info;
    }
    const std::size_t end = nodes[top].end < count ? nodes[top].end : count;
    std::size_t i = top + 1;
    while (i < end) {
        const std::size_t name = i;
        const std::size_t value = nodes[name].end;
        if (value >= end) {
            break;
        }
        i = nodes[value].end;
        if (!nodes[name].has_text() || !nodes[value].has_text() || nodes[name].is_error() ||
            nodes[value].is_error()) {
            continue;
        }
        const str_view n = nodes[name].text;
        // HELLO names the version "version" and says nothing of memory;
        // CONFIG has no "role", "server" or "version".
        const bool about_server = n == "role" || n == "version" || n == "server";
        if (hello ? about_server : !about_server) {
            read_value(n, nodes[value].text, info);
        }
    }
    if (hello) {
        settle(info, true);
    }
    return info;
}

// redis_version's major number; 0 when it is missing or not a version.
std::uint64_t major_version(const server_info& info) {
    const str_view v = info.redis_version;
    std::size_t dot = 0;
    while (dot < v.size && v[dot] != '.') {
        ++dot;
    }
    std::uint64_t major = 0;
    return dot < v.size && parse_decimal(str_view(v.data, dot), major) ? major : 0;
}

}  // namespace

server_info parse_server_info(str_view text) noexcept {
    server_info info;
    std::size_t start = 0;
    for (std::size_t i = 0; i < text.size; ++i) {
        if (text[i] != '\n') {
            continue;
        }
        std::size_t end = i;
        if (end > start && text[end - 1] == '\r') {
            --end;
        }
        if (end > start && text[start] != '#') {
            read_field(str_view(text.data + start, end - start), info);
        }
        start = i + 1;
    }
    settle(info, false);
    return info;
}

bool server_may_evict(const server_info& info) noexcept {
    if (!info.has_maxmemory || info.maxmemory == 0) {
        return false;
    }
    return starts_with(info.maxmemory_policy, "allkeys-") ||
           starts_with(info.maxmemory_policy, "volatile-");
}

bool server_takes_set_nx_get(const server_info& info) noexcept {
    return is_valkey(info) || major_version(info) >= 7;
}

bool server_tracks_keys(const server_info& info) noexcept {
    return is_valkey(info) || major_version(info) >= 6;
}

server_info parse_hello_reply(const resp_node* nodes, std::size_t count) noexcept {
    return read_pairs(nodes, count, true);
}

server_info parse_config_reply(const resp_node* nodes, std::size_t count) noexcept {
    return read_pairs(nodes, count, false);
}

str_view server_info_text(const resp_node* nodes, std::size_t count) noexcept {
    if (nodes == nullptr || count == 0) {
        return str_view();
    }
    const std::size_t i = skip_attributes(nodes, count, 0);
    if (i >= count) {
        return str_view();
    }
    const resp_node& top = nodes[i];
    if (top.type != resp_type::bulk_string && top.type != resp_type::verbatim_string) {
        return str_view();
    }
    return top.text;
}

}  // namespace detail
}  // namespace edgelock
