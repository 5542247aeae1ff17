// StepRecorder: every span of one training step, for `train --profile-one-step` (seed 004's NVTX
// step): each graph node's forward and backward (a GraphHook) and the step's four phases
// (forward, loss, backward, optimizer; a StepHook), as marks on a Timeline: the CPU's steady
// clock, or CUDA events for a step on the GPU (one synchronisation when the spans are read).
// Attach it to one step only; it reserves its lists up front so recording does not allocate
// while timing.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nnperf/core/clock.h"
#include "nnperf/nn/graph.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

class StepRecorder final : public GraphHook, public StepHook {
 public:
  // `timeline` null: the CPU's steady clock.
  explicit StepRecorder(int num_nodes, std::unique_ptr<Timeline> timeline = nullptr);
  void before(int node, Phase phase) override;
  void after(int node, Phase phase) override;
  void phase(StepPhase phase, bool begin) override;
  const char* clock() const { return timeline_->name(); }

  struct Span {
    int node;           // -1 for a step phase
    std::string phase;  // "forward" / "backward" for nodes; the StepPhase name otherwise
    int64_t begin_ns, end_ns;
    double ms() const { return static_cast<double>(end_ns - begin_ns) * 1e-6; }
  };
  // In end order; the first call reads the timeline (on the GPU: waits for the step).
  const std::vector<Span>& spans();

 private:
  struct Marked {
    int node;
    const char* phase;
    int begin, end;  // mark indices
  };
  std::unique_ptr<Timeline> timeline_;
  std::vector<int> fwd_begin_, bwd_begin_;
  int phase_begin_[4] = {0, 0, 0, 0};
  std::vector<Marked> marked_;
  std::vector<Span> spans_;
};

}  // namespace nnperf
