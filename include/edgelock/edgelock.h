/* edgelock's C API: distributed locks on Redis for C programs.
 *
 * A client (its nodes' connections) and its locks are opaque objects that
 * live in memory the caller gives: ask edgelock_client_size() and
 * edgelock_lock_size(), or use static storage sized by EDGELOCK_CLIENT_WORDS
 * and EDGELOCK_LOCK_WORDS. Nothing here allocates, throws or needs a C++
 * runtime: link libedgelock.a and libedgelock_port_posix.a (pkg-config
 * edgelock) with a C compiler; for TLS, libedgelock_tls_mbedtls.a and mbedTLS.
 *
 *   static edgelock_align client_mem[EDGELOCK_CLIENT_WORDS(1, 0)];
 *   static edgelock_align lock_mem[EDGELOCK_LOCK_WORDS];
 *   const char *urls[] = {"redis://10.0.0.1:6379"};
 *   struct edgelock_client_options co;
 *   struct edgelock_lock_options lo;
 *   edgelock_client *c;
 *   edgelock_lock *job;
 *   edgelock_client_options_init(&co);
 *   edgelock_lock_options_init(&lo);
 *   lo.ttl_ms = 30000;
 *   if (edgelock_client_init(client_mem, sizeof client_mem, 1, 0, urls, 1, &co, &c) != 0 ||
 *       edgelock_lock_init(lock_mem, sizeof lock_mem, c, "nightly-upload", &lo, &job) != 0)
 *       ...;
 *   int rc = edgelock_lock_acquire(job, 5000);  // EDGELOCK_OK: held
 *   ... work; edgelock_client_run_for(c, ...) now and then, so the watchdog
 *       renews; edgelock_lock_held(job) before acting ...
 *   edgelock_lock_release(job);
 *
 * Two styles, as in the C++ API (client.hpp):
 *   - blocking: edgelock_lock_acquire() and friends drive the client until
 *     the operation ends;
 *   - event loop: watch the fds edgelock_client_wanted() gives until
 *     edgelock_client_timeout_ms(), then call edgelock_client_on_ready() (or
 *     edgelock_client_on_timeout() when none was ready); start operations with
 *     edgelock_lock_start_acquire() and friends; learn their outcome from the
 *     lock's callback or edgelock_lock_outcome(). Ask for the fds again after
 *     every call: connections come and go.
 * Nothing runs behind your back: renewals, reconnects and callbacks happen
 * only inside the client's calls. A lock whose validity has ended is never
 * reported as held. One thread drives a client and its locks.
 *
 * Errors are negative int codes (EDGELOCK_ERR_*); edgelock_strerror() names
 * them. A call that returns one changed nothing, except where noted.
 * Strings given to edgelock_client_init() (URLs, names, passwords) are not
 * copied: keep them alive as long as the client. A lock copies its name,
 * owner and holder text. */
#ifndef EDGELOCK_EDGELOCK_H
#define EDGELOCK_EDGELOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- memory ------------------------------------------------------------- */

/* The alignment every object's memory needs: use arrays of it for static
 * storage. */
typedef union edgelock_align {
    long long ll;
    long double ld;
    void* p;
    void (*fp)(void);
} edgelock_align;

/* Bytes enough for a client of `nodes` nodes and `extra` Cluster connections,
 * and for a lock, in the library's default configuration (buffers of
 * include/edgelock/config.hpp); edgelock_client_size() and
 * edgelock_lock_size() give the exact figures, and init refuses less. A
 * library built with larger buffers defines these larger alongside them
 * (EDGELOCK_CONFIG_DEFINES), or fails to build saying which is too small. */
