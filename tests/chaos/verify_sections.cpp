// The verifier's counts over a run's sections (verify_sections.hpp).
#include "chaos/verify_sections.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "chaos/chaos.hpp"

namespace edgelock_chaos {

long long regressions(const std::vector<section>& sections, const std::vector<op>& ops) {
    std::map<std::pair<int, std::int64_t>, std::int64_t> began;
    for (const op& o : ops) {
        if (o.kind == "acquire" || o.kind == "agent") {
            began[std::make_pair(o.worker, o.seq)] = o.start;
        }
    }
    std::vector<std::pair<std::int64_t, std::uint64_t>> ended;  // exit, token
    for (const section& s : sections) {
        ended.emplace_back(s.exit, s.token);
    }
    std::sort(ended.begin(), ended.end());
    std::vector<std::uint64_t> highest(ended.size());  // the highest token among ended[0..i]
    for (std::size_t i = 0; i < ended.size(); ++i) {
        highest[i] = std::max(ended[i].second, i > 0 ? highest[i - 1] : 0);
    }
    long long count = 0;
    for (const section& s : sections) {
        const auto it = began.find(std::make_pair(s.worker, s.seq));
        if (it == began.end()) {
            continue;
        }
        const std::size_t before = static_cast<std::size_t>(
            std::lower_bound(ended.begin(), ended.end(),
                             std::make_pair(it->second, std::uint64_t{0})) -
            ended.begin());
        if (before > 0 && highest[before - 1] >= s.token) {
            ++count;
        }
    }
    return count;
}

alive_count count_alive(const std::vector<section>& sections, long long limit,
                        std::int64_t start_ns) {
    std::vector<std::pair<std::int64_t, int>> edges;  // instant, 0 enter / 1 exit
    for (const section& s : sections) {
        edges.emplace_back(s.enter, 0);
        edges.emplace_back(s.exit, 1);
    }
    std::sort(edges.begin(), edges.end());
    alive_count out;
    long long inside = 0;
    for (const auto& e : edges) {
        inside += e.second == 0 ? 1 : -1;
        out.most = std::max(out.most, inside);
        if (e.second == 0 && inside > limit && ++out.beyond <= 5) {
            char buf[120];
            std::snprintf(buf, sizeof buf, "    %lld jobs inside at %lld ms\n", inside,
                          static_cast<long long>((e.first - start_ns) / 1000000));
            out.examples += buf;
        }
    }
    return out;
}

}  // namespace edgelock_chaos
