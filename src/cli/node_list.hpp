// The node list of -N and $EDGELOCK_NODES as strings: the library splits it
// (edgelock/node_list.hpp), a comma ending a URL only where another begins,
// so a redis-sentinel:// or redis-cluster:// URL keeps its list of hosts and
// a password its commas. The chaos checker's workers split theirs the same way.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "edgelock/node_list.hpp"

namespace edgelock_cli {

// The URLs of `list` into `out`; false on an empty one (",," or a comma at
// either end).
inline bool split_nodes(const std::string& list, std::vector<std::string>& out) {
    out.clear();
    const edgelock::str_view all(list.data(), list.size());
    std::size_t from = 0;
    edgelock::str_view url;
    while (edgelock::node_list_next(all, from, url)) {
        if (url.empty()) {
            return false;
        }
        out.emplace_back(url.data, url.size);
    }
    return true;
}

}  // namespace edgelock_cli
