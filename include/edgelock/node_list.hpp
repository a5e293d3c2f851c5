// Node lists, and node URLs fit to show.
//
// A node list is URLs separated by commas, as the agent's -N and
// $EDGELOCK_NODES take them. A comma ends a URL only where another URL
// begins (a scheme, then "://") or where nothing does (the end, or an empty
// URL), so the hosts of a redis-sentinel:// or redis-cluster:// URL and a
// password holding ',' stay in their URL. A valid URL never holds a comma
// followed by "scheme://": '/' must be %-escaped in a user or password.
//
// Whatever shows a URL or a list (a message, a status line, a metrics label,
// another program's environment) shows it redacted: each password replaced
// by "****" (credentials::mask: redis://user:****@host), or each user and
// password removed (credentials::remove: redis://host). The grammar is
// node_url.hpp's, so a password with ',', ':' or '@' in it is hidden whole.
// A URL that does not parse is hidden conservatively: everything between
// "://" (or its start) and its last '@' is replaced, user included.
//
// Nothing is allocated. The caller gives the buffer; when it is too small,
// nothing is written and the size needed is returned (call with capacity 0
// to learn it).
//
//   char shown[512];
//   const edgelock::redacted r = edgelock::node_list_redact(
//       list, edgelock::credentials::mask, shown, sizeof shown);
//   if (r.error == edgelock::redact_errc::ok) log(shown, r.size);
//
//   std::size_t from = 0;
//   edgelock::str_view url;
//   while (edgelock::node_list_next(list, from, url)) { ... url may be empty ... }
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/str_view.hpp"

namespace edgelock {

// The URL of `list` that starts at `from` into `url` (a view into list, empty
// for an empty node: ",," or a comma at either end), and `from` past it and
// its comma. Start with from = 0; false once the list is exhausted. An empty
// list is one empty URL.
bool node_list_next(str_view list, std::size_t& from, str_view& url) noexcept;

enum class credentials : std::uint8_t {
    mask,    // the password as "****"; the user stays
    remove,  // user, password and their '@' removed
};

enum class redact_errc : std::uint8_t {
    ok = 0,
    buffer_too_small,  // nothing written; size is the bytes needed
};

const char* describe(redact_errc code) noexcept;

struct redacted {
    redact_errc error = redact_errc::ok;
    std::size_t size = 0;  // ok: bytes written (no NUL); buffer_too_small: bytes needed
};

// What "****" stands for: a masked password, whatever its length.
constexpr const char* redacted_password = "****";

// One URL with its credentials masked or removed, into out.
redacted node_url_redact(str_view url, credentials how, char* out, std::size_t capacity) noexcept;

// Each URL of a node list (node_list_next) redacted as node_url_redact()
// does, the commas between them kept.
redacted node_list_redact(str_view list, credentials how, char* out, std::size_t capacity) noexcept;

}  // namespace edgelock
