#include "nnperf/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/kernels/elementwise.h"
#include "nnperf/kernels/softmax.h"

namespace nnperf {

Trainer::Trainer(Graph& graph, std::unique_ptr<Optimizer> optimizer, PlanContext plan,
                 float label_smoothing)
    : graph_(graph),
      optimizer_(std::move(optimizer)),
      plan_(plan),
      label_smoothing_(label_smoothing) {
  NNPERF_CHECK(optimizer_ != nullptr, "Trainer needs an optimizer");
  optimizer_->set_threads(plan_.threads);
}

const char* to_string(StepPhase phase) {
  switch (phase) {
    case StepPhase::kForward:
      return "forward";
    case StepPhase::kLoss:
      return "loss";
    case StepPhase::kBackward:
      return "backward";
    case StepPhase::kOptimizer:
      return "optimizer";
  }
  return "?";
}

void check_training_memory(const Graph& graph, const OptimizerOptions& optimizer,
                           const std::string& what, bool with_state) {
  const int64_t params = graph.num_params();
  const int64_t copies = with_state ? 2 + optimizer_state_copies(optimizer) : 1;
  const auto bytes = checked_mul(params, int64_t{4} * copies);
  check_memory(bytes.value_or(-1),
               with_state ? fmt::format("{}: {} parameters, their gradients and {}'s state", what,
                                        params, checked_optimizer(optimizer).name)
                          : fmt::format("{}: {} parameters", what, params));
}

void Trainer::ensure_planned(const Shape& x_shape, bool training) {
  // A graph planned by the caller counts as planned for training (its PlanContext's default).
  if (!graph_.planned() || graph_.input_shape() != x_shape || planned_training_ != training) {
    PlanContext ctx = plan_;
    ctx.training = training;
    graph_.plan(x_shape, ctx);
    planned_training_ = training;
    params_.clear();
  }
  // The graph may have been planned by the caller: the parameter list is taken lazily.
  if (params_.empty()) {
    params_ = graph_.params();
    node_params_.assign(static_cast<std::size_t>(graph_.size()), {0, 0});
    for (std::size_t k = 0; k < params_.size(); ++k) {  // Graph::params() goes node by node
      auto& [first, last] = node_params_[static_cast<std::size_t>(params_[k].node)];
      if (first == last) first = k;
      last = k + 1;
    }
  }
}

// Why the numbers are not finite: the learning rate is blamed only when this Trainer has applied
// updates and the input was finite.
std::string Trainer::divergence_cause() const {
  const Tensor& x = graph_.value(Graph::kInput);
  if (!all_finite(x.data(), x.numel())) {
    return "the input batch holds non-finite values (corrupt or badly normalised data), not a "
           "learning-rate problem";
  }
  if (updates_ == 0) {
    for (const Param& p : params_) {
      if (!all_finite(p.value->data(), p.value->numel())) {
        return "the weights held non-finite values before any update of this run (as "
               "initialised or loaded), not a learning-rate problem";
      }
    }
    return "this happened before any update, so the initial weights or the model overflow (not "
           "the learning rate)";
  }
  return fmt::format(
      "after {} updates with finite inputs: the learning rate ({}) is likely too "
      "high; try a lower --lr",
      steps(), optimizer_->lr());
}

BatchResult Trainer::loss_and_grad(std::span<const int32_t> labels, bool want_grad) {
  const Tensor& logits = graph_.output();
  NNPERF_CHECK(logits.shape().rank() == 2, "classifier output must be 2-D, got {}",
               logits.shape().str());
  const int64_t mb = logits.size(0), classes = logits.size(1);
  NNPERF_CHECK(static_cast<int64_t>(labels.size()) == mb, "{} labels for a batch of {}",
               labels.size(), mb);
  for (const int32_t l : labels) {
    if (l < 0 || l >= classes)
      fail("label {} out of range: the model has {} classes (0..{})", l, classes, classes - 1);
  }
  if (want_grad) d_logits_.resize(logits.shape());
  const LossResult r = softmax_cross_entropy(logits.data(), labels.data(), mb, classes,
                                             want_grad ? d_logits_.data() : nullptr,
                                             1.0f / static_cast<float>(mb), label_smoothing_);
  if (!std::isfinite(r.loss_sum) || !all_finite(logits.data(), logits.numel())) {
    throw DivergenceError(fmt::format(
        "{}: loss is {} (non-finite logits or loss); {}",
        want_grad ? fmt::format("training diverged at step {}", steps() + 1) : "evaluation failed",
        r.loss_sum / static_cast<double>(mb), divergence_cause()));
  }
  return BatchResult{r.loss_sum, r.correct, mb};
}

BatchResult Trainer::forward_backward(const Tensor& x, std::span<const int32_t> labels) {
  ensure_planned(x.shape(), true);
  mark(StepPhase::kForward, true);
  graph_.forward(x);
  mark(StepPhase::kForward, false);
  mark(StepPhase::kLoss, true);
  const BatchResult r = loss_and_grad(labels, true);
  mark(StepPhase::kLoss, false);
  mark(StepPhase::kBackward, true);
  graph_.backward(d_logits_, [this](int node) { check_grads(node); });
  mark(StepPhase::kBackward, false);
  return r;
}

// Right after the node's backward, its gradients just written: a 9.4 MB gradient (ResNet-18's
// 512-channel 3x3 weights) is checked in 0.20-0.31 ms there, where after the whole backward,
// out of cache, it took 0.48-0.54 (one Zen 4 core); the check was 3% of a ResNet-18 step.
void Trainer::check_grads(int node) const {
  const auto [first, last] = node_params_[static_cast<std::size_t>(node)];
  for (std::size_t k = first; k < last; ++k) {
    const Param& p = params_[k];
    if (!all_finite(p.grad->data(), p.grad->numel(), plan_.threads)) {
      throw DivergenceError(
          fmt::format("training diverged at step {}: gradient of {} is not finite; {}", steps() + 1,
                      p.name, divergence_cause()));
    }
  }
}

void Trainer::update() {
  mark(StepPhase::kOptimizer, true);
  optimizer_->step(params_);
  mark(StepPhase::kOptimizer, false);
  ++updates_;
}

BatchResult Trainer::step(const Tensor& x, std::span<const int32_t> labels) {
  NNPERF_CHECK(accumulated_ == 0, "step() with {} accumulated micro-batches not applied",
               accumulated_);
  const BatchResult r = forward_backward(x, labels);  // its backward checks the gradients
  update();
  return r;
}

BatchResult Trainer::accumulate(const Tensor& x, std::span<const int32_t> labels) {
  const BatchResult r = forward_backward(x, labels);
  if (grad_sums_.size() != params_.size()) {
    grad_sums_.clear();
    for (const Param& p : params_) grad_sums_.emplace_back(p.grad->shape());
  }
  // Element-wise on the step's threads: the same floats on any count.
  const bool first = accumulated_ == 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const float* g = params_[i].grad->data();
    float* sum = grad_sums_[i].data();
    for_slices(params_[i].grad->numel(), plan_.threads, [&](int64_t lo, int64_t hi) {
      if (first) {
        std::copy(g + lo, g + hi, sum + lo);
      } else {
        add_inplace(sum + lo, g + lo, hi - lo);
      }
    });
  }
  ++accumulated_;
  return r;
}

