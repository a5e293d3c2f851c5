// INFO text: the fields a lock needs (role, master, maxmemory, policy), real
// Redis 7.0 replies, malformed and cut-off text, and INFO replies as RESP2
// bulk strings and RESP3 verbatim strings.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/detail/server_info.hpp"
#include "edgelock/resp_decoder.hpp"

using edgelock::resp_node;
using edgelock::str_view;
using edgelock::detail::parse_server_info;
using edgelock::detail::server_info;
using edgelock::detail::server_info_text;
using edgelock::detail::server_may_evict;
using edgelock::detail::server_role;

namespace {

std::string str(str_view v) {
    return v.empty() ? std::string() : std::string(v.data, v.size);
}

// The text in a buffer of exactly its size (no terminator after it), so a
// read past the end is a read past the allocation.
struct exact_text {
    std::unique_ptr<char[]> bytes;
    std::size_t size;

    explicit exact_text(const std::string& s) : bytes(new char[s.size()]), size(s.size()) {
        s.copy(bytes.get(), s.size());
    }
    str_view view() const { return {bytes.get(), size}; }
};

server_info parse(const std::string& s, exact_text& keep) {
    keep = exact_text(s);
    return parse_server_info(keep.view());
}

const char* role_name(server_role r) {
    switch (r) {
    case server_role::unknown:
        return "unknown";
    case server_role::master:
        return "master";
    case server_role::replica:
        return "replica";
    }
    return "?";
}

// `INFO replication` and `INFO memory` of redis-server 7.0.15, verbatim.
const std::string replica_info =
    "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:16399\r\n"
    "master_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\nmaster_sync_in_progress:0\r\n"
    "slave_read_repl_offset:1\r\nslave_repl_offset:1\r\nmaster_link_down_since_seconds:-1\r\n"
    "slave_priority:100\r\nslave_read_only:1\r\nreplica_announced:1\r\nconnected_slaves:0\r\n"
    "master_failover_state:no-failover\r\n"
    "master_replid:2791b0b5c02129d54c92efb2d2874fcb3bc235c5\r\n"
    "master_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\n"
    "second_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\n"
    "repl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n";

const std::string master_info =
    "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"
    "master_replid:0b4e234043c4432c5359ca9ecf87ac85fb5074c2\r\n"
    "master_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\n"
    "second_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\n"
    "repl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n";

std::string memory_info(const std::string& maxmemory, const std::string& policy) {
    return "# Memory\r\nused_memory:939352\r\nused_memory_human:917.34K\r\n"
           "used_memory_rss:12288000\r\nused_memory_rss_human:11.72M\r\n"
           "used_memory_peak:939352\r\nused_memory_peak_human:917.34K\r\n"
           "used_memory_peak_perc:100.00%\r\nused_memory_overhead:876392\r\n"
           "used_memory_startup:876192\r\nused_memory_dataset:62960\r\n"
           "used_memory_dataset_perc:99.68%\r\nallocator_allocated:1735904\r\n"
           "allocator_active:1880064\r\nallocator_resident:4550656\r\n"
           "total_system_memory:25276026880\r\ntotal_system_memory_human:23.54G\r\n"
           "used_memory_lua:32768\r\nused_memory_vm_eval:32768\r\nused_memory_lua_human:32.00K\r\n"
           "used_memory_scripts_eval:0\r\nnumber_of_cached_scripts:0\r\n"
           "number_of_functions:0\r\nnumber_of_libraries:0\r\nused_memory_vm_functions:33792\r\n"
           "used_memory_vm_total:66560\r\nused_memory_vm_total_human:65.00K\r\n"
           "used_memory_functions:200\r\nused_memory_scripts:200\r\n"
           "used_memory_scripts_human:200B\r\nmaxmemory:" +
           maxmemory + "\r\nmaxmemory_human:0B\r\nmaxmemory_policy:" + policy +
           "\r\nallocator_frag_ratio:1.08\r\nallocator_frag_bytes:144160\r\n"
           "allocator_rss_ratio:2.42\r\nallocator_rss_bytes:2670592\r\n"
           "rss_overhead_ratio:2.70\r\nrss_overhead_bytes:7737344\r\n"
           "mem_fragmentation_ratio:13.38\r\nmem_fragmentation_bytes:11369344\r\n"
           "mem_not_counted_for_evict:0\r\nmem_replication_backlog:0\r\n"
           "mem_total_replication_buffers:0\r\nmem_clients_slaves:0\r\nmem_clients_normal:0\r\n"
           "mem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:jemalloc-5.3.0\r\n"
           "active_defrag_running:0\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n";
}

struct info_case {
    const char* what;
    std::string text;
    server_role role;
    std::string master_host;
    std::string master_port;
    bool has_maxmemory;
    std::uint64_t maxmemory;
    std::string policy;
    bool may_evict;
};

const std::vector<info_case>& info_cases() {
    static const std::vector<info_case> cases = {
        // Real replies.
        {"Redis 7.0 master", master_info, server_role::master, "", "", false, 0, "", false},
        {"Redis 7.0 replica", replica_info, server_role::replica, "127.0.0.1", "16399", false, 0,
         "", false},
        {"Redis 7.0 memory, defaults", memory_info("0", "noeviction"), server_role::unknown, "", "",
         true, 0, "noeviction", false},
        {"Redis 7.0 memory, 100mb allkeys-lru", memory_info("104857600", "allkeys-lru"),
         server_role::unknown, "", "", true, 104857600, "allkeys-lru", true},
        {"Redis 7.0 memory, 100mb volatile-ttl", memory_info("104857600", "volatile-ttl"),
         server_role::unknown, "", "", true, 104857600, "volatile-ttl", true},
        {"Redis 7.0 memory, 100mb noeviction", memory_info("104857600", "noeviction"),
         server_role::unknown, "", "", true, 104857600, "noeviction", false},
        {"Redis 7.0 memory, no limit, allkeys-lru", memory_info("0", "allkeys-lru"),
         server_role::unknown, "", "", true, 0, "allkeys-lru", false},
        {"both sections in one text", master_info + "\r\n" + memory_info("1", "allkeys-random"),
         server_role::master, "", "", true, 1, "allkeys-random", true},
        // Every policy Redis 7 has.
        {"volatile-lru", "maxmemory:5\r\nmaxmemory_policy:volatile-lru\r\n", server_role::unknown,
         "", "", true, 5, "volatile-lru", true},
        {"volatile-lfu", "maxmemory:5\r\nmaxmemory_policy:volatile-lfu\r\n", server_role::unknown,
         "", "", true, 5, "volatile-lfu", true},
        {"volatile-random", "maxmemory:5\r\nmaxmemory_policy:volatile-random\r\n",
         server_role::unknown, "", "", true, 5, "volatile-random", true},
        {"allkeys-lfu", "maxmemory:5\r\nmaxmemory_policy:allkeys-lfu\r\n", server_role::unknown, "",
         "", true, 5, "allkeys-lfu", true},
        {"a policy of a future server", "maxmemory:5\r\nmaxmemory_policy:allkeys-new\r\n",
         server_role::unknown, "", "", true, 5, "allkeys-new", true},
        {"a policy without its prefix", "maxmemory:5\r\nmaxmemory_policy:allkeys\r\n",
         server_role::unknown, "", "", true, 5, "allkeys", false},
        {"upper case is another policy", "maxmemory:5\r\nmaxmemory_policy:ALLKEYS-LRU\r\n",
         server_role::unknown, "", "", true, 5, "ALLKEYS-LRU", false},
        {"policy before maxmemory", "maxmemory_policy:allkeys-lru\r\nmaxmemory:7\r\n",
         server_role::unknown, "", "", true, 7, "allkeys-lru", true},
        {"a policy without maxmemory", "maxmemory_policy:allkeys-lru\r\n", server_role::unknown, "",
         "", false, 0, "allkeys-lru", false},
        {"the largest maxmemory", "maxmemory:18446744073709551615\r\n", server_role::unknown, "",
         "", true, UINT64_MAX, "", false},
        // Line ends and sections.
        {"bare LF line ends", "# Replication\nrole:slave\nmaster_host:h\nmaster_port:1\n",
         server_role::replica, "h", "1", false, 0, "", false},
        {"mixed line ends", "role:master\nmaxmemory:3\r\nmaxmemory_policy:volatile-lru\n",
         server_role::master, "", "", true, 3, "volatile-lru", true},
        {"empty lines", "\r\n\r\nrole:master\r\n\r\n", server_role::master, "", "", false, 0, "",
         false},
        {"a header that looks like a field", "# role:slave\r\nrole:master\r\n", server_role::master,
         "", "", false, 0, "", false},
        {"a field given twice keeps the last", "role:slave\r\nrole:master\r\n", server_role::master,
         "", "", false, 0, "", false},
        {"role:replica", "role:replica\r\n", server_role::replica, "", "", false, 0, "", false},
        {"a replica without its master", "role:slave\r\n", server_role::replica, "", "", false, 0,
         "", false},
        // Nothing to read.
        {"empty", "", server_role::unknown, "", "", false, 0, "", false},
        {"only a header", "# Replication\r\n", server_role::unknown, "", "", false, 0, "", false},
        {"an unknown role", "role:sentinel\r\n", server_role::unknown, "", "", false, 0, "", false},
        {"a role in another case", "role:Master\r\n", server_role::unknown, "", "", false, 0, "",
         false},
        {"a role with a space", "role:master \r\n", server_role::unknown, "", "", false, 0, "",
         false},
        {"a space before the colon", "role :master\r\n", server_role::unknown, "", "", false, 0, "",
         false},
        {"an empty role", "role:\r\n", server_role::unknown, "", "", false, 0, "", false},
        {"a field without a colon", "role\r\nmaxmemory\r\n", server_role::unknown, "", "", false, 0,
         "", false},
        {"a field name that only starts like one", "roles:slave\r\nmaxmemory_human:5\r\n",
         server_role::unknown, "", "", false, 0, "", false},
        {"a CR alone does not end a line", "role:slave\rmaxmemory:5\r\n", server_role::unknown, "",
         "", false, 0, "", false},
        {"a NUL in the value", std::string("role:sla\0ve\r\n", 13), server_role::unknown, "", "",
         false, 0, "", false},
        // Malformed maxmemory: unknown, and no warning whatever the policy.
        {"maxmemory empty", "maxmemory:\r\nmaxmemory_policy:allkeys-lru\r\n", server_role::unknown,
         "", "", false, 0, "allkeys-lru", false},
        {"maxmemory negative", "maxmemory:-1\r\nmaxmemory_policy:allkeys-lru\r\n",
         server_role::unknown, "", "", false, 0, "allkeys-lru", false},
        {"maxmemory with a sign", "maxmemory:+5\r\nmaxmemory_policy:allkeys-lru\r\n",
         server_role::unknown, "", "", false, 0, "allkeys-lru", false},
        {"maxmemory with a unit", "maxmemory:100mb\r\nmaxmemory_policy:allkeys-lru\r\n",
         server_role::unknown, "", "", false, 0, "allkeys-lru", false},
        {"maxmemory past 64 bits",
         "maxmemory:18446744073709551616\r\nmaxmemory_policy:allkeys-lru\r\n", server_role::unknown,
         "", "", false, 0, "allkeys-lru", false},
        {"maxmemory of 30 digits",
         "maxmemory:999999999999999999999999999999\r\nmaxmemory_policy:allkeys-lru\r\n",
         server_role::unknown, "", "", false, 0, "allkeys-lru", false},
        {"a bad maxmemory after a good one",
         "maxmemory:5\r\nmaxmemory:x\r\nmaxmemory_policy:allkeys-lru\r\n", server_role::unknown, "",
         "", false, 0, "allkeys-lru", false},
        // Cut off: the last line without its line end is not read.
        {"cut inside role", "# Replication\r\nrole:sla", server_role::unknown, "", "", false, 0, "",
         false},
        {"cut before role's CRLF", "role:slave", server_role::unknown, "", "", false, 0, "", false},
        {"cut between CR and LF", "role:slave\r", server_role::unknown, "", "", false, 0, "",
         false},
        {"cut inside maxmemory", "maxmemory_policy:allkeys-lru\r\nmaxmemory:10",
         server_role::unknown, "", "", false, 0, "allkeys-lru", false},
        {"cut inside the policy", "maxmemory:10\r\nmaxmemory_policy:allkeys-l",
         server_role::unknown, "", "", true, 10, "", false},
        {"cut after a whole line", "role:master\r\nmaster_host:h", server_role::master, "", "",
         false, 0, "", false},
    };
    return cases;
}

}  // namespace

