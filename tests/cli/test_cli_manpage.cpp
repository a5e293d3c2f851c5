// The agent's manual (src/cli/edgelock.1) kept true to the agent: the options
// of `edgelock -h` and of the manual's OPTIONS section are the same set, both
// name every URL form the library takes, and groff finds nothing to say.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli/agent_helpers.hpp"
#include "tools/skip.hpp"

using namespace edgelock_test;

namespace {

std::string manual() {
    std::ifstream in(EDGELOCK_MANPAGE_PATH);
    REQUIRE(in.good());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The manual's text between `.SH NAME` and the next `.SH`, with roff's
// escaped hyphens made plain.
std::string section(const std::string& roff, const std::string& name) {
    const std::string head = ".SH " + name + "\n";
    const std::size_t at = roff.find(head);
    REQUIRE(at != std::string::npos);
    const std::size_t end = roff.find("\n.SH ", at + head.size());
    std::string text = roff.substr(at + head.size(), end == std::string::npos ? end : end - at);
    std::string plain;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '-') {
            plain += '-';
            ++i;
        } else {
            plain += text[i];
        }
    }
    return plain;
}

bool option_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

// Every "--name" and every "-X" that stands as a word of its own (after a
// space, a comma or a quote, or at a line's start) in `text`.
std::set<std::string> options_in(const std::string& text) {
    std::set<std::string> out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '-' || (i > 0 && text[i - 1] != ' ' && text[i - 1] != '\n' &&
                               text[i - 1] != ',' && text[i - 1] != '"')) {
            continue;
        }
        if (i + 2 < text.size() && text[i + 1] == '-' && text[i + 2] >= 'a' && text[i + 2] <= 'z') {
            std::size_t j = i + 2;
            while (j < text.size() && option_char(text[j])) {
                ++j;
            }
            out.insert(text.substr(i, j - i));
            i = j;
        } else if (i + 1 < text.size() &&
                   ((text[i + 1] >= 'a' && text[i + 1] <= 'z') ||
                    (text[i + 1] >= 'A' && text[i + 1] <= 'Z')) &&
                   (i + 2 == text.size() || !option_char(text[i + 2]))) {
            out.insert(text.substr(i, 2));
            ++i;
        }
    }
    return out;
}

// The options part of -h: from "options:" to the first blank line after it.
std::string usage_options(const std::string& usage) {
    const std::size_t at = usage.find("options:\n");
    REQUIRE(at != std::string::npos);
    const std::size_t end = usage.find("\n\n", at);
    return usage.substr(at, end == std::string::npos ? end : end - at);
}

std::string listed(const std::set<std::string>& s) {
    std::string out;
    for (const std::string& o : s) {
        out += (out.empty() ? "" : " ") + o;
    }
    return out;
}

// The URL forms the library's node list takes (include/edgelock/node_url.hpp).
const char* const url_schemes[] = {"redis://",          "rediss://",          "unix://",
                                   "redis-sentinel://", "rediss-sentinel://", "redis-cluster://"};

}  // namespace

TEST_CASE("cli manual: every option of -h is in the manual, and the reverse", "[cli][manual]") {
    const run_result r = agent({"-h"});
    INFO(r.out);
    REQUIRE(r.status == 0);
    const std::set<std::string> in_usage = options_in(usage_options(r.out));
    const std::set<std::string> in_manual = options_in(section(manual(), "OPTIONS"));
    // The parser's options, counted so that a broken extraction cannot pass.
    CHECK(in_usage.size() >= 30);
    CHECK(in_usage.count("--tls-session-cache") == 1);
    CHECK(in_usage.count("-N") == 1);
    std::set<std::string> missing_from_manual;
    std::set<std::string> missing_from_usage;
    for (const std::string& o : in_usage) {
        if (in_manual.count(o) == 0) {
            missing_from_manual.insert(o);
        }
    }
    for (const std::string& o : in_manual) {
        if (in_usage.count(o) == 0) {
            missing_from_usage.insert(o);
        }
    }
    INFO("in -h, not in the manual's OPTIONS: " << listed(missing_from_manual));
    INFO("in the manual's OPTIONS, not in -h: " << listed(missing_from_usage));
    CHECK(missing_from_manual.empty());
    CHECK(missing_from_usage.empty());
}

// -h writes a form and its TLS twin as one: redis[s]://, redis[s]-sentinel://.
bool names_form(const std::string& text, const std::string& scheme) {
    if (text.find(scheme) != std::string::npos) {
        return true;
    }
    const std::size_t tail = scheme.rfind("rediss", 0) == 0 ? 6 : 5;
    return scheme.rfind("redis", 0) == 0 &&
           text.find("redis[s]" + scheme.substr(tail)) != std::string::npos;
}

TEST_CASE("cli manual: -h and the manual name every URL form", "[cli][manual]") {
    const run_result r = agent({"-h"});
    REQUIRE(r.status == 0);
    const std::string urls = section(manual(), "URLS");
    for (const char* scheme : url_schemes) {
        INFO(scheme << "\n" << r.out);
        CHECK(names_form(r.out, scheme));
        CHECK(urls.find(scheme) != std::string::npos);
    }
}

TEST_CASE("cli manual: groff -man -ww finds nothing to say", "[cli][manual]") {
    struct stat st {};
    if (::stat("/usr/bin/groff", &st) != 0) {
        skip("groff is not installed (make deps installs groff-base)");
        return;
    }
    process p({"groff", "-man", "-ww", "-z", EDGELOCK_MANPAGE_PATH}, {});
    const run_result r = p.finish(20.0);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(r.out.empty());
}
