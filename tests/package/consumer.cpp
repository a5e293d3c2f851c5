// A program that uses edgelock the way a consumer would: public headers only,
// the library and the POSIX port linked in. Built by check_package.sh through
// find_package, add_subdirectory and pkg-config, with -fno-exceptions
// -fno-rtti, as firmware builds often are.
#include <edgelock/port.hpp>
#include <edgelock/resp_decoder.hpp>
#include <edgelock/resp_encoder.hpp>

#include <cstdio>

int main() {
    using namespace edgelock;
    char buf[64];
    const str_view args[] = {"PING"};
    const resp_encoded e = resp_encode_command(buf, sizeof buf, args, 1);
    resp_node node;
    const resp_result r = resp_decode_whole("+PONG\r\n", 7, &node, 1);
    unsigned char rnd[16];
    const bool ok = e.error == resp_encode_errc::ok && e.size == 14 &&
                    r.status == resp_status::complete && node.text == str_view("PONG") &&
                    port::random_bytes(rnd, sizeof rnd) && port::now().us > 0;
    std::puts(ok ? "consumer: ok" : "consumer: FAILED");
    return ok ? 0 : 1;
}
