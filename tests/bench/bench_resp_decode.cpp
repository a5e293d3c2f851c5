// Measurement 1 of the benchmarks: decoding speed of the RESP decoder on the
// replies a lock client actually sees, side by side with hiredis's reader
// (redisReaderCreate / redisReaderFeed / redisReaderGetReply / freeReplyObject)
// on the same bytes.
//
// Two in-memory streams of typical lock replies in the same fixed
// pseudo-random mix (+OK, :1, :0, nulls, 32-hex-char token bulks,
// -NOSCRIPT ..., the reply of a renewal and a fenced acquire):
//   A, RESP2: as a RESP2 server sends them ($-1 for a null, flat arrays where
//      RESP3 has maps). Both decoders decode it.
//   B, RESP3: the same replies with % maps and _ nulls. Before timing, the
//      program feeds B to hiredis's reader and reports what it does (hiredis
//      0.14.1, Debian's, predates RESP3 and answers REDIS_ERR); hiredis is
//      timed on B only if its reader decodes all of it.
//
// Both decoders are driven the way a client drives them: the stream arrives
// in 4 KiB chunks. edgelock gets each chunk copied into a receive buffer,
// decodes replies from it until one is incomplete, then moves the incomplete
// tail to the front (as edgelock's client does after recv). hiredis gets each
// chunk through redisReaderFeed (which copies it into the reader's buffer),
// then redisReaderGetReply until no reply is left. Like is compared with like:
//   (a) edgelock decoding each reply into a node array vs hiredis building
//       redisReply objects with its default functions, freed after each reply;
//   (b) edgelock validating only (no node array) vs hiredis with
//       reader->fn = NULL, which parses without building objects.
// Each mode runs for 5 rounds of 0.3 s; the rounds of all modes are
// interleaved, with the edgelock/hiredis order swapped every round, and the
// median round is reported, so a noisy moment cannot favour one side. The
// target is edgelock at least 3x hiredis in each pairing.
//
// Before timing, stream A is decoded by both and compared reply by reply
// (types, integers, strings, array elements). Every pass must decode the
// expected number of replies and consume the stream to the byte, and every
// pass feeds a checksum that must match the first pass (so the compiler
// cannot drop the work); otherwise the program exits with status 1.
// MB = 10^6 bytes.
//
// Without EDGELOCK_BENCH_HIREDIS (builds where hiredis is not available, such
// as cross builds) only edgelock's rows are measured and printed.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "edgelock/resp_decoder.hpp"

#if EDGELOCK_BENCH_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace {

using edgelock::resp_decoder;
using edgelock::resp_node;
using edgelock::resp_result;
using edgelock::resp_status;
using edgelock::resp_type;

constexpr std::size_t stream_replies = 2000;
constexpr std::size_t chunk_bytes = 4096;
constexpr std::size_t node_capacity = 16;
constexpr int rounds = 5;
constexpr auto round_budget = std::chrono::milliseconds(300);
constexpr double target_ratio = 3.0;

[[noreturn]] void fail(const std::string& message) {
    std::fprintf(stderr, "bench_resp_decode: %s\n", message.c_str());
    std::exit(1);
}

// --- the streams -------------------------------------------------------------------------

enum class protocol { resp2, resp3 };

struct reply_kind {
    const char* label;  // for the report
    const char* resp2;  // nullptr: a token bulk
    const char* resp3;
    unsigned weight;  // out of the sum of weights (100)
};

// Acquires (+OK / null), releases and renewals (:1 / :0), GETs of a token,
// NOSCRIPT on the first EVALSHA, a fenced acquire's {valid, fence}, a HELLO
// field, a renewal's {1, fence}.
const reply_kind kinds[] = {
    {"+OK", "+OK\r\n", "+OK\r\n", 30},
    {":1", ":1\r\n", ":1\r\n", 20},
    {":0", ":0\r\n", ":0\r\n", 8},
    {"null", "$-1\r\n", "_\r\n", 12},
    {"token bulk", nullptr, nullptr, 15},
    {"-NOSCRIPT", "-NOSCRIPT No matching script. Please use EVAL.\r\n",
     "-NOSCRIPT No matching script. Please use EVAL.\r\n", 3},
    {"{valid, fence}", "*4\r\n$5\r\nvalid\r\n:29874\r\n$5\r\nfence\r\n:1042\r\n",
     "%2\r\n$5\r\nvalid\r\n:29874\r\n$5\r\nfence\r\n:1042\r\n", 7},
    {"{proto}", "*2\r\n$5\r\nproto\r\n:2\r\n", "%1\r\n$5\r\nproto\r\n:3\r\n", 2},
    {"{1, fence}", "*2\r\n:1\r\n:1043\r\n", "*2\r\n:1\r\n:1043\r\n", 3},
};

