// edgelock status KEY and edgelock list [PATTERN]: what the nodes say of a
// lock, and which locks they hold, for an operator (text) or a script (--json).
#include <cstdio>
#include <ctime>
#include <set>
#include <string>
#include <vector>

#include "agent.hpp"
#include "edgelock/lock.hpp"
#include "holder.hpp"
#include "messages.hpp"
#include "semaphore_view.hpp"
#include "terminal_text.hpp"

namespace edgelock_cli {

using namespace edgelock;

namespace {

// Each look at a node has this long; a list scans for at most this many
// keys (SCAN with a small COUNT: a reply must fit the client's 2 KB buffer).
constexpr duration look_time = duration::seconds(2);
constexpr std::size_t list_max_keys = 1000;
constexpr unsigned list_max_scans = 1000;

bool holds(const key_view& k) {
    return k.answered && k.error.empty() && k.ttl_ms != -2;
}

std::string state_of(const key_view& k) {
    if (!k.answered) {
        return "unreachable";
    }
    if (!k.error.empty()) {
        return "error";
    }
    return holds(k) ? "held" : "free";
}

// The node's line of status, after "  URL: ".
std::string describe_node(const key_view& k, std::time_t now) {
    if (!k.error.empty()) {
        return k.error;
    }
    if (!holds(k)) {
        return k.has_counter ? "free, fencing counter " + k.counter : "free";
    }
    std::string s = "held";
    if (k.type == "hash") {
        s += " (reentrant)";
    } else if (k.type != "string") {
        s += " (a " + k.type + ", not a lock)";
    }
    s += k.ttl_ms >= 0 ? ", ttl " + std::to_string(k.ttl_ms) + " ms" : std::string(", no expiry");
    if (k.type == "string") {
        s += ", token " + k.token;
    }
    for (std::size_t i = 0; i < k.owners.size(); ++i) {
        s += (i == 0 ? ", owners " : ", ") + k.owners[i];
    }
    if (k.has_counter) {
        s += ", fencing counter " + k.counter;
    }
    if (k.has_holder) {
        s += ", by " + describe_holder(k.holder, now);
    }
    return s;
}

void json_node(json_writer& w, std::size_t i, const key_view& k) {
    w.begin_object().key("node").string(node_shown(i)).key("state").string(state_of(k));
    if (!k.error.empty()) {
        w.key("error").string(k.error);
    }
    if (holds(k)) {
        w.key("type").string(k.type).key("ttl_ms").integer(k.ttl_ms).key("token");
        if (k.type == "string") {
            w.string(k.token);
        } else {
            w.null();
        }
        if (k.type == "hash") {
            w.key("owners").begin_array();
            for (const std::string& owner : k.owners) {
                w.string(owner);
            }
            w.end_array();
        }
        w.key("holder");
        json_holder(w, k);
    }
    // Any client can write the counter: a number only when it is one.
    w.key("fencing_counter");
    if (k.has_counter) {
        w.integer_text(k.counter);
    } else {
        w.null();
    }
    w.end_object();
}

// A key edgelock writes beside a lock (a renewal or release mark, a fencing
// counter), which a list must not show as a lock of its own.
bool is_companion(const std::string& key) {
    char k[lock_key_capacity];
    for (const std::size_t cut : {std::size_t{4}, std::size_t{6}}) {
        if (key.size() > cut) {
            const std::string name = key.substr(0, key.size() - cut);
            const lock_key_kind kind =
                cut == 4 ? lock_key_kind::renewal_mark : lock_key_kind::release_mark;
            const std::size_t n = lock_key(str_view(name.data(), name.size()), kind, k, sizeof k);
            if (n == key.size() && key.compare(0, n, k, n) == 0) {
                return true;
            }
        }
    }
    static const std::string fence = ":fence";
    if (key.size() <= fence.size() ||
        key.compare(key.size() - fence.size(), fence.size(), fence) != 0) {
        return false;
    }
    const bool braced = key[0] == '{' && key[key.size() - fence.size() - 1] == '}';
    const std::string name = braced ? key.substr(1, key.size() - fence.size() - 2)
                                    : key.substr(0, key.size() - fence.size());
    const std::size_t n =
        lock_key(str_view(name.data(), name.size()), lock_key_kind::fence_counter, k, sizeof k);
    return n == key.size() && key.compare(0, n, k, n) == 0;
}

struct scan_reply {
    bool answered = false;
    bool ok = false;
    std::string cursor;
    std::vector<std::string> keys;
    std::string error;
};

void take_scan(void* ctx, const resp_node* n, std::size_t count) {
    scan_reply& r = *static_cast<scan_reply*>(ctx);
    const std::size_t i = count == 0 ? 0 : skip_attributes(n, count, 0);
    if (count == 0 || i >= count) {
        return;
    }
    r.answered = true;
    if (n[i].is_error()) {
        r.error = text(n[i].text);
        return;
    }
    if (n[i].type != resp_type::array || n[i].count != 2 || i + 2 >= count ||
        !n[i + 1].has_text() || !n[i + 2].is_aggregate()) {
        r.error = "unexpected reply to SCAN";
        return;
    }
    r.cursor = text(n[i + 1].text);
    for (std::size_t j = i + 3; j < n[i + 2].end && j < count; ++j) {
        if (n[j].has_text()) {
            r.keys.push_back(text(n[j].text));
        }
    }
    r.ok = true;
}

// SCAN MATCH pattern on one node, bounded; false when the node failed.
bool scan_node(std::uint8_t node, const std::string& pattern, std::set<std::string>& keys,
               bool& truncated, std::string& error) {
    std::string cursor = "0";
    for (unsigned calls = 0; calls < list_max_scans; ++calls) {
        scan_reply r;
        const str_view args[] = {"SCAN",  str_view(cursor.data(), cursor.size()),
                                 "MATCH", str_view(pattern.data(), pattern.size()),
                                 "COUNT", "8"};
        driver.command(node, args, 6, port::now() + look_time, take_scan, &r);
        if (!r.ok) {
            error = !r.answered
                        ? std::string("unreachable (") + describe(driver.node(node).error) + ")"
                        : r.error;
            return false;
        }
        for (const std::string& k : r.keys) {
            if (keys.size() >= list_max_keys) {
                truncated = true;
                return true;
            }
            keys.insert(k);
        }
        cursor = r.cursor;
        if (cursor == "0") {
            return true;
        }
    }
    truncated = true;
    return true;
}

}  // namespace

int status_command(client_lock& l) {
    const std::time_t now = std::time(nullptr);
    unsigned holding = 0;
    unsigned answered = 0;
    std::vector<key_view> views(driver.node_count());
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        inspect_key(i, opt.key, port::now() + look_time, views[i]);
        answered += views[i].answered && views[i].error.empty() ? 1U : 0U;
        holding += holds(views[i]) ? 1U : 0U;
    }
    const unsigned quorum = l.machine().quorum();
    semaphore_view sem;
    if (holding == 0 && inspect_semaphore(opt.key, views, port::now() + look_time, sem)) {
        // No lock of that name, a semaphore: every permit's holder.
        print_semaphore_status(sem, quorum, now);
        std::fflush(stdout);
        return answered < quorum ? unavailable(l) : exit_ok;
    }
    if (opt.json) {
        json_writer w;
        w.begin_object().key("key").string(opt.key).key("held").boolean(holding >= quorum);
        w.key("holding").integer(holding).key("node_count").integer(driver.node_count());
        w.key("quorum").integer(quorum).key("nodes").begin_array();
        for (std::size_t i = 0; i < views.size(); ++i) {
            json_node(w, i, views[i]);
        }
        w.end_array().end_object();
        std::printf("%s\n", w.text().c_str());
    } else {
        std::printf("%s: %s (%u of %u nodes hold it, quorum %u)\n", terminal_text(opt.key).c_str(),
                    holding >= quorum ? "held" : "free", holding, driver.node_count(), quorum);
        for (std::size_t i = 0; i < views.size(); ++i) {
            std::printf("  %s: %s\n", node_shown(i).c_str(),
                        terminal_text(describe_node(views[i], now)).c_str());
        }
    }
    std::fflush(stdout);
    return answered < quorum ? unavailable(l) : exit_ok;
}

