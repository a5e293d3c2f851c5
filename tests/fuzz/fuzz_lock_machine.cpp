// libFuzzer target: the lock machine fed random operations, replies, timeouts
// and disconnects. Properties: no crash, no UB (ASan/UBSan), nothing written
// past a transmit buffer, and every operation ends: once the input is used up,
// stepping time to each next deadline without any reply brings the machine back
// to idle within a bounded number of steps.
//
// Input: byte 0-3 pick the configuration, the rest is a program of one-byte
// opcodes with arguments. Replies are either well-formed lock replies (so the
// fuzzer reaches deep states quickly) or raw bytes through the real decoder.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "edgelock/lock.hpp"
#include "edgelock/resp_decoder.hpp"
#include "tools/random.hpp"

namespace {

struct input {
    const std::uint8_t* data;
    std::size_t size;
    std::size_t pos = 0;
    std::uint8_t byte() { return pos < size ? data[pos++] : 0; }
    bool done() const { return pos >= size; }
};

// Per node, the tags of requests sent and not yet answered (a driver's FIFO).
struct fifo {
    std::uint32_t tags[64];
    unsigned head = 0;
    unsigned count = 0;
    void push(std::uint32_t t) {
        if (count < 64) {
            tags[(head + count) % 64] = t;
            ++count;
        }
    }
    bool pop(std::uint32_t& t) {
        if (count == 0) {
            return false;
        }
        t = tags[head];
        head = (head + 1) % 64;
        --count;
        return true;
    }
};

const char* const canned[] = {
    "*2\r\n:1\r\n:0\r\n",
    "*2\r\n:1\r\n:7\r\n",
    "*2\r\n:0\r\n:1234\r\n",
    "*2\r\n:0\r\n:-1\r\n",
    ":1\r\n",
    ":0\r\n",
    ":-1\r\n",
    ":8\r\n",
    "-NOSCRIPT No matching script\r\n",
    "-ERR boom\r\n",
    "$-1\r\n",
    "+OK\r\n",
    "*2\r\n:1\r\n:9007199254740993\r\n",
    "*1\r\n:1\r\n",
    "|1\r\n+a\r\n+b\r\n*2\r\n:1\r\n:3\r\n",
    "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",
    "*3\r\n:1\r\n:2\r\n:3\r\n",
    "_\r\n",
    "#t\r\n",
    ":9223372036854775807\r\n",
    "$12\r\nsomeone-else\r\n",
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    "-ERR syntax error\r\n",
};
constexpr unsigned canned_count = sizeof canned / sizeof canned[0];

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    input in{data, size};
    edgelock_test::input_random<input> rnd{&in};
    const edgelock::random_source source = rnd.source();

    edgelock::lock_options opt;
    const std::uint8_t b0 = in.byte();
    const std::uint8_t b1 = in.byte();
    const std::uint8_t b2 = in.byte();
    const std::uint8_t b3 = in.byte();
    const std::uint8_t nodes = static_cast<std::uint8_t>(b0 % (edgelock::lock_max_nodes + 1));
    opt.mode = static_cast<edgelock::lock_mode>(b1 % 3);
    opt.quorum = static_cast<std::uint8_t>((b1 >> 2) % 4 == 0 ? 0 : nodes / 2 + 1 + (b1 >> 4) % 2);
    opt.ttl = edgelock::duration::millis(1 + b2 * 4u);
    opt.node_timeout = edgelock::duration::millis(1 + b3 % 40);
    opt.max_tries = 1u + (b3 >> 5);
    opt.retry_min = edgelock::duration::millis(b3 & 3);
    opt.retry_max = edgelock::duration::millis((b3 & 3) + (b3 >> 6));
    opt.wait = edgelock::duration::millis(b2);
    opt.renew_resurrects = opt.mode == edgelock::lock_mode::plain && (b1 & 0x80) != 0;
    opt.owner = (b1 & 0x40) != 0 ? edgelock::str_view("agent:1") : edgelock::str_view();
    // WAIT after acquire and renew on odd ttls; a timeout that may be refused.
    opt.min_replicas = static_cast<std::uint8_t>((b2 & 1) != 0 ? 1 + b3 % 2 : 0);
    opt.replica_timeout = edgelock::duration::millis(b3 % 24);

    edgelock::lock l;
    if (l.configure("fuzz", nodes, opt, source) != edgelock::lock_errc::ok) {
        return 0;
    }
    // Which nodes the driver says take SET NX PX GET (the one-command acquire).
    const std::uint8_t speaks = in.byte();
    for (std::uint8_t n = 0; n < nodes; ++n) {
        edgelock::lock_node_caps caps;
        caps.set_nx_get = (speaks >> (n % 8) & 1) != 0;
        caps.told = (speaks >> ((n + 4) % 8) & 1) != 0;
        (void)l.set_node_caps(n, caps);
    }
    fifo fifos[edgelock::lock_max_nodes];
    edgelock::instant now{1000000};
    char buf[edgelock::lock_max_request + 16];

