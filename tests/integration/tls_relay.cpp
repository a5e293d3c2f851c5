#include "integration/tls_relay.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#include <psa/crypto.h>
#endif

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tools/clock.hpp"
#include "tools/net.hpp"

namespace edgelock_test {

namespace {

int random_cb(void*, unsigned char* out, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::getrandom(out + done, size - done, 0);
        if (n <= 0) {
            return -1;
        }
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

int send_cb(void* ctx, const unsigned char* buf, std::size_t len) {
    const ssize_t n = ::send(*static_cast<int*>(ctx), buf, len, MSG_NOSIGNAL);
    if (n >= 0) {
        return static_cast<int>(n);
    }
    return errno == EAGAIN || errno == EWOULDBLOCK ? MBEDTLS_ERR_SSL_WANT_WRITE
                                                   : MBEDTLS_ERR_SSL_INTERNAL_ERROR;
}

int recv_cb(void* ctx, unsigned char* buf, std::size_t len) {
    const ssize_t n = ::recv(*static_cast<int*>(ctx), buf, len, 0);
    if (n >= 0) {
        return static_cast<int>(n);
    }
    return errno == EAGAIN || errno == EWOULDBLOCK ? MBEDTLS_ERR_SSL_WANT_READ
                                                   : MBEDTLS_ERR_SSL_INTERNAL_ERROR;
}

int parse_key(mbedtls_pk_context& key, const std::string& file) {
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
    return mbedtls_pk_parse_keyfile(&key, file.c_str(), nullptr, random_cb, nullptr);
#else
    return mbedtls_pk_parse_keyfile(&key, file.c_str(), nullptr);
#endif
}

// The server side of one connection's TLS: configuration, certificate, key
// and session, freed together.
struct server_session {
    mbedtls_ssl_config conf;
    mbedtls_x509_crt cert;
    mbedtls_pk_context key;
    mbedtls_ssl_context ssl;
    int fd;

    explicit server_session(int client_fd) : fd(client_fd) {
        mbedtls_ssl_config_init(&conf);
        mbedtls_x509_crt_init(&cert);
        mbedtls_pk_init(&key);
        mbedtls_ssl_init(&ssl);
    }
    ~server_session() {
        mbedtls_ssl_free(&ssl);
        mbedtls_pk_free(&key);
        mbedtls_x509_crt_free(&cert);
        mbedtls_ssl_config_free(&conf);
    }
    server_session(const server_session&) = delete;
    server_session& operator=(const server_session&) = delete;

    bool set_up(const std::string& cert_file, const std::string& key_file) {
        if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                        MBEDTLS_SSL_PRESET_DEFAULT) != 0 ||
            mbedtls_x509_crt_parse_file(&cert, cert_file.c_str()) != 0 ||
            parse_key(key, key_file) != 0) {
            return false;
        }
        mbedtls_ssl_conf_rng(&conf, random_cb, nullptr);
        if (mbedtls_ssl_conf_own_cert(&conf, &cert, &key) != 0 ||
            mbedtls_ssl_setup(&ssl, &conf) != 0) {
            return false;
        }
        mbedtls_ssl_set_bio(&ssl, &fd, send_cb, recv_cb, nullptr);
        return true;
    }

    // Writes all of it (or gives up on an error).
    bool write_all(const char* data, std::size_t size) {
        std::size_t done = 0;
        for (int spins = 0; done < size && spins < 10000; ++spins) {
            const int n = mbedtls_ssl_write(
                &ssl, reinterpret_cast<const unsigned char*>(data + done), size - done);
            if (n > 0) {
                done += static_cast<std::size_t>(n);
            } else if (n == MBEDTLS_ERR_SSL_WANT_WRITE || n == MBEDTLS_ERR_SSL_WANT_READ) {
                wait_fd(fd, POLLOUT, mono_s() + 0.01);
            } else {
                return false;
            }
        }
        return done == size;
    }
};

}  // namespace

tls_relay::tls_relay(const tls_certs& certs, std::uint16_t backend_port)
    : cert_file_(certs.cert("server")), key_file_(certs.key("server")), backend_(backend_port) {
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
    if (psa_crypto_init() != PSA_SUCCESS) {
        throw std::runtime_error("tls_relay: psa_crypto_init failed");
    }
#endif
    {
        server_session probe(-1);
        if (!probe.set_up(cert_file_, key_file_)) {
            throw std::runtime_error("tls_relay: mbedTLS could not load " + cert_file_);
        }
    }
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 8) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        if (listen_fd_ >= 0) {
            ::close(listen_fd_);
        }
        throw std::runtime_error(std::string("tls_relay: listen: ") + std::strerror(errno));
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
}

