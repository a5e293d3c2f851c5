// Test fixture: certificates for TLS tests, made with the openssl command in
// a private temporary directory (removed with the object), and TLS servers
// that use them.
//
//   edgelock_test::tls_certs certs;                  // CA, server, client, bad ones
//   edgelock_test::redis_server srv(certs.server_files(), {});   // --tls-port
//   // trust certs.ca_file(), connect to rediss://localhost:<srv.port()>
//
// Every certificate is for 30 days from now, except the expired one; keys
// are EC P-256 (quick to make). Server certificates name DNS:localhost and
// IP:127.0.0.1; the wrong-name one names other.example only.
#pragma once

#include <string>

#include "integration/redis_server.hpp"
#include "tools/files.hpp"

namespace edgelock_test {

class tls_certs {
public:
    // Makes everything; throws when openssl is missing or fails.
    tls_certs();
    tls_certs(const tls_certs&) = delete;
    tls_certs& operator=(const tls_certs&) = delete;

    std::string ca_file() const { return dir_ / "ca.crt"; }
    // A directory holding the CA under its hashed name (<hash>.0), as
    // c_rehash leaves a system store.
    std::string ca_dir() const { return dir_ / "cadir"; }
    // A CA nobody here trusts, and its certificate file.
    std::string other_ca_file() const { return dir_ / "other-ca.crt"; }
    // Certificate and key files by name: "server" (signed by the CA),
    // "untrusted" (by the other CA), "expired", "wrong-name", "client".
    std::string cert(const std::string& name) const { return dir_ / (name + ".crt"); }
    std::string key(const std::string& name) const { return dir_ / (name + ".key"); }

    // A server presenting certificate `name`, trusting the CA for clients.
    redis_tls_files server_files(const std::string& name = "server",
                                 bool auth_clients = false) const;

private:
    void openssl(const std::vector<std::string>& args) const;
    void make_key(const std::string& name) const;
    void make_signed(const std::string& name, const std::string& subject,
                     const std::string& extensions, const std::string& ca) const;

    temp_dir dir_{"edgelock-tls"};
};

}  // namespace edgelock_test
