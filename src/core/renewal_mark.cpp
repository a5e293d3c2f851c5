// The marks: the keys a renew and a release write beside the lock's key, so
// that waiters hear of both, tell them apart, and hear nothing of a take.
//
// A waiter tracks its lock's renewal mark in broadcasting mode, as a prefix
// (see src/client/notify.cpp), and the server pushes every change of a key
// that starts with it. A renew writes the renewal mark, `name:r` and two
// bytes, empty, with the key's ttl, so it also expires with the key. A
// release deletes it and writes and deletes the release mark, the renewal
// mark and two more bytes: nothing is left, and the push names the release
// mark. A take writes only the key, which the prefix does not cover, so the
// waiters that lost a handoff are not woken by the winner.
//
// Each mark must hash to the name's Cluster slot (one script writes them
// with the key): CRC16 is linear, so two appended bytes reach any value of
// the register, so four of them give the 14 bits a slot keeps. A '}' is
// never chosen, so a mark has a hash tag exactly when the name has one (and
// then the same tag: any two bytes will do, and the same rule picks them); a
// '{' may be, as no '}' follows it. Found by trying the 65,536 pairs in
// order, twice per configure(). Should all four pairs for a mark hold a '}'
// (about one name in 10^8), there is no mark, and configure() refuses the
// name.
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

// Two bytes that, appended to a key whose CRC so far is `at`, give the
// whole key the slot of `whole`; never a '}'.
bool slot_pair(std::uint16_t at, std::uint16_t whole, char* out) noexcept {
    constexpr std::uint16_t slot_bits = 0x3fff;
    for (unsigned a = 0; a < 0x100U; ++a) {
        if (a == '}') {
            continue;
        }
        const std::uint16_t after_a = crc16_step(at, static_cast<unsigned char>(a));
        for (unsigned b = 0; b < 0x100U; ++b) {
            if (b != '}' && (crc16_step(after_a, static_cast<unsigned char>(b)) & slot_bits) ==
                                (whole & slot_bits)) {
                out[0] = static_cast<char>(a);
                out[1] = static_cast<char>(b);
                return true;
            }
        }
    }
    return false;
}

}  // namespace

bool mark_suffixes(str_view name, char* out) noexcept {
    std::uint16_t whole = 0;  // the name's CRC: its slot when it has no tag
    for (std::size_t i = 0; i < name.size; ++i) {
        whole = crc16_step(whole, static_cast<unsigned char>(name.data[i]));
    }
    std::uint16_t at = crc16_step(crc16_step(whole, ':'), 'r');
    // The renewal mark's two bytes, then the release mark's after them.
    for (int mark = 0; mark < 2; ++mark) {
        if (!slot_pair(at, whole, out + 2 * mark)) {
            return false;
        }
        at = crc16_step(crc16_step(at, static_cast<unsigned char>(out[2 * mark])),
                        static_cast<unsigned char>(out[2 * mark + 1]));
    }
    return true;
}

std::size_t make_renewal_mark(char* out, str_view name, const char* suffixes) noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < name.size; ++i) {
        out[n++] = name.data[i];
    }
    out[n++] = ':';
    out[n++] = 'r';
    out[n++] = suffixes[0];
    out[n++] = suffixes[1];
    return n;
}

std::size_t make_release_mark(char* out, str_view name, const char* suffixes) noexcept {
    std::size_t n = make_renewal_mark(out, name, suffixes);
    out[n++] = suffixes[2];
    out[n++] = suffixes[3];
    return n;
}

bool is_mark(str_view key, str_view name, const char* suffixes, bool release) noexcept {
    const char tail[6] = {':', 'r', suffixes[0], suffixes[1], suffixes[2], suffixes[3]};
    const std::size_t tail_size = release ? 6 : 4;
    if (key.size != name.size + tail_size) {
        return false;
    }
    for (std::size_t i = 0; i < name.size; ++i) {
        if (key.data[i] != name.data[i]) {
            return false;
        }
    }
    for (std::size_t i = 0; i < tail_size; ++i) {
        if (key.data[name.size + i] != tail[i]) {
            return false;
        }
    }
    return true;
}

}  // namespace detail
}  // namespace edgelock
