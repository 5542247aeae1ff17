// Trainer: one graph, one optimizer, softmax cross-entropy on the graph's logits. A step is
// forward, loss, backward, optimizer update; nothing here reads a clock or writes a file (runs/
// composes the trainer with the profiler and the outputs).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

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

// The phases of one training step, for a hook that times them (profile/step_recorder.h).
enum class StepPhase { kForward, kLoss, kBackward, kOptimizer };
const char* to_string(StepPhase phase);  // "forward", "loss", "backward", "optimizer"

class StepHook {
 public:
  virtual ~StepHook() = default;
  virtual void phase(StepPhase phase, bool begin) = 0;
};

// Refuses (check_memory's Error, naming `what`) a built but not yet initialised graph whose
// parameters, their gradients and the optimizer's state would not fit in memory: the weights of a
// built graph are untouched zero pages, so the check comes before init() writes them (VGG16 with
// a million classes has a 15 GiB classifier). Activations are checked as they are planned.
// with_state false: the parameters only (a GPU run keeps gradients and state on the device).
void check_training_memory(const Graph& graph, const OptimizerOptions& optimizer,
                           const std::string& what, bool with_state = true);

class Trainer {
 public:
  Trainer(Graph& graph, std::unique_ptr<Optimizer> optimizer, PlanContext plan,
          float label_smoothing = 0.0f);
  // Forward, loss (mean over the batch), backward, update. Replans the graph when the batch size
  // changes (the tensors keep their capacity). Throws DivergenceError when the loss, the
  // logits or a parameter's gradient are not finite (gradients are checked node by node during
  // the backward, nearest the output first); the parameters are then left as they were before
  // the update.
  BatchResult step(const Tensor& x, std::span<const int32_t> labels);
  // Gradient accumulation (--grad-accum-steps): forward, loss and backward of one micro-batch,
  // its gradients summed into buffers; apply_accumulated() then updates once with their mean
  // over the micro-batches (as a PyTorch loop dividing each loss by the step count). Throws
  // DivergenceError as step() does.
  BatchResult accumulate(const Tensor& x, std::span<const int32_t> labels);
  void apply_accumulated();
  int accumulated() const { return accumulated_; }

  // Forward and loss only, with the graph planned for inference (BatchNorm uses and keeps its
  // running statistics, Dropout is off); the next step() plans for training again.
  BatchResult evaluate(const Tensor& x, std::span<const int32_t> labels);
  // Whole data set in batches of `batch_size` (no shuffling).
  BatchResult evaluate(const Dataset& data, int64_t batch_size);

  // Called around each phase of step() (null: none).
  void set_step_hook(StepHook* hook) { step_hook_ = hook; }

  Graph& graph() { return graph_; }
  Optimizer& optimizer() { return *optimizer_; }
  // Updates applied: the optimizer's count, so a resumed run (its state loaded) continues it.
  int64_t steps() const { return optimizer_->steps(); }

 private:
  std::string divergence_cause() const;
  void ensure_planned(const Shape& x_shape, bool training);
  void mark(StepPhase phase, bool begin) {
    if (step_hook_ != nullptr) step_hook_->phase(phase, begin);
  }
  BatchResult loss_and_grad(std::span<const int32_t> labels, bool want_grad);
  BatchResult forward_backward(const Tensor& x, std::span<const int32_t> labels);
  // Throws DivergenceError naming the first parameter of `node` whose gradient is not finite.
  void check_grads(int node) const;
  void update();
  Graph& graph_;
  std::unique_ptr<Optimizer> optimizer_;
  PlanContext plan_;
  float label_smoothing_;
  std::vector<Param> params_;
  std::vector<std::pair<std::size_t, std::size_t>> node_params_;  // per node: [first, last)
  Tensor d_logits_;
  Tensor eval_x_;
  std::vector<int32_t> eval_labels_;
  int64_t updates_ = 0;  // applied by this Trainer (steps() also counts a loaded checkpoint's)
  bool planned_training_ = true;
  std::vector<Tensor> grad_sums_;
  int accumulated_ = 0;
  StepHook* step_hook_ = nullptr;
};

}  // namespace nnperf
