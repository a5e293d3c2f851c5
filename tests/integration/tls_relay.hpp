// Test fixture: a TLS server of the test's own (mbedTLS's server side, in a
// thread) that completes real handshakes and relays the decrypted bytes to a
// plaintext backend (a redis-server's port), so a client sees a TLS Redis.
// Then, on demand, it misbehaves where a real TLS server would not: after the
// handshake, with the next bytes the client sends.
//
//   edgelock_test::tls_relay relay(certs, srv.port());   // listens on relay.port()
//   relay.set_fault(tls_relay::fault::alert);            // the next request gets an alert
//   relay.close_notifies();                              // clean closes seen so far
//
// One connection at a time, on a free loopback port; stopped and joined by
// the destructor. Each accepted connection gets its own backend connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "integration/tls_fixture.hpp"

namespace edgelock_test {

class tls_relay {
public:
    // What the relay does with the client's next bytes once armed.
    enum class fault : std::uint8_t {
        none,        // relay them (a TLS Redis)
        garbage,     // answer with an encrypted line that is not RESP
        oversized,   // answer with an encrypted bulk string header of 100 MB
        alert,       // send a fatal alert (internal_error)
        raw,         // write a plaintext RESP error on the socket: not a TLS record
        cut,         // answer half a reply, then close TCP without close_notify
        silent,      // read them and answer nothing, ever
        malformed,   // answer with an encrypted bulk string longer than it says
        long_line,   // answer with an encrypted status line of 256 kB, no end in sight
        forged,      // write an application data record that does not decrypt
        notify_cut,  // answer half a reply, then close_notify and close TCP
    };

    // Server certificate "server" of certs; throws when mbedTLS cannot load
    // it or no port can be had.
    tls_relay(const tls_certs& certs, std::uint16_t backend_port);
    ~tls_relay();
    tls_relay(const tls_relay&) = delete;
    tls_relay& operator=(const tls_relay&) = delete;

    std::uint16_t port() const { return port_; }
    void set_fault(fault f) { fault_ = f; }
    // Connections whose client closed with close_notify, and all accepted.
    int close_notifies() const { return close_notifies_; }
    int accepted() const { return accepted_; }
    // Connections whose handshake completed.
    int handshakes() const { return handshakes_; }

private:
    void run();
    void serve(int client_fd);

    std::string cert_file_;
    std::string key_file_;
    std::uint16_t backend_;
    std::uint16_t port_ = 0;
    int listen_fd_ = -1;
    std::atomic<bool> stop_{false};
    std::atomic<fault> fault_{fault::none};
    std::atomic<int> close_notifies_{0};
    std::atomic<int> accepted_{0};
    std::atomic<int> handshakes_{0};
    std::thread thread_;
};

}  // namespace edgelock_test
