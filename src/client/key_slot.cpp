// Redis Cluster hash slots (see key_slot.hpp). CRC16 with polynomial 0x1021,
// initial value 0, no reflection and no final XOR (XMODEM), bit by bit: lock
// keys are short, and a 512-byte table is not worth it on a small device.
#include "edgelock/key_slot.hpp"

namespace edgelock {

namespace {

std::uint16_t crc16(str_view bytes) noexcept {
    std::uint16_t crc = 0;
    for (std::size_t i = 0; i < bytes.size; ++i) {
        crc = static_cast<std::uint16_t>(crc ^ (static_cast<unsigned char>(bytes.data[i]) << 8));
        for (int bit = 0; bit < 8; ++bit) {
            crc = static_cast<std::uint16_t>((crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1);
        }
    }
    return crc;
}

}  // namespace

std::uint16_t key_slot(str_view key) noexcept {
    // A hash tag: the first '{', then the first '}' after it, with at least
    // one byte between them. "{}" or an unclosed '{' hash the whole key.
    std::size_t open = 0;
    while (open < key.size && key.data[open] != '{') {
        ++open;
    }
    if (open < key.size) {
        std::size_t close = open + 1;
        while (close < key.size && key.data[close] != '}') {
            ++close;
        }
        if (close < key.size && close > open + 1) {
            key = str_view(key.data + open + 1, close - open - 1);
        }
    }
    return static_cast<std::uint16_t>(crc16(key) & (key_slot_count - 1));
}

}  // namespace edgelock