// "+OK 30%, :1 20%, ..." for the report.
std::string describe_mix() {
    unsigned total_weight = 0;
    for (const reply_kind& k : kinds) {
        total_weight += k.weight;
    }
    std::string out;
    for (const reply_kind& k : kinds) {
        out += out.empty() ? "" : ", ";
        out += std::string(k.label) + " " + std::to_string(k.weight * 100 / total_weight) + "%";
    }
    return out;
}

std::string token_bulk(std::uint32_t seed) {
    static const char hex[] = "0123456789abcdef";
    std::string out = "$32\r\n";
    for (int i = 0; i < 32; ++i) {
        seed = seed * 1664525u + 1013904223u;
        out += hex[seed >> 28];
    }
    return out + "\r\n";
}

// `replies` replies in a fixed mix; both protocols pick the same sequence.
std::string build_stream(std::size_t replies, protocol proto) {
    unsigned total_weight = 0;
    for (const reply_kind& k : kinds) {
        total_weight += k.weight;
    }
    std::string stream;
    std::uint32_t rng = 12345;
    for (std::size_t i = 0; i < replies; ++i) {
        rng = rng * 1664525u + 1013904223u;
        unsigned pick = (rng >> 8) % total_weight;
        for (const reply_kind& k : kinds) {
            if (pick < k.weight) {
                const char* wire = proto == protocol::resp2 ? k.resp2 : k.resp3;
                stream += wire != nullptr ? std::string(wire) : token_bulk(rng);
                break;
            }
            pick -= k.weight;
        }
    }
    return stream;
}

// --- one pass over a stream ----------------------------------------------------------------

struct pass_result {
    bool ok = true;
    std::size_t replies = 0;
    std::uint64_t checksum = 0;
};

// edgelock: chunks copied into a receive buffer, replies decoded in place, the
// incomplete tail moved to the front. One decoder for the whole pass: after an
// incomplete reply it resumes where it stopped.
class edgelock_reader {
public:
    explicit edgelock_reader(bool keep_nodes) : keep_nodes_(keep_nodes) {}

    pass_result pass(const std::string& stream) {
        pass_result p;
        resp_node* const nodes = keep_nodes_ ? nodes_ : nullptr;
        const std::size_t capacity = keep_nodes_ ? node_capacity : 0;
        std::size_t rx_size = 0;
        std::size_t fed = 0;
        while (fed < stream.size()) {
            const std::size_t n = std::min(chunk_bytes, stream.size() - fed);
            if (n > sizeof rx_ - rx_size) {
                p.ok = false;
                return p;
            }
            std::memcpy(rx_ + rx_size, stream.data() + fed, n);
            rx_size += n;
            fed += n;
            std::size_t pos = 0;
            while (pos < rx_size) {
                const resp_result r = decoder_.decode(rx_ + pos, rx_size - pos, nodes, capacity);
                if (r.status == resp_status::incomplete) {
                    break;
                }
                if (r.status != resp_status::complete || r.size == 0) {
                    p.ok = false;
                    return p;
                }
                p.checksum += r.nodes + r.size;
                if (nodes != nullptr) {
                    p.checksum += static_cast<std::uint64_t>(nodes[0].integer) + nodes[0].text.size;
                }
                pos += r.size;
                ++p.replies;
            }
            std::memmove(rx_, rx_ + pos, rx_size - pos);
            rx_size -= pos;
        }
        p.ok = rx_size == 0 && !decoder_.in_progress();
        return p;
    }

private:
    bool keep_nodes_;
    resp_decoder decoder_;
    resp_node nodes_[node_capacity];
    char rx_[2 * chunk_bytes];
};

#if EDGELOCK_BENCH_HIREDIS

std::uint64_t reply_checksum(const redisReply* r) {
    std::uint64_t sum = static_cast<std::uint64_t>(r->type) +
                        static_cast<std::uint64_t>(r->integer) + r->len + r->elements;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
        sum +=
            static_cast<std::uint64_t>(r->element[r->elements - 1]->integer) + r->element[0]->len;
    }
    return sum;
}