#ifndef EDGELOCK_CLIENT_BASE_BYTES
#define EDGELOCK_CLIENT_BASE_BYTES 2560u
#endif
#ifndef EDGELOCK_CONNECTION_BYTES
#define EDGELOCK_CONNECTION_BYTES 9216u
#endif
#ifndef EDGELOCK_LOCK_BYTES
#define EDGELOCK_LOCK_BYTES 1536u
#endif
#define EDGELOCK_CLIENT_BYTES(nodes, extra) \
    (EDGELOCK_CLIENT_BASE_BYTES + ((nodes) + (extra)) * EDGELOCK_CONNECTION_BYTES)
#define EDGELOCK_WORDS_(bytes) (((bytes) + sizeof(edgelock_align) - 1) / sizeof(edgelock_align))
#define EDGELOCK_CLIENT_WORDS(nodes, extra) EDGELOCK_WORDS_(EDGELOCK_CLIENT_BYTES(nodes, extra))
#define EDGELOCK_LOCK_WORDS EDGELOCK_WORDS_(EDGELOCK_LOCK_BYTES)

/* The most nodes a client or lock has (Redlock over that many deployments),
 * and the longest lock name, owner and holder text: the library's
 * configuration (include/edgelock/lock_types.hpp), as it was built. */
#ifdef EDGELOCK_LOCK_MAX_NODES
#define EDGELOCK_MAX_NODES EDGELOCK_LOCK_MAX_NODES
#else
#define EDGELOCK_MAX_NODES 9
#endif
#ifdef EDGELOCK_LOCK_MAX_NAME
#define EDGELOCK_MAX_NAME EDGELOCK_LOCK_MAX_NAME
#else
#define EDGELOCK_MAX_NAME 128
#endif
#ifdef EDGELOCK_LOCK_MAX_OWNER
#define EDGELOCK_MAX_OWNER EDGELOCK_LOCK_MAX_OWNER
#else
#define EDGELOCK_MAX_OWNER 64
#endif
#ifdef EDGELOCK_LOCK_MAX_HOLDER
#define EDGELOCK_MAX_HOLDER EDGELOCK_LOCK_MAX_HOLDER
#else
#define EDGELOCK_MAX_HOLDER 160
#endif
/* A token as text: 32 hex digits and a NUL. */
#define EDGELOCK_TOKEN_TEXT 33

typedef struct edgelock_client edgelock_client;
typedef struct edgelock_lock edgelock_lock;
typedef struct edgelock_tls edgelock_tls;

/* --- status codes ------------------------------------------------------- */