TEST_CASE("server info: the fields a lock needs", "[server_info]") {
    for (const info_case& c : info_cases()) {
        INFO(c.what);
        exact_text keep("");
        const server_info got = parse(c.text, keep);
        CHECK(role_name(got.role) == std::string(role_name(c.role)));
        CHECK(str(got.master_host) == c.master_host);
        CHECK(str(got.master_port) == c.master_port);
        CHECK(got.has_maxmemory == c.has_maxmemory);
        CHECK(got.maxmemory == c.maxmemory);
        CHECK(str(got.maxmemory_policy) == c.policy);
        CHECK(server_may_evict(got) == c.may_evict);
        // The views point into the text.
        for (str_view v : {got.master_host, got.master_port, got.maxmemory_policy}) {
            if (!v.empty()) {
                CHECK(v.data >= keep.bytes.get());
                CHECK(v.data + v.size <= keep.bytes.get() + keep.size);
            }
        }
    }
}

TEST_CASE("server info: every prefix reads as its whole lines", "[server_info]") {
    // A text cut anywhere says what its complete lines say, never more.
    for (const std::string& text :
         {replica_info, master_info, memory_info("104857600", "allkeys-lru")}) {
        for (std::size_t cut = 0; cut <= text.size(); ++cut) {
            const std::string prefix = text.substr(0, cut);
            const std::size_t last_lf = prefix.rfind('\n');
            const std::string whole =
                last_lf == std::string::npos ? "" : prefix.substr(0, last_lf + 1);
            exact_text a("");
            exact_text b("");
            const server_info got = parse(prefix, a);
            const server_info want = parse(whole, b);
            INFO("cut at " << cut << " of " << text.size());
            REQUIRE(got.role == want.role);
            REQUIRE(str(got.master_host) == str(want.master_host));
            REQUIRE(str(got.master_port) == str(want.master_port));
            REQUIRE(got.has_maxmemory == want.has_maxmemory);
            REQUIRE(got.maxmemory == want.maxmemory);
            REQUIRE(str(got.maxmemory_policy) == str(want.maxmemory_policy));
        }
    }
}