void Trainer::apply_accumulated() {
  NNPERF_CHECK(accumulated_ > 0, "apply_accumulated() without accumulated micro-batches");
  const float one_over_n = 1.0f / static_cast<float>(accumulated_);  // the mean of the sums
  for (std::size_t i = 0; i < params_.size(); ++i) {
    float* g = params_[i].grad->data();
    const float* sum = grad_sums_[i].data();
    for_slices(params_[i].grad->numel(), plan_.threads,
               [&](int64_t lo, int64_t hi) { scale(sum + lo, one_over_n, g + lo, hi - lo); });
  }
  accumulated_ = 0;
  update();
}

BatchResult Trainer::evaluate(const Tensor& x, std::span<const int32_t> labels) {
  ensure_planned(x.shape(), false);
  graph_.forward(x);
  return loss_and_grad(labels, false);
}

BatchResult Trainer::evaluate(const Dataset& data, int64_t batch_size) {
  Batcher batcher(data, batch_size, /*shuffle=*/false, 0);
  batcher.start_epoch();
  const bool flatten = graph_.planned() ? graph_.input_shape().rank() == 2 : true;
  BatchResult total;
  while (batcher.next(eval_x_, eval_labels_, flatten)) total += evaluate(eval_x_, eval_labels_);
  return total;
}

}  // namespace nnperf
