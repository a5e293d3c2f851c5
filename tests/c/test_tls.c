/* The TLS transport through the C API: its configuration refused with each
 * code, and a lock over rediss:// against a redis-server with a TLS port
 * (certificates made with the openssl command). Skipped where the library
 * was built without TLS. */
#define _POSIX_C_SOURCE 200809L

#include "capi_test.h"

#ifdef EDGELOCK_C_TEST_TLS

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A folder of certificates: a CA, a server certificate it signed (for
 * localhost and 127.0.0.1), a key that is not the server's, another CA, and
 * a file that is no certificate. */
struct certs {
    char dir[128];
    char ca[160], ca_key[160], server[160], server_key[160], other_key[160], other_ca[160],
        junk[160], config[160], log[160], ca_dir[160], ca_dir_file[192], empty_dir[160];
};

static void certs_remove(struct certs* c) {
    if (c->dir[0] == '\0') {
        return;
    }
    unlink(c->ca_dir_file);
    rmdir(c->ca_dir);
    rmdir(c->empty_dir);
    DIR* d = opendir(c->dir);
    if (d != NULL) {
        struct dirent* e;
        char path[400];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
                unlink(path);
            }
        }
        closedir(d);
    }
    rmdir(c->dir);
    c->dir[0] = '\0';
}

