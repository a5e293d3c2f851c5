// Files for the tests and their tools: a private temporary directory removed
// with everything in it, and whole-file reads and writes.
//
//   edgelock_test::temp_dir dir("edgelock-cli");   // /tmp/edgelock-cli-XXXXXX
//   write_file(dir / "pw", "secret\n");
//   CHECK(read_file(dir / "out") == "done\n");
//
// Nothing here needs Catch2: the benchmarks and the chaos checker use it too.
// A directory that cannot be made throws, which fails the test that asked.
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace edgelock_test {

// Removes path and, if it is a directory, everything under it; symbolic links
// are removed, never followed. Quiet about what is already gone.
inline void remove_tree(const std::string& path) {
    if (path.empty()) {
        return;
    }
    ::nftw(
        path.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) {
            ::remove(p);
            return 0;
        },
        16, FTW_DEPTH | FTW_PHYS);
}

// A directory of its own under /tmp, removed when the object goes, unless kept.
class temp_dir {
public:
    explicit temp_dir(const std::string& prefix = "edgelock-test") {
        std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
        if (::mkdtemp(&tmpl[0]) == nullptr) {
            throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
        }
        path = tmpl;
    }
    ~temp_dir() {
        if (!kept_) {
            remove_tree(path);
        }
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    std::string operator/(const std::string& name) const { return path + "/" + name; }
    // Leaves the directory and its files in place (for a look afterwards).
    void keep() { kept_ = true; }

    std::string path;

private:
    bool kept_ = false;
};

// The whole file; "" when it cannot be read.
inline std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Replaces the file's contents with text (creating it); false on error.
inline bool write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    return static_cast<bool>(f);
}

inline bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// The running program's own path, for a program that runs itself again
// (under valgrind, or in another mode); "" when it cannot be read.
inline std::string self_path() {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace edgelock_test