enum {
    EDGELOCK_OK = 0,
    /* The C API's own. */
    EDGELOCK_ERR_ARG = -1,    /* a null pointer, an unknown value, an index out of range */
    EDGELOCK_ERR_MEMORY = -2, /* the memory given is too small or not aligned */
    /* The outcome of a lock operation that ran (edgelock_lock_last_event() says more). */
    EDGELOCK_ERR_HELD = -3,   /* held by another owner (an acquire's "busy") */
    EDGELOCK_ERR_FAILED = -4, /* no quorum, the round took too long, ... (event reason) */
    EDGELOCK_ERR_LOST = -5,   /* a renew found the lock lost (event reason) */
    /* The client's (client_errc). */
    EDGELOCK_ERR_NOT_CONFIGURED = -10,
    EDGELOCK_ERR_NODE_COUNT = -11,       /* 0 nodes, or more than the client has room for */
    EDGELOCK_ERR_URL = -12,              /* a URL did not parse: edgelock_client_bad_url() */
    EDGELOCK_ERR_TLS_NOT_BUILT_IN = -13, /* a rediss:// URL without a TLS transport */
    EDGELOCK_ERR_SECRET_TOO_LONG = -14,  /* a user or password too long */
    EDGELOCK_ERR_USER_WITHOUT_PASSWORD = -15,
    EDGELOCK_ERR_OPTION = -16,       /* a bad client or watchdog option */
    EDGELOCK_ERR_NOT_ATTACHED = -18, /* the lock was deinitialised */
    EDGELOCK_ERR_BUSY = -19,         /* another operation of this lock is under way */
    EDGELOCK_ERR_NOT_HELD = -20,     /* renew or release of a lock not held */
    EDGELOCK_ERR_DEADLINE = -21,     /* a blocking call's own bound passed */
    EDGELOCK_ERR_WAIT_FAILED = -22,  /* the system's wait failed */
    EDGELOCK_ERR_REENTERED = -23,    /* a blocking call from inside a callback */
    /* A lock's options or state refused (lock_errc). */
    EDGELOCK_ERR_LOCK_QUORUM = -40,       /* below nodes / 2 + 1 or above nodes */
    EDGELOCK_ERR_LOCK_NAME = -41,         /* empty, or longer than EDGELOCK_MAX_NAME */
    EDGELOCK_ERR_LOCK_NAME_SLOT = -42,    /* a key of the lock cannot share the name's slot */
    EDGELOCK_ERR_LOCK_OWNER = -43,        /* longer than EDGELOCK_MAX_OWNER */
    EDGELOCK_ERR_LOCK_HOLDER = -44,       /* longer than EDGELOCK_MAX_HOLDER */
    EDGELOCK_ERR_LOCK_TTL = -45,          /* under 1 ms, above the maximum, or eaten by drift */
    EDGELOCK_ERR_LOCK_NODE_TIMEOUT = -46, /* zero, or not shorter than the ttl */
    EDGELOCK_ERR_LOCK_DRIFT = -47,
    EDGELOCK_ERR_LOCK_RETRY = -48,    /* max_tries 0, or retry_min_ms > retry_max_ms */
    EDGELOCK_ERR_LOCK_MODE = -49,     /* an option or a resume the mode does not take */
    EDGELOCK_ERR_LOCK_RANDOM = -50,   /* no random bytes for a token */
    EDGELOCK_ERR_LOCK_REPLICAS = -51, /* min_replicas with a bad replica_timeout_ms */
    EDGELOCK_ERR_LOCK_PERMITS = -52,  /* too many permits, or more than fit a request */
    EDGELOCK_ERR_LOCK_TOKEN = -53,    /* edgelock_lock_resume(): not 32 hex digits */
    /* A TLS configuration refused (tls_errc). */
    EDGELOCK_ERR_TLS_PATH = -60,         /* a path or server_name too long */
    EDGELOCK_ERR_TLS_CA_FILE = -61,      /* ca_file missing, unreadable or holding no certificate */
    EDGELOCK_ERR_TLS_CA_DIR = -62,       /* ca_dir likewise */
    EDGELOCK_ERR_TLS_NO_CA = -63,        /* neither given and the system store is empty */
    EDGELOCK_ERR_TLS_CERT = -64,         /* cert_file missing, unreadable or not a certificate */
    EDGELOCK_ERR_TLS_KEY = -65,          /* key_file missing, unreadable, not a key, encrypted */
    EDGELOCK_ERR_TLS_KEY_MISMATCH = -66, /* key_file is not cert_file's key */
    EDGELOCK_ERR_TLS_CERT_WITHOUT_KEY = -67, /* only one of cert_file and key_file */
    EDGELOCK_ERR_TLS_INIT = -68              /* the TLS library could not set itself up */
};

/* What a code means, in a few words; "unknown status" for any other int. */
const char* edgelock_strerror(int code);

/* --- the client --------------------------------------------------------- */

struct edgelock_client_options {
    uint32_t connect_timeout_ms;  /* lookup, connect and set-up of a node (5000) */
    uint32_t sentinel_timeout_ms; /* one sentinel's answer (2000) */
    uint32_t reconnect_min_ms;    /* backoff between attempts: doubling from min (100) */
    uint32_t reconnect_max_ms;    /* to max (2000) */
    uint32_t stall_timeout_ms;    /* a connection silent this long is made again (5000) */
    int resp3;                    /* speak RESP3 where the server can (1) */
    int notify;                   /* waiters told of a release by the server (1) */
    const char* client_name;      /* CLIENT SETNAME; "" none ("edgelock") */
    const char* username;         /* override the URLs' credentials (NULL: the URLs') */
    const char* password;
    const char* sentinel_username; /* a sentinel's own credentials (NULL: none) */
    const char* sentinel_password;
    edgelock_tls* tls; /* rediss:// nodes go through it (NULL: plain TCP only) */
};

