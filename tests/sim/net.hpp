// The test port's world: a virtual clock, simulated Redis nodes at made-up
// addresses, and in-memory connections between the client and them.
//
// Linking edgelock_port_sim instead of edgelock::port_posix makes every port
// function (include/edgelock/port.hpp) talk to the one sim::net that exists
// (sim/port_sim.cpp): the real driver then runs on virtual time against
// sim::redis_node. Node i listens at 10.0.0.<i+1>:<7001+i> (url(i)); one fd is
// one connection, and its bytes go both ways with a latency drawn per send
// and per reply (half a round trip each), so replies of different nodes
// reorder while each connection stays FIFO.
//
// Time moves only inside wait() (and advance()): to the earliest of the
// caller's deadline and the next scheduled delivery, never further. A wait
// with no deadline while nothing is scheduled can never end: it fails
// (returns -1, failure() says why, and it is printed) instead of hanging.
//
// Names: a name service on virtual time (net_lookup.cpp). A lookup of a name
// answers after the name's latency with its addresses, or that there is no
// such name, or never; node i is at host(i), and url_named() reaches it by a
// name. Numeric hosts are done at once, as the port promises.
//
// A node's unasked messages (pub/sub, tracking invalidations: its
// client_table's outbox) go out after each command and each fault, on the
// connection's way back, in order with its replies. Keys that some client
// tracks (read, or matched by a BCAST prefix) are deleted when they expire,
// as Redis's active expiry does, so their readers and listeners are told.
//
// Faults: per node latency range and request loss (the connection breaks,
// before or after the request ran), crash (connections reset, connects
// refused), restart (keyspace kept or lost, script cache lost), pause
// (requests wait in the socket, keys still expire), a connect that never
// completes, and the shape of delivery (recv in random pieces, byte by byte,
// or each reply cut at a given offset; partial sends). All randomness is seeded.
//
// Late bytes: close() takes nothing back. Requests a client wrote to a
// connection it then closed still reach the node and run there, as that
// connection's (its set-up's AUTH and SELECT included), their replies
// thrown away; only a reset (crash, loss, cut) loses them. Two faults make
// that happen seconds later, as a real link that delays and retransmits
// does: request_delay_us slows one node's way in (a congested uplink: set
// and lifted by a test, it makes a connection look dead to the client, whose
// connect or stall timeout then gives it up with its pipelined requests
// still on their way), and late_delivery holds back, on each close with that
// chance, whatever the node has not received yet, to arrive late_min_us ..
// late_max_us after the close (in order, and never sooner than it would
// have). requests_after_close counts the requests that ran on a connection
// its client had already closed.
//
//   sim::net n(seed);
//   n.add_nodes(3);
//   edgelock::client<3> c;       // after the net: destroyed before it
//   ... configure with n.url(0..2), then drive it (sim/event_loop.hpp) or
//   call its blocking functions, which wait on the virtual clock.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "edgelock/port.hpp"
#include "edgelock/time.hpp"
#include "sim/redis_node.hpp"

namespace sim {

struct node_faults {
    // Round trip of one request, drawn per request; each way takes half.
    std::uint64_t latency_min_us = 200;
    std::uint64_t latency_max_us = 2000;
    std::uint64_t reply_delay_us = 0;    // more on the way back only (a congested return path)
    std::uint64_t request_delay_us = 0;  // more on the way in only, per send (a congested uplink)
    // Per connection the client closes: the chance that what the node has
    // not received of it yet comes late_min_us..late_max_us after the close.
    double late_delivery = 0.0;
    std::uint64_t late_min_us = 0;
    std::uint64_t late_max_us = 0;
    double loss = 0.0;           // per request: the connection breaks (before or after it ran)
    bool connect_hangs = false;  // connect() stays in progress forever (a dropped SYN)
    bool refuse_late = false;    // a refused connect shows in connect_finish(), not connect()
};

// How recv() hands out what has arrived.
enum class split : std::uint8_t {
    whole,      // everything readable (up to the caller's capacity)
    random,     // a random piece: sometimes all, else 1..all bytes
    bytewise,   // one byte per call
    at_offset,  // every reply in two pieces, cut split_offset bytes into it
};

class net {
public:
    explicit net(std::uint64_t seed, edgelock::instant start = edgelock::instant{1000000});
    ~net();
    net(const net&) = delete;
    net& operator=(const net&) = delete;

    // The net the port functions use; nullptr when none exists.
    static net* current() noexcept;

