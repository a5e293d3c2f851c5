// What the TLS transport's files share. Internal: not installed.
#pragma once

#include <cstddef>

namespace edgelock {
namespace detail {

// mbedTLS's random source: the port's CSPRNG (port::random_bytes).
int tls_random(void* ctx, unsigned char* out, std::size_t size);

}  // namespace detail
}  // namespace edgelock
