#include "nnperf/profile/step_recorder.h"

namespace nnperf {

StepRecorder::StepRecorder(int num_nodes, std::unique_ptr<Timeline> timeline)
    : timeline_(timeline ? std::move(timeline) : std::make_unique<CpuTimeline>()),
      fwd_begin_(static_cast<std::size_t>(num_nodes), 0),
      bwd_begin_(static_cast<std::size_t>(num_nodes), 0) {
  marked_.reserve(static_cast<std::size_t>(2 * num_nodes + 8));
  // A step's marks: each node's two per phase and the step's phases (CUDA events are created
  // now, not inside the spans they time).
  timeline_->reserve(4 * num_nodes + 16);
}

void StepRecorder::before(int node, Phase phase) {
  auto& begin = phase == Phase::kForward ? fwd_begin_ : bwd_begin_;
  begin[static_cast<std::size_t>(node)] = timeline_->mark();
}

void StepRecorder::after(int node, Phase phase) {
  const int end = timeline_->mark();
  const bool fwd = phase == Phase::kForward;
  const int begin = (fwd ? fwd_begin_ : bwd_begin_)[static_cast<std::size_t>(node)];
  marked_.push_back(Marked{node, fwd ? "forward" : "backward", begin, end});
}

void StepRecorder::phase(StepPhase phase, bool begin) {
  const auto i = static_cast<std::size_t>(phase);
  if (begin) {
    phase_begin_[i] = timeline_->mark();
    return;
  }
  marked_.push_back(Marked{-1, to_string(phase), phase_begin_[i], timeline_->mark()});
}

const std::vector<StepRecorder::Span>& StepRecorder::spans() {
  if (marked_.empty()) return spans_;
  const std::vector<int64_t> t = timeline_->read();
  for (const Marked& m : marked_) {
    spans_.push_back(Span{m.node, m.phase, t[static_cast<std::size_t>(m.begin)],
                          t[static_cast<std::size_t>(m.end)]});
  }
  marked_.clear();
  return spans_;
}

}  // namespace nnperf
