// libFuzzer target for the agent's writers of text read from Redis: the JSON
// writer's strings (and its integer_text, as a fencing counter goes) and the
// terminal quoting. Whatever the bytes, the JSON is one strict document on
// one line that reads back as the input with each byte that is not UTF-8
// replaced by U+FFFD; the terminal text holds no raw control byte (C0, DEL,
// C1) and is well-formed UTF-8. Any broken invariant traps.
//
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -Itests \
//       tests/fuzz/fuzz_text_escape.cpp src/cli/json_writer.cpp \
//       src/cli/terminal_text.cpp src/cli/utf8.cpp -o fuzz_text_escape
//   ./fuzz_text_escape tests/fuzz/corpus/text_escape
#include <cstddef>
#include <cstdint>
#include <string>

#include "../../src/cli/json_writer.hpp"
#include "../../src/cli/terminal_text.hpp"
#include "../../src/cli/utf8.hpp"
#include "tools/strict_json.hpp"

namespace {

void check(bool ok) {
    if (!ok) {
        __builtin_trap();
    }
}

const unsigned char* bytes(const std::string& s) {
    return reinterpret_cast<const unsigned char*>(s.data());
}

bool well_formed(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t size = edgelock_cli::utf8_sequence(bytes(s) + i, s.size() - i);
        if (size == 0) {
            return false;
        }
        i += size;
    }
    return true;
}

bool no_raw_control(const std::string& s) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = bytes(s)[i];
        if (c < 0x20 || c == 0x7f) {
            return false;
        }
        // C1 as UTF-8 (U+0080-U+009F) reaches a terminal as a control too.
        if (c == 0xc2 && i + 1 < s.size() && bytes(s)[i + 1] <= 0x9f) {
            return false;
        }
    }
    return true;
}

// in with each byte that is not part of well-formed UTF-8 as U+FFFD.
std::string replaced(const std::string& in) {
    std::string out;
    for (std::size_t i = 0; i < in.size();) {
        const std::size_t size = edgelock_cli::utf8_sequence(bytes(in) + i, in.size() - i);
        if (size == 0) {
            out += "\xef\xbf\xbd";
            ++i;
        } else {
            out.append(in, i, size);
            i += size;
        }
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string in(reinterpret_cast<const char*>(data), size);

    edgelock_cli::json_writer w;
    w.begin_object().key("a" + in).string(in).key("b" + in).integer_text(in);
    w.key("c").begin_array().string(in).integer_text(in).end_array().end_object();
    const std::string& j = w.text();
    check(j.find('\n') == std::string::npos);
    check(no_raw_control(j));
    check(well_formed(j));
    edgelock_test::json_value v;
    edgelock_test::strict_json p;
    check(p.parse(j, v));
    check(v.kind == edgelock_test::json_value::object_v && v.members.size() == 3);
    check(v.members[0].first == "a" + replaced(in) && v.members[0].second.text == replaced(in));
    const edgelock_test::json_value& fence = v.members[1].second;
    if (fence.kind == edgelock_test::json_value::number_v) {
        check(fence.text == std::to_string(std::stoll(in)));
    } else {
        check(fence.kind == edgelock_test::json_value::string_v && fence.text == replaced(in));
    }

    const std::string t = edgelock_cli::terminal_text(in);
    check(no_raw_control(t));
    check(well_formed(t));
    check(t.size() >= in.size());
    return 0;
}
