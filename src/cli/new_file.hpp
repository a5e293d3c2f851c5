// A file the agent (often root) creates in a directory others may own:
// under a name no one can guess, created by this call (O_EXCL), never
// through a symbolic link (O_NOFOLLOW), then renamed over its target.
//
//   std::string name;
//   const int fd = create_unguessable(AT_FDCWD, path + ".tmp.", 0644, name);
#pragma once

#include <sys/types.h>

#include <string>

namespace edgelock_cli {

// Opens for writing a new file named `prefix` + 16 random hex digits,
// relative to `dir_fd` (AT_FDCWD for the current directory); its name in
// `name`. -1 with errno set when it cannot (after a few names taken).
int create_unguessable(int dir_fd, const std::string& prefix, mode_t mode, std::string& name);

}  // namespace edgelock_cli
