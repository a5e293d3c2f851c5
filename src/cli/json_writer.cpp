#include "json_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "utf8.hpp"

namespace edgelock_cli {

namespace {

// A document the agent built wrong is a bug in the agent: stop rather than
// print something a parser would read differently.
[[noreturn]] void misuse(const char* what) {
    std::fprintf(stderr, "edgelock: internal error: json_writer: %s\n", what);
    std::abort();
}

}  // namespace

std::string json_quote(const std::string& s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::string out = "\"";
    out.reserve(n + 2);
    for (std::size_t i = 0; i < n;) {
        const std::size_t size = utf8_sequence(p + i, n - i);
        if (size == 0) {
            out += "\xef\xbf\xbd";  // U+FFFD for a byte that is not text
            ++i;
            continue;
        }
        if (size == 2 && p[i] == 0xc2 && p[i + 1] <= 0x9f) {
            // A C1 control (U+0080-U+009F): escaped as well, for whoever
            // prints the document to a terminal.
            char e[8];
            std::snprintf(e, sizeof e, "\\u%04x", p[i + 1]);
            out += e;
            i += 2;
            continue;
        }
        if (size > 1) {
            out.append(s, i, size);
            i += size;
            continue;
        }
        const unsigned char b = p[i++];
        switch (b) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        default:
            if (b < 0x20 || b == 0x7f) {
                char e[8];
                std::snprintf(e, sizeof e, "\\u%04x", b);
                out += e;
            } else {
                out += static_cast<char>(b);
            }
        }
    }
    return out + "\"";
}

void json_writer::before_value() {
    if (open_.empty()) {
        if (!out_.empty()) {
            misuse("a second document");
        }
        return;
    }
    frame& f = open_.back();
    if (f.object) {
        if (!after_key_) {
            misuse("a value without a name");
        }
        after_key_ = false;
        return;
    }
    if (!f.first) {
        out_ += ',';
    }
    f.first = false;
}

json_writer& json_writer::key(const std::string& name) {
    if (open_.empty() || !open_.back().object || after_key_) {
        misuse("a name outside an object");
    }
    frame& f = open_.back();
    for (const std::string& seen : f.names) {
        if (seen == name) {
            misuse("a name used twice in one object");
        }
    }
    f.names.push_back(name);
    if (!f.first) {
        out_ += ',';
    }
    f.first = false;
    out_ += json_quote(name) + ':';
    after_key_ = true;
    return *this;
}

json_writer& json_writer::begin_object() {
    before_value();
    open_.push_back(frame{true, true, {}});
    out_ += '{';
    return *this;
}

json_writer& json_writer::begin_array() {
    before_value();
    open_.push_back(frame{false, true, {}});
    out_ += '[';
    return *this;
}

json_writer& json_writer::end_object() {
    if (open_.empty() || !open_.back().object || after_key_) {
        misuse("no object to end");
    }
    open_.pop_back();
    out_ += '}';
    return *this;
}

json_writer& json_writer::end_array() {
    if (open_.empty() || open_.back().object) {
        misuse("no array to end");
    }
    open_.pop_back();
    out_ += ']';
    return *this;
}

json_writer& json_writer::string(const std::string& v) {
    before_value();
    out_ += json_quote(v);
    return *this;
}

json_writer& json_writer::integer(long long v) {
    before_value();
    out_ += std::to_string(v);
    return *this;
}

json_writer& json_writer::integer_text(const std::string& text) {
    const bool sign = !text.empty() && text[0] == '-';
    const bool digits = text.size() > (sign ? 1U : 0U) && text.size() <= 20 &&
                        text.find_first_not_of("0123456789", sign ? 1 : 0) == std::string::npos;
    if (digits) {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (errno == 0 && end == text.c_str() + text.size()) {
            return integer(v);
        }
    }
    return string(text);
}

json_writer& json_writer::boolean(bool v) {
    before_value();
    out_ += v ? "true" : "false";
    return *this;
}

json_writer& json_writer::null() {
    before_value();
    out_ += "null";
    return *this;
}

json_writer& json_writer::value(const json_writer& complete) {
    if (complete.out_.empty() || !complete.open_.empty()) {
        misuse("an incomplete document as a value");
    }
    before_value();
    out_ += complete.out_;
    return *this;
}

}  // namespace edgelock_cli
