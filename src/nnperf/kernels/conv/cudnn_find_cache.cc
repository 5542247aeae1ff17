// cuDNN's find rankings kept per problem, pass and find options
// (kernels/conv/cudnn_conv.h).
// Plain C++: the cache is tested on machines without cuDNN with a stand-in `find`.
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>

#include "nnperf/kernels/conv/cudnn_conv.h"

namespace nnperf::cudnn {

namespace {

struct Cache {
  std::mutex mutex;
  std::map<std::string, std::vector<AlgoResult>> rankings;
  std::size_t hits = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

const char* to_string(Launch launch) { return launch == Launch::kGraph ? "graph" : "eager"; }

std::string to_string(const FindOptions& o) {
  return fmt::format("{}/{}{}", o.max_workspace_bytes, to_string(o.launch),
                     o.engines ? "/engines" : "");
}

std::vector<AlgoResult> cached_find(const ConvProblem& p, ConvPass pass, const FindOptions& o,
                                    const std::function<std::vector<AlgoResult>()>& find) {
  const std::string key = fmt::format("{}/{}/{}", p.str(), to_string(pass), to_string(o));
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);  // held while finding: one timing at a time
  if (const auto it = c.rankings.find(key); it != c.rankings.end()) {
    ++c.hits;
    return it->second;
  }
  std::vector<AlgoResult> ranking = find();
  c.rankings.emplace(key, ranking);
  return ranking;
}

FindCacheStats find_cache_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return {c.rankings.size(), c.hits};
}

}  // namespace nnperf::cudnn
