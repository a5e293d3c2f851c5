// redis-py's Lock as a peer: the lock client a fleet's cloud side may run,
// from Debian's python3-redis (a test-only dependency, make deps installs
// it), driven through tests/tools/redis_py_lock.py one operation per run.
//
//   redis_py(port, "nightly-upload", {"acquire", "10000"})  // "acquired TOKEN" or "refused"
//   redis_py(port, "nightly-upload", {"release", token})    // "released" or "not-owned"
//   redis_py(port, "nightly-upload", {"holder"})            // "held" or "free"
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/cli_helpers.hpp"

namespace edgelock_test {

// Debian's interpreter, which sees Debian's python3-redis (a python3 first
// on PATH may be another installation without it).
constexpr const char* redis_py_python = "/usr/bin/python3";

inline std::string redis_py_script() {
    const std::string here = __FILE__;
    return here.substr(0, here.rfind('/') + 1) + "redis_py_lock.py";
}

// The script's one line of output, without the newline; throws when it did
// not answer (redis-py missing, the server unreachable).
inline std::string redis_py(std::uint16_t port, const std::string& name,
                            const std::vector<std::string>& op) {
    std::vector<std::string> argv{redis_py_python, redis_py_script(), std::to_string(port), name};
    argv.insert(argv.end(), op.begin(), op.end());
    process p(argv, {});
    const run_result r = p.finish(20.0);
    if (r.timed_out || r.status != 0) {
        throw std::runtime_error("redis_py_lock.py " + name + ": status " +
                                 std::to_string(r.status) + ", stderr: " + r.err);
    }
    std::string line = r.out;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
        line.pop_back();
    }
    return line;
}

}  // namespace edgelock_test
