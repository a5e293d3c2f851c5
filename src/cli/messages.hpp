// The agent's messages on stderr.
//
//   say(1, "lock '%s' lost", key);   // "edgelock: lock 'k' lost" and a newline
#pragma once

namespace edgelock_cli {

// A message on stderr, "edgelock: ..." and a newline, when the verbosity
// (0 quiet, 1 normal, 2 verbose) reaches `level`.
void say(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace edgelock_cli
