// Reading and showing a semaphore's permits (semaphore_view.hpp).
#include "semaphore_view.hpp"

#include <cstdio>

#include "agent.hpp"
#include "edgelock/lock.hpp"
#include "terminal_text.hpp"

namespace edgelock_cli {

using namespace edgelock;

namespace {

// For each permit key (KEYS[2..]): its value (a string, else nil), its
// ttl and its record in the permits hash (KEYS[1]): one round trip, as
// EVAL (an operator's look is rare, and leaves no script in the cache).
const char permits_script[] =
    "local out = {}\n"
    "for i = 2, #KEYS do\n"
    "  local v = redis.pcall('get', KEYS[i])\n"
    "  if type(v) ~= 'string' then v = redis.call('exists', KEYS[i]) == 1 and '' or false end\n"
    "  local r = redis.pcall('hget', KEYS[1], tostring(i - 2))\n"
    "  if type(r) ~= 'string' then r = false end\n"
    "  out[#out + 1] = v\n"
    "  out[#out + 1] = redis.call('pttl', KEYS[i])\n"
    "  out[#out + 1] = r\n"
    "end\n"
    "return out";

std::string node_text(const resp_node& n) {
    return n.has_text() ? text(n.text) : std::string();
}

void take_permits(void* ctx, const resp_node* n, std::size_t count) {
    semaphore_node& s = *static_cast<semaphore_node*>(ctx);
    const std::size_t i = count == 0 ? 0 : skip_attributes(n, count, 0);
    if (count == 0 || i >= count) {
        return;
    }
    s.answered = true;
    if (n[i].is_error()) {
        s.error = "the node refused: " + node_text(n[i]);
        return;
    }
    if (n[i].type != resp_type::array || n[i].count != 3U * s.permits.size()) {
        s.error = "unexpected reply";
        return;
    }
    std::size_t at = i + 1;
    for (permit_on_node& p : s.permits) {
        const resp_node* e[3];
        for (const resp_node*& x : e) {
            if (at >= count) {
                s.error = "unexpected reply";
                return;
            }
            x = &n[at];
            at = n[at].end > at ? n[at].end : at + 1;
        }
        p.ttl_ms = e[1]->type == resp_type::integer ? e[1]->integer : -2;
        p.held = p.ttl_ms != -2;
        p.token = node_text(*e[0]);
        p.has_holder = p.held && read_holder(node_text(*e[2]), p.token, p.holder);
    }
}

// The permit as shown: from the node that says most (a record, else held).
const permit_on_node* shown_permit(const semaphore_view& s, std::size_t p, unsigned& holding) {
    const permit_on_node* shown = nullptr;
    holding = 0;
    for (const semaphore_node& n : s.nodes) {
        if (!n.answered || !n.error.empty() || p >= n.permits.size() || !n.permits[p].held) {
            continue;
        }
        ++holding;
        if (shown == nullptr || (!shown->has_holder && n.permits[p].has_holder)) {
            shown = &n.permits[p];
        }
    }
    return shown;
}

std::string describe_permit(const permit_on_node& p, std::time_t now) {
    std::string s = p.ttl_ms >= 0 ? "ttl " + std::to_string(p.ttl_ms) + " ms" : "no expiry";
    s += p.token.empty() ? std::string(", not a string") : ", token " + p.token;
    if (p.has_holder) {
        s += ", by " + describe_holder(p.holder, now);
    }
    return s;
}

// A permit's members after "permit" and "holding".
void json_permit(json_writer& w, const permit_on_node& p) {
    key_view k;  // json_holder's shape
    k.has_holder = p.has_holder;
    k.holder = p.holder;
    w.key("ttl_ms").integer(p.ttl_ms).key("token").string(p.token).key("holder");
    json_holder(w, k);
}

}  // namespace

bool inspect_semaphore(const std::string& name, const std::vector<key_view>& views,
                       instant deadline, semaphore_view& out) {
    out.name = name;
    out.nodes.assign(views.size(), semaphore_node());
    for (const key_view& v : views) {
        out.limit = out.limit == 0 ? v.permits : out.limit;
    }
    if (out.limit <= 0 || out.limit > lock_max_permits) {
        return false;
    }
    const str_view n(name.data(), name.size());
    char keys[1 + lock_max_permits][lock_key_capacity];
    str_view args[3 + 1 + lock_max_permits];
    std::size_t argc = 0;
    char count[8];
    args[argc++] = "EVAL";
    args[argc++] = str_view(permits_script, sizeof permits_script - 1);
    args[argc++] = str_view(
        count, static_cast<std::size_t>(std::snprintf(count, sizeof count, "%d", out.limit + 1)));
    args[argc++] = str_view(keys[0], lock_key(n, lock_key_kind::permits, keys[0], sizeof keys[0]));
    for (int i = 0; i < out.limit; ++i) {
        const std::uint8_t p = static_cast<std::uint8_t>(i);
        args[argc++] = str_view(keys[1 + i], permit_key(n, p, keys[1 + i], sizeof keys[1 + i]));
    }
    for (std::size_t i = 0; i < views.size(); ++i) {
        semaphore_node& s = out.nodes[i];
        s.limit = views[i].permits;
        s.permits.assign(static_cast<std::size_t>(out.limit), permit_on_node());
        if (!views[i].answered || !views[i].error.empty()) {
            s.error = views[i].answered ? views[i].error : "unreachable";
            continue;
        }
        driver.command(static_cast<std::uint8_t>(i), args, argc, deadline, take_permits, &s);
        if (!s.answered && s.error.empty()) {
            s.error = std::string("unreachable (") +
                      describe(driver.node(static_cast<std::uint8_t>(i)).error) + ")";
        }
    }
    return true;
}

unsigned permits_held(const semaphore_view& s, unsigned quorum) {
    unsigned held = 0;
    for (std::size_t p = 0; p < static_cast<std::size_t>(s.limit); ++p) {
        unsigned holding = 0;
        shown_permit(s, p, holding);
        held += holding >= quorum ? 1U : 0U;
    }
    return held;
}

void print_semaphore_status(const semaphore_view& s, unsigned quorum, std::time_t now) {
    const unsigned node_count = static_cast<unsigned>(s.nodes.size());
    if (opt.json) {
        json_writer w;
        w.begin_object().key("key").string(s.name).key("semaphore").boolean(true);
        w.key("limit").integer(s.limit).key("held").integer(permits_held(s, quorum));
        w.key("node_count").integer(node_count).key("quorum").integer(quorum);
        w.key("permits").begin_array();
        for (std::size_t p = 0; p < static_cast<std::size_t>(s.limit); ++p) {
            unsigned holding = 0;
            const permit_on_node* shown = shown_permit(s, p, holding);
            w.begin_object().key("permit").integer(static_cast<long long>(p));
            w.key("held").boolean(holding >= quorum).key("holding").integer(holding);
            if (shown != nullptr) {
                json_permit(w, *shown);
            }
            w.end_object();
        }
        w.end_array().key("nodes").begin_array();
        for (std::size_t i = 0; i < s.nodes.size(); ++i) {
            const semaphore_node& n = s.nodes[i];
            w.begin_object().key("node").string(node_shown(i));
            w.key("state").string(n.error.empty() ? "answered" : "error").key("limit");
            if (n.limit > 0) {
                w.integer(n.limit);
            } else {
                w.null();
            }
            if (!n.error.empty()) {
                w.key("error").string(n.error);
            }
            w.end_object();
        }
        w.end_array().end_object();
        std::printf("%s\n", w.text().c_str());
        return;
    }
    std::printf("%s: semaphore of %d permits, %u held (quorum %u of %u nodes)\n",
                terminal_text(s.name).c_str(), s.limit, permits_held(s, quorum), quorum,
                node_count);
    for (std::size_t p = 0; p < static_cast<std::size_t>(s.limit); ++p) {
        unsigned holding = 0;
        const permit_on_node* shown = shown_permit(s, p, holding);
        std::string line = shown == nullptr ? "free"
                           : node_count == 1
                               ? "held, " + describe_permit(*shown, now)
                               : std::string(holding >= quorum ? "held" : "partly held") + " on " +
                                     std::to_string(holding) + "/" + std::to_string(node_count) +
                                     " nodes, " + describe_permit(*shown, now);
        std::printf("  permit %zu: %s\n", p, terminal_text(line).c_str());
    }
    for (std::size_t i = 0; i < s.nodes.size(); ++i) {
        const semaphore_node& n = s.nodes[i];
        if (!n.error.empty()) {
            std::printf("  %s: %s\n", node_shown(i).c_str(), terminal_text(n.error).c_str());
        } else if (n.limit != 0 && n.limit != s.limit) {
            std::printf("  %s: limit %d\n", node_shown(i).c_str(), n.limit);
        }
    }
}

std::string semaphore_line(const semaphore_view& s, unsigned quorum, std::time_t now) {
    std::string line = s.name + "  semaphore, " + std::to_string(permits_held(s, quorum)) + " of " +
                       std::to_string(s.limit) + " permits held";
    std::string who;
    for (std::size_t p = 0; p < static_cast<std::size_t>(s.limit); ++p) {
        unsigned holding = 0;
        const permit_on_node* shown = shown_permit(s, p, holding);
        if (shown != nullptr) {
            who += (who.empty() ? "" : "; ") + std::to_string(p) + ": " +
                   (shown->has_holder ? "by " + describe_holder(shown->holder, now)
                                      : "token " + shown->token + ", no record");
        }
    }
    return who.empty() ? line : line + " (" + who + ")";
}

json_writer semaphore_json(const semaphore_view& s, unsigned quorum) {
    json_writer w;
    w.begin_object().key("key").string(s.name).key("semaphore").boolean(true);
    w.key("limit").integer(s.limit).key("held").integer(permits_held(s, quorum));
    w.key("permits").begin_array();
    for (std::size_t p = 0; p < static_cast<std::size_t>(s.limit); ++p) {
        unsigned holding = 0;
        const permit_on_node* shown = shown_permit(s, p, holding);
        if (shown != nullptr) {
            w.begin_object().key("permit").integer(static_cast<long long>(p));
            w.key("holding").integer(holding);
            json_permit(w, *shown);
            w.end_object();
        }
    }
    w.end_array().end_object();
    return w;
}

bool is_permit_key(const std::string& key) {
    // NAME:permit:DIGITS (the name braced when it has no tag of its own).
    const std::size_t colon = key.rfind(':');
    static const std::string infix = ":permit";
    if (colon == std::string::npos || colon < infix.size() || colon + 1 == key.size() ||
        colon + 3 < key.size() ||
        key.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
        key.compare(colon - infix.size(), infix.size(), infix) != 0) {
        return false;
    }
    const std::string base = key.substr(0, colon - infix.size());
    const std::string name = base.size() > 2 && base.front() == '{' && base.back() == '}'
                                 ? base.substr(1, base.size() - 2)
                                 : base;
    const int index = std::stoi(key.substr(colon + 1));
    char k[lock_key_capacity];
    const std::size_t n = index < lock_max_permits
                              ? permit_key(str_view(name.data(), name.size()),
                                           static_cast<std::uint8_t>(index), k, sizeof k)
                              : 0;
    return n == key.size() && key.compare(0, n, k, n) == 0;
}

bool is_permits_hash(const std::string& key, std::string& name) {
    static const std::string suffix = ":permits";
    if (key.size() <= suffix.size() ||
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) {
        return false;
    }
    const std::string base = key.substr(0, key.size() - suffix.size());
    // `{X}:permits` is the hash of X (and of a name `{X}`, which shares it).
    const std::string candidate = base.size() > 2 && base.front() == '{' && base.back() == '}'
                                      ? base.substr(1, base.size() - 2)
                                      : base;
    char k[lock_key_capacity];
    const std::size_t n =
        lock_key(str_view(candidate.data(), candidate.size()), lock_key_kind::permits, k, sizeof k);
    if (n == key.size() && key.compare(0, n, k, n) == 0) {
        name = candidate;
        return true;
    }
    return false;
}

}  // namespace edgelock_cli
