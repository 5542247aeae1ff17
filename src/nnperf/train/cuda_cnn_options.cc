// The GPU trainer's options and checks made without a device (train/cuda_cnn.h): --algorithm's
// passes, --engines, --launch, the layers it can train and the memory it needs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "nnperf/core/error.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/nn/cuda_layers.h"
#include "nnperf/train/cuda_cnn.h"

namespace nnperf {

namespace {

// One pass's part of --algorithm: guess, find or one of cuDNN's names for `pass` (its spelling).
std::string checked_name(const std::string& algorithm, const std::string& what, ConvPass pass,
                         const std::string& name) {
  if (const char* choice = find_conv_choice(name)) return choice;
  if (const char* row = cudnn::find_algorithm(pass, name)) return row;
  throw UsageError(fmt::format("--algorithm {}: {} takes guess, find or one of cuDNN's {}",
                               algorithm, what, fmt::join(cudnn::algorithms(pass), ", ")));
}

// The choice `algorithm` names, without --engines' check.
CudaConvChoice parse_passes(const std::string& algorithm) {
  CudaConvChoice c;
  if (algorithm.find('=') == std::string::npos) {
    c.forward = checked_name(algorithm, "the forward pass", ConvPass::kForward, algorithm);
    if (c.forward == "find") c.backward_data = c.backward_weights = "find";
    return c;
  }
  std::string_view rest = algorithm;
  for (bool more = true; more;) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    more = comma != std::string_view::npos;
    if (more) rest = rest.substr(comma + 1);
    const std::size_t eq = part.find('=');
    const std::string key(part.substr(0, eq));
    const std::string value(eq == std::string_view::npos ? "" : part.substr(eq + 1));
    if (key == "fwd") {
      c.forward = checked_name(algorithm, "fwd", ConvPass::kForward, value);
    } else if (key == "bwd_data") {
      c.backward_data = checked_name(algorithm, "bwd_data", ConvPass::kBackwardData, value);
    } else if (key == "bwd_weights") {
      c.backward_weights =
          checked_name(algorithm, "bwd_weights", ConvPass::kBackwardWeights, value);
    } else {
      throw UsageError(fmt::format(
          "--algorithm {}: expected fwd=NAME, bwd_data=NAME and bwd_weights=NAME, comma-separated",
          algorithm));
    }
  }
  return c;
}

}  // namespace

std::string to_string(const CudaConvChoice& c) {
  if (c.backward_data == c.backward_weights && c.backward_weights == c.forward &&
      (c.forward == "guess" || c.forward == "find")) {
    return c.forward;
  }
  if (c.backward_data == "guess" && c.backward_weights == "guess" && c.forward != "find") {
    return c.forward;
  }
  return fmt::format("fwd={},bwd_data={},bwd_weights={}", c.forward, c.backward_data,
                     c.backward_weights);
}

bool uses_find(const CudaConvChoice& c) {
  return c.forward == "find" || c.backward_data == "find" || c.backward_weights == "find";
}

std::string canonical_train_algorithm(const std::string& algorithm, bool cuda, bool find_engines,
                                      bool deterministic) {
  std::string name;
  bool timed = false;
  if (cuda) {
    const CudaConvChoice c = parse_cuda_conv_choice(algorithm, find_engines);
    name = to_string(c);
    timed = uses_find(c);
  } else {
    name = canonical_conv_algorithm("--algorithm", algorithm);
    timed = is_conv_find(name);
  }
  if (deterministic && timed) {
    throw UsageError(fmt::format(
        "--deterministic: --algorithm {} chooses by timing, which can differ run to run; give "
        "guess or algorithm names",
        algorithm));
  }
  return name;
}

bool parse_cuda_launch(const std::string& launch) {
  if (std::find(kCudaLaunchNames.begin(), kCudaLaunchNames.end(), launch) ==
      kCudaLaunchNames.end()) {
    throw UsageError(fmt::format(
        "--launch {}: expected graph (each full-batch step's forward, loss, backward and update "
        "as one CUDA graph) or eager",
        launch));
  }
  return launch == "graph";
}

CudaConvChoice parse_cuda_conv_choice(const std::string& algorithm, bool find_engines) {
  CudaConvChoice c = parse_passes(algorithm);
  if (find_engines && !uses_find(c)) {
    throw UsageError(fmt::format(
        "--engines: adds cuDNN's graph-API engines to find's candidates; --algorithm {} uses "
        "find for no pass",
        algorithm));
  }
  c.find_engines = find_engines;
  return c;
}

std::string cuda_training_unsupported(const Graph& graph) {
  for (int n = 1; n < graph.size(); ++n) {
    const Layer& l = graph.layer(n);
    if (!cuda_layer_kind(l)) {
      return fmt::format("layer {} ({}): no GPU training kernel for {} yet", graph.name(n),
                         l.describe(), l.kind());
    }
  }
  const Shape& out = graph.output_shape(graph.size() - 1);
  if (out.rank() != 2) {
    return fmt::format("the output {} is not [batch, classes]", out.str());
  }
  return "";
}

std::size_t cuda_training_bytes(const Graph& graph, const OptimizerOptions& optimizer) {
  const auto states = static_cast<std::size_t>(optimizer_state_copies(optimizer));
  const GradientRouting routing = graph.gradient_routing();
  std::size_t floats = 0;
  for (int n = 0; n < graph.size(); ++n) {
    const auto numel = static_cast<std::size_t>(graph.output_shape(n).numel());
    floats += numel;  // the output
    if (n == 0) continue;
    // Its gradient, unless it is kept in the buffer of the Add it feeds (GradientRouting::storage).
    if (routing.storage[static_cast<std::size_t>(n)] == n) floats += numel;
    const Layer& l = graph.layer(n);
    const std::optional<CudaLayerKind> kind = cuda_layer_kind(l);
    if (kind == CudaLayerKind::kMaxPool || kind == CudaLayerKind::kDropout)
      floats += numel;                                                  // argmax or mask
    floats += (2 + states) * static_cast<std::size_t>(l.num_params());  // value, grad, state
  }
  return floats * sizeof(float);
}

}  // namespace nnperf
