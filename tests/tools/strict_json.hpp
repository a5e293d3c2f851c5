// A strict JSON (RFC 8259) reader for checking the agent's --json output:
// one document, well-formed UTF-8 throughout, no raw control byte in a
// string, no duplicate member names, nothing after the document but one
// optional newline. Small on purpose: it holds the parsed tree for lookups.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace edgelock_test {

struct json_value {
    enum kind_t { null_v, bool_v, number_v, string_v, array_v, object_v } kind = null_v;
    bool b = false;
    std::string text;  // a string's value (decoded), or a number as written
    std::vector<json_value> items;
    std::vector<std::pair<std::string, json_value>> members;

    // The member `name` of an object, or nullptr.
    const json_value* at(const std::string& name) const {
        for (const auto& m : members) {
            if (m.first == name) {
                return &m.second;
            }
        }
        return nullptr;
    }
};

class strict_json {
public:
    // True when s is one strict document; error says where it is not.
    bool parse(const std::string& s, json_value& out) {
        s_ = &s;
        i_ = 0;
        depth_ = 0;
        error.clear();
        ws();
        if (!value(out)) {
            return false;
        }
        ws();
        if (i_ != s.size()) {
            return fail("bytes after the document");
        }
        return true;
    }
    std::string error;

private:
    bool fail(const char* what) {
        error = std::string(what) + " at byte " + std::to_string(i_);
        return false;
    }
    bool more() const { return i_ < s_->size(); }
    unsigned char peek() const { return static_cast<unsigned char>((*s_)[i_]); }
    void ws() {
        while (more() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
            ++i_;
        }
    }
    bool literal(const char* word) {
        const std::string w(word);
        if (s_->compare(i_, w.size(), w) != 0) {
            return fail("a bad literal");
        }
        i_ += w.size();
        return true;
    }
    static void put_utf8(std::string& o, unsigned long c) {
        if (c < 0x80) {
            o += static_cast<char>(c);
        } else if (c < 0x800) {
            o += static_cast<char>(0xc0 | (c >> 6));
            o += static_cast<char>(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            o += static_cast<char>(0xe0 | (c >> 12));
            o += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
            o += static_cast<char>(0x80 | (c & 0x3f));
        } else {
            o += static_cast<char>(0xf0 | (c >> 18));
            o += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
            o += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
            o += static_cast<char>(0x80 | (c & 0x3f));
        }
    }
    bool hex4(unsigned long& c) {
        c = 0;
        for (int k = 0; k < 4; ++k) {
            if (!more()) {
                return fail("a short \\u escape");
            }
            const char h = static_cast<char>(peek());
            ++i_;
            c <<= 4;
            if (h >= '0' && h <= '9') {
                c |= static_cast<unsigned long>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
                c |= static_cast<unsigned long>(h - 'a' + 10);
            } else if (h >= 'A' && h <= 'F') {
                c |= static_cast<unsigned long>(h - 'A' + 10);
            } else {
                return fail("a bad \\u escape");
            }
        }
        return true;
    }
    // One well-formed UTF-8 sequence at i_ (Unicode's table 3-7).
    bool utf8(std::string& o) {
        const unsigned char b = peek();
        std::size_t size = 0;
        unsigned char lo = 0x80;
        unsigned char hi = 0xbf;
        if (b >= 0xc2 && b <= 0xdf) {
            size = 2;
        } else if (b >= 0xe0 && b <= 0xef) {
            size = 3;
            lo = b == 0xe0 ? 0xa0 : 0x80;
            hi = b == 0xed ? 0x9f : 0xbf;
        } else if (b >= 0xf0 && b <= 0xf4) {
            size = 4;
            lo = b == 0xf0 ? 0x90 : 0x80;
            hi = b == 0xf4 ? 0x8f : 0xbf;
        } else {
            return fail("a byte that is not UTF-8");
        }
        if (s_->size() - i_ < size) {
            return fail("a cut UTF-8 sequence");
        }
        for (std::size_t k = 1; k < size; ++k) {
            const unsigned char c = static_cast<unsigned char>((*s_)[i_ + k]);
            if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xbf)) {
                return fail("a bad UTF-8 sequence");
            }
        }
        o.append(*s_, i_, size);
        i_ += size;
        return true;
    }
    bool string(std::string& o) {
        ++i_;  // the quote
        while (true) {
            if (!more()) {
                return fail("an unterminated string");
            }
            const unsigned char c = peek();
            if (c == '"') {
                ++i_;
                return true;
            }
            if (c < 0x20) {
                return fail("a raw control byte in a string");
            }
            if (c >= 0x80) {
                if (!utf8(o)) {
                    return false;
                }
                continue;
            }
            ++i_;
            if (c != '\\') {
                o += static_cast<char>(c);
                continue;
            }
            if (!more()) {
                return fail("a cut escape");
            }
            const char e = static_cast<char>(peek());
            ++i_;
            const std::string from = "\"\\/bfnrt";
            const std::string to = "\"\\/\b\f\n\r\t";
            if (from.find(e) != std::string::npos) {
                o += to[from.find(e)];
            } else if (e == 'u') {
                unsigned long cp = 0;
                if (!hex4(cp)) {
                    return false;
                }
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    unsigned long low = 0;
                    if (s_->compare(i_, 2, "\\u") != 0 || (i_ += 2, !hex4(low)) || low < 0xdc00 ||
                        low > 0xdfff) {
                        return fail("a lone high surrogate");
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return fail("a lone low surrogate");
                }
                put_utf8(o, cp);
            } else {
                return fail("a bad escape");
            }
        }
    }
    bool number(std::string& o) {
        const std::size_t start = i_;
        if (more() && peek() == '-') {
            ++i_;
        }
        if (!more() || peek() < '0' || peek() > '9') {
            return fail("a bad number");
        }
        if (peek() == '0') {
            ++i_;
        } else {
            while (more() && peek() >= '0' && peek() <= '9') {
                ++i_;
            }
        }
        if (more() && peek() == '.') {
            ++i_;
            if (!more() || peek() < '0' || peek() > '9') {
                return fail("a bad fraction");
            }
            while (more() && peek() >= '0' && peek() <= '9') {
                ++i_;
            }
        }
        if (more() && (peek() == 'e' || peek() == 'E')) {
            ++i_;
            if (more() && (peek() == '+' || peek() == '-')) {
                ++i_;
            }
            if (!more() || peek() < '0' || peek() > '9') {
                return fail("a bad exponent");
            }
            while (more() && peek() >= '0' && peek() <= '9') {
                ++i_;
            }
        }
        o = s_->substr(start, i_ - start);
        return true;
    }
    bool value(json_value& v) {
        if (++depth_ > 64) {
            return fail("too deep");
        }
        if (!more()) {
            return fail("a missing value");
        }
        bool ok = true;
        const unsigned char c = peek();
        if (c == '{') {
            v.kind = json_value::object_v;
            ++i_;
            ws();
            if (more() && peek() == '}') {
                ++i_;
            } else {
                while (ok) {
                    ws();
                    std::string name;
                    json_value m;
                    if (!more() || peek() != '"' || !string(name)) {
                        return error.empty() ? fail("a missing member name") : false;
                    }
                    if (v.at(name) != nullptr) {
                        return fail("a duplicate member name");
                    }
                    ws();
                    if (!more() || peek() != ':') {
                        return fail("a missing colon");
                    }
                    ++i_;
                    ws();
                    ok = value(m);
                    v.members.emplace_back(name, std::move(m));
                    ws();
                    if (ok && more() && peek() == ',') {
                        ++i_;
                    } else if (ok && more() && peek() == '}') {
                        ++i_;
                        break;
                    } else if (ok) {
                        return fail("a bad object");
                    }
                }
            }
        } else if (c == '[') {
            v.kind = json_value::array_v;
            ++i_;
            ws();
            if (more() && peek() == ']') {
                ++i_;
            } else {
                while (ok) {
                    ws();
                    json_value item;
                    ok = value(item);
                    v.items.push_back(std::move(item));
                    ws();
                    if (ok && more() && peek() == ',') {
                        ++i_;
                    } else if (ok && more() && peek() == ']') {
                        ++i_;
                        break;
                    } else if (ok) {
                        return fail("a bad array");
                    }
                }
            }
        } else if (c == '"') {
            v.kind = json_value::string_v;
            ok = string(v.text);
        } else if (c == 't' || c == 'f') {
            v.kind = json_value::bool_v;
            v.b = c == 't';
            ok = literal(c == 't' ? "true" : "false");
        } else if (c == 'n') {
            ok = literal("null");
        } else {
            v.kind = json_value::number_v;
            ok = number(v.text);
        }
        --depth_;
        return ok;
    }

    const std::string* s_ = nullptr;
    std::size_t i_ = 0;
    int depth_ = 0;
};

}  // namespace edgelock_test