TEST_CASE("server info: the text of an INFO reply", "[server_info]") {
    struct reply_case {
        const char* what;
        std::string wire;
        std::string text;  // what server_info_text gives
    };
    const std::string body = "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\n";
    const std::string len = std::to_string(body.size());
    const std::string verbatim_len = std::to_string(body.size() + 4);
    const std::vector<reply_case> cases = {
        {"RESP2 bulk string", "$" + len + "\r\n" + body + "\r\n", body},
        {"RESP3 verbatim string (txt:)", "=" + verbatim_len + "\r\ntxt:" + body + "\r\n", body},
        {"RESP3 verbatim string (mkd:)", "=" + verbatim_len + "\r\nmkd:" + body + "\r\n", body},
        {"an attribute before the bulk string",
         "|1\r\n+key\r\n+value\r\n$" + len + "\r\n" + body + "\r\n", body},
        {"an empty bulk string", "$0\r\n\r\n", ""},
        {"a simple string", "+role:slave\r\n", ""},
        {"an error (NOPERM)", "-NOPERM this user has no permissions to run the 'info' command\r\n",
         ""},
        {"a bulk error", "!10\r\nrole:slave\r\n", ""},
        {"a null", "_\r\n", ""},
        {"a RESP2 null bulk", "$-1\r\n", ""},
        {"an integer", ":1\r\n", ""},
        {"an array holding the text", "*1\r\n$" + len + "\r\n" + body + "\r\n", ""},
    };
    for (const reply_case& c : cases) {
        INFO(c.what);
        resp_node nodes[8];
        const edgelock::resp_result r =
            edgelock::resp_decode_whole(c.wire.data(), c.wire.size(), nodes, 8);
        REQUIRE(r.status == edgelock::resp_status::complete);
        const str_view text = server_info_text(nodes, r.nodes);
        CHECK(str(text) == c.text);
        const server_info info = parse_server_info(text);
        CHECK((info.role == server_role::replica) == !c.text.empty());
    }
    CHECK(server_info_text(nullptr, 0).empty());
    resp_node none[1];
    CHECK(server_info_text(none, 0).empty());
}

