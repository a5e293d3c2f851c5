// bench_handoff's peer: a waiter told by the server with nothing else in the
// way, to measure the handoff a told waiter can have on this machine.
//
// One blocking loopback connection in RESP3 with CLIENT TRACKING ON NOLOOP
// (every key it reads is tracked). An attempt is SET key token NX PX 5000
// and GET key in one write: SET takes the lock, or GET, a read, registers
// the connection for the key's next change (and finds it gone if it went in
// between: try again at once). A waiter sleeps in poll() until the push, then
// tries again; 200 ms without one, it tries anyway. The release is EVALSHA of
// the compare-and-delete script, as the cycle benchmark's hiredis peer does.
// Replies are decoded with the project's codec; everything else is here.
#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>

#include "bench/handoff_shared.hpp"
#include "edgelock/resp_decoder.hpp"
#include "tools/clock.hpp"
#include "tools/lock_key.hpp"
#include "tools/net.hpp"

namespace edgelock_handoff {
namespace {

const char* const compare_and_delete =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
    "return 0";

std::string command(std::initializer_list<std::string> args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const std::string& a : args) {
        out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    }
    return out;
}

class peer {
public:
    peer(shared_state& s, int who, std::uint16_t port) : s_(s), who_(who) {
        fd_ = edgelock_test::connect_loopback(port);
        if (fd_ < 0) {
            participant_fail(s_, who_, "peer: connect failed");
        }
        send(command({"HELLO", "3"}) + command({"CLIENT", "TRACKING", "ON", "NOLOOP"}) +
             command({"SCRIPT", "LOAD", compare_and_delete}));
        next_reply();  // HELLO's map
        if (next_reply().type != edgelock::resp_type::simple_string) {
            participant_fail(s_, who_, "peer: CLIENT TRACKING refused");
        }
        const edgelock::resp_node sha = next_reply();
        if (sha.text.size != 40) {
            participant_fail(s_, who_, "peer: SCRIPT LOAD failed");
        }
        sha_.assign(sha.text.data, 40);
        token_ = "peer-" + std::to_string(who_);
        key_ = edgelock_test::key_of(lock_name);
        attempt_ = command({"SET", key_, token_, "NX", "PX", "5000"}) + command({"GET", key_});
        release_ = command({"EVALSHA", sha_, "1", key_, token_});
    }

    [[noreturn]] void run() {
        while (s_.stop.load() == 0) {
            send(attempt_);
            const edgelock::resp_node set = next_reply();
            const edgelock::resp_node get = next_reply();
            if (set.type == edgelock::resp_type::simple_string) {
                hold();
                continue;
            }
            if (get.type == edgelock::resp_type::null) {
                continue;  // gone between the SET and the GET: try again now
            }
            if (!told_) {
                wait_push(200);
            }
            told_ = false;
        }
        ::_exit(0);
    }

private:
    void hold() {
        const std::int64_t acquired_at = edgelock_test::mono_ns();
        const std::uint32_t index = s_.next.fetch_add(1);
        if (index >= max_records) {
            ::_exit(0);
        }
        record& rec = s_.records[index];
        rec.who = who_;
        rec.acquired_at = acquired_at;
        edgelock_test::sleep_ns(hold_ns);
        rec.release_started_at = edgelock_test::mono_ns();
        send(release_);
        const edgelock::resp_node r = next_reply();
        if (r.type != edgelock::resp_type::integer || r.integer != 1) {
            participant_fail(s_, who_, "peer: the release did not delete the key");
        }
        rec.done.store(1);
        told_ = false;  // a push meanwhile was about its own hold
        wait_for_next_holder(s_, index);
    }

    void send(const std::string& bytes) {
        if (::write(fd_, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
            participant_fail(s_, who_, "peer: write failed");
        }
    }

    // Reads until a push arrives or `ms` pass.
    void wait_push(int ms) {
        while (!told_ && decode_one()) {
        }
        const std::int64_t until = edgelock_test::mono_ns() + ms * 1'000'000LL;
        while (!told_) {
            const std::int64_t left = (until - edgelock_test::mono_ns()) / 1'000'000;
            if (left <= 0) {
                return;
            }
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left)) > 0) {
                fill();
                while (!told_ && decode_one()) {
                }
            }
        }
    }

    // The next reply, pushes noted on the way.
    edgelock::resp_node next_reply() {
        for (;;) {
            if (!decode_one()) {
                fill();
            } else if (have_reply_) {
                have_reply_ = false;
                return reply_;
            }
        }
    }

    std::size_t pending() const { return size_ - start_; }

    void fill() {
        if (start_ > 0) {
            std::memmove(buf_, buf_ + start_, size_ - start_);
            size_ -= start_;
            start_ = 0;
        }
        const ssize_t n = ::read(fd_, buf_ + size_, sizeof buf_ - size_);
        if (n <= 0) {
            participant_fail(s_, who_, "peer: read failed");
        }
        size_ += static_cast<std::size_t>(n);
    }

    // Decodes one whole message if there is one: a push sets told_, a reply
    // is kept in reply_. False when more bytes are needed.
    bool decode_one() {
        if (pending() == 0) {
            return false;
        }
        edgelock::resp_node nodes[64];
        const edgelock::resp_result r =
            edgelock::resp_decode_whole(buf_ + start_, pending(), nodes, 64);
        if (r.status != edgelock::resp_status::complete) {
            if (r.error == edgelock::resp_errc::truncated) {
                return false;
            }
            participant_fail(s_, who_, "peer: a reply that does not decode");
        }
        start_ += r.size;
        if (nodes[0].type == edgelock::resp_type::push) {
            told_ = true;  // invalidate: the key changed
            return true;
        }
        reply_ = nodes[0];
        // Its text points into the buffer, which the next fill() moves: keep
        // only what run() looks at.
        if (reply_.has_text()) {
            text_.assign(reply_.text.data, reply_.text.size);
            reply_.text = edgelock::str_view(text_.data(), text_.size());
        }
        have_reply_ = true;
        return true;
    }

    shared_state& s_;
    int who_;
    int fd_ = -1;
    std::string sha_;
    std::string token_;
    std::string key_;
    std::string attempt_;
    std::string release_;
    char buf_[65536];
    std::size_t start_ = 0;
    std::size_t size_ = 0;
    edgelock::resp_node reply_;
    std::string text_;
    bool have_reply_ = false;
    bool told_ = false;
};

}  // namespace

void peer_participant(shared_state& s, int who, std::uint16_t port) {
    static peer p(s, who, port);  // its buffer is not for the stack
    p.run();
}

}  // namespace edgelock_handoff