// hiredis: chunks through redisReaderFeed, then redisReaderGetReply until no
// reply is left. With objects, the default functions build a redisReply per
// reply, freed at once; without, reader->fn = NULL and the reader hands back
// only the reply type.
class hiredis_reader {
public:
    explicit hiredis_reader(bool objects) : objects_(objects), reader_(redisReaderCreate()) {
        if (reader_ == nullptr) {
            fail("redisReaderCreate failed");
        }
        if (!objects_) {
            reader_->fn = nullptr;
        }
    }
    ~hiredis_reader() { redisReaderFree(reader_); }
    hiredis_reader(const hiredis_reader&) = delete;
    hiredis_reader& operator=(const hiredis_reader&) = delete;

    pass_result pass(const std::string& stream) {
        pass_result p;
        std::size_t fed = 0;
        while (fed < stream.size()) {
            const std::size_t n = std::min(chunk_bytes, stream.size() - fed);
            if (redisReaderFeed(reader_, stream.data() + fed, n) != REDIS_OK) {
                p.ok = false;
                return p;
            }
            fed += n;
            for (;;) {
                void* reply = nullptr;
                if (redisReaderGetReply(reader_, &reply) != REDIS_OK) {
                    p.ok = false;
                    return p;
                }
                if (reply == nullptr) {
                    break;
                }
                if (objects_) {
                    p.checksum += reply_checksum(static_cast<const redisReply*>(reply));
                    freeReplyObject(reply);
                } else {
                    p.checksum += reinterpret_cast<std::uintptr_t>(reply);
                }
                ++p.replies;
            }
        }
        // All bytes consumed and no reply under way: after a call that found
        // nothing, the reader waits for a type byte at the top level.
        p.ok = reader_->pos == reader_->len &&
               (reader_->ridx == -1 || (reader_->ridx == 0 && reader_->rstack[0].type < 0));
        return p;
    }

private:
    bool objects_;
    redisReader* reader_;
};

// True when edgelock's node i and hiredis's reply hold the same value.
bool same_value(const resp_node* nodes, std::size_t i, const redisReply* h) {
    const resp_node& n = nodes[i];
    auto same_text = [&] {
        return h->len == n.text.size && std::memcmp(h->str, n.text.data, n.text.size) == 0;
    };
    switch (n.type) {
    case resp_type::simple_string:
        return h->type == REDIS_REPLY_STATUS && same_text();
    case resp_type::simple_error:
        return h->type == REDIS_REPLY_ERROR && same_text();
    case resp_type::bulk_string:
        return h->type == REDIS_REPLY_STRING && same_text();
    case resp_type::integer:
        return h->type == REDIS_REPLY_INTEGER && h->integer == n.integer;
    case resp_type::null:
        return h->type == REDIS_REPLY_NIL;
    case resp_type::array: {
        if (h->type != REDIS_REPLY_ARRAY || h->elements != n.count) {
            return false;
        }
        std::size_t child = i + 1;
        for (std::size_t e = 0; e < h->elements; ++e) {
            if (!same_value(nodes, child, h->element[e])) {
                return false;
            }
            child = nodes[child].end;
        }
        return true;
    }
    default:
        return false;
    }
}

// Decodes the whole stream with both and compares reply by reply.
void check_same_replies(const std::string& stream, std::size_t expected) {
    redisReader* reader = redisReaderCreate();
    if (reader == nullptr) {
        fail("redisReaderCreate failed");
    }
    if (redisReaderFeed(reader, stream.data(), stream.size()) != REDIS_OK) {
        fail("redisReaderFeed failed");
    }
    resp_decoder decoder;
    resp_node nodes[node_capacity];
    std::size_t start = 0;
    std::size_t count = 0;
    for (;;) {
        void* reply = nullptr;
        if (redisReaderGetReply(reader, &reply) != REDIS_OK) {
            fail(std::string("hiredis rejected stream A: ") + reader->errstr);
        }
        if (reply == nullptr) {
            break;
        }
        const resp_result r =
            decoder.decode(stream.data() + start, stream.size() - start, nodes, node_capacity);
        const bool same = r.status == resp_status::complete &&
                          same_value(nodes, 0, static_cast<const redisReply*>(reply));
        freeReplyObject(reply);
        if (!same) {
            fail("reply " + std::to_string(count) + " of stream A differs between the decoders");
        }
        start += r.size;
        ++count;
    }
    redisReaderFree(reader);
    if (count != expected || start != stream.size()) {
        fail("stream A: the decoders did not both decode all " + std::to_string(expected) +
             " replies");
    }
}

