// The holder record and the reading of a lock's keys (holder.hpp).
#include "holder.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "agent.hpp"
#include "edgelock/lock.hpp"

namespace edgelock_cli {

using namespace edgelock;

namespace {

// The key's type, its ttl, its value (a hash's fields), the renewal mark
// (which holds the record), the fencing counter and a semaphore's limit of
// the same name: one round trip. Sent as
// EVAL: an operator's look is rare, and leaves no script in the cache.
const char inspect_script[] =
    "local t = redis.call('type', KEYS[1]).ok\n"
    "local v = false\n"
    "if t == 'string' then v = redis.call('get', KEYS[1])\n"
    "elseif t == 'hash' then v = redis.call('hkeys', KEYS[1]) end\n"
    "local c, l = false, false\n"
    "if KEYS[4] then\n"
    "  c = redis.call('get', KEYS[4])\n"
    "  l = redis.pcall('hget', KEYS[3], 'limit')\n"
    "  if type(l) ~= 'string' then l = false end\n"
    "end\n"
    "return {t, redis.call('pttl', KEYS[1]), v, redis.call('get', KEYS[2]), c, l}";

std::string node_text(const resp_node& n) {
    return n.has_text() ? text(n.text) : std::string();
}

void take_inspection(void* ctx, const resp_node* n, std::size_t count) {
    key_view& k = *static_cast<key_view*>(ctx);
    const std::size_t i = count == 0 ? 0 : skip_attributes(n, count, 0);
    if (count == 0 || i >= count) {
        return;
    }
    k.answered = true;
    if (n[i].is_error()) {
        k.error = "the node refused: " + node_text(n[i]);
        return;
    }
    if (n[i].type != resp_type::array || n[i].count != 6) {
        k.error = "unexpected reply";
        return;
    }
    std::size_t at = i + 1;
    const resp_node* e[6];
    for (int j = 0; j < 6; ++j) {
        if (at >= count) {
            k.error = "unexpected reply";
            return;
        }
        e[j] = &n[at];
        at = n[at].end > at ? n[at].end : at + 1;
    }
    k.type = node_text(*e[0]);
    k.ttl_ms = e[1]->type == resp_type::integer ? e[1]->integer : -2;
    if (e[2]->has_text()) {
        k.token = node_text(*e[2]);
    } else if (e[2]->is_aggregate()) {
        for (std::size_t j = static_cast<std::size_t>(e[2] - n) + 1;
             j < e[2]->end && j<count; j = n[j].end> j ? n[j].end : j + 1) {
            // A field '#' and a token is one hold of an owner, not an owner.
            std::string field = node_text(n[j]);
            const bool hold = field.size() == 33 && field[0] == '#' &&
                              field.find_first_not_of("0123456789abcdef", 1) == std::string::npos;
            if (!hold) {
                k.owners.push_back(std::move(field));
            }
        }
    }
    if (e[4]->has_text()) {
        k.has_counter = true;
        k.counter = node_text(*e[4]);
    }
    const std::string limit = node_text(*e[5]);
    if (!limit.empty() && limit.size() <= 3 &&
        limit.find_first_not_of("0123456789") == std::string::npos) {
        k.permits = std::stoi(limit);
    }
    // The record counts only when it names the key's holder: a mark left
    // by an earlier holder (its key deleted by hand, say) names another.
    const std::string record = node_text(*e[3]);
    if (k.type == "string") {
        k.has_holder = read_holder(record, k.token, k.holder);
    }
    for (std::size_t j = 0; j < k.owners.size() && !k.has_holder; ++j) {
        k.has_holder = read_holder(record, k.owners[j], k.holder);
    }
}

}  // namespace

bool read_holder(const std::string& record, const std::string& owner, holder_info& out) {
    holder_record r;
    if (!read_holder_record(str_view(record.data(), record.size()), r) || text(r.owner) != owner) {
        return false;
    }
    holder_info h;
    h.since_s = r.since_s;
    // "host=H pid=P label=L": the label last, as it may hold spaces.
    const std::string t = text(r.text);
    std::size_t p = 0;
    while (p < t.size()) {
        const std::size_t eq = t.find('=', p);
        if (eq == std::string::npos) {
            break;
        }
        const std::string field = t.substr(p, eq - p);
        const std::size_t end = field == "label" ? t.size() : t.find(' ', eq);
        const std::string value =
            t.substr(eq + 1, (end == std::string::npos ? t.size() : end) - eq - 1);
        if (field == "host") {
            h.host = value;
        } else if (field == "pid") {
            h.pid = value;
        } else if (field == "label") {
            h.label = value;
        }
        p = end == std::string::npos ? t.size() : end + 1;
    }
    if (h.host.empty() && h.pid.empty() && h.label.empty()) {
        h.label = t;  // another edgelock user's own text
    }
    out = h;
    return true;
}

std::string holder_text() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
        std::strcpy(host, "?");
    }
    host[64] = '\0';  // HOST_NAME_MAX on Linux; the record has a bound
    for (char* c = host; *c != '\0'; ++c) {
        *c = *c == ' ' ? '_' : *c;
    }
    const long pid = opt.cmd == command::acquire ? static_cast<long>(::getppid())
                                                 : static_cast<long>(::getpid());
    std::string label = opt.label;
    if (label.empty() && opt.cmd == command::run && !opt.child.empty()) {
        const std::string& c = opt.child[0];
        label = c.substr(c.rfind('/') == std::string::npos ? 0 : c.rfind('/') + 1);
    }
    if (label.empty() || !label_ok(label)) {
        label = opt.cmd == command::acquire ? "acquire" : "run";
    }
    return std::string("host=") + host + " pid=" + std::to_string(pid) +
           " label=" + label.substr(0, max_label);
}

