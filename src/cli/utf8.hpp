// UTF-8 as RFC 3629 defines it, for the writers that show text read from
// Redis (JSON, terminals, Prometheus labels): anything else is not text.
#pragma once

#include <cstddef>

namespace edgelock_cli {

// The size (1 to 4) of the well-formed UTF-8 sequence at p (n bytes left),
// 0 when the bytes there are not one: a stray continuation byte, an overlong
// form, a surrogate, a code point past U+10FFFF, or a sequence cut short.
std::size_t utf8_sequence(const unsigned char* p, std::size_t n);

}  // namespace edgelock_cli
