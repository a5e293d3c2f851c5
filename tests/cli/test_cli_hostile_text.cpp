// Text another Redis client wrote (a fencing counter, a holder record, a key
// name, a token) through the agent's outputs: `status` and `list`, as JSON and
// as text, and the systemd status line of a waiter. Any client can write
// those keys: the JSON must stay one valid document that says what the nodes
// say, the text must reach no terminal raw and forge no line, the status line
// must carry no assignment of its own. Against a real redis-server.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/agent_helpers.hpp"
#include "cli/cli_helpers.hpp"
#include "cli/notify_listener.hpp"
#include "integration/redis_server.hpp"
#include "tools/files.hpp"
#include "tools/lock_key.hpp"
#include "tools/strict_json.hpp"

using namespace edgelock_test;  // the helpers of tests/cli and tests/integration

namespace {

const std::string token = "0123456789abcdef0123456789abcdef";

// The raw control bytes in s (a newline only when it is not the last byte
// of a line the agent ended).
std::string raw_controls(const std::string& s) {
    std::string found;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if ((c < 0x20 && c != '\n') || c == 0x7f) {
            found += std::to_string(c) + "@" + std::to_string(i) + " ";
        }
    }
    return found;
}

// A lock at `key` held with `token` and, when record is not empty, a holder
// record of that text beside it, written as another client would.
void hold(redis_client& admin, const std::string& key, const std::string& record,
          const std::string& ttl_ms = "60000") {
    admin.command({"SET", key, token, "PX", ttl_ms});
    if (!record.empty()) {
        admin.command(
            {"SET", renewal_mark_of(key), token + "\n1764000000\n" + record, "PX", ttl_ms});
    }
}

std::string joined(const std::vector<std::string>& datagrams) {
    std::string all;
    for (const std::string& d : datagrams) {
        all += d + "\n---\n";
    }
    return all;
}

json_value parsed(const std::string& out) {
    INFO(out);
    json_value v;
    strict_json p;
    const bool ok = p.parse(out, v);
    INFO(p.error);
    CHECK(ok);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);  // one line
    return v;
}

}  // namespace

TEST_CASE("cli hostile text: a fencing counter is no JSON of its own", "[cli][escape]") {
    redis_server srv;
    redis_client admin(srv.port());
    for (const std::string counter : {"1}],\"held\":false,\"x\":[{", "x\"", "7\xff\n"}) {
        const std::string key = "cli-hostile-fence";
        hold(admin, key, "");
        admin.command({"SET", fence_key_of(key), counter});
        const strings args{"status", "--json", "-N", redis_url(srv), key};
        const run_result r = agent(args);
        INFO(show(args, r));
        CHECK(r.status == 0);
        const json_value v = parsed(r.out);
        REQUIRE(v.at("held") != nullptr);
        CHECK(v.at("held")->kind == json_value::bool_v);
        CHECK(v.at("held")->b);
        CHECK(v.members.size() == 6);
        REQUIRE(v.at("nodes") != nullptr);
        REQUIRE(v.at("nodes")->items.size() == 1);
        const json_value* fence = v.at("nodes")->items[0].at("fencing_counter");
        REQUIRE(fence != nullptr);
        CHECK(fence->kind == json_value::string_v);
    }
}

