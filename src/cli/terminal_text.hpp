// Text from Redis (keys, tokens, holder records, error replies) as the agent
// prints it for a person: never a raw control byte, so a record cannot move
// the cursor, set a window title, clear the screen or forge a line.
#pragma once

#include <string>

namespace edgelock_cli {

// s with every control byte (below 0x20, 0x7f, and C1 0x80-0x9f) shown as an
// escape (\n, \r, \t, \033 for ESC, \NNN octal otherwise), each byte that is
// not part of well-formed UTF-8 as \xNN and a backslash as \\, as ls and
// systemctl do. Well-formed UTF-8 outside C1 is kept.
std::string terminal_text(const std::string& s);

}  // namespace edgelock_cli