static int write_text(const char* path, const char* text) {
    FILE* f = fopen(path, "w");
    if (f == NULL) {
        return -1;
    }
    const int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int copy_file(const char* from, const char* to) {
    char buf[8192];
    FILE* in = fopen(from, "r");
    if (in == NULL) {
        return -1;
    }
    const size_t n = fread(buf, 1, sizeof buf, in);
    const int whole = feof(in) != 0;
    fclose(in);
    FILE* out = fopen(to, "w");
    if (out == NULL) {
        return -1;
    }
    const int ok = fwrite(buf, 1, n, out) == n;
    return fclose(out) == 0 && ok && whole ? 0 : -1;
}

static int openssl(const struct certs* c, const char* const* argv) {
    const int status = run_program(argv, c->log, 30000);
    if (status != 0) {
        fprintf(stderr, "openssl %s failed (%d); its output:\n", argv[1], status);
        FILE* f = fopen(c->log, "r");
        char line[256];
        while (f != NULL && fgets(line, sizeof line, f) != NULL) {
            fprintf(stderr, "  %s", line);
        }
        if (f != NULL) {
            fclose(f);
        }
        return -1;
    }
    return 0;
}

static int new_key(const struct certs* c, const char* path) {
    const char* argv[] = {"openssl", "genpkey",  "-algorithm",
                          "EC",      "-pkeyopt", "ec_paramgen_curve:P-256",
                          "-out",    path,       NULL};
    return openssl(c, argv);
}

static int new_ca(const struct certs* c, const char* key, const char* cert, const char* cn) {
    const char* argv[] = {"openssl",     "req",   "-x509", "-new", "-config", c->config,
                          "-extensions", "v3_ca", "-key",  key,    "-subj",   cn,
                          "-days",       "30",    "-out",  cert,   NULL};
    return new_key(c, key) == 0 && openssl(c, argv) == 0 ? 0 : -1;
}

/* 0 made, TEST_SKIP without openssl, 1 failed. */
static int certs_make(struct certs* c) {
    char path[512];
    memset(c, 0, sizeof *c);
    if (find_in_path("openssl", path, sizeof path) != 0) {
        return TEST_SKIP;
    }
    const char* tmp = getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%s/edgelock-c-tls-XXXXXX",
             tmp != NULL && *tmp != '\0' && strlen(tmp) < 64 ? tmp : "/tmp");
    if (mkdtemp(c->dir) == NULL) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        c->dir[0] = '\0';
        return 1;
    }
    snprintf(c->ca, sizeof c->ca, "%s/ca.pem", c->dir);
    snprintf(c->ca_key, sizeof c->ca_key, "%s/ca.key", c->dir);
    snprintf(c->server, sizeof c->server, "%s/server.pem", c->dir);
    snprintf(c->server_key, sizeof c->server_key, "%s/server.key", c->dir);
    snprintf(c->other_key, sizeof c->other_key, "%s/other.key", c->dir);
    snprintf(c->other_ca, sizeof c->other_ca, "%s/other-ca.pem", c->dir);
    snprintf(c->junk, sizeof c->junk, "%s/junk.pem", c->dir);
    snprintf(c->config, sizeof c->config, "%s/openssl.cnf", c->dir);
    snprintf(c->log, sizeof c->log, "%s/openssl.log", c->dir);
    snprintf(c->ca_dir, sizeof c->ca_dir, "%s/cas", c->dir);
    snprintf(c->ca_dir_file, sizeof c->ca_dir_file, "%s/cas/ca.pem", c->dir);
    snprintf(c->empty_dir, sizeof c->empty_dir, "%s/empty", c->dir);
    char csr[160], other_ca_key[160];
    snprintf(csr, sizeof csr, "%s/server.csr", c->dir);
    snprintf(other_ca_key, sizeof other_ca_key, "%s/other-ca.key", c->dir);
    static const char config[] =
        "[req]\n"
        "distinguished_name = dn\n"
        "prompt = no\n"
        "[dn]\n"
        "CN = edgelock c test\n"
        "[v3_ca]\n"
        "basicConstraints = critical,CA:TRUE\n"
        "keyUsage = critical,keyCertSign,cRLSign\n"
        "subjectKeyIdentifier = hash\n"
        "[server]\n"
        "basicConstraints = CA:FALSE\n"
        "keyUsage = critical,digitalSignature\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectAltName = DNS:localhost,IP:127.0.0.1\n";
    const char* sign_request[] = {"openssl",       "req",  "-new",        "-config",
                                  c->config,       "-key", c->server_key, "-subj",
                                  "/CN=localhost", "-out", csr,           NULL};
    const char* sign[] = {"openssl", "x509", "-req",     "-in",     csr,
                          "-CA",     c->ca,  "-CAkey",   c->ca_key, "-CAcreateserial",
                          "-days",   "30",   "-extfile", c->config, "-extensions",
                          "server",  "-out", c->server,  NULL};
    if (write_text(c->config, config) != 0 || write_text(c->junk, "not a certificate\n") != 0 ||
        new_ca(c, c->ca_key, c->ca, "/CN=edgelock c test ca") != 0 ||
        new_ca(c, other_ca_key, c->other_ca, "/CN=edgelock c test other ca") != 0 ||
        new_key(c, c->server_key) != 0 || new_key(c, c->other_key) != 0 ||
        openssl(c, sign_request) != 0 || openssl(c, sign) != 0 || mkdir(c->ca_dir, 0700) != 0 ||
        copy_file(c->ca, c->ca_dir_file) != 0 || mkdir(c->empty_dir, 0700) != 0) {
        certs_remove(c);
        return 1;
    }
    /* redis-server reads the key as another user may: only its owner here. */
    chmod(c->server_key, 0600);
    return 0;
}

/* Memory for a TLS object of `sessions`: malloc's alignment covers
 * edgelock_align's. */
static void* tls_memory(unsigned sessions, size_t* size) {
    *size = edgelock_tls_size(sessions);
    return *size == 0 ? NULL : malloc(*size);
}

static int tls_refused(void* mem, size_t size, unsigned sessions,
                       const struct edgelock_tls_options* o, int code, int line) {
    edgelock_tls* tls = NULL;
    const int rc = edgelock_tls_init(mem, size, sessions, o, &tls);
    if (rc == EDGELOCK_OK) {
        edgelock_tls_deinit(tls);
    }
    if (rc != code) {
        fprintf(stderr, "%s:%d: edgelock_tls_init returned %d (%s), expected %d (%s)\n", __FILE__,
                line, rc, edgelock_strerror(rc), code, edgelock_strerror(code));
        return 1;
    }
    return 0;
}