TEST_CASE("cli hostile text: invalid UTF-8 and control bytes keep --json valid", "[cli][escape]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-hostile-\xc0\xaf\x1b[2J\xff";
    const std::string record =
        "host=gw\xed\xa0\x80 pid=1 label=a\"b\\c\nFAKE: held by root\x07\xfe";
    hold(admin, key, record);
    hold(admin, "cli-hostile-plain", "host=gw\x1b]0;x\x07 pid=2 label=\xe2\x82");

    const strings status_args{"status", "--json", "-N", redis_url(srv), key};
    const run_result s = agent(status_args);
    INFO(show(status_args, s));
    CHECK(s.status == 0);
    const json_value sv = parsed(s.out);
    REQUIRE(sv.at("held") != nullptr);
    CHECK(sv.at("held")->b);
    CHECK(sv.at("key")->text == "cli-hostile-\xef\xbf\xbd\xef\xbf\xbd\x1b[2J\xef\xbf\xbd");

    const strings list_args{"list", "--json", "-N", redis_url(srv), "cli-hostile-*"};
    const run_result l = agent(list_args);
    INFO(show(list_args, l));
    CHECK(l.status == 0);
    const json_value lv = parsed(l.out);
    REQUIRE(lv.at("locks") != nullptr);
    REQUIRE(lv.at("locks")->items.size() == 2);
    for (const json_value& lock : lv.at("locks")->items) {
        CHECK(lock.at("held")->b);
        REQUIRE(lock.at("holder") != nullptr);
        CHECK(lock.at("holder")->kind == json_value::object_v);
    }
}

TEST_CASE("cli hostile text: status and list show control bytes escaped, on their own lines",
          "[cli][escape]") {
    redis_server srv;
    redis_client admin(srv.port());
    const std::string key = "cli-hostile-\x1b]0;owned\x07";
    hold(admin, key, "host=gw\x1b[2J pid=1 label=job\nFAKE: held by root\r\x9b");
    const std::string bare = "cli-hostile-bare\n";
    hold(admin, bare, "");  // a token, no record
    admin.command({"SET", bare, "tok\x1b[31m\nFAKE: held by root", "PX", "60000"});

    const strings status_args{"status", "-N", redis_url(srv), key};
    const run_result s = agent(status_args);
    INFO(show(status_args, s));
    CHECK(s.status == 0);
    CHECK(raw_controls(s.out).empty());
    CHECK(contains(s.out, "cli-hostile-\\033]0;owned\\007: held"));
    CHECK(contains(s.out, "gw\\033[2J pid 1 (job\\nFAKE: held by root\\r\\x9b)"));
    for (const std::string& line : lines_of(s.out)) {
        CHECK_FALSE(starts_with(line, "FAKE"));
    }

    const strings list_args{"list", "-N", redis_url(srv), "cli-hostile-*"};
    const run_result l = agent(list_args);
    INFO(show(list_args, l));
    CHECK(l.status == 0);
    CHECK(raw_controls(l.out).empty());
    CHECK(lines_of(l.out).size() == 2);
    CHECK(contains(l.out, "cli-hostile-bare\\n  held"));
    CHECK(contains(l.out, "token tok\\033[31m\\nFAKE: held by root, no record"));
    for (const std::string& line : lines_of(l.out)) {
        CHECK_FALSE(starts_with(line, "FAKE"));
    }
}

TEST_CASE("cli hostile text: a holder's label adds no assignment to the status line",
          "[cli][escape]") {
    redis_server srv;
    redis_client admin(srv.port());
    temp_dir dir{"edgelock-cli-hostile-notify"};
    const std::string key = "cli-hostile-notify";
    hold(admin, key, "host=gw pid=1 label=job\nREADY=1\nSTOPPING=1\nMAINPID=1\x1b[2J", "1500");
    notify_listener listener(dir / "notify");
    agent_run waiter({"run", "-w", "10s", "-N", redis_url(srv), key, "--", "true"},
                     {"NOTIFY_SOCKET=" + listener.name});
    const run_result r = waiter.finish(15.0);
    INFO(show(waiter.args, r));
    CHECK(r.status == 0);  // once the other holder's key expired
    const std::vector<std::string> got = listener.take();
    INFO(joined(got));
    REQUIRE(got.size() >= 2);
    bool waited = false;
    for (const std::string& d : got) {
        CHECK(d.find('\n') == std::string::npos);
        CHECK(raw_controls(d).empty());
        waited = waited || starts_with(d, "STATUS=waiting for " + key + ", held by gw pid 1 (job");
    }
    CHECK(waited);
}