/* The defaults above. Call it first, then set what you change: a field added
 * later gets its default. */
void edgelock_client_options_init(struct edgelock_client_options* options);

/* The exact bytes of a client of `nodes` nodes (1..EDGELOCK_MAX_NODES) and
 * `extra` connections its redis-cluster:// nodes share for further masters
 * (0 without Cluster; nodes + extra <= 64); 0 for counts out of range. */
size_t edgelock_client_size(unsigned nodes, unsigned extra);

/* Makes a client in `mem` (aligned as edgelock_align) for the `count` URLs
 * (redis://, rediss://, unix://, redis-sentinel://, redis-cluster://; see
 * README) and connects nothing yet. `nodes` and `extra` size it, as for
 * edgelock_client_size(); count <= nodes. options NULL: the defaults. On
 * success *out is the client. On EDGELOCK_ERR_URL and
 * EDGELOCK_ERR_TLS_NOT_BUILT_IN, *out is the client, not configured, so that
 * edgelock_client_bad_url() can say which URL and why; it holds nothing yet
 * (no fd), so deinit it or just reuse the memory. On any other error *out
 * is NULL. */
int edgelock_client_init(void* mem, size_t size, unsigned nodes, unsigned extra,
                         const char* const* urls, size_t count,
                         const struct edgelock_client_options* options, edgelock_client** out);
/* Closes every connection; the client's locks must be deinitialised first
 * (release them before). The memory is then free. */
void edgelock_client_deinit(edgelock_client* c);

/* After EDGELOCK_ERR_URL (or EDGELOCK_ERR_TLS_NOT_BUILT_IN): the index of
 * the URL refused, and why. */
size_t edgelock_client_bad_url(const edgelock_client* c, const char** why);

/* Connects every node that needs it; returns once each is ready or has
 * failed, or `enough` (> 0) are ready, or after timeout_ms. Returns how many
 * nodes are ready (>= 0) or an error. Optional: operations connect on demand. */
int edgelock_client_connect(edgelock_client* c, uint32_t timeout_ms, unsigned enough);
/* Drives the client (watchdog, reconnects, callbacks) for ms. */
int edgelock_client_run_for(edgelock_client* c, uint32_t ms);
/* Drives it until no node owes work for locks that are done, or timeout_ms
 * (EDGELOCK_ERR_DEADLINE). */
int edgelock_client_settle(edgelock_client* c, uint32_t timeout_ms);
/* Drops every connection. */
void edgelock_client_disconnect(edgelock_client* c);

/* --- nodes -------------------------------------------------------------- */

enum {
    EDGELOCK_NODE_DOWN = 0,
    EDGELOCK_NODE_BACKOFF = 1,
    EDGELOCK_NODE_RESOLVING = 2,
    EDGELOCK_NODE_CONNECTING = 3,
    EDGELOCK_NODE_HANDSHAKE = 4,
    EDGELOCK_NODE_READY = 5
};

unsigned edgelock_client_node_count(const edgelock_client* c);
/* Node i's state (EDGELOCK_NODE_*), or EDGELOCK_ERR_ARG. */
int edgelock_client_node_state(const edgelock_client* c, unsigned i);
/* Node i as a line of text, NUL-terminated in buf (cut to fit): its state,
 * the latest reason it failed (with the server's or TLS library's words) and
 * what its set-up warned of, e.g. "backoff: connection refused (errno 111)".
 * Returns the length the whole line has (as snprintf), or 0 for a bad i. */
size_t edgelock_client_node_text(const edgelock_client* c, unsigned i, char* buf, size_t size);
/* The name of a state, of a failure reason or of an event kind (below). */
const char* edgelock_node_state_name(int state);

