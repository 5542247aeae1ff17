#include "nnperf/train/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace nnperf {

double WarmupCosine::lr_at(int64_t step) const {
  step = std::max<int64_t>(step, 0);
  if (warmup_steps > 0 && step < warmup_steps) {
    return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  }
  const double span = static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  const double p = std::clamp(static_cast<double>(step - warmup_steps) / span, 0.0, 1.0);
  return base_lr * 0.5 * (1.0 + std::cos(std::numbers::pi * p));
}

std::string WarmupCosine::describe() const {
  if (warmup_steps > 0) {
    return fmt::format("lr {} with linear warm-up over {} steps, then cosine to 0 at step {}",
                       base_lr, warmup_steps, total_steps);
  }
  return fmt::format("lr {} with cosine decay to 0 at step {}", base_lr, total_steps);
}

}  // namespace nnperf
