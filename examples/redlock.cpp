// One fenced Redlock acquisition across independent Redis nodes.
//
//   redlock URL URL URL [URL...]      (3 to 9 nodes; 5 is the usual choice)
//
// It tries "redlock-demo" once in fenced mode: the lock needs a quorum of
// nodes (a majority), and each acquisition gets a fencing token greater than
// any issued before for the name, to be handed to whatever the lock protects
// so that it can refuse a stale holder. It prints the remaining validity, the
// fencing token and every node's state, then releases. With too few nodes
// reachable it fails and says what went wrong with each.
// Exit status: 0 acquired and released, 1 not acquired, 2 lost, 64 usage.
#include <cstdio>
#include <cstring>

#include "edgelock/client.hpp"

namespace {

constexpr int exit_ok = 0;
constexpr int exit_not_acquired = 1;
constexpr int exit_lost = 2;
constexpr int exit_usage = 64;

constexpr int min_nodes = 3;  // fewer gives no fault tolerance worth the rounds

const char* const lock_name = "redlock-demo";

// Every node's state and, if its connection failed, why.
void print_nodes(std::FILE* out, const edgelock::client_base& c, char** urls) {
    for (std::uint8_t i = 0; i < c.node_count(); ++i) {
        const edgelock::node_info n = c.node(i);
        std::fprintf(out, "  node %u %s: %s", static_cast<unsigned>(i), urls[i],
                     edgelock::describe(n.state));
        if (n.error != edgelock::node_error::none) {
            std::fprintf(out, ", %s", edgelock::describe(n.error));
            if (!n.message.empty()) {
                std::fprintf(out, ": %.*s", static_cast<int>(n.message.size), n.message.data);
            } else if (n.code != 0 && n.error == edgelock::node_error::io_error) {
                std::fprintf(out, ": %s", std::strerror(n.code));
            }
        }
        std::fprintf(out, "\n");
    }
    std::fflush(out);
}

void print_call_error(const char* what, const edgelock::op_result& r) {
    std::fprintf(stderr, "redlock: %s: %s", what, edgelock::describe(r.error));
    if (r.error == edgelock::client_errc::lock_rejected) {
        std::fprintf(stderr, " (%s)", edgelock::describe(r.lock_error));
    }
    std::fprintf(stderr, "\n");
}

}  // namespace

int main(int argc, char** argv) {
    const int nodes = argc - 1;
    if (nodes < min_nodes || nodes > edgelock::lock_max_nodes) {
        std::fprintf(stderr, "usage: redlock URL URL URL [URL...] (%d to %d nodes)\n", min_nodes,
                     edgelock::lock_max_nodes);
        return exit_usage;
    }
    char** url_text = argv + 1;
    edgelock::str_view urls[edgelock::lock_max_nodes];
    for (int i = 0; i < nodes; ++i) {
        urls[i] = edgelock::str_view(url_text[i]);
    }

    static edgelock::client<edgelock::lock_max_nodes> client;  // ~8 KB per node: not on the stack
    const edgelock::client_errc ce =
        client.configure(urls, static_cast<std::size_t>(nodes), edgelock::client_options{});
    if (ce == edgelock::client_errc::bad_url) {
        std::fprintf(stderr, "redlock: %s: %s\n", url_text[client.bad_url_index()],
                     edgelock::describe(client.bad_url_error()));
        return exit_usage;
    }
    if (ce != edgelock::client_errc::ok) {
        std::fprintf(stderr, "redlock: %s\n", edgelock::describe(ce));
        return exit_usage;
    }

    edgelock::lock_options options;
    options.mode = edgelock::lock_mode::fenced;
    options.ttl = edgelock::duration::seconds(10);
    // No node_timeout: a round ends once its quorum is won or out of reach,
    // and otherwise waits as long as the lock can use the replies (half the
    // ttl), however slow the link. On a LAN, a fixed bound of a few tens of
    // ms (node_timeout) makes a dead node cost less of the validity.
    edgelock::client_lock lock;
    const edgelock::client_errc ae = lock.attach(client, lock_name, options);
    if (ae != edgelock::client_errc::ok) {
        std::fprintf(stderr, "redlock: %s: %s\n", lock_name,
                     ae == edgelock::client_errc::lock_rejected
                         ? edgelock::describe(lock.lock_error())
                         : edgelock::describe(ae));
        return exit_usage;
    }
    const unsigned quorum = lock.machine().quorum();
    // Connect every node first, so the round is not spent on set-up.
    const unsigned ready = client.connect(edgelock::port::now() + edgelock::duration::seconds(1));
    std::printf("%u of %d nodes ready, quorum %u\n", ready, nodes, quorum);
    std::fflush(stdout);

    edgelock::op_result r = lock.try_acquire();
    if (r.error != edgelock::client_errc::ok) {
        print_call_error("acquire", r);
        print_nodes(stderr, client, url_text);
        return exit_not_acquired;
    }
    if (r.event.kind != edgelock::lock_event_kind::acquired) {
        std::fprintf(stderr, "redlock: %s not acquired: %s", lock_name,
                     edgelock::describe(r.event.kind));
        if (r.event.kind == edgelock::lock_event_kind::busy && r.event.holder_ttl_ms >= 0) {
            std::fprintf(stderr, " (held by another owner for %lld ms more)",
                         static_cast<long long>(r.event.holder_ttl_ms));
        } else if (r.event.reason != edgelock::lock_failure::none) {
            std::fprintf(stderr, " (%s; %u of %d nodes needed)", edgelock::describe(r.event.reason),
                         quorum, nodes);
        }
        std::fprintf(stderr, "\n");
        print_nodes(stderr, client, url_text);
        return exit_not_acquired;
    }

    char hex[edgelock::owner_token::hex_size];
    lock.token().to_hex(hex);
    std::printf(
        "acquired %s: valid for %llu ms, fencing token %llu, token %.*s\n", lock_name,
        static_cast<unsigned long long>((r.event.validity_deadline - edgelock::port::now()).ms()),
        static_cast<unsigned long long>(r.event.fence), static_cast<int>(sizeof hex), hex);
    print_nodes(stdout, client, url_text);

    // The protected work goes here: pass r.event.fence along with every write
    // so the storage can reject anything older than the newest token it saw.
    if (!lock.held()) {
        std::fprintf(stderr, "redlock: %s lost before the release (%s)\n", lock_name,
                     edgelock::describe(lock.last_event().reason));
        return exit_lost;
    }

    r = lock.release();
    if (r.error == edgelock::client_errc::not_held) {
        std::fprintf(stderr, "redlock: %s lost before the release (%s)\n", lock_name,
                     edgelock::describe(lock.last_event().reason));
        return exit_lost;
    }
    if (r.error != edgelock::client_errc::ok) {
        print_call_error("release", r);
        return exit_lost;
    }
    // Nodes that did not answer keep the key until its ttl runs out.
    std::printf("released %s on %u of %d nodes\n", lock_name, static_cast<unsigned>(r.event.nodes),
                nodes);
    return exit_ok;
}
