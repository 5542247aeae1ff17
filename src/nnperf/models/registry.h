// The model registry: one row per model, {name, description, builder(options), default input,
// minimum input size, parameter count}. The CLI lists and selects models from it; a new model is
// one builder function and one row in registry.cc.
#pragma once
#include <array>
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
  // One sample, without the batch dimension (C, H, W or features); empty = the model's
  // default_input (mlp: 1 x 28 x 28; the ImageNet CNNs read only C from it).
  Shape input_shape{};
  int64_t classes = 0;                             // 0 = the model's default: mlp 10, CNNs 1000
  std::vector<int64_t> hidden{512, 256, 128, 64};  // mlp: usra-survey's widths
  std::string activation = "ReLU";                 // mlp: any name find_activation accepts
  LinearInit linear_init = LinearInit::kTorchDefault;
  // CNNs: fold each BatchNorm2d that directly follows a Conv2d into it (inference only,
  // the profiler's --fold-bn); the folded BN's parameters stay listed under the conv node.
  bool fold_bn = false;
};

struct ModelEntry {
  const char* name;
  const char* description;
  Graph (*build)(const ModelOptions& options);
  std::array<int64_t, 3> default_input;  // C, H, W of one sample
  // Smallest H (= W) for which every layer's output stays >= 1x1 (derived per model in
  // registry.cc, checked by tests/models/cnn_models_test.cc); 1 when any size works.
  int64_t min_input_size;
  // Parameters with the default options: torchvision's counts for the ImageNet models.
  int64_t params;
};

std::span<const ModelEntry> model_registry();
// By registry_key (core/name_registry.h). Throws UsageError listing the valid names and parameter
// counts when unknown.
const ModelEntry& find_model(std::string_view name);
std::string model_names();  // "mlp, alexnet, ..."

// Plans `g` (built from `m`) for `input` ([mb, C, H, W] for the CNNs). An input below the
// model's minimum gives a UsageError naming the model, the first layer that cannot run and the
// minimum size; other plan errors are prefixed with the model name.
void plan_model(const ModelEntry& m, Graph& g, const Shape& input, const PlanContext& ctx);

}  // namespace nnperf
