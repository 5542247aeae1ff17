// CudaCnnTrainer's passes on the device (train/cuda_cnn.h): forward and backward node by node,
// the optimizer's update, a step eager or as a captured CUDA graph, and evaluation.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/elementwise.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/softmax.h"
#include "nnperf/nn/cuda_inference.h"
#include "nnperf/train/cuda_cnn_internal.h"

namespace nnperf {

namespace {

using Kind = CudaLayerKind;

// Dropout node n's masks: draws (steps * elements) onwards of this seed (kernels/counter_rng.h),
// so each step, each node and each element draws its own.
uint64_t dropout_seed(int n) { return 0x5EED0D0E00000000ull ^ static_cast<uint64_t>(n); }

}  // namespace

void CudaCnnTrainer::forward(bool training) {
  for (int n = 1; n < static_cast<int>(nodes_.size()); ++n) {
    if (layer_hook_ != nullptr) layer_hook_->before(n, Phase::kForward);
    forward_node(n, training);
    if (layer_hook_ != nullptr) layer_hook_->after(n, Phase::kForward);
  }
}

// BatchNorm node m forward: in evaluation its running statistics as one affine map; in training
// the batch statistics by the --batchnorm algorithm (the saved ones float64 for ours, float for
// cuDNN's, in the same two-floats-per-channel buffers).
void CudaCnnTrainer::batchnorm_forward(Node& m, const float* x, float* y, bool training) {
  if (!training) {
    cuda_kernels::channel_affine(m.shape, x, m.eval_scale.data(), m.eval_shift.data(), y);
  } else if (cudnn_batchnorm_) {
    cudnn::batchnorm_train_forward({m.shape, x, y, m.w->value.data(), m.b->value.data(),
                                    m.bn->eps(), m.bn->momentum(), m.running_mean.data(),
                                    m.running_var.data(), m.save_mean.data(), m.save_inv.data()});
  } else {
    cuda_kernels::batchnorm_train_forward(
        {m.shape, x, y, m.w->value.data(), m.b->value.data(), m.bn->eps(), m.bn->momentum(),
         m.running_mean.data(), m.running_var.data(), reinterpret_cast<double*>(m.save_mean.data()),
         reinterpret_cast<double*>(m.save_inv.data()), 1});
  }
}

void CudaCnnTrainer::batchnorm_backward(Node& m, const float* x, const float* dy, float* dx) {
  if (cudnn_batchnorm_) {
    cudnn::batchnorm_backward({m.shape, x, dy, dx, m.w->value.data(), m.save_mean.data(),
                               m.save_inv.data(), m.bn->eps(), m.w->grad.data(), m.b->grad.data()});
    return;
  }
  cuda_kernels::batchnorm_backward(
      {m.shape, x, dy, dx, m.w->value.data(), reinterpret_cast<const double*>(m.save_mean.data()),
       reinterpret_cast<const double*>(m.save_inv.data()), m.w->grad.data(), m.b->grad.data(), 1});
}

void CudaCnnTrainer::forward_node(int n, bool training) {
  Node& m = *nodes_[static_cast<std::size_t>(n)];
  const float* x = nodes_[static_cast<std::size_t>(m.inputs[0])]->out.data();
  float* y = m.out.data();
  switch (m.kind) {
    case Kind::kConv:
      m.plans->fwd->run_with(m.plans->alg_fwd, x, m.w->value.data(), y);
      if (m.b != nullptr) cuda_kernels::channel_affine(m.shape, y, nullptr, m.b->value.data(), y);
      break;
    case Kind::kBatchNorm:
      batchnorm_forward(m, x, y, training);
      break;
    case Kind::kActivation:
      cuda_kernels::activation_forward(*m.act, x, y, m.numel);
      break;
    case Kind::kMaxPool:
      cuda_kernels::maxpool2d_forward_argmax(m.pool, x, y,
                                             reinterpret_cast<int32_t*>(m.argmax.data()));
      break;
    case Kind::kAvgPool:
      cuda_kernels::avgpool2d_forward(m.pool, m.count_include_pad, x, y);
      break;
    case Kind::kAdaptivePool:
      cuda_kernels::adaptive_avgpool2d_forward(m.pool, x, y);
      break;
    case Kind::kAdd:
      cuda_kernels::add(x, nodes_[static_cast<std::size_t>(m.inputs[1])]->out.data(), y, m.numel);
      for (std::size_t i = 2; i < m.inputs.size(); ++i) {
        cuda_kernels::add(y, nodes_[static_cast<std::size_t>(m.inputs[i])]->out.data(), y, m.numel);
      }
      break;
    case Kind::kConcat: {
      int64_t offset = 0;
      for (const int k : m.inputs) {
        // Per image: the input's size at the current batch (set_batch) over the batch.
        const int64_t part = nodes_[static_cast<std::size_t>(k)]->numel / m.mb;
        cuda_kernels::concat_part(nodes_[static_cast<std::size_t>(k)]->out.data(), m.mb, part, y,
                                  m.numel / m.mb, offset);
        offset += part;
      }
      break;
    }
    case Kind::kLinear: {
      const GemmShape& s = m.gemm;
      gemm_run(find_gemm("cublas", Device::kCuda),
               gemm_args(s, x, s.k, m.w->value.data(), s.n, y, s.n, nullptr, 1));
      if (m.b != nullptr) cuda_kernels::add_bias_rows(y, m.b->value.data(), s.m, s.n, s.n);
      break;
    }
    case Kind::kFlatten:
      cuda_kernels::copy(x, y, m.numel);
      break;
    case Kind::kRelu6:
      cuda_kernels::clamp(x, y, m.numel, 0.0f, 6.0f);
      break;
    case Kind::kDropout:
      if (!training) {
        cuda_kernels::copy(x, y, m.numel);
        break;
      }
      // Draws from steps_ * planned elements on, steps_ read from the device (step()).
      cuda_kernels::dropout_forward(x, y, m.mask.data(), m.numel, m.keep, dropout_seed(n), 0,
                                    reinterpret_cast<const uint64_t*>(step_count_.data()),
                                    static_cast<uint64_t>(m.planned.numel));
      break;
  }
}

void CudaCnnTrainer::backward_node(int n) {
  Node& m = *nodes_[static_cast<std::size_t>(n)];
  const float* x = nodes_[static_cast<std::size_t>(m.inputs[0])]->out.data();
  const float* dy = m.grad_at;
  float* dx = m.d_src[0];
  switch (m.kind) {
    case Kind::kConv:
      if (dx != nullptr) m.plans->bwd_data->run_on(m.plans->alg_data, m.w->value.data(), dy, dx);
      m.plans->bwd_weights->run_on(m.plans->alg_weights, x, dy, m.w->grad.data());
      if (m.b != nullptr) cuda_kernels::channel_sum(m.shape, dy, m.b->grad.data());
      break;
    case Kind::kBatchNorm:
      batchnorm_backward(m, x, dy, dx);
      break;
    case Kind::kActivation:
      if (dx != nullptr)
        cuda_kernels::activation_backward(*m.act, x, m.out.data(), dy, dx, m.numel);
      break;
    case Kind::kMaxPool:
      if (dx != nullptr) {
        cuda_kernels::maxpool2d_backward(m.pool, dy,
                                         reinterpret_cast<const int32_t*>(m.argmax.data()), dx);
      }
      break;
    case Kind::kAvgPool:
      if (dx != nullptr) cuda_kernels::avgpool2d_backward(m.pool, m.count_include_pad, dy, dx);
      break;
    case Kind::kAdaptivePool:
      if (dx != nullptr) cuda_kernels::adaptive_avgpool2d_backward(m.pool, dy, dx);
      break;
    case Kind::kAdd:
      for (float* d : m.d_src) {
        if (d != nullptr) cuda_kernels::copy(dy, d, m.numel);
      }
      break;
    case Kind::kConcat: {
      int64_t offset = 0;
      for (std::size_t i = 0; i < m.inputs.size(); ++i) {
        const int64_t part = nodes_[static_cast<std::size_t>(m.inputs[i])]->numel / m.mb;
        if (m.d_src[i] != nullptr) {
          cuda_kernels::concat_slice(dy, m.mb, part, m.numel / m.mb, offset, m.d_src[i]);
        }
        offset += part;
      }
      break;
    }
    case Kind::kLinear: {
      const GemmShape& s = m.gemm;  // y[m x n] = x[m x k] . W[k x n]
      const GemmAlgorithm& g = find_gemm("cublas", Device::kCuda);
      gemm_run(g, gemm_args({true, false, s.k, s.n, s.m}, x, s.k, dy, s.n, m.w->grad.data(), s.n,
                            nullptr, 1));
      if (m.b != nullptr) cuda_kernels::sum_rows(dy, m.b->grad.data(), s.m, s.n, s.n);
      if (dx != nullptr) {
        gemm_run(g, gemm_args({false, true, s.m, s.k, s.n}, dy, s.n, m.w->value.data(), s.n, dx,
                              s.k, nullptr, 1));
      }
      break;
    }
    case Kind::kFlatten:
      if (dx != nullptr) cuda_kernels::copy(dy, dx, m.numel);
      break;
    case Kind::kRelu6:
      if (dx != nullptr) cuda_kernels::clamp_backward(x, dy, dx, m.numel, 0.0f, 6.0f);
      break;
    case Kind::kDropout:
      if (dx != nullptr) cuda_kernels::multiply(dy, m.mask.data(), dx, m.numel);
      break;
  }
  for (const Node::Sum& a : m.accumulate) cuda_kernels::add(a.dst, a.src, a.dst, a.n);
}

void CudaCnnTrainer::backward() {
  for (int n = static_cast<int>(nodes_.size()) - 1; n >= 1; --n) {
    if (layer_hook_ != nullptr) layer_hook_->before(n, Phase::kBackward);
    backward_node(n);
    if (layer_hook_ != nullptr) layer_hook_->after(n, Phase::kBackward);
  }
}

void CudaCnnTrainer::mark(StepPhase phase, bool begin) {
  if (step_hook_ != nullptr) step_hook_->phase(phase, begin);
}

void CudaCnnTrainer::prepare_update() {
  const bool adam = opt_.name == "adam", momentum = !adam && opt_.momentum != 0.0;
  if (!update_table_) {
    // Zeros, not uninitialised memory: keep * buf with keep 0 must not meet a NaN pattern.
    const auto zeros = [](const cuda::Buffer& like) {
      return cuda::to_device(std::vector<float>(like.size(), 0.0f));
    };
    std::vector<UpdateTensor> rows;
    for (const auto& p : params_) {
      if ((adam || momentum) && p->s1.size() == 0) {
        p->s1 = zeros(p->value);
        state_fresh_ = true;
      }
      if (adam && p->s2.size() == 0) p->s2 = zeros(p->value);
      rows.push_back({p->value.data(), p->grad.data(), adam || momentum ? p->s1.data() : nullptr,
                      adam ? p->s2.data() : nullptr, static_cast<int64_t>(p->value.size())});
    }
    update_table_ = std::make_unique<cuda_kernels::UpdateTable>(cuda_kernels::update_table(rows));
  }
  // The step's numbers, into the table's slot that the queued kernel reads.
  if (adam) {
    cuda_kernels::set_coefficients(*update_table_, adam_coefficients(opt_, lr_, steps_ + 1));
  } else {
    cuda_kernels::set_coefficients(*update_table_, sgd_coefficients(opt_, lr_, state_fresh_));
  }
}

void CudaCnnTrainer::queue_update() {
  if (opt_.name == "adam") {
    cuda_kernels::multi_adam_update(*update_table_);
  } else {
    cuda_kernels::multi_sgd_update(*update_table_);
  }
}

void CudaCnnTrainer::queue_step(int64_t mb) {
  mark(StepPhase::kForward, true);
  forward(true);
  mark(StepPhase::kForward, false);
  mark(StepPhase::kLoss, true);
  Node& last = *nodes_.back();
  cuda_kernels::queue_softmax_cross_entropy(
      last.out.data(), reinterpret_cast<const int32_t*>(labels_.data()), mb, classes_, last.grad_at,
      1.0f / static_cast<float>(mb), label_smoothing_, loss_slot_.data());
  mark(StepPhase::kLoss, false);
  mark(StepPhase::kBackward, true);
  backward();
  mark(StepPhase::kBackward, false);
  mark(StepPhase::kOptimizer, true);
  queue_update();
  mark(StepPhase::kOptimizer, false);
}

// CudaTrainOptions::launch: a full batch, once a first such step ran eagerly, is launched as the
// captured graph (captured now when there is none, or scratch was reallocated since); a refused
// capture leaves every later step eager. A step with hooks gets a capture of its own, made for it:
// the hooks' timeline marks become event-record nodes (new events at each recorded step).
cuda::CapturedWork* CudaCnnTrainer::step_graph() {
  if (!graph_launch_ || batch_ != mb_ || !step_capture_failure_.empty() || ++full_steps_ == 1) {
    return nullptr;
  }
  const bool recorded = layer_hook_ != nullptr || step_hook_ != nullptr;
  cuda::CapturedWork& g = recorded ? *recorded_graph_ : *step_graph_;
  if (!recorded && g.current()) return &g;
  try {
    // A recorded step's hooks mark its timeline as it is queued: never queued twice.
    g.capture([this] { queue_step(mb_); }, !recorded);
  } catch (const Error& e) {
    // The hooks have seen the step once already (their marks inside the failed capture): an
    // eager rerun would record it twice.
    if (recorded) throw Error(fmt::format("--launch graph: the recorded step: {}", e.what()));
    step_capture_failure_ = e.what();
    return nullptr;
  }
  if (!recorded) ++step_captures_;
  return &g;
}

BatchResult CudaCnnTrainer::step(std::span<const float> x, std::span<const int32_t> labels) {
  const auto mb = static_cast<int64_t>(labels.size());
  const int64_t per_image = nodes_[0]->planned.numel / mb_;
  NNPERF_CHECK(mb >= 1 && mb <= mb_ && static_cast<int64_t>(x.size()) == mb * per_image,
               "{} input values and {} labels for a planned batch of {} x {}", x.size(), mb, mb_,
               per_image);
  for (const int32_t l : labels) {
    if (l < 0 || l >= classes_) fail("label {} outside [0, {})", l, classes_);
  }
  set_batch(mb);
  nodes_[0]->out.upload_prefix(x);
  label_bits_.assign(static_cast<std::size_t>(mb), 0.0f);  // int32 bit patterns in floats
  std::memcpy(label_bits_.data(), labels.data(), labels.size() * sizeof(int32_t));
  labels_.upload_prefix(label_bits_);
  if (step_count_.size() > 0) cuda::upload_value(step_count_, static_cast<uint64_t>(steps_));
  prepare_update();
  if (cuda::CapturedWork* g = step_graph()) {
    g->launch();
    ++graph_launches_;
  } else {
    queue_step(mb);
  }
  cuda::synchronize();
  ++steps_;
  state_fresh_ = false;
  const LossResult r = cuda_kernels::read_loss(loss_slot_.data());
  if (!std::isfinite(r.loss_sum)) {
    throw DivergenceError(fmt::format("training diverged at step {}: loss is {} on the GPU", steps_,
                                      r.loss_sum / static_cast<double>(mb)));
  }
  return BatchResult{r.loss_sum, r.correct, mb};
}

// CudaTrainOptions::launch: evaluation's forward pass (always at the planned batch) as a graph of
// its own, captured at the first evaluation and again after scratch was reallocated; with hooks
// or after a refused capture, eager.
cuda::CapturedWork* CudaCnnTrainer::evaluation_graph() {
  if (!graph_launch_ || !evaluation_capture_failure_.empty() || layer_hook_ != nullptr ||
      step_hook_ != nullptr) {
    return nullptr;
  }
  if (evaluation_graph_->current()) return evaluation_graph_.get();
  try {
    evaluation_graph_->capture([this] { forward(false); });
  } catch (const Error& e) {
    evaluation_capture_failure_ = e.what();
    return nullptr;
  }
  return evaluation_graph_.get();
}

std::string CudaCnnTrainer::launch() const {
  if (!graph_launch_) return "eager";
  if (!step_capture_failure_.empty()) return "eager: " + step_capture_failure_;
  return evaluation_capture_failure_.empty()
             ? "graph"
             : "graph; evaluation eager: " + evaluation_capture_failure_;
}

// BatchNorm in evaluation: y = gamma (x - running mean) / sqrt(running var + eps) + beta as
// scale * x + shift per channel, computed in double on the host from the device's current values
// (once per set of weights: evaluate() calls this when a step has run since).
void CudaCnnTrainer::prepare_evaluation() {
  for (const auto& m : nodes_) {
    if (m->bn == nullptr) continue;
    const std::vector<float> gamma = cuda::to_host(m->w->value), beta = cuda::to_host(m->b->value),
                             mean = cuda::to_host(m->running_mean),
                             var = cuda::to_host(m->running_var);
    std::vector<float> scale(gamma.size()), shift(gamma.size());
    for (std::size_t c = 0; c < gamma.size(); ++c) {
      const double k = gamma[c] / std::sqrt(double{var[c]} + m->bn->eps());
      scale[c] = static_cast<float>(k);
      shift[c] = static_cast<float>(beta[c] - k * mean[c]);
    }
    m->eval_scale.upload(scale);
    m->eval_shift.upload(shift);
  }
  eval_ready_at_ = steps_;
}

BatchResult CudaCnnTrainer::evaluate(std::span<const float> x, std::span<const int32_t> labels) {
  const auto n = static_cast<int64_t>(labels.size());
  const int64_t per_image = nodes_[0]->planned.numel / mb_;
  NNPERF_CHECK(n >= 1 && n <= mb_ && static_cast<int64_t>(x.size()) == n * per_image,
               "{} input values and {} labels for a planned batch of {} x {}", x.size(), n, mb_,
               per_image);
  for (const int32_t l : labels) {
    if (l < 0 || l >= classes_) fail("label {} outside [0, {})", l, classes_);
  }
  if (eval_ready_at_ != steps_) prepare_evaluation();
  set_batch(mb_);
  // A short batch fills the first n images; the rest keep their last contents, which no image's
  // result depends on in evaluation (every layer works per image).
  eval_input_.resize(static_cast<std::size_t>(nodes_[0]->numel));
  std::copy(x.begin(), x.end(), eval_input_.begin());
  nodes_[0]->out.upload(eval_input_);
  if (cuda::CapturedWork* g = evaluation_graph()) {
    g->launch();
    ++evaluation_launches_;
  } else {
    forward(false);
  }
  const std::vector<float> logits = cuda::to_host(nodes_.back()->out);
  if (!all_finite(logits.data(), n * classes_)) {
    throw DivergenceError("evaluation failed: non-finite logits on the GPU");
  }
  const LossResult r = softmax_cross_entropy(logits.data(), labels.data(), n, classes_, nullptr,
                                             1.0f / static_cast<float>(n), label_smoothing_);
  return BatchResult{r.loss_sum, r.correct, n};
}

}  // namespace nnperf
