// A strict reader of the Prometheus text exposition format, for the
// agent's metrics file (test_cli_metrics.cpp): every line a comment or
// `name{labels} value`; HELP and TYPE once per family, before its samples;
// families contiguous; label values escaped (only \\, \" and \n); values
// floats; no series twice. The first problem is kept, with its line.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

namespace edgelock_test {

struct exposition {
    bool ok = false;
    std::string error;  // the first problem, with its line
    // Series ("name{label="value",...}" as written) to value.
    std::map<std::string, double> series;
    std::map<std::string, std::string> types;  // family to its TYPE

    double at(const std::string& s) const {
        const auto it = series.find(s);
        return it == series.end() ? -1.0 : it->second;
    }
    bool has(const std::string& s) const { return series.count(s) != 0; }
};

inline bool metric_name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

inline bool label_name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

// Every line a comment (HELP and TYPE checked) or `name{labels} value`;
// HELP and TYPE once per family, before its samples; families contiguous;
// label values escaped (only \\, \" and \n); values floats; no series twice.
inline exposition parse_exposition(const std::string& text) {
    exposition e;
    auto fail = [&](const std::string& why, const std::string& line) {
        e.error = why + ": '" + line + "'";
        return e;
    };
    if (text.empty() || text.back() != '\n') {
        return fail("empty or not ending in a newline", text.substr(0, 80));
    }
    std::set<std::string> helped, typed, done;
    std::string current;  // the family whose samples are being read
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t nl = text.find('\n', at);
        const std::string line = text.substr(at, nl - at);
        at = nl + 1;
        if (line.empty()) {
            return fail("an empty line", line);
        }
        if (line[0] == '#') {
            std::string kind;
            if (line.compare(0, 7, "# HELP ") == 0) {
                kind = "HELP";
            } else if (line.compare(0, 7, "# TYPE ") == 0) {
                kind = "TYPE";
            } else {
                continue;  // a plain comment
            }
            const std::size_t sp = line.find(' ', 7);
            if (sp == std::string::npos || sp + 1 >= line.size()) {
                return fail(kind + " without a name and text", line);
            }
            const std::string name = line.substr(7, sp - 7);
            for (std::size_t i = 0; i < name.size(); ++i) {
                if (!metric_name_char(name[i], i == 0)) {
                    return fail("a bad metric name", line);
                }
            }
            if (done.count(name) != 0 || (current == name)) {
                return fail(kind + " after the family's samples", line);
            }
            std::set<std::string>& seen = kind == "HELP" ? helped : typed;
            if (!seen.insert(name).second) {
                return fail(kind + " twice", line);
            }
            if (kind == "TYPE") {
                const std::string t = line.substr(sp + 1);
                if (t != "gauge" && t != "counter" && t != "untyped" && t != "summary" &&
                    t != "histogram") {
                    return fail("an unknown TYPE", line);
                }
                e.types[name] = t;
            }
            continue;
        }
        std::size_t i = 0;
        while (i < line.size() && metric_name_char(line[i], i == 0)) {
            ++i;
        }
        if (i == 0) {
            return fail("a sample without a name", line);
        }
        const std::string name = line.substr(0, i);
        if (name != current) {
            if (done.count(name) != 0) {
                return fail("a family that is not contiguous", line);
            }
            if (!current.empty()) {
                done.insert(current);
            }
            current = name;
        }
        if (helped.count(name) == 0 || typed.count(name) == 0) {
            return fail("a sample before its family's HELP and TYPE", line);
        }
        std::set<std::string> label_names;
        if (i < line.size() && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                const std::size_t start = i;
                while (i < line.size() && label_name_char(line[i], i == start)) {
                    ++i;
                }
                if (i == start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
                    return fail("a bad label", line);
                }
                if (!label_names.insert(line.substr(start, i - start)).second) {
                    return fail("a label twice", line);
                }
                i += 2;
                while (i < line.size() && line[i] != '"') {
                    if (line[i] == '\n') {
                        return fail("a raw newline in a label value", line);
                    }
                    if (line[i] == '\\') {
                        if (i + 1 >= line.size() ||
                            (line[i + 1] != '\\' && line[i + 1] != '"' && line[i + 1] != 'n')) {
                            return fail("a bad escape in a label value", line);
                        }
                        ++i;
                    }
                    ++i;
                }
                if (i >= line.size()) {
                    return fail("an unterminated label value", line);
                }
                ++i;
                if (i < line.size() && line[i] == ',') {
                    ++i;
                } else if (i < line.size() && line[i] != '}') {
                    return fail("labels not separated by commas", line);
                }
            }
            if (i >= line.size()) {
                return fail("labels without a closing brace", line);
            }
            ++i;
        }
        if (i >= line.size() || line[i] != ' ') {
            return fail("no space before the value", line);
        }
        const std::string series = line.substr(0, i);
        const std::string value = line.substr(i + 1);
        if (value.empty() || value.find(' ') != std::string::npos) {
            return fail("no value, or a timestamp", line);
        }
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(value.c_str(), &end);
        if (end != value.c_str() + value.size() || errno != 0) {
            return fail("a value that is not a float", line);
        }
        if (!e.series.emplace(series, v).second) {
            return fail("a series twice", line);
        }
    }
    e.ok = true;
    return e;
}

}  // namespace edgelock_test
