// Redis Cluster hash slots: the CRC16 check value, the hash-tag rules as the
// Cluster specification states them, and every lock key sharing its slot
// with its fencing counter. (test_key_slot_redis.cpp checks against a real
// cluster-enabled redis-server's CLUSTER KEYSLOT.)
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "edgelock/key_slot.hpp"
#include "edgelock/lock.hpp"

using edgelock::key_slot;
using edgelock::str_view;

namespace {

std::uint16_t slot(const std::string& key) {
    return key_slot(str_view(key.data(), key.size()));
}

std::string key_of(const std::string& name, edgelock::lock_key_kind kind) {
    char buf[edgelock::lock_max_name + 16];
    const std::size_t n =
        edgelock::lock_key(str_view(name.data(), name.size()), kind, buf, sizeof buf);
    return std::string(buf, n);  // empty: no counter can share the name's slot
}

}  // namespace

TEST_CASE("key slot: CRC16 (XMODEM) and the hash-tag rules", "[key_slot]") {
    // CRC16/XMODEM's check value for "123456789" is 0x31C3 (12739).
    CHECK(slot("123456789") == (0x31C3 & 16383));
    CHECK(slot("") == 0);
    // The Cluster specification's examples: only the tag is hashed...
    CHECK(slot("{user1000}.following") == slot("user1000"));
    CHECK(slot("{user1000}.followers") == slot("user1000"));
    // ...the first '{' and the first '}' after it...
    CHECK(slot("foo{{bar}}zap") == slot("{bar"));
    CHECK(slot("foo{bar}{zap}") == slot("bar"));
    // ...and an empty or unclosed tag hashes the whole key.
    CHECK(slot("foo{}{bar}") != slot("bar"));
    CHECK(slot("foo{}{bar}") == key_slot(str_view("foo{}{bar}")));
    CHECK(slot("}{foo") == slot("}{foo"));
    CHECK(slot("{foo") != slot("foo"));
    for (const char* k : {"a", "lock", "nightly-upload", "{fleet}:upload", "\xff\x00x"}) {
        CHECK(slot(k) < edgelock::key_slot_count);
    }
}

TEST_CASE("key slot: a lock's key and its fencing counter share one slot", "[key_slot]") {
    std::mt19937 gen(7);
    const std::string alphabet = "abcxyz019-_:.{}";
    int checked = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string name(1 + gen() % 12, 'a');
        for (char& c : name) {
            c = alphabet[gen() % alphabet.size()];
        }
        const std::string counter = key_of(name, edgelock::lock_key_kind::fence_counter);
        if (counter.empty()) {
            continue;  // a '}' outside a tag: refused for fenced locks (name_unslotted)
        }
        INFO(name);
        REQUIRE(slot(key_of(name, edgelock::lock_key_kind::lock)) == slot(counter));
        ++checked;
    }
    CHECK(checked > 10000);
}

TEST_CASE("key slot: a lock's marks start with its name and share its slot", "[key_slot]") {
    std::mt19937 gen(11);
    const std::string alphabet = "abcxyz019-_:.{}";
    for (int i = 0; i < 20000; ++i) {
        std::string name(1 + gen() % 12, 'a');
        for (char& c : name) {
            c = i % 2 == 0 ? alphabet[gen() % alphabet.size()] : static_cast<char>(gen() % 256);
        }
        INFO(i);
        const std::string mark = key_of(name, edgelock::lock_key_kind::renewal_mark);
        REQUIRE(mark.size() == name.size() + 4);
        CHECK(mark.compare(0, name.size() + 2, name + ":r") == 0);
        CHECK(mark[name.size() + 2] != '}');
        CHECK(mark[name.size() + 3] != '}');
        REQUIRE(slot(mark) == slot(name));
        // The release mark: the renewal mark and two more such bytes, so a
        // prefix of the renewal mark covers it.
        const std::string release = key_of(name, edgelock::lock_key_kind::release_mark);
        REQUIRE(release.size() == name.size() + 6);
        CHECK(release.compare(0, mark.size(), mark) == 0);
        CHECK(release[name.size() + 4] != '}');
        CHECK(release[name.size() + 5] != '}');
        REQUIRE(slot(release) == slot(name));
    }
}
