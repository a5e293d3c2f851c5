// The verifier's counts over a run's sections (verify_sections.hpp).
#include "chaos/verify_sections.hpp"

#include <algorithm>
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

}  // namespace edgelock_chaos
