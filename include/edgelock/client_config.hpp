// The driver's compile-time capacities: buffers and limits per connection.
// Override any of them by defining the macro before the first edgelock
// header (or through EDGELOCK_CONFIG_DEFINES), as with config.hpp.
#pragma once

#include "edgelock/lock.hpp"

// Bytes of received data a connection buffers: the longest reply it accepts.
#ifndef EDGELOCK_CLIENT_RX_BUFFER
#define EDGELOCK_CLIENT_RX_BUFFER 2048
#endif

// Bytes of requests a connection buffers before the socket takes them. At
// least one request of the longest kind (lock_max_request).
#ifndef EDGELOCK_CLIENT_TX_BUFFER
#define EDGELOCK_CLIENT_TX_BUFFER 2048
#endif

// Requests in flight on one connection. Locks wait their turn when it is full.
#ifndef EDGELOCK_CLIENT_PIPELINE
#define EDGELOCK_CLIENT_PIPELINE 64
#endif

// Nodes of one decoded reply (the largest expected is HELLO's map).
#ifndef EDGELOCK_CLIENT_REPLY_NODES
#define EDGELOCK_CLIENT_REPLY_NODES 32
#endif

// Bytes of a server's error message kept per node for node(i).message.
#ifndef EDGELOCK_CLIENT_MESSAGE
#define EDGELOCK_CLIENT_MESSAGE 96
#endif

// Bytes of received data a RESP2 node's subscription buffers: one
// invalidation message, which names a lock key.
#ifndef EDGELOCK_CLIENT_SUB_BUFFER
#define EDGELOCK_CLIENT_SUB_BUFFER 512
#endif

// Lock names one connection has the server track for its waiters (as
// broadcasting prefixes, which it keeps while the connection lasts). A
// waiter on a name past them polls on that node.
#ifndef EDGELOCK_CLIENT_TRACKED_NAMES
#define EDGELOCK_CLIENT_TRACKED_NAMES 8
#endif

static_assert(EDGELOCK_CLIENT_TRACKED_NAMES >= 1 && EDGELOCK_CLIENT_TRACKED_NAMES <= 255,
              "EDGELOCK_CLIENT_TRACKED_NAMES must be in [1, 255]");
static_assert(EDGELOCK_CLIENT_SUB_BUFFER >= EDGELOCK_LOCK_MAX_NAME + 128,
              "EDGELOCK_CLIENT_SUB_BUFFER must hold a message naming the longest lock key");
static_assert(EDGELOCK_CLIENT_TX_BUFFER >= 1024 + 3 * (EDGELOCK_LOCK_MAX_NAME + 16) +
                                               EDGELOCK_LOCK_MAX_OWNER + 32 +
                                               EDGELOCK_LOCK_MAX_HOLDER + 16 + 64,
              "EDGELOCK_CLIENT_TX_BUFFER must hold the longest request (lock_max_request)");
static_assert(EDGELOCK_CLIENT_RX_BUFFER >= 256, "EDGELOCK_CLIENT_RX_BUFFER must be >= 256");
static_assert(EDGELOCK_CLIENT_PIPELINE >= 16 && EDGELOCK_CLIENT_PIPELINE <= 65535,
              "EDGELOCK_CLIENT_PIPELINE must be in [16, 65535]");
static_assert(EDGELOCK_CLIENT_REPLY_NODES >= 16, "EDGELOCK_CLIENT_REPLY_NODES must be >= 16");