    auto drain = [&] {
        edgelock::lock_event ev;
        while (l.poll_event(ev)) {
            (void)edgelock::describe(ev.kind);
        }
    };
    auto transmit = [&](std::uint8_t node, std::size_t cap) {
        for (int guard = 0; guard < 16; ++guard) {
            std::memset(buf, 0x5a, sizeof buf);
            const edgelock::lock_transmit t = l.poll_transmit(node, buf, cap);
            for (std::size_t i = cap; i < sizeof buf; ++i) {
                if (buf[i] != 0x5a) {
                    __builtin_trap();  // wrote past the capacity it was given
                }
            }
            if (t.error != edgelock::lock_errc::ok || t.size == 0) {
                return;
            }
            if (t.size > cap) {
                __builtin_trap();
            }
            fifos[node].push(t.tag);
            if (t.following > 0) {
                fifos[node].push(t.following_tag);  // WAIT's count
            }
        }
    };

    while (!in.done()) {
        const std::uint8_t op = in.byte();
        const std::uint8_t node = static_cast<std::uint8_t>(in.byte() % nodes);
        switch (op % 10) {
        case 0:
            (void)l.acquire(now);
            break;
        case 1:
            (void)l.renew(now);
            break;
        case 2:
            (void)l.release(now);
            break;
        case 3:  // time passes, maybe to the deadline
            if ((op & 0x80) != 0 && !l.next_deadline().is_never()) {
                now = l.next_deadline();
            } else {
                now = now + edgelock::duration::micros(in.byte() * 97u);
            }
            l.on_timeout(now);
            break;
        case 4: {  // a connection drops
            (void)l.on_disconnected(node, now);
            fifos[node] = fifo{};
            break;
        }
        case 5:
        case 6: {  // a canned reply to the oldest request on the node
            std::uint32_t tag = 0;
            if (!fifos[node].pop(tag)) {
                break;
            }
            const char* r = canned[in.byte() % canned_count];
            edgelock::resp_node rn[16];
            const edgelock::resp_result res =
                edgelock::resp_decode_whole(r, std::strlen(r), rn, 16);
            (void)l.on_reply(node, tag, rn,
                             res.status == edgelock::resp_status::complete ? res.nodes : 0, now);
            break;
        }
        case 7: {  // raw bytes through the decoder, any tag
            const std::size_t len = in.byte() % 48;
            char raw[48];
            for (std::size_t i = 0; i < len; ++i) {
                raw[i] = static_cast<char>(in.byte());
            }
            edgelock::resp_node rn[16];
            const edgelock::resp_result res = edgelock::resp_decode_whole(raw, len, rn, 16);
            std::uint32_t tag = 0;
            if ((op & 0x80) != 0) {
                tag = static_cast<std::uint32_t>(in.byte()) << 8 | in.byte();
            } else if (!fifos[node].pop(tag)) {
                break;
            }
            (void)l.on_reply(node, tag, rn,
                             res.status == edgelock::resp_status::complete ? res.nodes : 0, now);
            break;
        }
        case 8:
            transmit(node, in.byte() * 5u);
            break;
        default:
            if ((op & 0x40) != 0) {
                (void)l.on_key_changed(now);  // a server said the key changed
            }
            if ((op & 0x20) != 0) {
                // A Cluster's MOVED or ASK to the oldest request on the node.
                std::uint32_t tag = 0;
                if (fifos[node].pop(tag)) {
                    (void)l.redirected(node, tag);
                }
            }
            transmit(node, edgelock::lock_max_request);
            break;
        }
        drain();
    }

    // Every operation ends: with no more replies, deadlines alone bring the
    // machine back to idle. Bound: tries rounds plus renew retries, each at
    // least 1 ms apart, within ttl or wait.
    for (int step = 0; step < 100000 && l.state() != edgelock::lock_state::idle; ++step) {
        for (std::uint8_t n = 0; n < nodes; ++n) {
            transmit(n, edgelock::lock_max_request);
        }
        const edgelock::instant d = l.next_deadline();
        if (d.is_never()) {
            __builtin_trap();  // not idle, yet nothing will ever wake it
        }
        now = d > now ? d : now;
        l.on_timeout(now);
        drain();
    }
    if (l.state() != edgelock::lock_state::idle) {
        __builtin_trap();
    }
    return 0;
}
