// Encoding the lock machine's requests: script calls and the SET acquire, with
// their keys.
#include "edgelock/lock.hpp"
#include "lock_wire.hpp"

namespace edgelock {
namespace detail {

namespace {

void append(char* out, std::size_t& n, str_view bytes) noexcept {
    for (std::size_t i = 0; i < bytes.size; ++i) {
        out[n++] = bytes.data[i];
    }
}

}  // namespace

bool has_hash_tag(str_view key) noexcept {
    std::size_t open = 0;
    while (open < key.size && key.data[open] != '{') {
        ++open;
    }
    std::size_t close = open + 1;
    while (close < key.size && key.data[close] != '}') {
        ++close;
    }
    return close < key.size && close > open + 1;
}

bool counter_shares_slot(str_view name) noexcept {
    if (has_hash_tag(name)) {
        return true;
    }
    for (std::size_t i = 0; i < name.size; ++i) {
        if (name.data[i] == '}') {
            return false;
        }
    }
    return true;
}

std::size_t make_lock_key(char* out, str_view name, bool fence_counter) noexcept {
    std::size_t n = 0;
    if (!fence_counter) {
        append(out, n, name);
        return n;
    }
    // The counter hashes like the name: the name's own tag when it has one,
    // else the whole name as the tag (it holds no '}': counter_shares_slot).
    const bool tagged = has_hash_tag(name);
    if (!tagged) {
        out[n++] = '{';
    }
    append(out, n, name);
    if (!tagged) {
        out[n++] = '}';
    }
    append(out, n, str_view(":fence"));
    return n;
}

resp_encoded encode_set_acquire(str_view key, str_view token, str_view ttl, char* out,
                                std::size_t capacity) noexcept {
    const str_view argv[] = {"SET", key, token, "NX", "PX", ttl, "GET"};
    return resp_encode_command(out, capacity, argv, sizeof argv / sizeof argv[0]);
}

resp_encoded encode_script_call(const lock_script& script, bool eval, const str_view* keys,
                                std::size_t key_count, const str_view* args, std::size_t arg_count,
                                char* out, std::size_t capacity) noexcept {
    // Three keys and four arguments at most; the fixed array keeps it on the stack.
    constexpr std::size_t max_argv = 3 + 3 + 4;
    resp_encoded bad;
    bad.error = resp_encode_errc::too_large;
    if (key_count > 3 || arg_count > 4) {
        return bad;
    }
    const decimal_arg numkeys(static_cast<std::int64_t>(key_count));
    str_view argv[max_argv];
    std::size_t argc = 0;
    argv[argc++] = eval ? str_view("EVAL") : str_view("EVALSHA");
    argv[argc++] = eval ? script.text : script.sha1;
    argv[argc++] = numkeys.view();
    for (std::size_t i = 0; i < key_count; ++i) {
        argv[argc++] = keys[i];
    }
    for (std::size_t i = 0; i < arg_count; ++i) {
        argv[argc++] = args[i];
    }
    return resp_encode_command(out, capacity, argv, argc);
}

}  // namespace detail

std::size_t lock_key(str_view name, lock_key_kind kind, char* out, std::size_t capacity) noexcept {
    const bool fence = kind == lock_key_kind::fence_counter;
    if (name.size == 0 || name.data == nullptr || name.size > lock_max_name || out == nullptr ||
        (fence && !detail::counter_shares_slot(name))) {
        return 0;
    }
    if (kind == lock_key_kind::permits) {
        if (!detail::counter_shares_slot(name) || capacity < name.size + 2 + 8) {
            return 0;
        }
        return detail::make_permit_key(out, name, -1);
    }
    if (kind == lock_key_kind::renewal_mark || kind == lock_key_kind::release_mark) {
        const bool release = kind == lock_key_kind::release_mark;
        char suffixes[4];
        if (capacity < name.size + (release ? 6 : 4) || !detail::mark_suffixes(name, suffixes)) {
            return 0;
        }
        return release ? detail::make_release_mark(out, name, suffixes)
                       : detail::make_renewal_mark(out, name, suffixes);
    }
    const std::size_t size =
        name.size + (fence ? (detail::has_hash_tag(name) ? 0 : 2) + sizeof ":fence" - 1 : 0);
    if (capacity < size) {
        return 0;
    }
    return detail::make_lock_key(out, name, fence);
}

bool read_holder_record(str_view value, holder_record& out) noexcept {
    // "owner\nsince\ntext": the owner and the seconds hold no newline.
    std::size_t i = 0;
    while (i < value.size && value.data[i] != '\n') {
        ++i;
    }
    if (i == 0 || i >= value.size) {
        return false;
    }
    const str_view owner(value.data, i);
    std::uint64_t since = 0;
    std::size_t digits = 0;
    for (++i; i < value.size && value.data[i] != '\n'; ++i, ++digits) {
        const char c = value.data[i];
        if (c < '0' || c > '9' || digits == 12) {
            return false;
        }
        since = since * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (digits == 0 || i >= value.size) {
        return false;
    }
    out.owner = owner;
    out.since_s = since;
    out.text = str_view(value.data + i + 1, value.size - i - 1);
    return true;
}

}  // namespace edgelock
