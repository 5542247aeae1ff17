// The model registry table. Builders adapt ModelOptions to each model's own builder signature.
#include "nnperf/models/registry.h"

#include <fmt/format.h>

#include <cctype>

#include "nnperf/core/error.h"
#include "nnperf/models/mlp.h"

namespace nnperf {
namespace {

Graph build_mlp_model(const ModelOptions& o) {
  if (o.input_shape.rank() < 1) throw UsageError("mlp: the input shape is empty");
  for (int64_t d : o.input_shape.dims()) {
    if (d <= 0) {
      throw UsageError(
          fmt::format("mlp: input shape {} has a non-positive dimension", o.input_shape.str()));
    }
  }
  // A flat feature vector needs no Flatten node; images do.
  const bool flatten = o.input_shape.rank() > 1;
  return build_mlp(o.input_shape.numel(), o.hidden, o.classes, find_activation(o.activation),
                   flatten, o.linear_init);
}

constexpr ModelEntry kModels[] = {
    {"mlp", "multi-layer perceptron: [Flatten] -> (Linear -> activation) x hidden -> Linear",
     &build_mlp_model},
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::span<const ModelEntry> model_registry() { return kModels; }

std::string model_names() {
  std::string out;
  for (const ModelEntry& m : kModels) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  return out;
}

const ModelEntry& find_model(std::string_view name) {
  for (const ModelEntry& m : kModels) {
    if (iequals(m.name, name)) return m;
  }
  throw UsageError(fmt::format("unknown model '{}': expected one of {}", name, model_names()));
}

}  // namespace nnperf
