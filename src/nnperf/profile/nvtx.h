// NVTX ranges around layers and step phases, for Nsight Systems / Nsight Compute (seed 004 marks
// its one profiled step so): NvtxRanges is a GraphHook and StepHook that opens a range
// "forward/<node>" or "backward/<node>" around every node and "step/<phase>" around the four
// phases of a step, and passes every call on to the hooks it wraps (the StepRecorder), inside
// its ranges. The ranges come from NVTX 3 (header-only, the CUDA toolkit's nvtx3/): without a
// tool attached each is one call through a function pointer that returns; a tool (or a test's
// injection library) is found through NVTX_INJECTION64_PATH. Builds without the CUDA toolkit
// have no NVTX: nvtx_available() says so and the ranges are not opened.
#pragma once
#include <string>
#include <vector>

#include "nnperf/nn/graph.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

bool nvtx_available();  // the build has NVTX (nvtx_cuda.cc) or not (nvtx_nocuda.cc)
void nvtx_push(const char* name);
void nvtx_pop();

class NvtxRanges final : public GraphHook, public StepHook {
 public:
  // `graph` names the nodes; `inner` / `inner_step` (may be null) run inside the ranges.
  NvtxRanges(const Graph& graph, GraphHook* inner, StepHook* inner_step);
  void before(int node, Phase phase) override;
  void after(int node, Phase phase) override;
  void phase(StepPhase phase, bool begin) override;

 private:
  std::vector<std::string> forward_, backward_;  // range names per node, built once
  GraphHook* inner_;
  StepHook* inner_step_;
};

}  // namespace nnperf
