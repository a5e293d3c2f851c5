// The C API's view of a node: a line of text with its state, the latest
// reason it failed and what its set-up warned of; and node URLs redacted.
#include "capi_internal.hpp"
#include "edgelock/node_list.hpp"

using namespace edgelock;

namespace {

// Appends to a NUL-terminated buffer, cutting what does not fit, and counts
// the length the whole text has (as snprintf does).
struct line {
    char* buf;
    std::size_t size;
    std::size_t length = 0;

    void add(str_view s) noexcept {
        for (std::size_t i = 0; i < s.size; ++i) {
            if (length + 1 < size) {
                buf[length] = s.data[i];
                buf[length + 1] = '\0';
            }
            ++length;
        }
    }
    void add(const char* s) noexcept { add(str_view(s)); }
    void add(long long v) noexcept {
        char digits[24];
        std::size_t n = 0;
        const bool negative = v < 0;
        unsigned long long u = negative ? 0ull - static_cast<unsigned long long>(v)
                                        : static_cast<unsigned long long>(v);
        do {
            digits[n++] = static_cast<char>('0' + u % 10);
            u /= 10;
        } while (u != 0);
        if (negative) {
            add("-");
        }
        while (n > 0) {
            const char d[1] = {digits[--n]};
            add(str_view(d, 1));
        }
    }
};

}  // namespace

extern "C" size_t edgelock_client_node_text(const edgelock_client* c, unsigned i, char* buf,
                                            size_t size) {
    if (c == nullptr || i >= c->impl.node_count()) {
        return 0;
    }
    if (buf != nullptr && size > 0) {
        buf[0] = '\0';
    }
    line out{buf, buf == nullptr ? 0 : size};
    const node_info n = c->impl.node(static_cast<std::uint8_t>(i));
    out.add(describe(n.state));
    if (n.error != node_error::none) {
        out.add(": ");
        out.add(describe(n.error));
        if (n.code != 0) {
            out.add(" (code ");
            out.add(static_cast<long long>(n.code));
            out.add(")");
        }
        if (!n.message.empty()) {
            out.add(": ");
            out.add(n.message);
        }
    }
    if (n.warning != node_warning::none) {
        out.add("; warning: ");
        out.add(describe(n.warning));
        if (!n.maxmemory_policy.empty()) {
            out.add(" (");
            out.add(n.maxmemory_policy);
            out.add(")");
        }
    }
    if (!n.server.empty() || !n.version.empty()) {
        out.add("; ");
        out.add(n.server.empty() ? str_view("server") : n.server);
        if (!n.version.empty()) {
            out.add(" ");
            out.add(n.version);
        }
    }
    return out.length;
}

extern "C" size_t edgelock_redact_nodes(const char* nodes, int remove, char* buf, size_t size) {
    if (buf != nullptr && size > 0) {
        buf[0] = '\0';
    }
    if (nodes == nullptr) {
        return 0;
    }
    const credentials how = remove != 0 ? credentials::remove : credentials::mask;
    // Room for the NUL: the text is written only when it and the NUL fit.
    const std::size_t room = buf == nullptr || size == 0 ? 0 : size - 1;
    const redacted r = node_list_redact(str_view(nodes), how, buf, room);
    if (r.error == redact_errc::ok && buf != nullptr && size > 0) {
        buf[r.size] = '\0';
    }
    return r.size;
}