    // --- nodes ----------------------------------------------------------
    int add_node();
    void add_nodes(int count);
    int node_count() const { return static_cast<int>(nodes_.size()); }
    // "redis://[userinfo@]10.0.0.<i+1>:<7001+i>[path]"
    std::string url(int i, const std::string& userinfo = "", const std::string& path = "") const;
    redis_node& node(int i);
    node_faults& faults(int i);

    // A node's numeric address ("10.0.0.<i+1>"), and with its port.
    std::string host(int i) const;
    std::string address(int i) const;
    std::uint16_t port(int i) const;

    // --- names ----------------------------------------------------------
    struct name_record {
        std::vector<std::string> addresses;  // numeric, in the order to try
        std::uint64_t latency_us = 1000;     // until the answer
        bool fails = false;                  // the answer is "no such name"
        bool answers = true;                 // false: a lookup never returns
    };
    // The record of `host`, made when missing (with no address yet: a lookup
    // then ends in no_address). A name with no record at all fails after
    // 1 ms, as a name server's NXDOMAIN would.
    name_record& name(const std::string& host);
    // "redis://NAME:<7001+i>": node i, reached by `name`, which resolves to
    // host(i) unless its record says otherwise.
    std::string url_named(int i, const std::string& name);

    // --- faults ---------------------------------------------------------
    void crash(int i);
    void restart(int i, bool keep_data);
    void pause(int i, edgelock::duration d);
    bool up(int i) const;
    // Resets every connection to node i; the node itself runs on.
    void cut(int i);

    // --- time -------------------------------------------------------------
    edgelock::instant now() const { return edgelock::instant{now_}; }
    // Time passes with nobody calling the client: deliveries still happen.
    void advance(edgelock::duration d);
    // Runs fn when virtual time reaches t (inside wait() or advance()). For
    // faults only: fn must not call the client (it may be inside a call).
    void at(edgelock::instant t, std::function<void()> fn);
    bool idle() const { return queue_.empty(); }
    edgelock::instant next_event() const;

    // --- delivery shape ---------------------------------------------------
    split recv_split = split::random;
    std::size_t split_offset = 1;
    bool partial_sends = true;  // send() may take only part of what it is given
    bool random_fails = false;  // random_bytes() fails

    // --- what happened ------------------------------------------------------
    struct connect_record {
        int node;  // -1: no node there
        edgelock::instant at;
        edgelock::port::net_status status;  // what connect() returned
    };
    std::vector<connect_record> connects;
    struct lookup_record {
        std::string host;
        edgelock::instant at;  // begun
    };
    std::vector<lookup_record> lookups;  // every lookup of a name begun
    // Lookups of `host` (every name: empty) begun and not answered yet,
    // released by their caller or not.
    std::size_t lookups_unanswered(const std::string& host = "") const;
    struct close_record {
        int node;
        edgelock::instant at;
        bool by_client;  // close(); else a reset (crash, loss, cut)
    };
    std::vector<close_record> closes;
    // Most requests one connection to the node had received whose replies the
    // client had not read yet: never more than the client had in flight.
    std::size_t max_in_flight(int i) const;
    // The longest single reply any node sent (for cutting replies at every offset).
    std::size_t longest_reply() const { return longest_reply_; }
    std::uint64_t steps() const { return steps_; }
    // Unasked messages (pushes, pub/sub) that reached a client's open fd,
    // and sends that went out at the very instant one of them arrived from
    // the same node (a client acting on what it was told).
    std::uint64_t pushes_delivered = 0;
    std::uint64_t sends_on_push = 0;
    // Requests a node ran on a connection its client had closed, and the
    // closes whose bytes late_delivery held back.
    std::uint64_t requests_after_close = 0;
    std::uint64_t held_back = 0;
    const std::string& failure() const { return failure_; }
    // Whether the client has closed this connection (net::on_command's id):
    // what runs on it now came late.
    bool closed_by_client(std::uint64_t id) const;
    // Sees every command a node receives (before it runs), for traces.
    std::function<void(int node, std::uint64_t connection, const std::vector<std::string>& argv)>
        on_command;

