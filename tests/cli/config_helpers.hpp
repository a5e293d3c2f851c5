// Helpers of the configuration file's tests (test_cli_config*.cpp): write a
// file with a mode, and read what `edgelock config` shows.
//
//   const std::string path = conf(dir, "edgelock.conf", "ttl = 5s\n");
//   auto s = shown({}, {"EDGELOCK_CONFIG=" + path});   // s["ttl"].from == path + ":1"
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "cli/agent_helpers.hpp"
#include "tools/files.hpp"

namespace edgelock_test {

// A file of `text` in `dir`, with mode `mode`.
inline std::string conf(const temp_dir& dir, const std::string& name, const std::string& text,
                        mode_t mode = 0600) {
    const std::string path = dir / name;
    REQUIRE(write_file(path, text));
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return path;
}

struct shown_setting {
    std::string value;
    std::string from;
};

// `edgelock config`'s lines, "key = value  (from)", by key; the order of
// the keys in `order`.
inline std::map<std::string, shown_setting> parse_shown(const std::string& out,
                                                        strings* order = nullptr) {
    std::map<std::string, shown_setting> m;
    for (const std::string& line : lines_of(out)) {
        const std::size_t eq = line.find(" = ");
        const std::size_t open = line.rfind("  (");
        if (eq == std::string::npos || open == std::string::npos || open < eq ||
            line.back() != ')') {
            FAIL("not a config line: '" << line << "'");
        }
        const std::string key = line.substr(0, eq);
        m[key] = shown_setting{line.substr(eq + 3, open - eq - 3),
                               line.substr(open + 3, line.size() - open - 4)};
        if (order != nullptr) {
            order->push_back(key);
        }
    }
    return m;
}

// `edgelock config ARGS` with `env`: must succeed.
inline std::map<std::string, shown_setting> shown(const strings& args, const strings& env) {
    strings a{"config"};
    a.insert(a.end(), args.begin(), args.end());
    const run_result r = agent(a, env);
    INFO(show(a, r));
    REQUIRE(r.status == 0);
    REQUIRE(r.err.empty());
    return parse_shown(r.out);
}

}  // namespace edgelock_test
