// Trainer: one graph, one optimizer, softmax cross-entropy on the graph's logits. A step is
// forward, loss, backward, optimizer update; nothing here reads a clock or writes a file (runs/
// composes the trainer with the profiler and the outputs).
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "nnperf/data/dataset.h"
#include "nnperf/nn/graph.h"
#include "nnperf/train/optimizer.h"

namespace nnperf {

struct BatchResult {
  double loss_sum = 0;  // summed over the batch's samples
  int64_t correct = 0;
  int64_t count = 0;
  double mean_loss() const { return count > 0 ? loss_sum / static_cast<double>(count) : 0.0; }
  double accuracy() const {
    return count > 0 ? static_cast<double>(correct) / static_cast<double>(count) : 0.0;
  }
  BatchResult& operator+=(const BatchResult& o) {
    loss_sum += o.loss_sum;
    correct += o.correct;
    count += o.count;
    return *this;
  }
};

class Trainer {
 public:
  Trainer(Graph& graph, std::unique_ptr<Optimizer> optimizer, PlanContext plan,
          float label_smoothing = 0.0f);
  // Forward, loss (mean over the batch), backward, update. Replans the graph when the batch size
  // changes (the tensors keep their capacity). Throws DivergenceError when the loss or the
  // logits are not finite; the parameters are then left as they were before the update.
  BatchResult step(const Tensor& x, std::span<const int32_t> labels);
  // Forward and loss only.
  BatchResult evaluate(const Tensor& x, std::span<const int32_t> labels);
  // Whole data set in batches of `batch_size` (no shuffling).
  BatchResult evaluate(const Dataset& data, int64_t batch_size);

  Graph& graph() { return graph_; }
  Optimizer& optimizer() { return *optimizer_; }
  int64_t steps() const { return steps_; }

 private:
  std::string divergence_cause() const;
  void ensure_planned(const Shape& x_shape);
  BatchResult loss_and_grad(std::span<const int32_t> labels, bool want_grad);
  Graph& graph_;
  std::unique_ptr<Optimizer> optimizer_;
  PlanContext plan_;
  float label_smoothing_;
  std::vector<Param> params_;
  Tensor d_logits_;
  Tensor eval_x_;
  std::vector<int32_t> eval_labels_;
  int64_t steps_ = 0;
};

}  // namespace nnperf
