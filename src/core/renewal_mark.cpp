// The renewal mark: the key a renew writes beside the lock's key, so that a
// waiter told of both in one invalidation knows the holder only renewed.
//
// A waiter tracks its lock's name in broadcasting mode, as a prefix (see
// src/client/notify.cpp). Redis gathers the keys changed under one prefix
// during one pass of its event loop and sends them as one push, so a renew
// that also writes the mark is heard as [name, mark] together, and a
// release, an expiry or another client's write as [name] alone. For that
// the mark must start with the name (the same prefix), and it must hash to
// the name's Cluster slot (the same script writes both).
//
// The mark is `name:r` and two bytes chosen so the whole key hashes to the
// name's slot: CRC16 is linear, so two appended bytes reach any value of the
// register, so four of them give the 14 bits a slot keeps. A '}' is never
// chosen, so the mark has a hash tag exactly when the name has one (and then
// the same tag: any two bytes will do, and the same rule picks them); a '{'
// may be, as no '}' follows it. Found by trying the 65,536 pairs in order,
// once per configure(). Should all four hold a '}' (about one name in 10^8),
// there is no mark, and configure() refuses the name.
#include "lock_wire.hpp"

namespace edgelock {
namespace detail {

namespace {

std::uint16_t crc16_step(std::uint16_t crc, unsigned char byte) noexcept {
    crc = static_cast<std::uint16_t>(crc ^ (byte << 8));
    for (int bit = 0; bit < 8; ++bit) {
        crc = static_cast<std::uint16_t>((crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

}  // namespace

bool renewal_mark_suffix(str_view name, char* out) noexcept {
    std::uint16_t whole = 0;  // the name's CRC: its slot when it has no tag
    for (std::size_t i = 0; i < name.size; ++i) {
        whole = crc16_step(whole, static_cast<unsigned char>(name.data[i]));
    }
    std::uint16_t at = whole;
    at = crc16_step(crc16_step(at, ':'), 'r');
    constexpr std::uint16_t slot_bits = 0x3fff;
    for (unsigned pair = 0; pair < 0x10000U; ++pair) {
        const auto a = static_cast<unsigned char>(pair >> 8);
        const auto b = static_cast<unsigned char>(pair & 0xff);
        if (a == '}' || b == '}') {
            continue;
        }
        if ((crc16_step(crc16_step(at, a), b) & slot_bits) == (whole & slot_bits)) {
            out[0] = static_cast<char>(a);
            out[1] = static_cast<char>(b);
            return true;
        }
    }
    return false;
}

std::size_t make_renewal_mark(char* out, str_view name, const char* suffix) noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < name.size; ++i) {
        out[n++] = name.data[i];
    }
    out[n++] = ':';
    out[n++] = 'r';
    out[n++] = suffix[0];
    out[n++] = suffix[1];
    return n;
}

}  // namespace detail
}  // namespace edgelock
