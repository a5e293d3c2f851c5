// The chaos checker's logs, fenced storage and holder table (chaos.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "chaos/chaos.hpp"

namespace edgelock_chaos {

std::int64_t ms_to_ns(std::int64_t ms) {
    return ms * 1000000;
}

namespace {

bool write_all(int fd, const std::string& s) {
    // O_APPEND plus one write(): the line lands whole, after every earlier one.
    ssize_t n;
    do {
        n = ::write(fd, s.data(), s.size());
    } while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(s.size());
}

}  // namespace

bool append_line(const std::string& path, const std::string& line) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return false;
    }
    const bool ok = write_all(fd, line + "\n");
    ::close(fd);
    return ok;
}

bool storage_write(const std::string& dir, std::uint64_t token, int worker) {
    const std::string path = dir + "/storage";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return false;
    }
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    const std::uint64_t highest = n > 0 ? std::strtoull(buf, nullptr, 10) : 0;
    const std::int64_t t = mono_ns();
    bool accepted = false;
    if (token < highest) {
        append_line(dir + "/storage.log", "reject " + std::to_string(token) + " " +
                                              std::to_string(highest) + " " + std::to_string(t) +
                                              " " + std::to_string(worker));
    } else {
        const std::string v = std::to_string(token) + "\n";
        if (::ftruncate(fd, 0) == 0 &&
            ::pwrite(fd, v.data(), v.size(), 0) == static_cast<ssize_t>(v.size())) {
            accepted = true;
            append_line(dir + "/storage.log", "accept " + std::to_string(token) + " " +
                                                  std::to_string(t) + " " + std::to_string(worker));
        }
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return accepted;
}

namespace {

std::size_t size_of(int workers) {
    return static_cast<std::size_t>(workers) * sizeof(std::int32_t);
}

}  // namespace

holders::~holders() {
    if (map_ != nullptr) {
        ::munmap(const_cast<std::int32_t*>(map_), size_of(count_));
    }
}

bool holders::open(const std::string& dir, int workers, bool create) {
    const std::string path = dir + "/holders";
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (fd < 0) {
        return false;
    }
    if (create && ::ftruncate(fd, static_cast<off_t>(size_of(workers))) != 0) {
        ::close(fd);
        return false;
    }
    void* p = ::mmap(nullptr, size_of(workers), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
        return false;
    }
    map_ = static_cast<volatile std::int32_t*>(p);
    count_ = workers;
    return true;
}

void holders::enter(int worker) {
    if (map_ != nullptr && worker >= 0 && worker < count_) {
        map_[worker] = static_cast<std::int32_t>(::getpgrp());
    }
}

void holders::leave(int worker) {
    if (map_ != nullptr && worker >= 0 && worker < count_) {
        map_[worker] = 0;
    }
}

int holders::group(int worker) const {
    return map_ != nullptr && worker >= 0 && worker < count_ ? map_[worker] : 0;
}

void log_fault(const std::string& dir, const active_fault& f, std::int64_t end) {
    append_line(dir + "/faults.log", "fault " + f.kind + " " + std::to_string(f.target) + " " +
                                         std::to_string(f.start) + " " + std::to_string(end) + " " +
                                         (f.detail.empty() ? "-" : f.detail));
}

const char* topology_name(topology_kind kind) {
    switch (kind) {
    case topology_kind::sentinel:
        return "sentinel";
    case topology_kind::cluster:
        return "cluster";
    case topology_kind::standalone:
        break;
    }
    return "standalone";
}

bool parse_topology(const std::string& name, topology_kind& kind) {
    for (topology_kind k :
         {topology_kind::standalone, topology_kind::sentinel, topology_kind::cluster}) {
        if (name == topology_name(k)) {
            kind = k;
            return true;
        }
    }
    return false;
}

}  // namespace edgelock_chaos