/* A URL or a node list (URLs separated by commas; a comma ends a URL only
 * where another begins, "scheme://") fit to log or show: with remove 0 each
 * password replaced by "****" (redis://user:****@host), otherwise each user
 * and password removed (redis://host). The URL grammar decides what the
 * password is, so one holding ',', ':' or '@' is hidden whole; a URL that
 * does not parse has everything between "://" and its last '@' hidden. When
 * the text and its NUL fit in buf (the length returned is below size), both
 * are written; otherwise only a NUL is (when size > 0), never a part of the
 * text. Returns the length the whole text has (as snprintf), 0 for a NULL
 * nodes. Nothing is allocated. */
size_t edgelock_redact_nodes(const char* nodes, int remove, char* buf, size_t size);

/* Counters a program can export (to Prometheus, say), as the C++ API's
 * node_stats and lock_stats (client_stats.hpp) count them. Each only grows: a
 * node's from edgelock_client_init(), a lock's from edgelock_lock_init().
 * Reading them copies integers: nothing is allocated. */

/* Node i, over its lock connections (a Cluster node's extra ones included;
 * a RESP2 subscription and a Sentinel watch not counted). An error counts
 * once each time it is met: a connection attempt that failed (once, with its
 * last address's reason), a connection dropped for a reason, an error reply. */
struct edgelock_node_stats {
    /* Commands written to the node (set-up, lock requests and their WAIT or
     * PTTL, CLIENT TRACKING, CLUSTER SLOTS, a sentinel's questions), each
     * once as it enters the send buffer. */
    uint64_t requests;
    /* Connection attempts, and those after the first (following a failure,
     * a drop or a disconnect). */
    uint64_t connects;
    uint64_t reconnects;
    /* Errors by kind. */
    uint64_t connect_errors;  /* refused, unreachable, name did not resolve */
    uint64_t timeouts;        /* lookup, connect or set-up timeout; no reply for the
                                 stall timeout */
    uint64_t closed;          /* the server closed or reset the connection */
    uint64_t protocol_errors; /* a malformed reply, one too large, one nobody asked for */
    uint64_t tls_errors;      /* the TLS handshake or session failed */
    uint64_t refusals;        /* the set-up was refused: AUTH, SELECT, LOADING, a
                                 replica, no sentinel answering */
    uint64_t server_errors;   /* error replies to lock requests (READONLY, OOM, NOPERM...;
                                 not NOSCRIPT, retried, nor MOVED or ASK) */
    uint64_t io_errors;       /* any other socket error */
    /* Round trips, in microseconds: a command written to an idle connection
     * (nothing else in flight, not a WAIT) until its reply; min and last are
     * 0 until the first. sum / count is the mean. */
    uint64_t rtt_count;
    uint64_t rtt_sum_us;
    uint64_t rtt_last_us;
    uint64_t rtt_min_us;
    uint64_t rtt_max_us;
    /* The round trip smoothed as TCP smooths it (RFC 6298) from those
     * samples; until the first, a plain TCP connect's; 0 until either. */
    uint64_t rtt_smoothed_us;
    uint64_t rtt_variation_us;
};

/* Fills *out with node i's counters. EDGELOCK_OK, or EDGELOCK_ERR_ARG (a
 * null pointer, or i not below edgelock_client_node_count()). */
int edgelock_client_node_stats(const edgelock_client* c, unsigned i,
                               struct edgelock_node_stats* out);

/* --- the event loop ----------------------------------------------------- */

#define EDGELOCK_WANT_READ 1
#define EDGELOCK_WANT_WRITE 2
#define EDGELOCK_READY_ERROR 4 /* in `ready` only: an error or hang-up */

struct edgelock_fd {
    int fd;
    unsigned char want;  /* EDGELOCK_WANT_* */
    unsigned char ready; /* yours to fill after the wait: EDGELOCK_WANT_* and READY_ERROR */
};