#define TLS_REFUSED(o, code) CHECK(tls_refused(mem, size, sessions, (o), (code), __LINE__) == 0)

static int tls_config_checks(void* mem, size_t size, unsigned sessions) {
    struct edgelock_tls_options o;
    edgelock_tls* tls = NULL;
    char long_text[5000];

    memset(&o, 0x5a, sizeof o);
    edgelock_tls_options_init(&o);
    CHECK(o.ca_file == NULL && o.ca_dir == NULL && o.cert_file == NULL && o.key_file == NULL);
    CHECK(o.server_name == NULL && o.always == 0 && o.insecure_skip_verify == 0);

    CHECK_RC(edgelock_tls_init(NULL, size, sessions, &o, &tls), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_tls_init(mem, size, sessions, &o, NULL), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_tls_init(mem, size, 0, &o, &tls), EDGELOCK_ERR_ARG);
    CHECK_RC(edgelock_tls_init(mem, size - 1, sessions, &o, &tls), EDGELOCK_ERR_MEMORY);
    CHECK_RC(edgelock_tls_init((char*)mem + 1, size - 1, sessions, &o, &tls), EDGELOCK_ERR_MEMORY);

    edgelock_tls_options_init(&o);
    o.ca_file = "/nonexistent/edgelock-ca.pem";
    TLS_REFUSED(&o, EDGELOCK_ERR_TLS_CA_FILE);
    edgelock_tls_options_init(&o);
    o.ca_dir = "/nonexistent/edgelock-ca.d";
    TLS_REFUSED(&o, EDGELOCK_ERR_TLS_CA_DIR);
    edgelock_tls_options_init(&o);
    o.insecure_skip_verify = 1;
    o.cert_file = "/nonexistent/edgelock-cert.pem";
    TLS_REFUSED(&o, EDGELOCK_ERR_TLS_CERT_WITHOUT_KEY);
    o.cert_file = NULL;
    o.key_file = "/nonexistent/edgelock-key.pem";
    TLS_REFUSED(&o, EDGELOCK_ERR_TLS_CERT_WITHOUT_KEY);
    o.cert_file = "/nonexistent/edgelock-cert.pem";
    TLS_REFUSED(&o, EDGELOCK_ERR_TLS_CERT);

    /* Too long to pass on: a server name past a DNS name's 253 bytes, a path
     * past the system's. */
    edgelock_tls_options_init(&o);
    o.insecure_skip_verify = 1;
    memset(long_text, 'a', 254);
    long_text[254] = '\0';
    o.server_name = long_text;
    TLS_REFUSED(&o, EDGELOCK_ERR_TLS_PATH);
    edgelock_tls_options_init(&o);
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[0] = '/';
    long_text[sizeof long_text - 1] = '\0';
    o.ca_file = long_text;
    TLS_REFUSED(&o, EDGELOCK_ERR_TLS_PATH);

    /* Nothing to verify with, nothing needed: made, and reusable after. */
    edgelock_tls_options_init(&o);
    o.insecure_skip_verify = 1;
    CHECK_RC(edgelock_tls_init(mem, size, sessions, &o, &tls), EDGELOCK_OK);
    CHECK(tls != NULL);
    edgelock_tls_deinit(tls);
    edgelock_tls_deinit(NULL);
    return 0;
}

