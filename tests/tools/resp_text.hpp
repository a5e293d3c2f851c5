// The RESP that fake_redis (fake_redis.cpp) and its modes (moved_chain.hpp,
// fake_sentinel.hpp) read and write: commands taken from a connection's
// input, their names compared, replies written. Written out by hand rather
// than taken from the library, so that a client and a fake that share a
// mistake cannot agree.
//
//   std::size_t pos = 0;
//   while (resp_text::take_command(in, pos, args)) {
//       out += resp_text::upper(args[0]) == "PING" ? "+PONG\r\n" : resp_text::bulk("hello");
//   }
//   in.erase(0, pos);
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

namespace edgelock_test {
namespace resp_text {

// s in upper case (ASCII): Redis command names are case-insensitive.
inline std::string upper(std::string s) {
    for (char& ch : s) {
        ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
    return s;
}

inline std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

// Takes the whole command at `pos` in `in`, if there is one: its arguments
// into `args`, `pos` moved past it. A RESP array of bulk strings is one
// command (an element that is not a bulk string is skipped); anything else
// is taken a line at a time, split at spaces (inline commands, and whatever
// a client sends that is neither).
inline bool take_command(const std::string& in, std::size_t& pos, std::vector<std::string>& args) {
    args.clear();
    if (pos >= in.size()) {
        return false;
    }
    if (in[pos] != '*') {
        const std::size_t nl = in.find('\n', pos);
        if (nl == std::string::npos) {
            return false;
        }
        std::size_t end = nl;
        if (end > pos && in[end - 1] == '\r') {
            --end;
        }
        // Within the line: a search to the buffer's end for each line would
        // make a flood of short lines quadratic.
        for (auto p = in.begin() + static_cast<std::ptrdiff_t>(pos),
                  e = in.begin() + static_cast<std::ptrdiff_t>(end);
             p < e;) {
            const auto space = std::find(p, e, ' ');
            if (space > p) {
                args.emplace_back(p, space);
            }
            p = space == e ? e : space + 1;
        }
        pos = nl + 1;
        return true;
    }
    const std::size_t eol = in.find("\r\n", pos);
    if (eol == std::string::npos) {
        return false;
    }
    const long count = std::strtol(in.c_str() + pos + 1, nullptr, 10);
    std::size_t p = eol + 2;
    for (long i = 0; i < count; ++i) {
        const std::size_t e = in.find("\r\n", p);
        if (e == std::string::npos) {
            return false;
        }
        if (in[p] != '$') {
            p = e + 2;  // not a bulk string: skip the line
            continue;
        }
        const long len = std::strtol(in.c_str() + p + 1, nullptr, 10);
        const std::size_t size = static_cast<std::size_t>(len < 0 ? 0 : len);
        if (e + 2 + size + 2 > in.size()) {
            return false;
        }
        args.push_back(in.substr(e + 2, size));
        p = e + 2 + size + 2;
    }
    pos = p;
    return true;
}

}  // namespace resp_text
}  // namespace edgelock_test
