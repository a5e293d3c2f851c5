// Test fixture: a plain TCP relay in front of a redis-server, in a thread,
// that can write bytes of its own to the connections that subscribed (their
// client sent SUBSCRIBE): a server that misbehaves on a RESP2 node's
// subscription while its lock connection stays sound.
//
//   edgelock_test::sub_relay relay(srv.port());   // listens on relay.port()
//   relay.inject("garbage\r\n");                   // to every subscriber, once
//
// Every accepted connection gets its own backend connection. Stopped and
// joined by the destructor.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tools/net.hpp"

namespace edgelock_test {

class sub_relay {
public:
    explicit sub_relay(std::uint16_t backend) : backend_(backend) {
        if (listener_.fd() < 0) {
            throw std::runtime_error("sub_relay: no listener");
        }
        thread_ = std::thread([this] { run(); });
    }
    ~sub_relay() {
        stop_ = true;
        thread_.join();
        for (const pair& p : pairs_) {
            ::close(p.client);
            ::close(p.server);
        }
    }
    sub_relay(const sub_relay&) = delete;
    sub_relay& operator=(const sub_relay&) = delete;

    std::uint16_t port() const { return listener_.port(); }
    int accepted() const { return accepted_; }
    // Written to every subscribed connection at the relay's next turn.
    void inject(const std::string& bytes) {
        const std::lock_guard<std::mutex> hold(mutex_);
        pending_ = bytes;
    }

private:
    struct pair {
        int client;
        int server;
        bool subscriber;
    };

    void run() {
        while (!stop_) {
            std::vector<pollfd> fds{{listener_.fd(), POLLIN, 0}};
            for (const pair& p : pairs_) {
                fds.push_back({p.client, POLLIN, 0});
                fds.push_back({p.server, POLLIN, 0});
            }
            ::poll(fds.data(), fds.size(), 10);
            if ((fds[0].revents & POLLIN) != 0) {
                const int c = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
                const int s = c < 0 ? -1 : connect_loopback(backend_);
                if (s >= 0) {
                    pairs_.push_back({c, s, false});
                    ++accepted_;
                } else if (c >= 0) {
                    ::close(c);
                }
                continue;  // the pairs changed under fds
            }
            for (std::size_t i = 0; i < pairs_.size(); ++i) {
                pair& p = pairs_[i];
                const bool up = relay(fds[1 + 2 * i].revents, p.client, p.server, &p.subscriber) &&
                                relay(fds[2 + 2 * i].revents, p.server, p.client, nullptr);
                if (!up) {
                    ::close(p.client);
                    ::close(p.server);
                    p.client = p.server = -1;
                }
            }
            pairs_.erase(std::remove_if(pairs_.begin(), pairs_.end(),
                                        [](const pair& p) { return p.client < 0; }),
                         pairs_.end());
            std::string bytes;
            {
                const std::lock_guard<std::mutex> hold(mutex_);
                bytes.swap(pending_);
            }
            for (const pair& p : pairs_) {
                if (!bytes.empty() && p.subscriber) {
                    (void)::send(p.client, bytes.data(), bytes.size(), MSG_NOSIGNAL);
                }
            }
        }
    }

    // Copies what `from` has to `to`; false when either side is gone.
    static bool relay(short revents, int from, int to, bool* subscriber) {
        if ((revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
            return true;
        }
        char buf[4096];
        const ssize_t n = ::recv(from, buf, sizeof buf, 0);
        if (n <= 0) {
            return false;
        }
        if (subscriber != nullptr &&
            std::string(buf, static_cast<std::size_t>(n)).find("SUBSCRIBE") != std::string::npos) {
            *subscriber = true;
        }
        return ::send(to, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) == n;
    }

    std::uint16_t backend_;
    loopback_listener listener_;
    std::vector<pair> pairs_;
    std::mutex mutex_;
    std::string pending_;
    std::atomic<bool> stop_{false};
    std::atomic<int> accepted_{0};
    std::thread thread_;
};

}  // namespace edgelock_test
