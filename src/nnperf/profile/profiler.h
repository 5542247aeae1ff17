// LayerProfiler: a GraphHook that times selected graph nodes through an IntervalTimer and
// accumulates milliseconds and counts per node and phase. Attach it only while measuring
// (Graph::set_hook(nullptr) otherwise) so unmeasured passes pay nothing.
#pragma once
#include <memory>
#include <vector>

#include "nnperf/nn/graph.h"
#include "nnperf/core/clock.h"

namespace nnperf {

class LayerProfiler final : public GraphHook {
 public:
  // Times every node of `graph` whose entry in `forward_mask` / `backward_mask` is true.
  LayerProfiler(int num_nodes, std::vector<bool> forward_mask, std::vector<bool> backward_mask,
                std::unique_ptr<IntervalTimer> timer = nullptr);
  static LayerProfiler all_nodes(const Graph& graph);
  // The forward passes of the activation layers, on `timer` (null: the CPU clock).
  static LayerProfiler activations_forward(const Graph& graph,
                                           std::unique_ptr<IntervalTimer> timer = nullptr);

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

// LayerRecorder: a GraphHook keeping every timed execution of every node, for per-layer
// statistics (std needs each pass, not a sum) and for the trace of the last pass. Forward only,
// or (with_backward, for training passes) forward + backward: a node's value for a pass is then
// its forward time plus its backward time, and the trace holds both spans.
class LayerRecorder final : public GraphHook {
 public:
  explicit LayerRecorder(int num_nodes, bool with_backward = false);
  void before(int node, Phase phase) override;
  void after(int node, Phase phase) override;
  void reserve(int passes);  // so recording allocates nothing while timing
  void start_pass();  // marks the beginning of one forward pass (clears the last-pass events)
  struct Span {
    int node;
    int64_t begin_ns, end_ns;
    Phase phase = Phase::kForward;
  };
  const std::vector<std::vector<double>>& ms() const { return ms_; }  // [node][pass]
  const std::vector<Span>& last_pass() const { return last_; }
  int64_t pass_begin_ns() const { return pass_begin_; }

 private:
  std::vector<std::vector<double>> ms_;
  std::vector<int64_t> begin_;
  bool with_backward_;
  std::vector<Span> last_;
  int64_t pass_begin_ = 0;
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