TEST_CASE("server info: the version decides the one-command acquire and tracking",
          "[server_info]") {
    struct version_case {
        const char* text;
        const char* version;
        bool set_nx_get;
        bool tracks_keys;  // CLIENT TRACKING: Redis 6 and later
    };
    const version_case cases[] = {
        // The head of redis-server 7.0.15's `INFO server`.
        {"# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n",
         "7.0.15", true, true},
        {"redis_version:7.2.4\r\nvalkey_version:8.0.1\r\nserver_name:valkey\r\n", "7.2.4", true,
         true},
        {"redis_version:10.0.0\r\n", "10.0.0", true, true},
        {"redis_version:6.2.14\r\n", "6.2.14", false, true},
        {"redis_version:5.0.7\r\n", "5.0.7", false, false},
        {"redis_version:7\r\n", "7", false, false},          // no dot: not a version
        {"redis_version:x.0.0\r\n", "x.0.0", false, false},  // not a number
        {"redis_version:.7.0\r\n", ".7.0", false, false},    // no major
        {"redis_version:99999999999999999999.0\r\n", "99999999999999999999.0", false, false},
        {"redis_version:7.0.15", "", false, false},  // cut off: not read
        {"# Server\r\nredis_mode:standalone\r\n", "", false, false},
        {"", "", false, false},
    };
    for (const version_case& c : cases) {
        INFO(c.text);
        exact_text keep("");
        const server_info got = parse(c.text, keep);
        CHECK(str(got.redis_version) == c.version);
        CHECK(edgelock::detail::server_takes_set_nx_get(got) == c.set_nx_get);
        CHECK(edgelock::detail::server_tracks_keys(got) == c.tracks_keys);
    }
}

