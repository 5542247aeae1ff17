// Learning-rate schedules stepped every optimizer step (seed 004's train.py: linear warm-up over
// `warmup_steps`, then cosine decay to 0 over the remaining steps of the run).
#pragma once
#include <cstdint>
#include <string>

namespace nnperf {

struct WarmupCosine {
  double base_lr = 0.1;
  int64_t warmup_steps = 0;  // 0: cosine from the first step
  int64_t total_steps = 1;   // epochs x batches per epoch; >= 1
  // The rate of step `step` (0-based, the step about to be taken):
  //   step < warmup:  base * (step + 1) / warmup
  //   otherwise:      base * 0.5 * (1 + cos(pi * p)),  p = (step - warmup) / max(1, total - warmup)
  // p is clamped to [0, 1], so steps past the end stay at 0.
  double lr_at(int64_t step) const;
  // "lr 0.1 with linear warm-up over 500 steps, then cosine to 0 at step 31280"
  std::string describe() const;
};

}  // namespace nnperf
