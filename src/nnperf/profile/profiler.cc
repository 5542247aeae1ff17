#include "nnperf/profile/profiler.h"

#include "nnperf/core/error.h"
#include "nnperf/profile/stats.h"

namespace nnperf {

LayerProfiler::LayerProfiler(int num_nodes, std::vector<bool> forward_mask,
                             std::vector<bool> backward_mask, std::unique_ptr<IntervalTimer> timer)
    : n_(num_nodes),
      fwd_(std::move(forward_mask)),
      bwd_(std::move(backward_mask)),
      timer_(timer ? std::move(timer) : std::make_unique<CpuIntervalTimer>(2 * num_nodes)) {
  NNPERF_CHECK(static_cast<int>(fwd_.size()) == n_ && static_cast<int>(bwd_.size()) == n_,
               "profiler masks must have one entry per node ({})", n_);
}

LayerProfiler LayerProfiler::all_nodes(const Graph& graph) {
  std::vector<bool> mask(static_cast<std::size_t>(graph.size()), true);
  mask[0] = false;
  return LayerProfiler(graph.size(), mask, mask);
}

LayerProfiler LayerProfiler::activations_forward(const Graph& graph,
                                                 std::unique_ptr<IntervalTimer> timer) {
  std::vector<bool> fwd(static_cast<std::size_t>(graph.size()), false);
  for (int i = 1; i < graph.size(); ++i)
    fwd[static_cast<std::size_t>(i)] = graph.layer(i).is_activation();
  return LayerProfiler(graph.size(), fwd,
                       std::vector<bool>(static_cast<std::size_t>(graph.size()), false),
                       std::move(timer));
}

void LayerProfiler::before(int node, Phase phase) {
  const auto i = static_cast<std::size_t>(node);
  if (phase == Phase::kForward ? fwd_[i] : bwd_[i])
    timer_->begin(phase == Phase::kForward ? node : n_ + node);
}

void LayerProfiler::after(int node, Phase phase) {
  const auto i = static_cast<std::size_t>(node);
  if (phase == Phase::kForward ? fwd_[i] : bwd_[i])
    timer_->end(phase == Phase::kForward ? node : n_ + node);
}

LayerProfiler::Totals LayerProfiler::take() {
  std::vector<double> ms;
  std::vector<int64_t> counts;
  timer_->resolve(ms, counts);
  Totals t;
  const auto n = static_cast<std::ptrdiff_t>(n_);
  t.forward_ms.assign(ms.begin(), ms.begin() + n);
  t.backward_ms.assign(ms.begin() + n, ms.end());
  t.forward_count.assign(counts.begin(), counts.begin() + n);
  t.backward_count.assign(counts.begin() + n, counts.end());
  return t;
}

double LayerProfiler::Totals::forward_mean_ms(int node) const {
  const auto i = static_cast<std::size_t>(node);
  return forward_count[i] > 0 ? forward_ms[i] / static_cast<double>(forward_count[i]) : 0.0;
}

LayerRecorder::LayerRecorder(int num_nodes, bool with_backward)
    : ms_(static_cast<std::size_t>(num_nodes)),
      begin_(static_cast<std::size_t>(num_nodes), 0),
      with_backward_(with_backward) {}

void LayerRecorder::before(int node, Phase phase) {
  if (phase == Phase::kForward || with_backward_) begin_[static_cast<std::size_t>(node)] = now_ns();
}

void LayerRecorder::after(int node, Phase phase) {
  if (phase != Phase::kForward && !with_backward_) return;
  const int64_t end = now_ns();
  const auto i = static_cast<std::size_t>(node);
  const double ms = static_cast<double>(end - begin_[i]) * 1e-6;
  if (phase == Phase::kForward) {
    ms_[i].push_back(ms);
  } else if (!ms_[i].empty()) {
    ms_[i].back() += ms;  // the backward of the pass whose forward was just recorded
  }
  last_.push_back(Span{node, begin_[i], end, phase});
}

void LayerRecorder::reserve(int passes) {
  for (auto& v : ms_) v.reserve(v.size() + static_cast<std::size_t>(passes));
  last_.reserve(2 * ms_.size());
}

void LayerRecorder::start_pass() {
  last_.clear();
  pass_begin_ = now_ns();
}

TimerOverhead measure_timer_overhead(int rounds, int per_round) {
  CpuIntervalTimer timer(1);
  std::vector<double> empty, pair;
  std::vector<double> ms;
  std::vector<int64_t> counts;
  for (int r = 0; r < rounds; ++r) {
    const int64_t t0 = now_ns();
    for (int i = 0; i < per_round; ++i) {
      timer.begin(0);
      timer.end(0);
    }
    const int64_t t1 = now_ns();
    ms.assign(1, 0.0);
    counts.assign(1, 0);
    timer.resolve(ms, counts);
    empty.push_back(ms[0] * 1e6 / per_round);
    pair.push_back(static_cast<double>(t1 - t0) / per_round);
  }
  return TimerOverhead{median(empty), median(pair)};
}

}  // namespace nnperf
