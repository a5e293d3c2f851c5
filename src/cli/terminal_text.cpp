#include "terminal_text.hpp"

#include <cstdio>

#include "utf8.hpp"

namespace edgelock_cli {

namespace {

void byte_escape(std::string& out, const char* format, unsigned char b) {
    char e[8];
    std::snprintf(e, sizeof e, format, b);
    out += e;
}

}  // namespace

std::string terminal_text(const std::string& s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::string out;
    out.reserve(n);
    for (std::size_t i = 0; i < n;) {
        const unsigned char b = p[i];
        const std::size_t size = utf8_sequence(p + i, n - i);
        if (size == 0) {
            byte_escape(out, "\\x%02x", b);
            ++i;
        } else if (size == 2 && b == 0xc2 && p[i + 1] <= 0x9f) {
            byte_escape(out, "\\u%04x", p[i + 1]);  // a C1 control, well-formed
            i += 2;
        } else if (size > 1) {
            out.append(s, i, size);
            i += size;
        } else {
            if (b == '\n') {
                out += "\\n";
            } else if (b == '\r') {
                out += "\\r";
            } else if (b == '\t') {
                out += "\\t";
            } else if (b == '\\') {
                out += "\\\\";
            } else if (b < 0x20 || b == 0x7f) {
                byte_escape(out, "\\%03o", b);
            } else {
                out += static_cast<char>(b);
            }
            ++i;
        }
    }
    return out;
}

}  // namespace edgelock_cli