// What hiredis's reader does with some bytes, fed whole.
struct probe_result {
    bool rejected = false;    // redisReaderFeed or redisReaderGetReply returned REDIS_ERR
    std::size_t decoded = 0;  // replies decoded (before the error, if any)
    std::string error;        // the reader's errstr
};

probe_result probe_hiredis(const std::string& bytes) {
    probe_result probe;
    redisReader* reader = redisReaderCreate();
    if (reader == nullptr) {
        fail("redisReaderCreate failed");
    }
    if (redisReaderFeed(reader, bytes.data(), bytes.size()) != REDIS_OK) {
        probe.rejected = true;
        probe.error = reader->errstr;
    }
    while (!probe.rejected) {
        void* reply = nullptr;
        if (redisReaderGetReply(reader, &reply) != REDIS_OK) {
            probe.rejected = true;
            probe.error = reader->errstr;
            break;
        }
        if (reply == nullptr) {
            break;
        }
        freeReplyObject(reply);
        ++probe.decoded;
    }
    redisReaderFree(reader);
    return probe;
}

// Feeds hiredis stream B, then each reply of the mix that RESP3 sends
// differently, alone; says what happened, for the report. *accepted is set
// when the reader decoded all of stream B.
std::string probe_resp3(const std::string& stream_b, bool* accepted) {
    const probe_result whole = probe_hiredis(stream_b);
    *accepted = !whole.rejected && whole.decoded == stream_replies;
    std::string out = "Fed stream B, hiredis's reader ";
    if (whole.rejected) {
        out += "returned REDIS_ERR after " + std::to_string(whole.decoded) + " replies (\"" +
               whole.error + "\")";
    } else if (*accepted) {
        out += "decoded all of it";
    } else {
        out += "decoded " + std::to_string(whole.decoded) + " of its replies without an error";
    }
    out += "; fed alone, each RESP3-only reply of the mix got:";
    for (const reply_kind& k : kinds) {
        if (k.resp3 == nullptr || std::strcmp(k.resp2, k.resp3) == 0) {
            continue;
        }
        const std::string wire = k.resp3;
        const probe_result one = probe_hiredis(wire);
        out += " `" + wire.substr(0, wire.find('\r')) + "` (" + k.label + "): ";
        if (one.rejected) {
            out += "REDIS_ERR (\"" + one.error + "\");";
        } else {
            out += "decoded " + std::to_string(one.decoded) + " reply;";
        }
    }
    out.back() = '.';
    out +=
        *accepted ? " hiredis is timed on stream B too. " : " So stream B has edgelock rows only. ";
    return out;
}

#endif  // EDGELOCK_BENCH_HIREDIS

// --- timing --------------------------------------------------------------------------------

enum class decoder_kind { edgelock_nodes, edgelock_validate, hiredis_objects, hiredis_raw };

struct mode {
    const char* stream_label = nullptr;
    const char* decoder_label = nullptr;
    const std::string* stream = nullptr;
    decoder_kind kind = decoder_kind::edgelock_nodes;
    std::uint64_t first_checksum = 0;
    std::vector<double> rates;  // replies/s of each round
};

pass_result run_pass(decoder_kind kind, const std::string& stream) {
    // One reader of each kind for the whole run, as a connection keeps its
    // own; every pass ends on a reply boundary (checked), so no pass inherits
    // a partial reply from another.
    switch (kind) {
    case decoder_kind::edgelock_nodes:
    case decoder_kind::edgelock_validate: {
        static edgelock_reader with_nodes(true);
        static edgelock_reader validate(false);
        return (kind == decoder_kind::edgelock_nodes ? with_nodes : validate).pass(stream);
    }
#if EDGELOCK_BENCH_HIREDIS
    case decoder_kind::hiredis_objects:
    case decoder_kind::hiredis_raw: {
        static hiredis_reader objects(true);
        static hiredis_reader raw(false);
        return (kind == decoder_kind::hiredis_objects ? objects : raw).pass(stream);
    }
#endif
    default:
        break;
    }
    return pass_result{false, 0, 0};
}