/* The most fds edgelock_client_wanted() gives at once. */
size_t edgelock_client_fd_capacity(const edgelock_client* c);
/* Fills up to `capacity` entries with the fds to watch; returns how many. */
size_t edgelock_client_wanted(const edgelock_client* c, struct edgelock_fd* out, size_t capacity);
/* When the client must be called next, on the clock of edgelock_now_us()
 * (UINT64_MAX: no deadline); and the same as a poll() timeout: ms from now,
 * rounded up, 0 when due, -1 for none. */
uint64_t edgelock_client_next_deadline_us(const edgelock_client* c);
int edgelock_client_timeout_ms(const edgelock_client* c);
/* After a wait: the entries with their `ready` bits (entries with none are
 * skipped). Also does edgelock_client_on_timeout()'s work: one call is enough. */
void edgelock_client_on_ready(edgelock_client* c, const struct edgelock_fd* fds, size_t count);
/* At or after the deadline (an early call is harmless). */
void edgelock_client_on_timeout(edgelock_client* c);
/* The library's clock: monotonic microseconds, counting suspend. */
uint64_t edgelock_now_us(void);

/* --- locks -------------------------------------------------------------- */

enum { EDGELOCK_MODE_PLAIN = 0, EDGELOCK_MODE_REENTRANT = 1, EDGELOCK_MODE_FENCED = 2 };

struct edgelock_lock_options {
    int mode;                    /* EDGELOCK_MODE_* (plain) */
    unsigned permits;            /* 0: a lock; 1..16: a semaphore of that many permits (0) */
    uint32_t ttl_ms;             /* (10000) */
    uint32_t node_timeout_ms;    /* a round's bound; 0: from the ttl, as the lock can use (0) */
    uint32_t drift_ppm;          /* clock drift: ttl * ppm / 10^6 + drift_fixed_ms (10000) */
    uint32_t drift_fixed_ms;     /* (2) */
    unsigned quorum;             /* 0: nodes / 2 + 1 */
    int renew_resurrects;        /* plain mode: a renew sets a vanished key again (0) */
    uint32_t max_tries;          /* acquire rounds of edgelock_lock_start_acquire() (1) */
    uint32_t wait_ms;            /* within which they all begin (10000) */
    uint32_t retry_min_ms;       /* random delay between rounds (50) */
    uint32_t retry_max_ms;       /* (200) */
    const char* owner;           /* reentrant mode: the identity that nests (NULL: its own) */
    unsigned min_replicas;       /* WAIT for this many replicas per request (0: off) */
    uint32_t replica_timeout_ms; /* (25) */
    const char* holder;          /* who holds it, recorded beside the lock (NULL: none) */
    /* The watchdog: renews a held lock every renew_every_ms (0: ttl / 3)
     * while the client is driven; max_hold_ms lets a lock go after that long
     * held, the owner told `lost` (0: no limit). */
    int watchdog; /* (1) */
    uint32_t renew_every_ms;
    uint32_t max_hold_ms;
};

void edgelock_lock_options_init(struct edgelock_lock_options* options);

enum {
    EDGELOCK_EVENT_ACQUIRED = 0,
    EDGELOCK_EVENT_BUSY = 1, /* held by another owner */
    EDGELOCK_EVENT_FAILED = 2,
    EDGELOCK_EVENT_RENEWED = 3,
    EDGELOCK_EVENT_RELEASED = 4,
    EDGELOCK_EVENT_LOST = 5,
    EDGELOCK_EVENT_RENEW_FAILED = 6 /* a renew round missed its quorum: at risk, retrying */
};

