#include "utf8.hpp"

namespace edgelock_cli {

std::size_t utf8_sequence(const unsigned char* p, std::size_t n) {
    if (n == 0) {
        return 0;
    }
    const unsigned char b = p[0];
    if (b < 0x80) {
        return 1;
    }
    std::size_t size = 0;
    // The second byte's range rules out overlongs (E0, F0), surrogates (ED)
    // and code points past U+10FFFF (F4): Unicode's table 3-7.
    unsigned char low = 0x80;
    unsigned char high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
        size = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
        size = 3;
        low = b == 0xe0 ? 0xa0 : 0x80;
        high = b == 0xed ? 0x9f : 0xbf;
    } else if (b >= 0xf0 && b <= 0xf4) {
        size = 4;
        low = b == 0xf0 ? 0x90 : 0x80;
        high = b == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;  // a continuation byte, C0, C1 or F5-FF
    }
    if (n < size || p[1] < low || p[1] > high) {
        return 0;
    }
    for (std::size_t i = 2; i < size; ++i) {
        if (p[i] < 0x80 || p[i] > 0xbf) {
            return 0;
        }
    }
    return size;
}

}  // namespace edgelock_cli