void check_pass(const mode& m, const pass_result& p) {
    if (!p.ok || p.replies != stream_replies) {
        fail(std::string(m.decoder_label) + " on stream " + m.stream_label + ": decoded " +
             std::to_string(p.replies) + " of " + std::to_string(stream_replies) + " replies");
    }
}

void time_round(mode& m) {
    using clock = std::chrono::steady_clock;
    const auto begin = clock::now();
    auto now = begin;
    std::uint64_t passes = 0;
    std::uint64_t checksum = 0;
    while (now - begin < round_budget) {
        for (int i = 0; i < 16; ++i) {
            const pass_result p = run_pass(m.kind, *m.stream);
            check_pass(m, p);
            checksum += p.checksum;
            ++passes;
        }
        now = clock::now();
    }
    if (checksum != m.first_checksum * passes) {
        fail(std::string(m.decoder_label) + " on stream " + m.stream_label + ": passes disagree");
    }
    const double seconds = std::chrono::duration<double>(now - begin).count();
    m.rates.push_back(static_cast<double>(passes) * static_cast<double>(stream_replies) / seconds);
    std::fprintf(stderr, "bench_resp_decode:   %s, %s: %.1f Mreplies/s\n", m.stream_label,
                 m.decoder_label, m.rates.back() / 1e6);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

bool is_edgelock(decoder_kind k) {
    return k == decoder_kind::edgelock_nodes || k == decoder_kind::edgelock_validate;
}

}  // namespace