int case_tls_config(void) {
    const unsigned sessions = edgelock_tls_sessions_for(1, 0);
    CHECK_INT(sessions, >=, 1);
    CHECK_INT(edgelock_tls_sessions_for(3, 0), >=, sessions);
    CHECK_INT(edgelock_tls_size(0), ==, 0);
    size_t size = 0;
    void* mem = tls_memory(sessions, &size);
    CHECK(mem != NULL);
    CHECK_INT(edgelock_tls_size(sessions + 1), >, size);
    const int plain = tls_config_checks(mem, size, sessions);

    /* With real files: a key that is no key, a key of another certificate. */
    struct certs c;
    int files = certs_make(&c);
    if (files == TEST_SKIP) {
        printf("openssl not found: the checks on certificate files are left out\n");
        files = 0;
    } else if (files == 0) {
        struct edgelock_tls_options o;
        edgelock_tls_options_init(&o);
        o.ca_file = c.junk;
        files |= tls_refused(mem, size, sessions, &o, EDGELOCK_ERR_TLS_CA_FILE, __LINE__);
        o.ca_file = c.ca;
        o.cert_file = c.junk;
        o.key_file = c.server_key;
        files |= tls_refused(mem, size, sessions, &o, EDGELOCK_ERR_TLS_CERT, __LINE__);
        o.cert_file = c.server;
        o.key_file = c.junk;
        files |= tls_refused(mem, size, sessions, &o, EDGELOCK_ERR_TLS_KEY, __LINE__);
        o.key_file = c.other_key;
        files |= tls_refused(mem, size, sessions, &o, EDGELOCK_ERR_TLS_KEY_MISMATCH, __LINE__);
        o.key_file = c.server_key;
        files |= tls_refused(mem, size, sessions, &o, EDGELOCK_OK, __LINE__);
        /* A folder holding the CA, and an empty one. */
        edgelock_tls_options_init(&o);
        o.ca_dir = c.ca_dir;
        files |= tls_refused(mem, size, sessions, &o, EDGELOCK_OK, __LINE__);
        o.ca_dir = c.empty_dir;
        files |= tls_refused(mem, size, sessions, &o, EDGELOCK_ERR_TLS_CA_DIR, __LINE__);
        certs_remove(&c);
    }
    free(mem);
    return plain != 0 || files != 0 ? 1 : 0;
}

/* A client of one node through a TLS object; 0 or 1. */
struct tls_client {
    edgelock_align mem[EDGELOCK_CLIENT_WORDS(1, 0)];
    char url[80];
    const char* urls[1];
    void* tls_mem;
    edgelock_tls* tls;
    edgelock_client* c;
};

static int tls_client_open(struct tls_client* t, const char* scheme, unsigned port,
                           const struct edgelock_tls_options* o) {
    struct edgelock_client_options co;
    size_t size = 0;
    const unsigned sessions = edgelock_tls_sessions_for(1, 0);
    t->tls = NULL;
    t->c = NULL;
    t->tls_mem = tls_memory(sessions, &size);
    CHECK(t->tls_mem != NULL);
    CHECK_RC(edgelock_tls_init(t->tls_mem, size, sessions, o, &t->tls), EDGELOCK_OK);
    snprintf(t->url, sizeof t->url, "%s://127.0.0.1:%u", scheme, port);
    t->urls[0] = t->url;
    edgelock_client_options_init(&co);
    co.tls = t->tls;
    co.connect_timeout_ms = 3000;
    CHECK_RC(edgelock_client_init(t->mem, sizeof t->mem, 1, 0, t->urls, 1, &co, &t->c),
             EDGELOCK_OK);
    return 0;
}

static void tls_client_close(struct tls_client* t) {
    edgelock_client_deinit(t->c);
    edgelock_tls_deinit(t->tls);
    free(t->tls_mem);
}

/* Acquire, renew and release over the client, checked on the server. */
static int lock_cycle(const struct test_server* s, edgelock_client* c, const char* name) {
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    edgelock_lock* lock = NULL;
    char token[EDGELOCK_TOKEN_TEXT], value[64];
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, c, name, NULL, &lock), EDGELOCK_OK);
    const int rc = edgelock_lock_acquire(lock, 5000);
    if (rc != EDGELOCK_OK) {
        char text[256];
        edgelock_client_node_text(c, 0, text, sizeof text);
        fprintf(stderr, "the node: %s\n", text);
    }
    CHECK_RC(rc, EDGELOCK_OK);
    CHECK(lock_token(lock, token) == 0);
    CHECK(server_get(s, name, value, sizeof value) == 0);
    CHECK(strcmp(value, token) == 0);
    CHECK_RC(edgelock_lock_renew(lock), EDGELOCK_OK);
    CHECK_RC(edgelock_lock_release(lock), EDGELOCK_OK);
    CHECK_INT(server_integer(s, "EXISTS", name, (const char*)NULL), ==, 0);
    edgelock_lock_deinit(lock);
    return 0;
}