void inspect_key(std::uint8_t node, const std::string& name, instant deadline, key_view& out) {
    const str_view n(name.data(), name.size());
    char mark[lock_key_capacity];
    char counter[lock_key_capacity];
    const std::size_t mark_size = lock_key(n, lock_key_kind::renewal_mark, mark, sizeof mark);
    char permits[lock_key_capacity];
    const std::size_t counter_size =
        lock_key(n, lock_key_kind::fence_counter, counter, sizeof counter);
    // Both or neither: a name that cannot have a counter cannot have permits.
    const std::size_t permits_size = lock_key(n, lock_key_kind::permits, permits, sizeof permits);
    if (mark_size == 0) {
        out.error = "not a lock name";
        return;
    }
    const bool more = counter_size != 0 && permits_size != 0;
    const str_view args[] = {"EVAL",
                             str_view(inspect_script, sizeof inspect_script - 1),
                             more ? "4" : "2",
                             n,
                             str_view(mark, mark_size),
                             str_view(permits, permits_size),
                             str_view(counter, counter_size)};
    const client_errc e = driver.command(node, args, more ? 7 : 5, deadline, take_inspection, &out);
    if (!out.answered && out.error.empty()) {
        const node_info i = driver.node(node);
        out.error = std::string("unreachable (") +
                    (i.error != node_error::none ? describe(i.error) : describe(e)) + ")";
    }
}

std::string held_for(std::uint64_t s) {
    char b[32];
    if (s < 60) {
        std::snprintf(b, sizeof b, "%llus", static_cast<unsigned long long>(s));
    } else if (s < 3600) {
        std::snprintf(b, sizeof b, "%llum%02llus", static_cast<unsigned long long>(s / 60),
                      static_cast<unsigned long long>(s % 60));
    } else if (s < 86400) {
        std::snprintf(b, sizeof b, "%lluh%02llum", static_cast<unsigned long long>(s / 3600),
                      static_cast<unsigned long long>(s % 3600 / 60));
    } else {
        std::snprintf(b, sizeof b, "%llud%lluh", static_cast<unsigned long long>(s / 86400),
                      static_cast<unsigned long long>(s % 86400 / 3600));
    }
    return b;
}

std::string describe_holder(const holder_info& h, std::time_t now) {
    std::string s = h.host.empty() ? std::string("?") : h.host;
    if (!h.pid.empty()) {
        s += " pid " + h.pid;
    }
    if (!h.label.empty()) {
        s += " (" + h.label + ")";
    }
    const std::time_t since = static_cast<std::time_t>(h.since_s);
    std::tm utc;
    char when[32];
    if (gmtime_r(&since, &utc) != nullptr &&
        std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &utc) != 0) {
        s += std::string(" since ") + when;
    }
    if (now >= since) {
        s += ", for " + held_for(static_cast<std::uint64_t>(now - since));
    }
    return s;
}

void json_holder(json_writer& w, const key_view& k) {
    if (!k.has_holder) {
        w.null();
        return;
    }
    const bool digits = !k.holder.pid.empty() && k.holder.pid.size() < 12 &&
                        k.holder.pid.find_first_not_of("0123456789") == std::string::npos;
    w.begin_object().key("host").string(k.holder.host).key("pid");
    if (digits) {
        w.integer_text(k.holder.pid);
    } else {
        w.null();
    }
    w.key("label").string(k.holder.label);
    w.key("since").integer(static_cast<long long>(k.holder.since_s)).end_object();
}

}  // namespace edgelock_cli
