#include "nnperf/profile/step_recorder.h"

#include "nnperf/core/clock.h"

namespace nnperf {

StepRecorder::StepRecorder(int num_nodes)
    : fwd_begin_(static_cast<std::size_t>(num_nodes), 0),
      bwd_begin_(static_cast<std::size_t>(num_nodes), 0) {
  spans_.reserve(static_cast<std::size_t>(2 * num_nodes + 8));
}

void StepRecorder::before(int node, Phase phase) {
  auto& begin = phase == Phase::kForward ? fwd_begin_ : bwd_begin_;
  begin[static_cast<std::size_t>(node)] = now_ns();
}

void StepRecorder::after(int node, Phase phase) {
  const int64_t end = now_ns();
  const bool fwd = phase == Phase::kForward;
  const int64_t begin = (fwd ? fwd_begin_ : bwd_begin_)[static_cast<std::size_t>(node)];
  spans_.push_back(Span{node, fwd ? "forward" : "backward", begin, end});
}

void StepRecorder::phase(StepPhase phase, bool begin) {
  const auto i = static_cast<std::size_t>(phase);
  if (begin) {
    phase_begin_[i] = now_ns();
    return;
  }
  spans_.push_back(Span{-1, to_string(phase), phase_begin_[i], now_ns()});
}

}  // namespace nnperf
