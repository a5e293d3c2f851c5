// The plain transport: the connected socket itself, through the port.
#include "edgelock/transport.hpp"

namespace edgelock {

namespace {

class plain final : public transport {
public:
    port::net_result open(int, const session_peer&, session_id& out) noexcept override {
        out = 0;  // no state: every session is the same
        port::net_result r;
        r.status = port::net_status::ok;
        return r;
    }
    port::net_result proceed(session_id, int) noexcept override {
        port::net_result r;
        r.status = port::net_status::ok;
        return r;
    }
    std::uint8_t wants(session_id) const noexcept override { return 0; }
    port::net_result send(session_id, int fd, const void* data,
                          std::size_t size) noexcept override {
        return port::send(fd, data, size);
    }
    port::net_result recv(session_id, int fd, void* buf, std::size_t capacity) noexcept override {
        return port::recv(fd, buf, capacity);
    }
    std::size_t buffered(session_id) const noexcept override { return 0; }
    void close(session_id) noexcept override {}
};

plain the_plain;

}  // namespace

transport& plain_transport() noexcept {
    return the_plain;
}

}  // namespace edgelock