enum {
    EDGELOCK_REASON_NONE = 0,
    EDGELOCK_REASON_NO_QUORUM = 1,      /* too few nodes agreed */
    EDGELOCK_REASON_EXPIRED = 2,        /* the round took longer than the ttl allows */
    EDGELOCK_REASON_RANDOM_FAILED = 3,  /* no random bytes for the retry delay */
    EDGELOCK_REASON_FENCE_CONFLICT = 4, /* a racing holder's fencing counter */
    EDGELOCK_REASON_NOT_OURS = 5,       /* renew: the key is no longer ours */
    EDGELOCK_REASON_VALIDITY_ENDED = 6, /* the validity deadline passed */
    EDGELOCK_REASON_NOT_REPLICATED = 7, /* min_replicas: too few replicas acknowledged */
    EDGELOCK_REASON_HELD_TOO_LONG = 8,  /* held for max_hold_ms, and let go */
    EDGELOCK_REASON_PERMITS_DIFFER = 9  /* a node holds another permit limit */
};

struct edgelock_event {
    int kind;                      /* EDGELOCK_EVENT_* */
    int reason;                    /* failed, lost: EDGELOCK_REASON_* */
    uint32_t holds;                /* acquired, reentrant: the owner's holds */
    uint64_t validity_deadline_us; /* acquired, renewed: on edgelock_now_us()'s clock */
    uint64_t fence;                /* acquired, fenced mode: the fencing token */
    int64_t holder_ttl_ms;         /* busy: the holder's ttl left (-1 unknown) */
    unsigned nodes;                /* released: nodes the key was deleted from */
    unsigned absent;               /* released: nodes where it was no longer ours */
    int permit;                    /* acquired, a semaphore: the permit held (from 0) */
    int permits_found;             /* failed, permits_differ: the node's limit */
};

const char* edgelock_event_name(int kind);
const char* edgelock_reason_name(int reason);

/* Told of every event of the lock, inside the client's calls. It may start
 * operations on any lock; it must not call blocking functions
 * (EDGELOCK_ERR_REENTERED) nor deinit a lock. */
typedef void (*edgelock_lock_cb)(void* ctx, edgelock_lock* lock,
                                 const struct edgelock_event* event);

size_t edgelock_lock_size(void);
/* Makes a lock named `name` in `mem` on client c (a lock of its every node);
 * options NULL: the defaults. On success *out is the lock. */
int edgelock_lock_init(void* mem, size_t size, edgelock_client* c, const char* name,
                       const struct edgelock_lock_options* options, edgelock_lock** out);
/* Forgets the lock and its requests; it does not release it: release first. */
void edgelock_lock_deinit(edgelock_lock* lock);
void edgelock_lock_set_callback(edgelock_lock* lock, edgelock_lock_cb fn, void* ctx);

/* Blocking: drive the client until the operation ends. EDGELOCK_OK when
 * acquired (renewed, released); EDGELOCK_ERR_HELD, EDGELOCK_ERR_FAILED or
 * EDGELOCK_ERR_LOST with the event in edgelock_lock_last_event(); another
 * code when it could not run. */
int edgelock_lock_try_acquire(edgelock_lock* lock);               /* one round */
int edgelock_lock_acquire(edgelock_lock* lock, uint32_t wait_ms); /* rounds for wait_ms */
int edgelock_lock_renew(edgelock_lock* lock);
int edgelock_lock_release(edgelock_lock* lock);
/* Takes over an acquisition made elsewhere by its token (32 hex digits), to
 * renew or release it. Plain and fenced modes. */
int edgelock_lock_resume(edgelock_lock* lock, const char* token);

/* Event loop: starts the operation; it goes out at the client's next call.
 * The callback and edgelock_lock_outcome() tell how it ended. */
int edgelock_lock_start_acquire(edgelock_lock* lock); /* the options' max_tries and wait_ms */
int edgelock_lock_start_acquire_tries(edgelock_lock* lock, uint32_t max_tries, uint32_t wait_ms);
int edgelock_lock_start_renew(edgelock_lock* lock);
int edgelock_lock_start_release(edgelock_lock* lock); /* also cancels a waiting acquire */

