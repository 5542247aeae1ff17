// MLP builder: a chain of Linear and Activation nodes (plus a leading Flatten).
#include "nnperf/models/mlp.h"

#include <fmt/format.h>

#include <memory>

#include "nnperf/core/error.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/flatten.h"

namespace nnperf {

Graph build_mlp(int64_t in_features, const std::vector<int64_t>& hidden, int64_t classes,
                const ActivationKernel& act, bool flatten, LinearInit init) {
  if (in_features <= 0 || classes <= 0) {
    throw UsageError(fmt::format("mlp: in_features ({}) and classes ({}) must be positive",
                                 in_features, classes));
  }
  for (int64_t h : hidden) {
    if (h <= 0) throw UsageError(fmt::format("mlp: hidden sizes must be positive, got {}", h));
  }
  Graph g;
  if (flatten) g.add("flatten", std::make_unique<Flatten>());
  int64_t width = in_features;
  int layer = 1;
  for (int64_t h : hidden) {
    g.add(fmt::format("fc{}", layer), std::make_unique<Linear>(width, h, true, init));
    g.add(fmt::format("act{}", layer), std::make_unique<Activation>(act));
    width = h;
    ++layer;
  }
  g.add(fmt::format("fc{}", layer), std::make_unique<Linear>(width, classes, true, init));
  return g;
}

}  // namespace nnperf