    // --- the port (sim/port_sim.cpp forwards edgelock::port here) ---------
    bool random_bytes(void* buf, std::size_t size);
    edgelock::port::net_result connect(const edgelock::port::endpoint& where, int& fd);
    edgelock::port::net_result lookup_start(edgelock::str_view host, int& id, bool numeric_only);
    int lookup_fd(int id) const;
    edgelock::port::net_result lookup_result(int id) const;
    bool lookup_is_for(int id, edgelock::str_view host) const;
    std::size_t lookup_address(int id, unsigned index, char* buf, std::size_t capacity) const;
    void lookup_release(int id);
    edgelock::port::net_result connect_finish(int fd);
    edgelock::port::net_result send(int fd, const void* data, std::size_t size);
    edgelock::port::net_result recv(int fd, void* buf, std::size_t capacity);
    void close(int fd);
    int wait(edgelock::port::wait_entry* entries, std::size_t count, edgelock::instant deadline);

private:
    enum class conn_state : std::uint8_t { connecting, open, refused, reset };
    struct connection {
        std::uint64_t id = 0;
        int node = 0;
        int fd = -1;  // -1 once the client closed it
        conn_state state = conn_state::connecting;
        // Client side: what has arrived and not been read, and where each reply
        // in it starts and ends (offsets in the whole stream), for split::at_offset
        // and for counting replies read.
        std::string inbox;
        std::deque<std::pair<std::uint64_t, std::uint64_t>> replies;
        std::uint64_t arrived = 0;
        std::uint64_t read = 0;
        std::uint64_t replies_read = 0;
        std::uint64_t send_ready_at = 0;  // send() would block until then
        // Delivery times, kept increasing: one connection is FIFO both ways.
        std::uint64_t last_to_node = 0;
        std::uint64_t last_to_client = 0;
        // Node side: bytes that came while the node was paused, then those not parsed yet.
        std::string parked;
        bool unpark_due = false;
        std::string node_rx;
        redis_node::session session;
        std::uint64_t requests = 0;
    };

    struct sim_node {
        std::string host;
        std::uint16_t port = 0;
        redis_node redis;
        node_faults faults;
        bool up = true;
        std::uint64_t paused_until = 0;
        std::size_t max_in_flight = 0;
        std::uint64_t expiry_check_at = 0;  // an active expiry is scheduled then; 0: none
        std::uint64_t last_push_at = UINT64_MAX;
    };
    enum class item_kind : std::uint8_t { to_node, unpark, to_client, connected, action };
    struct item {
        item_kind kind;
        std::uint64_t conn;
        std::string bytes;
        std::function<void()> fn;
        bool unasked = false;  // to_client: a push or a published message
    };

    struct lookup {
        std::string host;
        bool done = false;
        bool released = false;
        edgelock::port::net_status status = edgelock::port::net_status::in_progress;
        std::vector<std::string> addresses;
        int fd = -1;  // -1 once released, or for a lookup done at once
    };

    // What the POSIX port takes without a lookup: what inet_pton() reads, or
    // a host with ':' (a scoped IPv6 address).
    static bool numeric_host(edgelock::str_view host);
    // The lowest fd number neither a connection nor a lookup holds.
    int take_fd();
    const lookup* lookup_of(int id) const;
    lookup* lookup_by_fd(int fd);
    void push(std::uint64_t t, item it);
    std::uint64_t half_latency(int node);
    void run_due();
    void handle(item& it);
    void node_receive(connection& c, const std::string& bytes);
    void client_receive(connection& c, const std::string& reply);
    // What node i has to send unasked goes out; its next active expiry is set.
    void deliver_unasked(int i);
    void schedule_expiry(int i);
    void reset(connection& c);
    // The client closed c: late_delivery may hold back what is on its way in.
    void hold_back(connection& c);
    connection* by_fd(int fd);
    std::size_t readable_piece(connection& c, std::size_t capacity);
    std::uint8_t readiness(const edgelock::port::wait_entry& e, const connection* c) const;

    std::mt19937_64 net_rng_;  // latency, loss
    // How bytes are cut, drawn apart: cutting them otherwise leaves latencies
    // and tokens as they were.
    std::mt19937_64 split_rng_;
    std::mt19937_64 random_rng_;  // random_bytes: tokens, jitter, retry delays
    std::uint64_t now_;
    std::uint64_t steps_ = 0;
    std::uint64_t seq_ = 0;
    std::size_t longest_reply_ = 0;
    std::uint64_t visible_changes_ = 0;  // what wait() reports may differ when this moves
    std::string failure_;
    std::vector<std::unique_ptr<sim_node>> nodes_;
    std::vector<std::unique_ptr<connection>> conns_;  // by id - 1
    std::vector<std::uint64_t> fds_;                  // open fd -> connection id; 0: free
    std::vector<lookup> lookups_;                     // by id
    std::vector<std::size_t> lookup_fds_;             // fd -> lookup id + 1; 0: none
    std::map<std::string, name_record> names_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, item> queue_;
    net* previous_ = nullptr;
};

}  // namespace sim
