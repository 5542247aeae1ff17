// LayerProfiler: a GraphHook that times selected graph nodes through an IntervalTimer and
// accumulates milliseconds and counts per node and phase. Attach it only while measuring
// (Graph::set_hook(nullptr) otherwise) so unmeasured passes pay nothing.
#pragma once
#include <memory>
#include <vector>

#include "nnperf/nn/graph.h"
#include "nnperf/profile/clock.h"

namespace nnperf {

class LayerProfiler final : public GraphHook {
 public:
  // Times every node of `graph` whose entry in `forward_mask` / `backward_mask` is true.
  LayerProfiler(int num_nodes, std::vector<bool> forward_mask, std::vector<bool> backward_mask,
                std::unique_ptr<IntervalTimer> timer = nullptr);
  static LayerProfiler all_nodes(const Graph& graph);
  static LayerProfiler activations_forward(const Graph& graph);

  void before(int node, Phase phase) override;
  void after(int node, Phase phase) override;

  // Milliseconds summed since the last reset, and the number of timed executions, per node.
  struct Totals {
    std::vector<double> forward_ms, backward_ms;
    std::vector<int64_t> forward_count, backward_count;
    double forward_mean_ms(int node) const;
  };
  Totals take();  // resolves and resets
  const char* timer_name() const { return timer_->name(); }

 private:
  int n_;
  std::vector<bool> fwd_, bwd_;
  std::unique_ptr<IntervalTimer> timer_;
};

// The timer's own cost, measured: `empty_interval_ns` is what an interval with no work between
// begin and end reads (a bias inside every reported per-layer value), `pair_cost_ns` the wall
// time one begin/end pair adds to the run. Medians over `rounds` rounds of `per_round` pairs.
struct TimerOverhead {
  double empty_interval_ns = 0;
  double pair_cost_ns = 0;
};
TimerOverhead measure_timer_overhead(int rounds = 31, int per_round = 2000);

}  // namespace nnperf
