// The simulated name service behind the port's lookups: names answer on
// virtual time with their record's addresses, fail, or never answer. See
// net.hpp.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "sim/net.hpp"

namespace sim {

using edgelock::instant;
using edgelock::str_view;
using edgelock::port::net_result;
using edgelock::port::net_status;

namespace {

constexpr std::uint64_t unknown_name_latency_us = 1000;

net_result result(net_status s, std::size_t size = 0) {
    net_result r;
    r.status = s;
    r.size = size;
    return r;
}

}  // namespace

bool net::numeric_host(str_view host) {
    const std::string text(host.data, host.size);
    unsigned char buf[16];
    return ::inet_pton(AF_INET, text.c_str(), buf) == 1 ||
           ::inet_pton(AF_INET6, text.c_str(), buf) == 1 || text.find(':') != std::string::npos;
}

std::string net::host(int i) const {
    return nodes_.at(static_cast<std::size_t>(i))->host;
}

net::name_record& net::name(const std::string& host) {
    return names_[host];
}

std::string net::url_named(int i, const std::string& host_name) {
    name_record& r = names_[host_name];
    if (r.addresses.empty()) {
        r.addresses.push_back(host(i));
    }
    return "redis://" + host_name + ":" + std::to_string(7001 + i);
}

std::size_t net::lookups_unanswered(const std::string& host_name) const {
    std::size_t n = 0;
    for (const lookup& l : lookups_) {
        n += !l.done && (host_name.empty() || l.host == host_name) ? 1u : 0u;
    }
    return n;
}

int net::take_fd() {
    std::size_t fd = 3;  // the lowest free number, as a POSIX system hands out
    while ((fd < fds_.size() && fds_[fd] != 0) ||
           (fd < lookup_fds_.size() && lookup_fds_[fd] != 0)) {
        ++fd;
    }
    if (fd >= fds_.size()) {
        fds_.resize(fd + 1, 0);
    }
    if (fd >= lookup_fds_.size()) {
        lookup_fds_.resize(fd + 1, 0);
    }
    return static_cast<int>(fd);
}

const net::lookup* net::lookup_of(int id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= lookups_.size()) {
        return nullptr;
    }
    const lookup& l = lookups_[static_cast<std::size_t>(id)];
    return l.released ? nullptr : &l;
}

net::lookup* net::lookup_by_fd(int fd) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= lookup_fds_.size() ||
        lookup_fds_[static_cast<std::size_t>(fd)] == 0) {
        return nullptr;
    }
    return &lookups_[lookup_fds_[static_cast<std::size_t>(fd)] - 1];
}

net_result net::lookup_start(str_view host_name, int& id, bool numeric_only) {
    id = -1;
    if (host_name.empty() || host_name.size > 253 ||
        std::memchr(host_name.data, '\0', host_name.size) != nullptr) {
        return result(net_status::bad_argument);
    }
    if (numeric_only && !numeric_host(host_name)) {
        return result(net_status::would_block);
    }
    const std::size_t index = lookups_.size();
    lookups_.push_back(lookup{});
    lookup& l = lookups_.back();
    l.host.assign(host_name.data, host_name.size);
    id = static_cast<int>(index);
    if (numeric_host(host_name)) {
        l.done = true;
        l.status = net_status::ok;
        l.addresses.push_back(l.host);
        return result(net_status::ok, 1);
    }
    lookups.push_back(lookup_record{l.host, now()});
    l.fd = take_fd();
    lookup_fds_[static_cast<std::size_t>(l.fd)] = index + 1;
    const auto it = names_.find(l.host);
    const name_record record = it != names_.end() ? it->second : name_record{};
    const bool known = it != names_.end();
    if (known && !record.answers) {
        return result(net_status::in_progress);  // never done
    }
    const std::uint64_t latency = known ? record.latency_us : unknown_name_latency_us;
    push(now_ + latency, item{item_kind::action, 0, {}, [this, index, record, known] {
                                  lookup& done = lookups_[index];
                                  done.done = true;
                                  if (!known || record.fails) {
                                      done.status = net_status::resolve_failed;
                                  } else if (record.addresses.empty()) {
                                      done.status = net_status::no_address;
                                  } else {
                                      done.status = net_status::ok;
                                      done.addresses = record.addresses;
                                  }
                              }});
    return result(net_status::in_progress);
}

int net::lookup_fd(int id) const {
    const lookup* l = lookup_of(id);
    return l != nullptr ? l->fd : -1;
}

net_result net::lookup_result(int id) const {
    const lookup* l = lookup_of(id);
    if (l == nullptr) {
        return result(net_status::bad_argument);
    }
    if (!l->done) {
        return result(net_status::in_progress);
    }
    return result(l->status, l->status == net_status::ok ? l->addresses.size() : 0);
}

bool net::lookup_is_for(int id, str_view host_name) const {
    const lookup* l = lookup_of(id);
    return l != nullptr && str_view(l->host.data(), l->host.size()) == host_name;
}

std::size_t net::lookup_address(int id, unsigned index, char* buf, std::size_t capacity) const {
    const lookup* l = lookup_of(id);
    if (l == nullptr || !l->done || l->status != net_status::ok || index >= l->addresses.size()) {
        return 0;
    }
    const std::string& a = l->addresses[index];
    if (buf == nullptr || a.size() + 1 > capacity) {
        return 0;
    }
    std::memcpy(buf, a.c_str(), a.size() + 1);
    return a.size();
}

void net::lookup_release(int id) {
    if (id < 0 || static_cast<std::size_t>(id) >= lookups_.size()) {
        return;
    }
    lookup& l = lookups_[static_cast<std::size_t>(id)];
    if (l.fd >= 0) {
        lookup_fds_[static_cast<std::size_t>(l.fd)] = 0;
    }
    l.fd = -1;
    l.released = true;
}

}  // namespace sim
