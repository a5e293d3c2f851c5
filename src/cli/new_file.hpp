// The files the agent (often root) creates in a directory others may own:
// under a name no one can guess, created by this call (O_EXCL), never
// through a symbolic link (O_NOFOLLOW), then renamed over its target. And
// the files it reads as data, opened so that a FIFO or a device in their
// place is found, not waited on.
//
//   std::string name;
//   const int fd = create_unguessable(AT_FDCWD, path + ".tmp.", 0644, name);
//   struct stat st;
//   const int in = open_to_read(path, st);   // then S_ISREG(st.st_mode)?
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace edgelock_cli {

// Opens for writing a new file named `prefix` + 16 random hex digits,
// relative to `dir_fd` (AT_FDCWD for the current directory); its name in
// `name`. -1 with errno set when it cannot (after a few names taken).
int create_unguessable(int dir_fd, const std::string& prefix, mode_t mode, std::string& name);

// Opens `path` for reading without blocking (a FIFO there opens at once) and
// reads its status on that descriptor into `st`, whatever the file's type:
// the caller checks the type and mode of what it then reads. -1 with errno.
int open_to_read(const std::string& path, struct stat& st);

// True when `path` is a regular file, found without blocking; else false and
// `why`. A file that cannot be opened is true: its reader reports it.
bool is_regular_file(const std::string& path, std::string& why);

}  // namespace edgelock_cli
