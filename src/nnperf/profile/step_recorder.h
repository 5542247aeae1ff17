// StepRecorder: every span of one training step, for `train --profile-one-step` (seed 004's NVTX
// step): each graph node's forward and backward (a GraphHook) and the step's four phases
// (forward, loss, backward, optimizer; a StepHook). Attach it to one step only; it allocates
// its span list up front (reserve) so recording does not allocate while timing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nnperf/nn/graph.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

class StepRecorder final : public GraphHook, public StepHook {
 public:
  explicit StepRecorder(int num_nodes);
  void before(int node, Phase phase) override;
  void after(int node, Phase phase) override;
  void phase(StepPhase phase, bool begin) override;

  struct Span {
    int node;           // -1 for a step phase
    std::string phase;  // "forward" / "backward" for nodes; the StepPhase name otherwise
    int64_t begin_ns, end_ns;
    double ms() const { return static_cast<double>(end_ns - begin_ns) * 1e-6; }
  };
  const std::vector<Span>& spans() const { return spans_; }  // in end order

 private:
  std::vector<int64_t> fwd_begin_, bwd_begin_;
  int64_t phase_begin_[4] = {0, 0, 0, 0};
  std::vector<Span> spans_;
};

}  // namespace nnperf