int main() {
    const std::string stream_a = build_stream(stream_replies, protocol::resp2);
    const std::string stream_b = build_stream(stream_replies, protocol::resp3);

    const char* const a_label = "A: RESP2";
    const char* const b_label = "B: RESP3";
    std::vector<mode> modes;
    auto add = [&modes](const char* stream_label, const char* decoder_label,
                        const std::string& stream, decoder_kind kind) {
        mode m;
        m.stream_label = stream_label;
        m.decoder_label = decoder_label;
        m.stream = &stream;
        m.kind = kind;
        modes.push_back(m);
    };
    const char* const nodes_label = "edgelock, into a node array";
    const char* const validate_label = "edgelock, validate only";
    // Each edgelock mode is followed by its hiredis counterpart, if any: the
    // rounds swap the two, and the table gives the ratio on the edgelock row.
#if EDGELOCK_BENCH_HIREDIS
    const char* const objects_label = "hiredis, redisReply objects";
    const char* const raw_label = "hiredis, `fn = NULL` (no objects)";
    std::fprintf(stderr, "bench_resp_decode: checking stream A decodes alike in both\n");
    check_same_replies(stream_a, stream_replies);
    bool hiredis_reads_b = false;
    const std::string resp3_report = probe_resp3(stream_b, &hiredis_reads_b);
    add(a_label, nodes_label, stream_a, decoder_kind::edgelock_nodes);
    add(a_label, objects_label, stream_a, decoder_kind::hiredis_objects);
    add(a_label, validate_label, stream_a, decoder_kind::edgelock_validate);
    add(a_label, raw_label, stream_a, decoder_kind::hiredis_raw);
    add(b_label, nodes_label, stream_b, decoder_kind::edgelock_nodes);
    if (hiredis_reads_b) {
        add(b_label, objects_label, stream_b, decoder_kind::hiredis_objects);
    }
    add(b_label, validate_label, stream_b, decoder_kind::edgelock_validate);
    if (hiredis_reads_b) {
        add(b_label, raw_label, stream_b, decoder_kind::hiredis_raw);
    }
#else
    add(a_label, nodes_label, stream_a, decoder_kind::edgelock_nodes);
    add(a_label, validate_label, stream_a, decoder_kind::edgelock_validate);
    add(b_label, nodes_label, stream_b, decoder_kind::edgelock_nodes);
    add(b_label, validate_label, stream_b, decoder_kind::edgelock_validate);
#endif

    // First pass of every mode: the reference checksum, and a warm-up.
    for (mode& m : modes) {
        const pass_result p = run_pass(m.kind, *m.stream);
        check_pass(m, p);
        m.first_checksum = p.checksum;
    }

    // Interleaved rounds; in odd rounds each pair runs hiredis first.
    for (int round = 0; round < rounds; ++round) {
        std::fprintf(stderr, "bench_resp_decode: round %d of %d\n", round + 1, rounds);
        for (std::size_t i = 0; i < modes.size(); ++i) {
            std::size_t j = i;
            const bool pair_start = i + 1 < modes.size() && is_edgelock(modes[i].kind) &&
                                    !is_edgelock(modes[i + 1].kind);
            const bool pair_end =
                i > 0 && is_edgelock(modes[i - 1].kind) && !is_edgelock(modes[i].kind);
            if (round % 2 == 1 && pair_start) {
                j = i + 1;
            } else if (round % 2 == 1 && pair_end) {
                j = i - 1;
            }
            time_round(modes[j]);
        }
    }

    std::printf("## 1. Codec: decoding lock replies\n\n");
    std::printf(
        "Two in-memory streams of %zu typical lock replies in the same pseudo-random mix "
        "(%s): stream A as a RESP2 server sends them (`$-1`, flat arrays; %zu bytes) and "
        "stream B in RESP3 (`_`, `%%` maps; %zu bytes). Each decoder receives the stream in "
        "%zu-byte chunks, as a client does: edgelock's `resp_decoder` gets each chunk copied "
        "into a receive buffer, decodes replies in place until one is incomplete, and moves "
        "the tail to the front; ",
        stream_replies, describe_mix().c_str(), stream_a.size(), stream_b.size(), chunk_bytes);
#if EDGELOCK_BENCH_HIREDIS
    std::printf(
        "hiredis %d.%d.%d's reader (the distribution's shared library) gets each chunk through "
        "`redisReaderFeed`, then `redisReaderGetReply` until no reply is left. Pairing (a): "
        "edgelock decoding into a node array vs hiredis building `redisReply` objects "
        "(freed after each reply); pairing (b): edgelock validating only vs hiredis with "
        "`reader->fn = NULL` (parsing without objects). Before timing, both decoded stream A "
        "and agreed on all %zu replies. %s",
        HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, stream_replies, resp3_report.c_str());
#else
    std::printf(
        "hiredis is not available in this build, so only edgelock's figures are measured. ");
#endif
    std::printf(
        "Every mode ran %d rounds of %.1f s, interleaved with the other modes (each pair's "
        "order swapped every round); the table gives the median round. MB = 10^6 bytes.\n\n",
        rounds, std::chrono::duration<double>(round_budget).count());

#if EDGELOCK_BENCH_HIREDIS
    std::printf(
        "| Stream | Decoder, mode | Mreplies/s | MB/s | edgelock / hiredis | Target "
        "(>= %.0fx) |\n",
        target_ratio);
    std::printf("|---|---|---:|---:|---:|---|\n");
#else
    std::printf("| Stream | Decoder, mode | Mreplies/s | MB/s |\n");
    std::printf("|---|---|---:|---:|\n");
#endif
    for (std::size_t i = 0; i < modes.size(); ++i) {
        const mode& m = modes[i];
        const double rate = median(m.rates);
        const double mbps = rate * static_cast<double>(m.stream->size()) /
                            static_cast<double>(stream_replies) / 1e6;
        std::printf("| %s | %s | %.1f | %.0f |", m.stream_label, m.decoder_label, rate / 1e6, mbps);
#if EDGELOCK_BENCH_HIREDIS
        if (is_edgelock(m.kind) && i + 1 < modes.size() && !is_edgelock(modes[i + 1].kind)) {
            const double ratio = rate / median(modes[i + 1].rates);
            std::printf(" %.2fx | %s |", ratio, ratio >= target_ratio ? "met" : "missed");
        } else if (is_edgelock(m.kind)) {
            std::printf(" n/a | n/a |");
        } else {
            std::printf(" | |");
        }
#endif
        std::printf("\n");
    }
#if EDGELOCK_BENCH_HIREDIS
    std::printf("\n");
    const char* const pairing[] = {"a, node array vs redisReply objects",
                                   "b, validate only vs parse only"};
    std::size_t pairs = 0;
    for (std::size_t i = 0; i + 1 < modes.size(); ++i) {
        if (is_edgelock(modes[i].kind) && !is_edgelock(modes[i + 1].kind)) {
            const double ratio = median(modes[i].rates) / median(modes[i + 1].rates);
            std::printf("Target (%s): at least %.0fx hiredis: **%s** (%.2fx).\n",
                        pairs < 2 ? pairing[pairs] : "pairing", target_ratio,
                        ratio >= target_ratio ? "met" : "missed", ratio);
            ++pairs;
        }
    }
#endif
    return 0;
}