tls_relay::~tls_relay() {
    stop_ = true;
    if (thread_.joinable()) {
        thread_.join();
    }
    ::close(listen_fd_);
}

void tls_relay::run() {
    while (!stop_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) {
            continue;
        }
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            continue;
        }
        ++accepted_;
        serve(fd);
        ::close(fd);
    }
}

void tls_relay::serve(int client_fd) {
    server_session s(client_fd);
    if (!s.set_up(cert_file_, key_file_)) {
        return;
    }
    // The handshake, bounded so a client that stops halfway cannot hold the
    // relay.
    const double give_up = mono_s() + 10.0;
    int ret = 0;
    while ((ret = mbedtls_ssl_handshake(&s.ssl)) != 0) {
        if ((ret != MBEDTLS_ERR_SSL_WANT_READ && ret != MBEDTLS_ERR_SSL_WANT_WRITE) || stop_ ||
            mono_s() > give_up) {
            return;
        }
        wait_fd(client_fd, ret == MBEDTLS_ERR_SSL_WANT_READ ? POLLIN : POLLOUT, mono_s() + 0.05);
    }
    ++handshakes_;
    const int backend = connect_loopback(backend_);
    if (backend < 0) {
        return;
    }
    char buf[16384];
    bool open = true;
    while (open && !stop_) {
        pollfd p[2] = {{client_fd, POLLIN, 0}, {backend, POLLIN, 0}};
        if (mbedtls_ssl_get_bytes_avail(&s.ssl) == 0 && ::poll(p, 2, 50) <= 0) {
            continue;
        }
        // The client's bytes, decrypted.
        const int n = mbedtls_ssl_read(&s.ssl, reinterpret_cast<unsigned char*>(buf), sizeof buf);
        if (n > 0) {
            switch (fault_.load()) {
            case fault::none:
                open = ::send(backend, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) == n;
                break;
            case fault::garbage:
                open = s.write_all("&&& this is not RESP &&&\r\n", 26);
                break;
            case fault::oversized: {
                const std::string big = "$100000000\r\n" + std::string(4000, 'x');
                open = s.write_all(big.data(), big.size());
                break;
            }
            case fault::alert:
                mbedtls_ssl_send_alert_message(&s.ssl, MBEDTLS_SSL_ALERT_LEVEL_FATAL,
                                               MBEDTLS_SSL_ALERT_MSG_INTERNAL_ERROR);
                open = false;
                break;
            case fault::raw:
                open = ::send(client_fd, "-ERR plaintext\r\n", 16, MSG_NOSIGNAL) == 16;
                break;
            case fault::cut:
            case fault::notify_cut: {
                s.write_all("$10\r\nabc", 8);
                if (fault_ == fault::notify_cut) {
                    (void)mbedtls_ssl_close_notify(&s.ssl);
                }
                // A FIN, not a reset: whatever the client still sends is
                // read and dropped until it hangs up (at most a second).
                ::shutdown(client_fd, SHUT_WR);
                const double until = mono_s() + 1.0;
                while (mono_s() < until && !stop_) {
                    wait_fd(client_fd, POLLIN, mono_s() + 0.05);
                    const ssize_t m = ::recv(client_fd, buf, sizeof buf, MSG_DONTWAIT);
                    if (m == 0 || (m < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                        break;
                    }
                }
                open = false;
                break;
            }
            case fault::silent:
                break;
            case fault::malformed: {
                const std::string reply = "$3\r\nabcdef\r\n";
                open = s.write_all(reply.data(), reply.size());
                break;
            }
            case fault::long_line: {
                const std::string line = "+" + std::string(256 * 1024, 'x');
                open = s.write_all(line.data(), line.size());
                break;
            }
            case fault::forged: {
                // Shaped like the session's records (type 23, TLS 1.2's
                // version, a length), the body noise no key decrypts.
                std::string record("\x17\x03\x03\x00\x40", 5);
                record += std::string(64, '\x5a');
                open = ::send(client_fd, record.data(), record.size(), MSG_NOSIGNAL) ==
                       static_cast<ssize_t>(record.size());
                break;
            }
            }
        } else if (n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) {
            ++close_notifies_;
            open = false;
        } else if (n != MBEDTLS_ERR_SSL_WANT_READ && n != MBEDTLS_ERR_SSL_WANT_WRITE) {
            open = false;  // EOF without close_notify, or a broken record
        }
        // The backend's answers, encrypted.
        if (open && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            const ssize_t m = ::recv(backend, buf, sizeof buf, MSG_DONTWAIT);
            if (m > 0) {
                open = s.write_all(buf, static_cast<std::size_t>(m));
            } else if (m == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                open = false;
            }
        }
    }
    ::close(backend);
}

}  // namespace edgelock_test
