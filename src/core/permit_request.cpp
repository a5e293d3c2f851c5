// A semaphore's requests (lock_options::permits; see "Semaphores" in
// lock.hpp): its acquire and release name every permit's key, up to
// lock_max_permits of them, so they are written straight into the output
// rather than gathered as arguments first; and the size of the longest,
// which configure() checks against lock_max_request.
#include "edgelock/lock.hpp"
#include "edgelock/resp_encoder.hpp"
#include "lock_wire.hpp"

namespace edgelock {
namespace detail {

namespace {

constexpr str_view permit_infix(":permit:");
constexpr str_view permits_suffix(":permits");

// Writes RESP into out while it fits, and counts every byte either way.
struct resp_writer {
    char* out;
    std::size_t capacity;
    std::size_t size = 0;

    void raw(str_view bytes) noexcept {
        for (std::size_t i = 0; i < bytes.size; ++i, ++size) {
            if (size < capacity) {
                out[size] = bytes.data[i];
            }
        }
    }
    void number(char type, std::uint64_t n) noexcept {
        char digits[24];
        digits[0] = type;
        std::size_t len = 1 + format_unsigned(digits + 1, n);
        digits[len++] = '\r';
        digits[len++] = '\n';
        raw(str_view(digits, len));
    }
    // One bulk string made of up to three parts.
    void bulk(str_view a, str_view b = str_view(), str_view c = str_view()) noexcept {
        number('$', a.size + b.size + c.size);
        raw(a);
        raw(b);
        raw(c);
        raw(str_view("\r\n"));
    }
};

// What a permit's and the hash's keys start with: `{name}` for a name
// without a hash tag, the name itself for one with.
struct key_base {
    str_view open, name, close;
    explicit key_base(str_view n) noexcept : name(n) {
        if (!has_hash_tag(n)) {
            open = str_view("{");
            close = str_view("}");
        }
    }
};

void permit_bulk(resp_writer& w, const key_base& base, std::uint8_t index) noexcept {
    char tail[permit_infix.size + 3];
    std::size_t n = 0;
    for (std::size_t i = 0; i < base.close.size; ++i) {
        tail[n++] = base.close.data[i];
    }
    for (std::size_t i = 0; i < permit_infix.size; ++i) {
        tail[n++] = permit_infix.data[i];
    }
    n += format_unsigned(tail + n, index);
    w.bulk(base.open, base.name, str_view(tail, n));
}

}  // namespace

std::size_t make_permit_key(char* out, str_view name, int index) noexcept {
    const key_base base(name);
    resp_writer w{out, lock_key_capacity};
    w.raw(base.open);
    w.raw(base.name);
    w.raw(base.close);
    if (index < 0) {
        w.raw(permits_suffix);
    } else {
        char digits[4];
        w.raw(permit_infix);
        w.raw(str_view(digits, format_unsigned(digits, static_cast<std::uint64_t>(index))));
    }
    return w.size;
}

std::size_t encode_permit_call(const permit_call& call, char* out, std::size_t capacity) noexcept {
    const key_base base(call.name);
    const lock_script& script = call.kind == permit_req::acquire ? script_permit_acquire
                                : call.kind == permit_req::renew ? script_permit_renew
                                                                 : script_permit_release;
    std::size_t keys = 2;  // renew: the permit and the hash
    std::size_t args = 2;  // every kind: the token, then the ttl or the count
    if (call.kind == permit_req::acquire) {
        keys = std::size_t{1} + call.permits + (call.fence != '-' ? 1U : 0U);
        args = call.record.empty() ? 5 : 6;
    } else if (call.kind == permit_req::release) {
        keys = std::size_t{1} + call.permits + (call.marks != nullptr ? 1U : 0U);
    }
    resp_writer w{out, capacity};
    w.number('*', 3 + keys + args);
    w.bulk(call.eval ? str_view("EVAL") : str_view("EVALSHA"));
    w.bulk(call.eval ? script.text : script.sha1);
    char digits[24];
    w.bulk(str_view(digits, format_unsigned(digits, keys)));
    if (call.kind == permit_req::renew) {
        permit_bulk(w, base, call.permit);
    }
    w.bulk(base.open, base.name, str_view(base.close.size != 0 ? "}:permits" : ":permits"));
    if (call.kind != permit_req::renew) {
        for (std::uint8_t i = 0; i < call.permits; ++i) {
            permit_bulk(w, base, i);
        }
    }
    if (call.kind == permit_req::acquire && call.fence != '-') {
        char counter[lock_key_capacity];
        w.bulk(str_view(counter, make_lock_key(counter, call.name, true)));
    }
    if (call.kind == permit_req::release && call.marks != nullptr) {
        char mark[lock_key_capacity];
        w.bulk(str_view(mark, make_release_mark(mark, call.name, call.marks)));
    }
    w.bulk(call.token);
    if (call.kind == permit_req::release) {
        w.bulk(str_view(digits, format_unsigned(digits, call.permits)));
        return w.size;
    }
    w.bulk(call.ttl);
    if (call.kind == permit_req::acquire) {
        w.bulk(str_view(digits, format_unsigned(digits, call.permits)));
        w.bulk(str_view(digits, format_unsigned(digits, call.permit)));
        const char mode[2] = {call.only ? 'o' : 's', call.fence};
        w.bulk(str_view(mode, 2));
        if (!call.record.empty()) {
            w.bulk(call.record);
        }
    }
    return w.size;
}

std::size_t longest_permit_request(str_view name, const lock_options& options) noexcept {
    // The acquire and the release as EVAL, with the longest values they can
    // carry: the last permit asked for, a fenced acquire's counter, a record,
    // and the WAIT behind the acquire.
    char ttl[24];
    const char token[owner_token::hex_size] = {};
    const char marks[4] = {'a', 'a', 'a', 'a'};
    permit_call call;
    call.name = name;
    call.permits = options.permits;
    call.permit = static_cast<std::uint8_t>(options.permits - 1);
    call.eval = true;
    call.fence = options.mode == lock_mode::fenced ? 'i' : '-';
    call.token = str_view(token, sizeof token);
    call.ttl = str_view(ttl, format_unsigned(ttl, options.ttl.ms()));
    call.record = options.holder;
    call.marks = marks;
    // With min_replicas, the acquire has its WAIT behind it in the same buffer.
    char replicas[24];
    char timeout[24];
    const str_view wait[] = {
        "WAIT", str_view(replicas, format_unsigned(replicas, options.min_replicas)),
        str_view(timeout, format_unsigned(timeout, options.replica_timeout.ms()))};
    const std::size_t acquire = encode_permit_call(call, nullptr, 0) +
                                (options.min_replicas > 0 ? resp_command_size(wait, 3) : 0);
    call.kind = permit_req::release;
    const std::size_t release = encode_permit_call(call, nullptr, 0);
    return acquire > release ? acquire : release;
}

}  // namespace detail

std::size_t permit_key(str_view name, std::uint8_t index, char* out,
                       std::size_t capacity) noexcept {
    if (name.size == 0 || name.data == nullptr || name.size > lock_max_name || out == nullptr ||
        index >= lock_max_permits || !detail::counter_shares_slot(name) ||
        capacity < name.size + 2 + 8 + 2) {
        return 0;
    }
    return detail::make_permit_key(out, name, index);
}

}  // namespace edgelock
