// key_slot() against a real cluster-enabled redis-server's CLUSTER KEYSLOT:
// random keys with and without hash tags (empty ones, unclosed ones, several),
// arbitrary bytes included, and every kind of lock key.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "edgelock/key_slot.hpp"
#include "edgelock/lock.hpp"
#include "integration/redis_server.hpp"

using edgelock_test::redis_client;
using edgelock_test::redis_server;

TEST_CASE("key slot: the same as CLUSTER KEYSLOT", "[integration][key_slot]") {
    redis_server srv({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"});
    redis_client c(srv.port());
    std::mt19937 gen(11);
    const std::string alphabet = "ab{}{}:-\x01\xff";
    for (int i = 0; i < 2000; ++i) {
        std::string key(gen() % 10, 'a');
        for (char& ch : key) {
            ch = alphabet[gen() % alphabet.size()];
        }
        if (i % 4 == 0) {
            key = "lock-" + std::to_string(gen());  // no tag at all
        }
        INFO("key of " << key.size() << " bytes: " << key);
        const long long want = c.command({"CLUSTER", "KEYSLOT", key}).integer;
        REQUIRE(edgelock::key_slot(edgelock::str_view(key.data(), key.size())) == want);
    }
    // A lock's key and its counter, as the server sees them.
    for (const char* name : {"nightly-upload", "{fleet}:upload", "a{b}c", "{x"}) {
        char lock[edgelock::lock_max_name + 16];
        char fence[edgelock::lock_max_name + 16];
        const edgelock::str_view n(name);
        const std::size_t ln =
            edgelock::lock_key(n, edgelock::lock_key_kind::lock, lock, sizeof lock);
        const std::size_t fn =
            edgelock::lock_key(n, edgelock::lock_key_kind::fence_counter, fence, sizeof fence);
        REQUIRE(ln > 0);
        REQUIRE(fn > 0);
        INFO(name);
        CHECK(c.command({"CLUSTER", "KEYSLOT", std::string(lock, ln)}).integer ==
              c.command({"CLUSTER", "KEYSLOT", std::string(fence, fn)}).integer);
        char mark[edgelock::lock_max_name + 16];
        const std::size_t mn =
            edgelock::lock_key(n, edgelock::lock_key_kind::renewal_mark, mark, sizeof mark);
        REQUIRE(mn > 0);
        CHECK(c.command({"CLUSTER", "KEYSLOT", std::string(lock, ln)}).integer ==
              c.command({"CLUSTER", "KEYSLOT", std::string(mark, mn)}).integer);
        const std::size_t rn =
            edgelock::lock_key(n, edgelock::lock_key_kind::release_mark, mark, sizeof mark);
        REQUIRE(rn > 0);
        CHECK(c.command({"CLUSTER", "KEYSLOT", std::string(lock, ln)}).integer ==
              c.command({"CLUSTER", "KEYSLOT", std::string(mark, rn)}).integer);
    }
}