TEST_CASE("server info: what the server is and its own version, Redis or Valkey", "[server_info]") {
    // INFO: Valkey 8 pins redis_version at 7.2.4 and names itself.
    struct info_case {
        const char* text;
        const char* server;
        const char* version;
        const char* redis_version;
        bool set_nx_get;
        bool tracks_keys;
    };
    const info_case infos[] = {
        {"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n",
         "valkey", "8.0.1", "7.2.4", true, true},
        {"valkey_version:8.1.0\r\nserver_name:valkey\r\nredis_version:7.2.4\r\n", "valkey", "8.1.0",
         "7.2.4", true, true},
        // A Valkey whose pinned version would fail the gates still passes them.
        {"redis_version:5.0.0\r\nserver_name:valkey\r\nvalkey_version:9.0.0\r\n", "valkey", "9.0.0",
         "5.0.0", true, true},
        {"redis_version:7.0.15\r\n", "redis", "7.0.15", "7.0.15", true, true},
        {"redis_version:6.2.14\r\n", "redis", "6.2.14", "6.2.14", false, true},
        // Another server that speaks Redis: judged by its Redis version.
        {"redis_version:6.0.0\r\nserver_name:keydb\r\n", "keydb", "6.0.0", "6.0.0", false, true},
        {"redis_mode:standalone\r\n", "", "", "", false, false},
    };
    for (const info_case& c : infos) {
        INFO(c.text);
        exact_text keep("");
        const server_info got = parse(c.text, keep);
        CHECK(str(got.server) == c.server);
        CHECK(str(got.version) == c.version);
        CHECK(str(got.redis_version) == c.redis_version);
        CHECK(edgelock::detail::server_takes_set_nx_get(got) == c.set_nx_get);
        CHECK(edgelock::detail::server_tracks_keys(got) == c.tracks_keys);
    }

    // HELLO: "server" and "version", Valkey's own version.
    auto b = [](const std::string& s) {
        return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
    };
    struct hello_case {
        const char* server;
        const char* version;
        const char* redis_version;
    };
    const hello_case hellos[] = {
        {"valkey", "8.0.1", ""},  // HELLO does not give Valkey's Redis version
        {"redis", "7.0.15", "7.0.15"},
    };
    for (const hello_case& c : hellos) {
        INFO(c.server);
        const std::string wire = "%3\r\n" + b("server") + b(c.server) + b("version") +
                                 b(c.version) + b("role") + b("master");
        resp_node nodes[16];
        const edgelock::resp_result r =
            edgelock::resp_decode_whole(wire.data(), wire.size(), nodes, 16);
        REQUIRE(r.status == edgelock::resp_status::complete);
        const server_info h = edgelock::detail::parse_hello_reply(nodes, r.nodes);
        CHECK(str(h.server) == c.server);
        CHECK(str(h.version) == c.version);
        CHECK(str(h.redis_version) == c.redis_version);
        CHECK(edgelock::detail::server_takes_set_nx_get(h));
        CHECK(h.role == server_role::master);
    }
}

