#include "integration/tls_fixture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

#include "tools/proc.hpp"

namespace edgelock_test {

namespace {

// One file for every openssl call: the request's defaults, the extensions of
// each kind of certificate, and the `openssl ca` set-up the expired one needs
// (only `ca` takes explicit start and end dates).
std::string config(const std::string& dir) {
    return "[req]\n"
           "distinguished_name = dn\n"
           "prompt = no\n"
           "[dn]\n"
           "CN = edgelock test\n"
           "[v3_ca]\n"
           "basicConstraints = critical,CA:TRUE\n"
           "keyUsage = critical,keyCertSign,cRLSign\n"
           "subjectKeyIdentifier = hash\n"
           "[server]\n"
           "basicConstraints = CA:FALSE\n"
           "keyUsage = critical,digitalSignature\n"
           "extendedKeyUsage = serverAuth\n"
           "subjectAltName = DNS:localhost,IP:127.0.0.1\n"
           "[wrong_name]\n"
           "basicConstraints = CA:FALSE\n"
           "keyUsage = critical,digitalSignature\n"
           "extendedKeyUsage = serverAuth\n"
           "subjectAltName = DNS:other.example\n"
           "[client]\n"
           "basicConstraints = CA:FALSE\n"
           "keyUsage = critical,digitalSignature\n"
           "extendedKeyUsage = clientAuth\n"
           "[ca]\n"
           "default_ca = test_ca\n"
           "[test_ca]\n"
           "database = " +
           dir +
           "/index.txt\n"
           "new_certs_dir = " +
           dir +
           "\n"
           "serial = " +
           dir +
           "/serial\n"
           "default_md = sha256\n"
           "policy = any\n"
           "unique_subject = no\n"
           "[any]\n"
           "commonName = supplied\n";
}

}  // namespace

tls_certs::tls_certs() {
    if (!write_file(dir_ / "openssl.cnf", config(dir_.path)) ||
        !write_file(dir_ / "index.txt", "") || !write_file(dir_ / "serial", "1000\n")) {
        throw std::runtime_error("tls_certs: cannot write in " + dir_.path);
    }
    for (const char* ca : {"ca", "other-ca"}) {
        make_key(ca);
        openssl({"req", "-x509", "-new", "-config", dir_ / "openssl.cnf", "-extensions", "v3_ca",
                 "-key", key(ca), "-subj", std::string("/CN=edgelock test ") + ca, "-days", "30",
                 "-out", cert(ca)});
    }
    make_signed("server", "/CN=localhost", "server", "ca");
    make_signed("untrusted", "/CN=localhost", "server", "other-ca");
    make_signed("wrong-name", "/CN=other.example", "wrong_name", "ca");
    make_signed("client", "/CN=edgelock client", "client", "ca");

    // Expired: valid for a month, years ago.
    make_key("expired");
    openssl({"req", "-new", "-config", dir_ / "openssl.cnf", "-key", key("expired"), "-subj",
             "/CN=localhost", "-out", dir_ / "expired.csr"});
    openssl({"ca",
             "-batch",
             "-notext",
             "-config",
             dir_ / "openssl.cnf",
             "-cert",
             cert("ca"),
             "-keyfile",
             key("ca"),
             "-extfile",
             dir_ / "openssl.cnf",
             "-extensions",
             "server",
             "-startdate",
             "20200101000000Z",
             "-enddate",
             "20200201000000Z",
             "-in",
             dir_ / "expired.csr",
             "-out",
             cert("expired")});

    // The CA directory: the certificate, then its hashed name beside it.
    if (::mkdir(ca_dir().c_str(), 0700) != 0 ||
        !write_file(ca_dir() + "/edgelock-test-ca.pem", read_file(cert("ca")))) {
        throw std::runtime_error("tls_certs: cannot make " + ca_dir());
    }
    openssl({"rehash", ca_dir()});
}

redis_tls_files tls_certs::server_files(const std::string& name, bool auth_clients) const {
    redis_tls_files f;
    f.cert_file = cert(name);
    f.key_file = key(name);
    f.ca_file = ca_file();
    f.auth_clients = auth_clients;
    return f;
}

void tls_certs::openssl(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    // Quiet unless it fails: its chatter goes to a log kept for the message.
    const std::string log = dir_ / "openssl.log";
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    spawn_options o;
    o.stdout_fd = fd;
    o.stderr_fd = fd;
    const pid_t pid = spawn(argv, o);
    const int status = pid > 0 ? exit_status(wait_exit(pid)) : -1;
    if (fd >= 0) {
        ::close(fd);
    }
    if (status != 0) {
        throw std::runtime_error("openssl " + args[0] + " failed (" + std::to_string(status) +
                                 "): " + read_file(log));
    }
}

void tls_certs::make_key(const std::string& name) const {
    openssl(
        {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key(name)});
}

void tls_certs::make_signed(const std::string& name, const std::string& subject,
                            const std::string& extensions, const std::string& ca) const {
    make_key(name);
    openssl({"req", "-new", "-config", dir_ / "openssl.cnf", "-key", key(name), "-subj", subject,
             "-out", dir_ / (name + ".csr")});
    openssl({"x509", "-req", "-in", dir_ / (name + ".csr"), "-CA", cert(ca), "-CAkey", key(ca),
             "-CAcreateserial", "-days", "30", "-extfile", dir_ / "openssl.cnf", "-extensions",
             extensions, "-out", cert(name)});
}

}  // namespace edgelock_test
