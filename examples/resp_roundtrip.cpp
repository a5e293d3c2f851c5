// Encode a lock command and decode a server's replies with edgelock's RESP
// codec, no network involved: the bytes are what a Redis server would send.
//
//   ./resp_roundtrip
#include <cstdio>
#include <cstring>

#include "edgelock/resp_decoder.hpp"
#include "edgelock/resp_encoder.hpp"

using namespace edgelock;

int main() {
    // SET job:nightly <token> NX PX 30000, into a caller-owned buffer.
    char out[128];
    const decimal_arg ttl(30000);
    const str_view args[] = {"SET", "job:nightly", "6f1c0e3a9b2d4c5e8f7a6b5c4d3e2f1a",
                             "NX",  "PX",          ttl.view()};
    const resp_encoded cmd = resp_encode_command(out, sizeof out, args, 6);
    if (cmd.error != resp_encode_errc::ok) {
        std::fprintf(stderr, "encode: %s\n", describe(cmd.error));
        return 1;
    }
    std::printf("command: %zu bytes\n", cmd.size);

    // Replies arrive in arbitrary pieces; the decoder resumes where it stopped.
    const char wire[] =
        "+OK\r\n$-1\r\n-NOSCRIPT No matching script. Please use EVAL.\r\n"
        "%1\r\n$5\r\nproto\r\n:3\r\n";
    const std::size_t total = sizeof wire - 1;
    resp_decoder decoder;
    resp_node nodes[8];
    std::size_t start = 0;
    std::size_t received = 0;
    while (start < total) {
        received = received + 7 < total ? received + 7 : total;  // 7 bytes at a time
        const resp_result r = decoder.decode(wire + start, received - start, nodes, 8);
        if (r.status == resp_status::incomplete) {
            continue;
        }
        if (r.status == resp_status::error) {
            std::fprintf(stderr, "decode: %s at byte %zu\n", describe(r.error), start + r.offset);
            return 1;
        }
        const resp_node& top = nodes[0];
        std::printf("reply: %-13s %.*s\n", describe(top.type), static_cast<int>(top.text.size),
                    top.text.data != nullptr ? top.text.data : "");
        start += r.size;
    }
    return 0;
}