TEST_CASE("server info: HELLO's and CONFIG GET's pairs, whatever their shape", "[server_info]") {
    struct pairs_case {
        const char* what;
        std::string wire;
        server_role role;
        const char* version;
        const char* policy;  // from the CONFIG reading of the same reply
        std::uint64_t maxmemory;
    };
    auto b = [](const std::string& s) {
        return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
    };
    const std::string hello = b("server") + b("redis") + b("version") + b("7.0.15") + b("proto") +
                              ":3\r\n" + b("mode") + b("standalone") + b("role") + b("replica") +
                              b("modules") + "*0\r\n";
    const std::string config = b("maxmemory") + b("1048576") + b("maxmemory-policy") +
                               b("allkeys-lru") + b("maxmemory-samples") + b("5");
    const std::vector<pairs_case> cases = {
        {"HELLO 3: a map", "%6\r\n" + hello, server_role::replica, "7.0.15", "", 0},
        {"HELLO 2: an array of pairs", "*12\r\n" + hello, server_role::replica, "7.0.15", "", 0},
        {"CONFIG GET, RESP2", "*6\r\n" + config, server_role::unknown, "", "allkeys-lru", 1048576},
        {"CONFIG GET, RESP3", "%3\r\n" + config, server_role::unknown, "", "allkeys-lru", 1048576},
        {"an attribute first", "|1\r\n+k\r\n+v\r\n%3\r\n" + config, server_role::unknown, "",
         "allkeys-lru", 1048576},
        {"an odd array: the last name has no value",
         "*3\r\n" + b("maxmemory-policy") + b("noeviction") + b("maxmemory"), server_role::unknown,
         "", "noeviction", 0},
        {"a value that is not a string is passed over",
         "*4\r\n" + b("role") + "*1\r\n" + b("master") + b("version") + b("6.2.0"),
         server_role::unknown, "6.2.0", "", 0},
        {"an error", "-NOPERM no\r\n", server_role::unknown, "", "", 0},
        {"a string", b("role:master"), server_role::unknown, "", "", 0},
        {"an empty map", "%0\r\n", server_role::unknown, "", "", 0},
        {"a maxmemory that is no number", "*2\r\n" + b("maxmemory") + b("1gb"),
         server_role::unknown, "", "", 0},
    };
    for (const pairs_case& c : cases) {
        INFO(c.what);
        resp_node nodes[32];
        const edgelock::resp_result r =
            edgelock::resp_decode_whole(c.wire.data(), c.wire.size(), nodes, 32);
        REQUIRE(r.status == edgelock::resp_status::complete);
        const server_info h = edgelock::detail::parse_hello_reply(nodes, r.nodes);
        CHECK(h.role == c.role);
        CHECK(str(h.redis_version) == c.version);
        CHECK(h.maxmemory_policy.empty());  // HELLO says nothing of memory
        const server_info m = edgelock::detail::parse_config_reply(nodes, r.nodes);
        CHECK(m.role == server_role::unknown);  // CONFIG says nothing of roles
        CHECK(str(m.maxmemory_policy) == c.policy);
        CHECK(m.maxmemory == c.maxmemory);
    }
    CHECK(edgelock::detail::parse_hello_reply(nullptr, 0).role == server_role::unknown);
}
