// Compile-time tuning for edgelock, in one place.
//
// Every value here has a default and may be overridden by defining the macro
// before any edgelock header is included (or on the compiler command line, or
// through the CMake cache variable EDGELOCK_CONFIG_DEFINES). Values that size
// an array inside an object are capacities: the runtime limits derived from
// them may be lowered but never raised past them.
#pragma once

// Deepest nesting of RESP aggregates the decoder will follow. Lock replies nest
// at most 3 deep (HELLO 3 returns a map holding an array of maps); 8 leaves
// room for general replies. Each level costs 12 bytes of decoder state.
#ifndef EDGELOCK_RESP_MAX_DEPTH
#define EDGELOCK_RESP_MAX_DEPTH 8
#endif

// Largest element count one aggregate may announce (a map or attribute counts
// keys and values). Nothing is sized from this count; it only bounds how long
// a hostile header can keep the decoder waiting.
#ifndef EDGELOCK_RESP_MAX_ELEMENTS
#define EDGELOCK_RESP_MAX_ELEMENTS 4096
#endif

// Largest bulk string (also bulk error, verbatim string) payload accepted.
#ifndef EDGELOCK_RESP_MAX_BULK
#define EDGELOCK_RESP_MAX_BULK (1024UL * 1024UL)
#endif

// Longest line (simple string, simple error, integer, double, big number and
// every header) accepted, not counting the type byte and CRLF.
#ifndef EDGELOCK_RESP_MAX_LINE
#define EDGELOCK_RESP_MAX_LINE (64UL * 1024UL)
#endif

// Host name lookups the POSIX port keeps at once (port.hpp: lookup_start),
// abandoned ones still running included; each is about 512 bytes, and a
// running one a helper thread with EDGELOCK_PORT_LOOKUP_STACK bytes of stack.
#ifndef EDGELOCK_PORT_LOOKUPS
#define EDGELOCK_PORT_LOOKUPS 64
#endif
#ifndef EDGELOCK_PORT_LOOKUP_STACK
#define EDGELOCK_PORT_LOOKUP_STACK (256UL * 1024UL)
#endif

// Bytes of one TLS peer's kept session, for resuming it on the next
// connection (tls_mbedtls.hpp): mbedTLS's serialized session (the server's
// certificate, a ticket, the secrets) and 20 bytes of edgelock's own. Each of
// a tls_mbedtls<N, P>'s P entries holds this many; a session that does not
// fit is not kept (the next connection makes a full handshake).
#ifndef EDGELOCK_TLS_SESSION_BYTES
#define EDGELOCK_TLS_SESSION_BYTES 3072
#endif

static_assert(EDGELOCK_RESP_MAX_DEPTH >= 1 && EDGELOCK_RESP_MAX_DEPTH <= 64,
              "EDGELOCK_RESP_MAX_DEPTH must be in [1, 64]");
static_assert(EDGELOCK_RESP_MAX_ELEMENTS >= 1 && EDGELOCK_RESP_MAX_ELEMENTS <= 0x3fffffffUL,
              "EDGELOCK_RESP_MAX_ELEMENTS must be in [1, 2^30)");
static_assert(EDGELOCK_RESP_MAX_BULK >= 64 && EDGELOCK_RESP_MAX_BULK <= 0x7fffffffUL,
              "EDGELOCK_RESP_MAX_BULK must be in [64, 2^31)");
static_assert(EDGELOCK_RESP_MAX_LINE >= 64 && EDGELOCK_RESP_MAX_LINE <= 0x7fffffffUL,
              "EDGELOCK_RESP_MAX_LINE must be in [64, 2^31)");
static_assert(EDGELOCK_PORT_LOOKUPS >= 1 && EDGELOCK_PORT_LOOKUPS <= 4096,
              "EDGELOCK_PORT_LOOKUPS must be in [1, 4096]");
static_assert(EDGELOCK_PORT_LOOKUP_STACK >= 65536UL,
              "EDGELOCK_PORT_LOOKUP_STACK must be at least 64 KiB");
static_assert(EDGELOCK_TLS_SESSION_BYTES >= 256 && EDGELOCK_TLS_SESSION_BYTES <= 65535,
              "EDGELOCK_TLS_SESSION_BYTES must be in [256, 65535]");
