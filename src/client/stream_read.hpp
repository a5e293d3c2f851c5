// The one read loop of the driver's streams (detail/stream.hpp): the lock
// connection, a subscription and a Sentinel watch all read through it.
//
// A handler gives it three calls:
//   void on_message(const stream_message& m);   // a whole message
//   std::size_t oversize(const char* data, std::size_t size);
//       // the message at `data` is too long for the buffer: its whole size,
//       // to be thrown away as it comes, or 0 (the read fails: too_large)
//   void skipped();                               // bytes of one went by
// A handler may close the stream (or close and reopen it) from on_message:
// the loop notices by the generation and touches nothing of it after.
//
// A message that came whole is decoded once, straight into the node array. One
// that came in part resumes where it stopped, measured only (the array serves
// every stream), and is decoded into the array once it is whole: each byte is
// parsed about once, however the message was cut.
#pragma once

#include <string.h>

#include "client_internal.hpp"
#include "edgelock/detail/stream.hpp"

namespace edgelock {
namespace detail {

template <class Handler>
read_end stream::read(transport& t, resp_node* nodes, std::size_t node_capacity, Handler& h,
                      port::net_result& io) noexcept {
    const std::uint32_t generation = generation_;
    for (unsigned guard = 0; guard < 1024; ++guard) {
        if (rx_size_ == capacity_) {
            return read_end::too_large;
        }
        const std::size_t space = capacity_ - rx_size_;
        io = t.recv(session_, fd_, rx_ + rx_size_, space);
        if (io.status == port::net_status::would_block) {
            return read_end::drained;
        }
        if (io.status != port::net_status::ok) {
            return read_end::io_failed;
        }
        rx_size_ += io.size;
        heard_ = heard_ || io.size > 0;
        std::size_t used = 0;
        const read_end e = decode(nodes, node_capacity, h, used);
        if (generation_ != generation) {
            return read_end::stopped;  // closed, or another connection now
        }
        if (e != read_end::drained) {
            return e;
        }
        if (used > 0) {
            memmove(rx_, rx_ + used, rx_size_ - used);
            rx_size_ -= used;
        }
        // A short read took everything the socket had: stop rather than pay
        // a system call for the would-block. Data arriving later makes the fd
        // readable again (level- and edge-triggered waits both report it);
        // bytes the transport holds do not, so those are read now.
        if (io.size < space && t.buffered(session_) == 0) {
            return read_end::drained;
        }
    }
    return read_end::drained;
}

template <class Handler>
read_end stream::decode(resp_node* nodes, std::size_t node_capacity, Handler& h,
                        std::size_t& used) noexcept {
    const std::uint32_t generation = generation_;
    std::size_t pos = 0;
    while (pos < rx_size_) {
        if (skip_ > 0) {
            const std::size_t k = skip_ < rx_size_ - pos ? skip_ : rx_size_ - pos;
            pos += k;
            skip_ -= k;
            h.skipped();
            if (generation_ != generation) {
                return read_end::stopped;
            }
            continue;
        }
        const char* const data = rx_ + pos;
        const std::size_t size = rx_size_ - pos;
        bool kept = !decoder_.in_progress();
        resp_result r =
            decoder_.decode(data, size, kept ? nodes : nullptr, kept ? node_capacity : 0);
        if (r.status == resp_status::error && r.error == resp_errc::node_capacity) {
            // Too many nodes to keep (a large HELLO map): measure it instead.
            decoder_.reset();
            r = decoder_.decode(data, size, nullptr, 0);
            kept = false;
        }
        const bool too_long =
            (r.status == resp_status::incomplete && r.needed > capacity_) ||
            (r.status == resp_status::error && r.error == resp_errc::bulk_too_long);
        if (too_long) {
            const std::size_t whole = h.oversize(data, size);
            if (generation_ != generation) {
                return read_end::stopped;
            }
            if (whole == 0) {
                used = pos;
                return read_end::too_large;
            }
            decoder_.reset();
            skip_ = whole;
            continue;  // its bytes are thrown away as they come
        }
        if (r.status == resp_status::incomplete) {
            break;
        }
        if (r.status == resp_status::error) {
            used = pos;
            return r.error == resp_errc::line_too_long || r.error == resp_errc::too_many_elements
                       ? read_end::too_large
                       : read_end::malformed;
        }
        if (!kept) {
            // Whole now: its nodes in one pass over it, when they fit.
            const resp_result whole =
                resp_decode_whole(data, r.size, nodes, node_capacity, decoder_limits());
            kept = whole.status == resp_status::complete;
            r.nodes = kept ? whole.nodes : 0;
        }
        stream_message m;
        m.data = data;
        m.size = r.size;
        m.nodes = kept ? nodes : nullptr;
        m.count = kept ? r.nodes : 0;
        m.push = kept ? nodes[skip_attributes(nodes, r.nodes, 0)].type == resp_type::push
                      : data[0] == '>';
        pos += r.size;
        h.on_message(m);
        if (generation_ != generation) {
            return read_end::stopped;
        }
    }
    used = pos;
    return read_end::drained;
}

}  // namespace detail
}  // namespace edgelock
