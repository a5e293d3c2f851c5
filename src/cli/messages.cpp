// The agent's messages on stderr.
#include "messages.hpp"

#include <cstdarg>
#include <cstdio>

#include "agent.hpp"

namespace edgelock_cli {

void say(int level, const char* fmt, ...) {
    if (opt.verbosity < level) {
        return;
    }
    std::fputs("edgelock: ", stderr);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
}

}  // namespace edgelock_cli
