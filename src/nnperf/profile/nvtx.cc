#include "nnperf/profile/nvtx.h"

namespace nnperf {

NvtxRanges::NvtxRanges(const Graph& graph, GraphHook* inner, StepHook* inner_step)
    : inner_(inner), inner_step_(inner_step) {
  const auto n = static_cast<std::size_t>(graph.size());
  forward_.resize(n);
  backward_.resize(n);
  for (int node = 1; node < graph.size(); ++node) {
    forward_[static_cast<std::size_t>(node)] = "forward/" + graph.name(node);
    backward_[static_cast<std::size_t>(node)] = "backward/" + graph.name(node);
  }
}

void NvtxRanges::before(int node, Phase phase) {
  const auto& names = phase == Phase::kForward ? forward_ : backward_;
  nvtx_push(names[static_cast<std::size_t>(node)].c_str());
  if (inner_ != nullptr) inner_->before(node, phase);
}

void NvtxRanges::after(int node, Phase phase) {
  if (inner_ != nullptr) inner_->after(node, phase);
  nvtx_pop();
}

void NvtxRanges::phase(StepPhase phase, bool begin) {
  if (begin) {
    nvtx_push((std::string("step/") + to_string(phase)).c_str());
    if (inner_step_ != nullptr) inner_step_->phase(phase, true);
    return;
  }
  if (inner_step_ != nullptr) inner_step_->phase(phase, false);
  nvtx_pop();
}

}  // namespace nnperf
