// Who holds a lock: the record the agent writes beside it (the library's
// lock_options::holder: this host, a pid and a label), and what a node says
// of a lock's keys, for status, list and the waiting status line.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "edgelock/time.hpp"
#include "json_writer.hpp"

namespace edgelock_cli {

// The record's text for this agent: "host=H pid=P label=L". The pid is the
// agent's for run (the process to signal), the calling shell's for acquire
// (the agent leaves; the script holds the lock). The label is --label, else
// the command's name, or "acquire".
std::string holder_text();

struct holder_info {
    std::string host;
    std::string pid;
    std::string label;
    std::uint64_t since_s = 0;  // the server's clock when it was taken
};

// What one node says of the lock named `name` (one request: a script that
// reads the key, its holder record, its fencing counter and the limit of a
// semaphore of that name).
struct key_view {
    bool answered = false;
    std::string error;                // when not answered, or the reply made no sense
    std::string type;                 // "none", "string", "hash", ...
    long long ttl_ms = -2;            // PTTL: -2 no key, -1 no expiry
    std::string token;                // a string key's value
    std::vector<std::string> owners;  // a hash key's fields (reentrant owners)
    bool has_counter = false;
    std::string counter;  // the fencing counter
    bool has_holder = false;
    holder_info holder;  // only when the record belongs to the key's holder
    int permits = 0;     // a semaphore of the name: its limit (0: none)
};

// Reads a holder record as the library stores it (read_holder_record) into
// out when it belongs to `owner` (a record outlives a key deleted by hand).
bool read_holder(const std::string& record, const std::string& owner, holder_info& out);

// Asks node `node` about `name` until `deadline`. Never fails the caller:
// out.answered says whether the node did.
void inspect_key(std::uint8_t node, const std::string& name, edgelock::instant deadline,
                 key_view& out);

// "gw-17 pid 4242 (nightly) since 2026-11-27 15:02:11 UTC, for 3h12m"
std::string describe_holder(const holder_info& h, std::time_t now);
// "3h12m", "5m10s", "42s", "2d3h"
std::string held_for(std::uint64_t seconds);
// The holder as the next value of w: an object, or null.
void json_holder(json_writer& w, const key_view& k);

}  // namespace edgelock_cli
