// libFuzzer target for the RESP decoder.
//
// Each input is decoded whole, then again fed in chunks whose sizes come from
// the input itself, then one byte at a time; the results must be identical.
// Every call gets a fresh heap copy sized exactly to the bytes it passes (the
// previous copy freed), so ASan reports a read past the input and a view kept
// from an earlier call. Validate-only mode, resp_decode_whole, small limits and
// pipelined replies are checked against the same result. Any disagreement or
// broken invariant traps.
//
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
//       tests/fuzz/fuzz_resp_decoder.cpp src/core/*.cpp -o fuzz_resp
//   ./fuzz_resp tests/fuzz/corpus/resp_decoder
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "edgelock/resp.hpp"
#include "edgelock/resp_decoder.hpp"

namespace edgelock {
namespace {

constexpr std::size_t node_capacity = 256;

void check(bool ok) {
    if (!ok) {
        __builtin_trap();
    }
}

// One decoding session: a decoder, a node array exactly `capacity` long and the
// exact copy of the input passed to the last call.
struct session {
    session(const resp_limits& limits, std::size_t cap, bool keep_nodes)
        : decoder(limits), capacity(cap), nodes(keep_nodes ? new resp_node[cap] : nullptr) {}

    const resp_result& feed(const std::uint8_t* data, std::size_t n) {
        buffer.reset();
        buffer.reset(new char[n]);
        if (n != 0) {
            std::memcpy(buffer.get(), data, n);
        }
        size = n;
        result = decoder.decode(buffer.get(), n, nodes.get(), capacity);
        return result;
    }

