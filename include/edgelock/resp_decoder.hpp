// Incremental, non-allocating RESP2/RESP3 decoder.
//
// Usage: keep the received bytes of a connection in one buffer. Call decode()
// with a pointer to the first byte not yet consumed and the number of bytes
// received after it. The outcome is one of three:
//   complete   - one reply was decoded into `nodes` (result.nodes of them);
//                result.size bytes belong to it. Consume them and call again
//                for the next reply (the decoder has reset itself).
//   incomplete - the reply is not all there; receive more and call again with
//                the same start and the same node array. result.needed is a
//                lower bound on the bytes the reply needs in total, so a
//                caller whose buffer cannot hold that can fail at once.
//   error      - the input is malformed (or the call misused); result.error
//                and result.offset (from the reply's first byte) say what and
//                where. The error is sticky until reset().
//
// The decoder keeps its position in offsets from the reply's first byte, so
// the caller may move the unconsumed bytes (to compact its buffer) between
// calls. Parsing resumes where it stopped: no byte is examined twice except
// the header of a bulk string still waiting for its payload.
//
// Pass nodes == nullptr to validate and measure a reply without keeping it
// (the node count is still reported).
//
// Nothing is allocated, nothing recurses, and no loop or size comes from a
// count read off the wire: every loop advances through the given bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgelock/config.hpp"
#include "edgelock/resp.hpp"

namespace edgelock {

enum class resp_status : std::uint8_t { complete, incomplete, error };

struct resp_result {
    resp_status status = resp_status::incomplete;
    resp_errc error = resp_errc::ok;
    std::size_t size = 0;    // complete: bytes of the reply
    std::size_t nodes = 0;   // complete: nodes written (or counted)
    std::size_t needed = 0;  // incomplete: lower bound on the reply's total size
    std::size_t offset = 0;  // error: offset of the offending byte from the reply start
};

class resp_decoder {
public:
    resp_decoder() noexcept = default;
    explicit resp_decoder(const resp_limits& limits) noexcept { set_limits(limits); }

    void set_limits(const resp_limits& limits) noexcept;
    const resp_limits& limits() const noexcept { return limits_; }

    resp_result decode(const char* data, std::size_t size, resp_node* nodes,
                       std::size_t capacity) noexcept;

    // Forget any partial reply and any error.
    void reset() noexcept;

    // True when bytes of a reply have been seen but the reply is not finished
    // (at the end of the stream: truncated), or after an error.
    bool in_progress() const noexcept { return seen_ != 0 || error_ != resp_errc::ok; }

private:
    struct frame {
        std::uint32_t remaining;  // elements still to come
        std::uint32_t node;       // index of the aggregate's node
        bool attribute;           // an attribute does not count as an element
    };

    resp_result fail(resp_errc code, std::size_t offset) noexcept;
    bool finish_element(bool counts, resp_node* nodes) noexcept;

    resp_limits limits_{};
    std::size_t pos_ = 0;    // start of the next element, from the reply start
    std::size_t scan_ = 0;   // how far the line at pos_ was scanned without CR/LF
    std::size_t seen_ = 0;   // most bytes passed in for this reply
    std::size_t count_ = 0;  // nodes emitted for this reply
    std::uint32_t depth_ = 0;
    resp_errc error_ = resp_errc::ok;  // sticky until reset()
    std::size_t error_offset_ = 0;
    frame stack_[EDGELOCK_RESP_MAX_DEPTH]{};
};

// Decodes exactly one reply from a complete buffer: an incomplete reply is the
// error `truncated` (the offset is the end of the input). Bytes after the reply
// are left alone; result.size says where it ended.
resp_result resp_decode_whole(const char* data, std::size_t size, resp_node* nodes,
                              std::size_t capacity,
                              const resp_limits& limits = resp_limits{}) noexcept;

}  // namespace edgelock
