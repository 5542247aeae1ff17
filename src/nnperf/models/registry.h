// The model registry: one row per model, {name, description, builder(options)}. The CLI lists and
// selects models from it; a new model is one builder function and one row in registry.cc.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/core/tensor.h"
#include "nnperf/nn/graph.h"
#include "nnperf/nn/linear.h"

namespace nnperf {

// What a builder may read. Models ignore the fields that do not concern them.
struct ModelOptions {
  Shape input_shape{1, 28, 28};  // one sample, without the batch dimension (C, H, W or features)
  int64_t classes = 10;
  std::vector<int64_t> hidden{512, 256, 128, 64};  // mlp: the seed-000 widths
  std::string activation = "ReLU";                 // any name find_activation accepts
  LinearInit linear_init = LinearInit::kTorchDefault;
};

struct ModelEntry {
  const char* name;
  const char* description;
  Graph (*build)(const ModelOptions& options);
};

std::span<const ModelEntry> model_registry();
// Case-insensitive. Throws UsageError listing the valid names when unknown.
const ModelEntry& find_model(std::string_view name);
std::string model_names();  // "mlp, ..."

}  // namespace nnperf