    resp_decoder decoder;
    std::size_t capacity;
    std::unique_ptr<resp_node[]> nodes;
    std::unique_ptr<char[]> buffer;
    std::size_t size = 0;
    resp_result result{};
};

// Walks one element (attributes, then a value) from index i; returns the index
// after it, or count + 1 when the node tree does not add up.
std::size_t walk_element(const resp_node* nodes, std::size_t count, std::size_t i);

std::size_t walk_value(const resp_node* nodes, std::size_t count, std::size_t i) {
    if (i >= count) {
        return count + 1;
    }
    const resp_node& n = nodes[i];
    std::size_t next = i + 1;
    if (n.is_aggregate()) {
        const bool pairs = n.type == resp_type::map || n.type == resp_type::attribute;
        const std::size_t elements = pairs ? 2 * std::size_t{n.count} : n.count;
        for (std::size_t e = 0; e < elements; ++e) {
            next = walk_element(nodes, count, next);
            if (next > count) {
                return count + 1;
            }
        }
    }
    return n.end == next ? next : count + 1;
}

std::size_t walk_element(const resp_node* nodes, std::size_t count, std::size_t i) {
    while (i < count && nodes[i].type == resp_type::attribute) {
        i = walk_value(nodes, count, i);
    }
    return walk_value(nodes, count, i);
}

// The few replies whose bytes the decoded node pins down: a lone null is one
// of the three null spellings, and a lone bulk string's header announces
// exactly the payload's size.
void check_top_level_bytes(const resp_result& r, const char* base, const resp_node* nodes) {
    if (r.nodes != 1) {
        return;
    }
    const resp_node& n = nodes[0];
    if (n.type == resp_type::null) {
        const bool spelled = (r.size == 3 && std::memcmp(base, "_\r\n", 3) == 0) ||
                             (r.size == 5 && std::memcmp(base, "$-1\r\n", 5) == 0) ||
                             (r.size == 5 && std::memcmp(base, "*-1\r\n", 5) == 0);
        check(spelled);
    }
    if (n.type == resp_type::bulk_string) {
        check(base[0] == '$');
        std::uint64_t announced = 0;
        std::size_t i = 1;
        for (; base[i] != '\r'; ++i) {
            check(base[i] >= '0' && base[i] <= '9');
            check(announced <= (UINT64_MAX - 9) / 10);
            announced = announced * 10 + static_cast<std::uint64_t>(base[i] - '0');
        }
        check(announced == n.text.size);
        check(r.size == i + 2 + n.text.size + 2);
    }
}

void check_invariants(const resp_result& r, const char* base, std::size_t size,
                      const resp_node* nodes, std::size_t capacity) {
    switch (r.status) {
    case resp_status::complete:
        check(r.error == resp_errc::ok);
        check(r.size >= 1 && r.size <= size);
        check(r.nodes >= 1);
        if (nodes == nullptr) {
            return;
        }
        check(r.nodes <= capacity);
        for (std::size_t i = 0; i < r.nodes; ++i) {
            const resp_node& n = nodes[i];
            check(n.end >= i + 1 && n.end <= r.nodes);
            if (n.text.size != 0) {
                check(n.text.data >= base && n.text.data <= base + r.size);
                check(n.text.size <= static_cast<std::size_t>(base + r.size - n.text.data));
            }
            check(n.has_text() || n.text.size == 0);
            if (n.type == resp_type::verbatim_string) {
                check(n.text.data != nullptr && n.text.data - 4 >= base);
                check(n.verbatim_format().size == 3);
            }
            if (n.type == resp_type::boolean) {
                check(n.integer == 0 || n.integer == 1);
            }
        }
        check(walk_element(nodes, r.nodes, 0) == r.nodes);
        check_top_level_bytes(r, base, nodes);
        return;
    case resp_status::incomplete:
        check(r.error == resp_errc::ok);
        check(r.needed > size);
        return;
    case resp_status::error:
        check(r.error != resp_errc::ok);
        check(r.error != resp_errc::truncated && r.error != resp_errc::input_shrank);
        check(r.offset < size);
        return;
    }
    check(false);
}

// Same outcome, and (when both kept nodes) the same nodes at the same places.
void check_same(const resp_result& a, const char* base_a, const resp_node* nodes_a,
                const resp_result& b, const char* base_b, const resp_node* nodes_b) {
    check(a.status == b.status);
    check(a.error == b.error);
    switch (a.status) {
    case resp_status::complete:
        check(a.size == b.size);
        check(a.nodes == b.nodes);
        break;
    case resp_status::incomplete:
        check(a.needed == b.needed);
        break;
    case resp_status::error:
        check(a.offset == b.offset);
        break;
    }
    if (a.status != resp_status::complete || nodes_a == nullptr || nodes_b == nullptr) {
        return;
    }
    for (std::size_t i = 0; i < a.nodes; ++i) {
        const resp_node& x = nodes_a[i];
        const resp_node& y = nodes_b[i];
        check(x.type == y.type);
        check(x.count == y.count);
        check(x.end == y.end);
        check(x.integer == y.integer);
        check(x.offset == y.offset);
        check(x.text.size == y.text.size);
        check((x.text.data == nullptr) == (y.text.data == nullptr));
        if (x.text.data != nullptr) {
            check(x.text.data - base_a == y.text.data - base_b);
        }
        if (x.text.size != 0) {
            check(std::memcmp(x.text.data, y.text.data, x.text.size) == 0);
        }
    }
}

// A small deterministic generator for chunk sizes.
struct chunker {
    std::uint32_t state;
    std::size_t next() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        return 1 + state % 61;
    }
};

// Feeds the input in chunks (chunk == 0: random sizes from `seed`, else that
// size), checking every intermediate result, until the reply ends or the input does.
void feed_in_chunks(session& s, const std::uint8_t* data, std::size_t size, std::size_t chunk,
                    std::uint32_t seed) {
    chunker sizes{seed | 1u};
    std::size_t given = 0;
    for (;;) {
        const std::size_t step = chunk != 0 ? chunk : sizes.next();
        given = step < size - given ? given + step : size;
        const resp_result& r = s.feed(data, given);
        check_invariants(r, s.buffer.get(), given, s.nodes.get(), s.capacity);
        if (r.status != resp_status::incomplete || given == size) {
            return;
        }
    }
}

void check_modes(const std::uint8_t* data, std::size_t size, const resp_limits& limits,
                 std::size_t capacity, std::uint32_t seed) {
    session whole(limits, capacity, true);
    whole.feed(data, size);
    const resp_result& w = whole.result;
    check_invariants(w, whole.buffer.get(), size, whole.nodes.get(), capacity);

    session chunks(limits, capacity, true);
    feed_in_chunks(chunks, data, size, 0, seed);
    check_same(w, whole.buffer.get(), whole.nodes.get(), chunks.result, chunks.buffer.get(),
               chunks.nodes.get());

    session bytes(limits, capacity, true);
    feed_in_chunks(bytes, data, size, 1, seed);
    check_same(w, whole.buffer.get(), whole.nodes.get(), bytes.result, bytes.buffer.get(),
               bytes.nodes.get());

    // resp_decode_whole: the same, except that incomplete becomes truncated.
    std::unique_ptr<char[]> copy(new char[size]);
    if (size != 0) {
        std::memcpy(copy.get(), data, size);
    }
    std::unique_ptr<resp_node[]> nodes(new resp_node[capacity]);
    const resp_result d = resp_decode_whole(copy.get(), size, nodes.get(), capacity, limits);
    if (w.status == resp_status::incomplete) {
        check(d.status == resp_status::error && d.error == resp_errc::truncated);
        check(d.offset == size);
    } else {
        check_same(w, whole.buffer.get(), whole.nodes.get(), d, copy.get(), nodes.get());
    }

    // Validate-only mode never runs out of nodes; otherwise it agrees.
    if (w.error != resp_errc::node_capacity) {
        session measure(limits, 0, false);
        measure.feed(data, size);
        check_invariants(measure.result, measure.buffer.get(), size, nullptr, 0);
        check_same(w, nullptr, nullptr, measure.result, nullptr, nullptr);

        session measure_chunks(limits, 0, false);
        feed_in_chunks(measure_chunks, data, size, 0, seed ^ 0x9e3779b9u);
        check_same(w, nullptr, nullptr, measure_chunks.result, nullptr, nullptr);
    }
}

// Decodes reply after reply from one buffer, as a connection would.
void check_pipeline(const std::uint8_t* data, std::size_t size) {
    std::unique_ptr<char[]> copy(new char[size]);
    if (size != 0) {
        std::memcpy(copy.get(), data, size);
    }
    std::unique_ptr<resp_node[]> nodes(new resp_node[node_capacity]);
    resp_decoder decoder;
    std::size_t start = 0;
    while (start < size) {
        const resp_result r =
            decoder.decode(copy.get() + start, size - start, nodes.get(), node_capacity);
        check_invariants(r, copy.get() + start, size - start, nodes.get(), node_capacity);
        if (r.status != resp_status::complete) {
            return;
        }
        check(!decoder.in_progress());
        start += r.size;
    }
}

}  // namespace
}  // namespace edgelock

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace edgelock;
    const std::uint32_t seed =
        size != 0 ? (std::uint32_t{data[0]} << 8 | static_cast<std::uint32_t>(size)) : 1u;

    check_modes(data, size, resp_limits{}, node_capacity, seed);

    resp_limits small;
    small.max_depth = 2;
    small.max_elements = 4;
    small.max_bulk = 16;
    small.max_line = 16;
    // A node array too small for some replies, so node_capacity is exercised too.
    const std::size_t small_capacity = size != 0 ? data[size - 1] % 12 : 0;
    check_modes(data, size, small, small_capacity, seed * 2654435761u);

    // A caller may lift the size limits altogether.
    resp_limits unlimited;
    unlimited.max_bulk = SIZE_MAX;
    unlimited.max_line = SIZE_MAX;
    unlimited.max_elements = UINT32_MAX;
    check_modes(data, size, unlimited, node_capacity, seed ^ 0x5bd1e995u);

    // Tighter limits only ever turn a reply into a limit error, never into a
    // different reply or a different kind of error.
    session tight(small, node_capacity, true);
    session defaults(resp_limits{}, node_capacity, true);
    session loose(unlimited, node_capacity, true);
    session* const results[] = {&tight, &defaults, &loose};
    for (session* s : results) {
        s->feed(data, size);
    }
    for (int i = 0; i < 2; ++i) {
        const session& a = *results[i];
        const session& b = *results[i + 1];
        if (a.result.status == resp_status::complete) {
            check_same(a.result, a.buffer.get(), a.nodes.get(), b.result, b.buffer.get(),
                       b.nodes.get());
        } else if (b.result.status == resp_status::complete) {
            const resp_errc e = a.result.error;
            check(a.result.status == resp_status::error &&
                  (e == resp_errc::too_deep || e == resp_errc::too_many_elements ||
                   e == resp_errc::bulk_too_long || e == resp_errc::line_too_long));
        }
    }

    check_pipeline(data, size);
    return 0;
}