int list_command() {
    const std::time_t now = std::time(nullptr);
    std::set<std::string> keys;
    bool truncated = false;
    unsigned scanned = 0;
    // A semaphore's keys start with '{' when its name has no tag: its
    // permits hash is looked for as such too.
    const std::string semaphores = "{" + opt.key + "}:permits";
    for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
        std::string error;
        if (scan_node(i, opt.key, keys, truncated, error) &&
            scan_node(i, semaphores, keys, truncated, error)) {
            ++scanned;
        } else {
            say(1, "%s: %s", node_shown(i).c_str(), terminal_text(error).c_str());
        }
    }
    const unsigned quorum = driver.node_count() / 2U + 1;
    json_writer json;
    json.begin_object().key("locks").begin_array();
    std::set<std::string> listed_semaphores;
    for (const std::string& key : keys) {
        std::string name;
        if (is_permits_hash(key, name)) {
            std::vector<key_view> views(driver.node_count());
            for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
                inspect_key(i, name, port::now() + look_time, views[i]);
            }
            semaphore_view sem;
            if (listed_semaphores.insert(name).second &&
                inspect_semaphore(name, views, port::now() + look_time, sem)) {
                if (opt.json) {
                    json.value(semaphore_json(sem, quorum));
                } else {
                    std::printf("%s\n", terminal_text(semaphore_line(sem, quorum, now)).c_str());
                }
            }
            continue;
        }
        if (key.size() > lock_max_name || is_companion(key) || is_permit_key(key)) {
            continue;
        }
        // A lock is a string (plain, fenced) or a hash (reentrant) with a ttl.
        std::vector<key_view> views(driver.node_count());
        unsigned holding = 0;
        const key_view* shown = nullptr;
        for (std::uint8_t i = 0; i < driver.node_count(); ++i) {
            inspect_key(i, key, port::now() + look_time, views[i]);
            const key_view& k = views[i];
            if (holds(k) && k.ttl_ms >= 0 && (k.type == "string" || k.type == "hash")) {
                ++holding;
                shown = shown != nullptr && shown->has_holder ? shown : &k;
            }
        }
        if (shown == nullptr) {
            continue;
        }
        if (opt.json) {
            json.begin_object().key("key").string(key).key("held").boolean(holding >= quorum);
            json.key("holding").integer(holding).key("ttl_ms").integer(shown->ttl_ms).key("token");
            if (shown->type == "string") {
                json.string(shown->token);
            } else {
                json.null();
            }
            json.key("holder");
            json_holder(json, *shown);
            json.end_object();
        } else {
            std::string who = shown->has_holder ? "by " + describe_holder(shown->holder, now)
                              : shown->type == "string" ? "token " + shown->token + ", no record"
                                                        : "reentrant, no record";
            std::printf("%s  %s on %u/%u nodes, ttl %lld ms, %s\n", terminal_text(key).c_str(),
                        holding >= quorum ? "held" : "partly held", holding, driver.node_count(),
                        shown->ttl_ms, terminal_text(who).c_str());
        }
    }
    if (opt.json) {
        json.end_array().key("truncated").boolean(truncated).end_object();
        std::printf("%s\n", json.text().c_str());
    } else if (truncated) {
        std::printf("(more keys match: stopped after %zu; narrow the PATTERN)\n", list_max_keys);
    }
    std::fflush(stdout);
    return scanned == 0 ? exit_unavailable : exit_ok;
}

}  // namespace edgelock_cli
