// The configuration file's syntax: `key = value` lines, read whole and
// checked before anything else happens. What the keys mean is settings.hpp's.
//
//   # a comment: a line whose first non-blank character is '#'
//   nodes = rediss://10.0.0.5:6380
//   ttl = 30s
//
// Blanks around the key and the value are dropped; the value is the rest of
// the line, '#' and blanks inside it included (a password or a URL may hold
// them), so a comment never follows a value. A key given twice is an error,
// as is a line without '='. The file is bounded: config_max_size bytes,
// lines of config_max_line, config_max_entries settings.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace edgelock_cli {

constexpr std::size_t config_max_size = 64 * 1024;
constexpr std::size_t config_max_line = 1024;
constexpr std::size_t config_max_entries = 256;

struct config_entry {
    std::string key;
    std::string value;
    unsigned line = 0;
};

struct config_file {
    std::string path;
    bool found = false;  // false: missing_ok and there is no such file
    unsigned mode = 0;   // its permission bits
    std::vector<config_entry> entries;
};

// Reads and splits `path` into `out`. A file that does not exist is an
// error unless missing_ok (the default file). Errors name the file, and the
// line ("FILE:LINE: ..."), in `error`.
bool read_config_file(const std::string& path, bool missing_ok, config_file& out,
                      std::string& error);

}  // namespace edgelock_cli
