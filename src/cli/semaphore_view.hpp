// What the nodes say of a semaphore (lock_options::permits): every permit's
// holder, for status and list, as text for an operator or JSON for a script.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "holder.hpp"

namespace edgelock_cli {

// One permit on one node.
struct permit_on_node {
    bool held = false;
    long long ttl_ms = -2;
    std::string token;
    bool has_holder = false;
    holder_info holder;  // only when the record belongs to the permit's holder
};

// One node's answer: every permit of the semaphore, in order.
struct semaphore_node {
    bool answered = false;
    std::string error;
    int limit = 0;  // the node's (0: none there)
    std::vector<permit_on_node> permits;
};

// A semaphore of `limit` permits across the nodes.
struct semaphore_view {
    std::string name;
    int limit = 0;
    std::vector<semaphore_node> nodes;
};

// Asks every node about the semaphore `name`, whose limit `views` (the
// nodes' inspect_key answers, in node order) say: one request per node that
// has one. False when no node has a limit: not a semaphore.
bool inspect_semaphore(const std::string& name, const std::vector<key_view>& views,
                       edgelock::instant deadline, semaphore_view& out);

// The permits held on at least `quorum` nodes.
unsigned permits_held(const semaphore_view& s, unsigned quorum);

// status KEY for a semaphore: a line, then one per permit and one per node
// in trouble; or one JSON object.
void print_semaphore_status(const semaphore_view& s, unsigned quorum, std::time_t now);
// list: its line ("NAME  semaphore, ..."), or its JSON object.
std::string semaphore_line(const semaphore_view& s, unsigned quorum, std::time_t now);
json_writer semaphore_json(const semaphore_view& s, unsigned quorum);

// Whether key is a semaphore's permit key (a companion, not listed), and
// whether it is a semaphore's permits hash (name: the semaphore's name).
bool is_permit_key(const std::string& key);
bool is_permits_hash(const std::string& key, std::string& name);

}  // namespace edgelock_cli
