// The one writer of the agent's --json output. Text read from Redis (keys,
// tokens, holder records, counters) is untrusted: it goes in only as a JSON
// string, escaped per RFC 8259 with anything not well-formed UTF-8 replaced by
// U+FFFD, and a number goes in only as a parsed integer, so no record can
// close an object early, add a member or make the document invalid.
#pragma once

#include <string>
#include <vector>

namespace edgelock_cli {

class json_writer {
public:
    json_writer& begin_object();
    json_writer& end_object();
    json_writer& begin_array();
    json_writer& end_array();
    // A member's name, in an object. A name used twice in one object, or any
    // other misuse, is a bug in the agent: it aborts.
    json_writer& key(const std::string& name);
    json_writer& string(const std::string& v);
    json_writer& integer(long long v);
    // text as a JSON integer when it is one (a decimal that fits 64 bits),
    // else as a string: a fencing counter read from a node.
    json_writer& integer_text(const std::string& text);
    json_writer& boolean(bool v);
    json_writer& null();
    // A complete document of another writer, as this value.
    json_writer& value(const json_writer& complete);
    const std::string& text() const { return out_; }

private:
    struct frame {
        bool object;
        bool first = true;
        std::vector<std::string> names;
    };
    void before_value();
    std::string out_;
    std::vector<frame> open_;
    bool after_key_ = false;
};

// s as a JSON string literal, quotes included.
std::string json_quote(const std::string& s);

}  // namespace edgelock_cli