enum {
    EDGELOCK_OP_NONE = 0,
    EDGELOCK_OP_ACQUIRE = 1,
    EDGELOCK_OP_RENEW = 2,
    EDGELOCK_OP_RELEASE = 3
};

struct edgelock_outcome {
    int op;     /* EDGELOCK_OP_*: the latest started */
    int done;   /* it ended: */
    int status; /* as the blocking call would have returned */
    struct edgelock_event event;
};
void edgelock_lock_outcome(const edgelock_lock* lock, struct edgelock_outcome* out);
/* The lock's last event (lost, renew_failed, ...). */
void edgelock_lock_last_event(const edgelock_lock* lock, struct edgelock_event* out);

/* Held now: acquired and the validity deadline ahead. */
int edgelock_lock_held(const edgelock_lock* lock);

/* A lock's counters, from its events (EDGELOCK_EVENT_*). */
struct edgelock_lock_stats {
    uint64_t acquisitions;     /* acquisitions that ended acquired (each hold, reentrant) */
    uint64_t contended;        /* acquisitions, however they ended, that found the key
                                  held by another owner (they waited, retried or gave up) */
    uint64_t busy;             /* acquisitions that gave up, the key held by another */
    uint64_t acquire_failures; /* acquisitions that failed otherwise (no quorum...) */
    uint64_t renewals;         /* renew rounds that succeeded (watchdog's included) */
    uint64_t renewals_failed;  /* renew rounds that missed their quorum (retried) */
    uint64_t losses;           /* holds that ended lost */
    uint64_t releases;         /* releases that ended */
};

/* Fills *out with the lock's counters. EDGELOCK_OK, or EDGELOCK_ERR_ARG. (Not named
 * edgelock_lock_stats: a C++ program would see it hide the struct.) */
int edgelock_lock_get_stats(const edgelock_lock* lock, struct edgelock_lock_stats* out);
/* Milliseconds of validity left (0 when not held). */
uint64_t edgelock_lock_validity_ms(const edgelock_lock* lock);
uint64_t edgelock_lock_fence(const edgelock_lock* lock); /* fenced: the token of the hold */
int edgelock_lock_permit(const edgelock_lock* lock);     /* a semaphore's permit, or -1 */
/* The current round's token, the hold's once acquired (every acquire round has
 * its own, so no late request can touch a later hold), as 32 hex digits and a NUL (buf of
 * EDGELOCK_TOKEN_TEXT bytes); EDGELOCK_ERR_ARG for a smaller buffer. */
int edgelock_lock_token(const edgelock_lock* lock, char* buf, size_t size);

/* --- TLS (libedgelock_tls_mbedtls) -------------------------------------- */

struct edgelock_tls_options {
    const char* ca_file;   /* PEM CAs to trust (NULL: ca_dir, else the system's) */
    const char* ca_dir;    /* a folder of PEM CAs */
    const char* cert_file; /* a client certificate, with key_file */
    const char* key_file;
    const char* server_name;  /* the name checked in the certificate (NULL: the URL's host) */
    int always;               /* TLS to every node, redis:// too (0) */
    int insecure_skip_verify; /* no certificate check: tests only (0) */
};

void edgelock_tls_options_init(struct edgelock_tls_options* options);
/* The sessions a client of `nodes` nodes and `extra` connections may hold at
 * once: give a TLS object that many. */
unsigned edgelock_tls_sessions_for(unsigned nodes, unsigned extra);
size_t edgelock_tls_size(unsigned sessions);
/* Makes a TLS transport in `mem` and loads its files; give it to clients in
 * edgelock_client_options.tls. Deinit it after every client using it. */
int edgelock_tls_init(void* mem, size_t size, unsigned sessions,
                      const struct edgelock_tls_options* options, edgelock_tls** out);
void edgelock_tls_deinit(edgelock_tls* tls);

#ifdef __cplusplus
}
#endif

#endif /* EDGELOCK_EDGELOCK_H */
