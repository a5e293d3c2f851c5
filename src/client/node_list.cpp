// Node lists split where a new URL begins, and URLs with their credentials
// masked or removed (node_list.hpp). The parser says where a URL's user and
// password are, so a password is hidden whole whatever it holds (',', ':',
// '@', %XX escapes); a URL it refuses is hidden up to its last '@'.
#include "edgelock/node_list.hpp"

#include "edgelock/node_url.hpp"
#include "node_url_internal.hpp"

namespace edgelock {

using namespace url_detail;

namespace {

// A URL begins at list[at]: a letter, letters, digits or "+-.", then "://".
bool url_begins(str_view list, std::size_t at) {
    if (at >= list.size || !is_alpha(list[at])) {
        return false;
    }
    std::size_t i = at + 1;
    while (i < list.size && is_scheme_char(list[i])) {
        ++i;
    }
    return starts_with(sub(list, i, list.size), "://");
}

// Index of the last c in s at or after from, or s.size.
std::size_t find_last(str_view s, std::size_t from, char c) {
    for (std::size_t i = s.size; i > from; --i) {
        if (s[i - 1] == c) {
            return i - 1;
        }
    }
    return s.size;
}

// Counts what is added and writes it only when told to: the first pass
// measures, the second writes what is known to fit.
struct sink {
    char* out;
    std::size_t size = 0;

    void add(str_view s) {
        for (std::size_t i = 0; i < s.size; ++i) {
            if (out != nullptr) {
                out[size] = s[i];
            }
            ++size;
        }
    }
};

// Where a URL's credentials lie: [from, at) before the '@' at `at`, and where
// the part replaced by "****" starts (mask), or none.
struct credential_span {
    bool found = false;
    std::size_t from = 0;    // the user's first byte
    std::size_t hidden = 0;  // the first byte masked: the password's, or the user's
    std::size_t at = 0;      // the '@' that ends them
    bool masked = false;     // something is hidden by mask (a password, or all of it)
};

credential_span find_credentials(str_view url) {
    credential_span c;
    const std::size_t scheme_end = find(url, ':');
    const bool has_scheme = starts_with(sub(url, scheme_end, url.size), "://");
    c.from = has_scheme ? scheme_end + 3 : 0;
    c.at = find_last(url, c.from, '@');
    if (c.at == url.size) {
        return c;  // no '@': no user, no password
    }
    node_address a;
    if (parse_node_url(url, a) == url_errc::ok) {
        if (!a.unix_path.empty()) {
            return c;  // a unix:// path may hold '@'; the URL has no credentials
        }
        // Valid: every '@' is the one ending the user information, and the
        // user holds no ':' (node_url.cpp), so the password follows the first.
        c.found = true;
        c.masked = a.has_password;
        c.hidden = c.from + find(sub(url, c.from, c.at), ':') + 1;
        return c;
    }
    // Refused: what looks like the user information is hidden whole, since
    // which part is the password cannot be known.
    c.found = true;
    c.masked = true;
    c.hidden = c.from;
    return c;
}

void emit_url(str_view url, credentials how, sink& s) {
    const credential_span c = find_credentials(url);
    if (!c.found) {
        s.add(url);
    } else if (how == credentials::remove) {
        s.add(sub(url, 0, c.from));
        s.add(sub(url, c.at + 1, url.size));
    } else if (c.masked) {
        s.add(sub(url, 0, c.hidden));
        s.add(redacted_password);
        s.add(sub(url, c.at, url.size));
    } else {
        s.add(url);  // a user without a password
    }
}

void emit_list(str_view list, credentials how, sink& s) {
    std::size_t from = 0;
    str_view url;
    for (bool first = true; node_list_next(list, from, url); first = false) {
        if (!first) {
            s.add(",");
        }
        emit_url(url, how, s);
    }
}

template <typename Emit>
redacted write_redacted(char* out, std::size_t capacity, Emit emit) {
    sink measure{nullptr};
    emit(measure);
    redacted r;
    r.size = measure.size;
    if (measure.size > capacity || (out == nullptr && measure.size > 0)) {
        r.error = redact_errc::buffer_too_small;
        return r;
    }
    sink write{out};
    emit(write);
    return r;
}

}  // namespace

bool node_list_next(str_view list, std::size_t& from, str_view& url) noexcept {
    if (from > list.size) {
        return false;
    }
    // A run of commas ends the URL when what follows it begins a URL or is
    // the end; otherwise it is inside the URL (a password, a host list).
    std::size_t comma = from;
    for (;;) {
        comma += find(sub(list, comma, list.size), ',');
        if (comma == list.size) {
            break;
        }
        std::size_t after = comma;
        while (after < list.size && list[after] == ',') {
            ++after;
        }
        if (after == list.size || url_begins(list, after)) {
            break;
        }
        comma = after;
    }
    url = sub(list, from, comma);
    from = comma + 1;
    return true;
}

const char* describe(redact_errc code) noexcept {
    switch (code) {
    case redact_errc::ok:
        return "ok";
    case redact_errc::buffer_too_small:
        return "buffer too small for the redacted text";
    }
    return "unknown redaction error";
}

redacted node_url_redact(str_view url, credentials how, char* out, std::size_t capacity) noexcept {
    return write_redacted(out, capacity, [&](sink& s) { emit_url(url, how, s); });
}

redacted node_list_redact(str_view list, credentials how, char* out,
                          std::size_t capacity) noexcept {
    return write_redacted(out, capacity, [&](sink& s) { emit_list(list, how, s); });
}

}  // namespace edgelock
