// Short descriptions of the driver's results for a failed check's INFO: a
// view as a string, an operation's outcome, a node's report.
#pragma once

#include <string>

#include "edgelock/client.hpp"

namespace edgelock_test {

inline std::string str(edgelock::str_view v) {
    return v.empty() ? std::string() : std::string(v.data, v.size);
}

inline std::string what(const edgelock::op_result& r) {
    using edgelock::describe;
    std::string s = std::string("error=") + describe(r.error);
    if (r.error == edgelock::client_errc::lock_rejected) {
        s += std::string(" lock_error=") + describe(r.lock_error);
    }
    if (r.error == edgelock::client_errc::ok) {
        s += std::string(" event=") + describe(r.event.kind);
        if (r.event.reason != edgelock::lock_failure::none) {
            s += std::string(" reason=") + describe(r.event.reason);
        }
    }
    return s;
}

inline std::string what(const edgelock::node_info& n) {
    using edgelock::describe;
    return std::string("state=") + describe(n.state) + " error=" + describe(n.error) +
           " code=" + std::to_string(n.code) + " message='" + str(n.message) +
           "' warning=" + describe(n.warning) + " policy='" + str(n.maxmemory_policy) + "'";
}

}  // namespace edgelock_test