/* A client that must refuse the server: its acquisition fails with no
 * quorum, nothing is written, and the node's text says `why`. */
static int refused_checks(const struct test_server* s, const struct edgelock_tls_options* o,
                          const char* why) {
    struct tls_client t;
    edgelock_align mem[EDGELOCK_LOCK_WORDS];
    edgelock_lock* lock = NULL;
    struct edgelock_event e;
    char text[256];
    CHECK(tls_client_open(&t, "rediss", s->tls_port, o) == 0);
    CHECK_RC(edgelock_lock_init(mem, sizeof mem, t.c, "c-api-tls-refused", NULL, &lock),
             EDGELOCK_OK);
    CHECK_RC(edgelock_lock_acquire(lock, 300), EDGELOCK_ERR_FAILED);
    edgelock_lock_last_event(lock, &e);
    CHECK_INT(e.reason, ==, EDGELOCK_REASON_NO_QUORUM);
    CHECK(edgelock_client_node_text(t.c, 0, text, sizeof text) > 0);
    CHECK_STR_CONTAINS(text, "TLS");
    CHECK_STR_CONTAINS(text, why);
    CHECK_INT(server_integer(s, "EXISTS", "c-api-tls-refused", (const char*)NULL), ==, 0);
    edgelock_lock_deinit(lock);
    tls_client_close(&t);
    return 0;
}

static int tls_lock_checks(const struct certs* c) {
    struct test_server s;
    struct test_tls_files files;
    struct edgelock_tls_options o;
    struct tls_client t;
    char text[256];

    files.cert_file = c->server;
    files.key_file = c->server_key;
    files.ca_file = c->ca;
    CHECK(server_start_tls(&s, &files) == 0);

    /* Verified against the CA that signed the server's certificate, for the
     * name it bears (the library checks names, not addresses). */
    edgelock_tls_options_init(&o);
    o.ca_file = c->ca;
    o.server_name = "localhost";
    CHECK(tls_client_open(&t, "rediss", s.tls_port, &o) == 0);
    CHECK(lock_cycle(&s, t.c, "c-api-tls") == 0);
    CHECK(edgelock_client_node_text(t.c, 0, text, sizeof text) > 0);
    CHECK_STR_CONTAINS(text, "ready");
    tls_client_close(&t);

    /* `always`: a redis:// URL goes through TLS too. */
    o.always = 1;
    CHECK(tls_client_open(&t, "redis", s.tls_port, &o) == 0);
    CHECK(lock_cycle(&s, t.c, "c-api-tls-always") == 0);
    tls_client_close(&t);

    /* Another name, another CA: the acquisition fails and the node says
     * why. */
    o.always = 0;
    o.server_name = "other.example";
    CHECK(refused_checks(&s, &o, "another name") == 0);
    o.server_name = "localhost";
    o.ca_file = c->other_ca;
    CHECK(refused_checks(&s, &o, "not trusted") == 0);
    server_stop(&s);
    return 0;
}

int case_tls_lock(void) {
    struct certs c;
    char path[512];
    if (find_in_path("redis-server", path, sizeof path) != 0) {
        printf("skipped: redis-server is not installed (not found in PATH)\n");
        return TEST_SKIP;
    }
    const int made = certs_make(&c);
    if (made == TEST_SKIP) {
        printf("skipped: openssl is not installed (not found in PATH)\n");
        return TEST_SKIP;
    }
    CHECK(made == 0);
    const int rc = tls_lock_checks(&c);
    certs_remove(&c);
    return rc;
}

#else /* no TLS transport built */

int case_tls_config(void) {
    printf("skipped: the library was built without its TLS transport\n");
    return TEST_SKIP;
}

int case_tls_lock(void) {
    printf("skipped: the library was built without its TLS transport\n");
    return TEST_SKIP;
}

#endif
