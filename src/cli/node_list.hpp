// The node list of -N and $EDGELOCK_NODES: URLs separated by commas, a
// comma ending a URL only where another begins, so a redis-sentinel:// or
// redis-cluster:// URL keeps its list of hosts. The chaos checker's workers
// split theirs the same way.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

namespace edgelock_cli {

// A URL begins at `at`: a scheme (a letter, then letters, digits, "+-.")
// and "://".
inline bool url_begins(const std::string& s, std::size_t at) {
    std::size_t i = at;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) != 0 || s[i] == '+' ||
                            s[i] == '-' || s[i] == '.')) {
        ++i;
    }
    return i > at && std::isalpha(static_cast<unsigned char>(s[at])) != 0 &&
           s.compare(i, 3, "://") == 0;
}

// The URLs of `list` into `out`; false on an empty one (",," or a comma at
// either end).
inline bool split_nodes(const std::string& list, std::vector<std::string>& out) {
    // A comma ends a URL only where another begins (or where nothing does:
    // an empty node), so a redis-sentinel:// URL keeps its list of hosts.
    out.clear();
    std::size_t start = 0;
    std::size_t from = 0;
    for (;;) {
        const std::size_t comma = list.find(',', from);
        if (comma != std::string::npos && comma + 1 < list.size() && list[comma + 1] != ',' &&
            !url_begins(list, comma + 1)) {
            from = comma + 1;  // inside a URL
            continue;
        }
        const std::string one =
            list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (one.empty()) {
            return false;
        }
        out.push_back(one);
        if (comma == std::string::npos) {
            return true;
        }
        start = from = comma + 1;
        if (start == list.size()) {
            return false;  // a trailing comma: an empty node
        }
    }
}

}  // namespace edgelock_cli
