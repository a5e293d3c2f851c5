// The plain transport: the connected socket itself, through the port.
#include "edgelock/transport.hpp"

namespace edgelock {

namespace {

class plain final : public transport {
public:
    port::net_result open(std::uint8_t, int, const node_address&) noexcept override {
        port::net_result r;
        r.status = port::net_status::ok;
        return r;
    }
    port::net_result proceed(std::uint8_t node, int fd) noexcept override {
        return open(node, fd, node_address{});
    }
    std::uint8_t wants(std::uint8_t) const noexcept override { return 0; }
    port::net_result send(std::uint8_t, int fd, const void* data,
                          std::size_t size) noexcept override {
        return port::send(fd, data, size);
    }
    port::net_result recv(std::uint8_t, int fd, void* buf, std::size_t capacity) noexcept override {
        return port::recv(fd, buf, capacity);
    }
    std::size_t buffered(std::uint8_t) const noexcept override { return 0; }
    void close(std::uint8_t) noexcept override {}
};

plain the_plain;

}  // namespace

transport& plain_transport() noexcept {
    return the_plain;
}

}  // namespace edgelock
