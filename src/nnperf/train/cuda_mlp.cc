#include "nnperf/train/cuda_mlp.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "nnperf/core/error.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/linear.h"

namespace nnperf {

// A Linear layer's device tensors: weight [in x out] as the host layer stores it, bias [out],
// their gradients, and the optimizer's buffers (SGD: momentum in s1; Adam: exp_avg in s1,
// exp_avg_sq in s2), zero until the first update.
struct CudaMlpTrainer::Dense {
  Linear* layer = nullptr;
  int64_t in = 0, out = 0;
  bool bias = false;
  cuda::Buffer w, b, dw, db, s1w, s1b, s2w, s2b;
};

// One node of the chain: a Linear (dense >= 0) or an activation, its output and the gradient
// with respect to that output, [capacity x width].
struct CudaMlpTrainer::Node {
  int graph_node = 0;
  int dense = -1;
  const ActivationKernel* act = nullptr;
  int64_t width = 0;
  cuda::Buffer value, grad;
};

namespace {

cuda::Buffer upload(const Tensor& t) {
  cuda::Buffer b(static_cast<std::size_t>(t.numel()));
  b.upload(std::span<const float>(t.data(), static_cast<std::size_t>(t.numel())));
  return b;
}

cuda::Buffer zeros(int64_t n) {
  cuda::Buffer b(static_cast<std::size_t>(n));
  b.upload(std::vector<float>(static_cast<std::size_t>(n), 0.0f));
  return b;
}

}  // namespace

CudaMlpTrainer::CudaMlpTrainer(Graph& graph, const GemmAlgorithm& gemm,
                               const OptimizerOptions& optimizer, float label_smoothing)
    : gemm_(gemm),
      opt_(checked_optimizer(optimizer)),
      lr_(static_cast<float>(optimizer.lr)),
      label_smoothing_(label_smoothing) {
  if (gemm.device != Device::kCuda) {
    throw UsageError(fmt::format("--impl {}: runs on the CPU; the GPU trainer needs one of: {}",
                                 gemm.name, gemm_algorithm_names(Device::kCuda)));
  }
  cuda::require("--device cuda");
  loss_slot_ = cuda::Buffer(cuda_kernels::kLossSlotFloats);
  int64_t width = -1;
  for (int i = 1; i < graph.size(); ++i) {
    Layer& l = graph.layer(i);
    if (graph.inputs(i) != std::vector<int>{i - 1}) {
      throw UsageError(fmt::format("node {} ({}): the GPU trainer runs a chain of layers only",
                                   graph.name(i), l.describe()));
    }
    if (l.kind() == "Flatten" && i == 1) continue;
    Node n;
    n.graph_node = i;
    if (auto* lin = dynamic_cast<Linear*>(&l)) {
      if (width >= 0 && lin->in_features() != width) {
        throw UsageError(fmt::format("node {}: {} follows a layer of {} features", graph.name(i),
                                     lin->describe(), width));
      }
      if (width < 0) features_ = lin->in_features();
      Dense d;
      d.layer = lin;
      d.in = lin->in_features();
      d.out = lin->out_features();
      d.bias = lin->has_bias();
      d.w = upload(lin->weight());
      d.dw = cuda::Buffer(static_cast<std::size_t>(d.in * d.out));
      d.s1w = zeros(d.in * d.out);
      if (opt_.name == "adam") d.s2w = zeros(d.in * d.out);
      if (d.bias) {
        d.b = upload(lin->bias());
        d.db = cuda::Buffer(static_cast<std::size_t>(d.out));
        d.s1b = zeros(d.out);
        if (opt_.name == "adam") d.s2b = zeros(d.out);
      }
      n.dense = static_cast<int>(dense_.size());
      n.width = d.out;
      dense_.push_back(std::move(d));
    } else if (const auto* act = dynamic_cast<const Activation*>(&l)) {
      if (width < 0) {
        throw UsageError(fmt::format("node {} ({}): the GPU trainer needs a Linear layer first",
                                     graph.name(i), l.describe()));
      }
      n.act = &act->kernel();
      n.width = width;
    } else {
      throw UsageError(fmt::format("node {} ({}): no GPU implementation of {} layers",
                                   graph.name(i), l.describe(), l.kind()));
    }
    width = n.width;
    nodes_.push_back(std::move(n));
  }
  if (dense_.empty() || nodes_.back().dense < 0) {
    throw UsageError("the GPU trainer needs an MLP whose last layer is Linear (the logits)");
  }
  classes_ = width;
  // The CPU optimizer's parameter order (Graph::params(): weight, then bias, node by node).
  const bool adam = opt_.name == "adam", momentum = !adam && opt_.momentum != 0.0;
  std::vector<UpdateTensor> rows;
  const auto row = [&](cuda::Buffer& w, const cuda::Buffer& g, cuda::Buffer& s1, cuda::Buffer& s2) {
    rows.push_back({w.data(), g.data(), adam || momentum ? s1.data() : nullptr,
                    adam ? s2.data() : nullptr, static_cast<int64_t>(w.size())});
  };
  for (Dense& d : dense_) {
    row(d.w, d.dw, d.s1w, d.s2w);
    if (d.bias) row(d.b, d.db, d.s1b, d.s2b);
  }
  update_table_ = std::make_unique<cuda_kernels::UpdateTable>(cuda_kernels::update_table(rows));
}

CudaMlpTrainer::~CudaMlpTrainer() = default;

void CudaMlpTrainer::ensure_batch(int64_t mb) {
  NNPERF_CHECK(mb > 0, "an empty batch");
  const auto check_shape = [&](const GemmShape& s) {
    const std::string why = gemm_.why_not(s);
    if (!why.empty()) fail("GEMM {} cannot serve {}: {}", gemm_.name, s.str(), why);
    if (gemm_.workspace_bytes(s, 1) != 0) {
      fail("GEMM {} asks for a workspace on {}; the GPU trainer gives none", gemm_.name, s.str());
    }
  };
  for (const Dense& d : dense_) {
    check_shape({false, false, mb, d.out, d.in});  // Y = X W
    check_shape({true, false, d.in, d.out, mb});   // dW = X^T dY
    check_shape({false, true, mb, d.in, d.out});   // dX = dY W^T
  }
  mb_ = mb;
  if (mb <= capacity_) return;
  x_ = cuda::Buffer(static_cast<std::size_t>(mb * features_));
  labels_ = cuda::Buffer(static_cast<std::size_t>(mb));
  for (Node& n : nodes_) {
    n.value = cuda::Buffer(static_cast<std::size_t>(mb * n.width));
    n.grad = cuda::Buffer(static_cast<std::size_t>(mb * n.width));
  }
  capacity_ = mb;
}

void CudaMlpTrainer::upload_batch(const Tensor& x, std::span<const int32_t> labels) {
  const int64_t mb = x.shape().rank() > 0 ? x.size(0) : 0;
  if (mb <= 0 || x.numel() != mb * features_) {
    fail("the GPU trainer's MLP takes {} features per sample; got a batch of shape {}", features_,
         x.shape().str());
  }
  NNPERF_CHECK(static_cast<int64_t>(labels.size()) == mb, "{} labels for a batch of {}",
               labels.size(), mb);
  for (const int32_t l : labels) {
    if (l < 0 || l >= classes_)
      fail("label {} out of range: the model has {} classes (0..{})", l, classes_, classes_ - 1);
  }
  ensure_batch(mb);
  // Only the batch's rows are copied: every kernel works on the first mb_ rows, so a batch
  // smaller than the capacity (an epoch's partial batch, or any training batch after an
  // evaluation at a larger batch size grew the buffers) costs no more than its own bytes.
  x_.upload_prefix(std::span<const float>(x.data(), static_cast<std::size_t>(x.numel())));
  label_bits_.resize(labels.size());  // int32 bit patterns in a float buffer
  std::memcpy(label_bits_.data(), labels.data(), labels.size() * sizeof(int32_t));
  labels_.upload_prefix(label_bits_);
}

void CudaMlpTrainer::run_forward() {
  const float* src = x_.data();
  int64_t src_width = features_;
  for (Node& n : nodes_) {
    if (hook_ != nullptr) hook_->before(n.graph_node, Phase::kForward);
    if (n.dense >= 0) {
      Dense& d = dense_[static_cast<std::size_t>(n.dense)];
      gemm_.run(gemm_args({false, false, mb_, d.out, d.in}, src, src_width, d.w.data(), d.out,
                          n.value.data(), d.out, nullptr, 1));
      if (d.bias) cuda_kernels::add_bias_rows(n.value.data(), d.b.data(), mb_, d.out, d.out);
    } else {
      cuda_kernels::activation_forward(*n.act, src, n.value.data(), mb_ * n.width);
    }
    if (hook_ != nullptr) hook_->after(n.graph_node, Phase::kForward);
    src = n.value.data();
    src_width = n.width;
  }
}

void CudaMlpTrainer::queue_loss(bool want_grad) {
  Node& last = nodes_.back();
  cuda_kernels::queue_softmax_cross_entropy(
      last.value.data(), reinterpret_cast<const int32_t*>(labels_.data()), mb_, classes_,
      want_grad ? last.grad.data() : nullptr, 1.0f / static_cast<float>(mb_), label_smoothing_,
      loss_slot_.data());
}

BatchResult CudaMlpTrainer::read_loss(int64_t step) const {
  cuda::synchronize();
  const LossResult r = cuda_kernels::read_loss(loss_slot_.data());
  if (!std::isfinite(r.loss_sum)) {
    // The loss of step `step` came from the weights after step - 1 updates.
    throw DivergenceError(fmt::format(
        "{}: loss is {} on the GPU (non-finite logits or loss); {}",
        step > 0 ? fmt::format("training diverged at step {}", step) : "evaluation failed",
        r.loss_sum / static_cast<double>(mb_),
        step <= 1 ? std::string("before any update, so not the learning rate")
                  : fmt::format("after {} updates: the learning rate ({}) is likely too high",
                                step - 1, lr_)));
  }
  return BatchResult{r.loss_sum, r.correct, mb_};
}

void CudaMlpTrainer::run_backward() {
  for (std::size_t i = nodes_.size(); i-- > 0;) {
    Node& n = nodes_[i];
    const float* src = i == 0 ? x_.data() : nodes_[i - 1].value.data();
    float* d_src = i == 0 ? nullptr : nodes_[i - 1].grad.data();
    if (hook_ != nullptr) hook_->before(n.graph_node, Phase::kBackward);
    if (n.dense >= 0) {
      Dense& d = dense_[static_cast<std::size_t>(n.dense)];
      gemm_.run(gemm_args({true, false, d.in, d.out, mb_}, src, d.in, n.grad.data(), d.out,
                          d.dw.data(), d.out, nullptr, 1));
      if (d.bias) cuda_kernels::sum_rows(n.grad.data(), d.db.data(), mb_, d.out, d.out);
      if (d_src != nullptr) {
        gemm_.run(gemm_args({false, true, mb_, d.in, d.out}, n.grad.data(), d.out, d.w.data(),
                            d.out, d_src, d.in, nullptr, 1));
      }
    } else if (d_src != nullptr) {
      cuda_kernels::activation_backward(*n.act, src, n.value.data(), n.grad.data(), d_src,
                                        mb_ * n.width);
    }
    if (hook_ != nullptr) hook_->after(n.graph_node, Phase::kBackward);
  }
}

void CudaMlpTrainer::set_update_coefficients() {
  if (opt_.name == "adam") {
    cuda_kernels::set_coefficients(*update_table_, adam_coefficients(opt_, lr_, steps_ + 1));
  } else {
    // The state buffers are made (zeros) at construction and never loaded.
    cuda_kernels::set_coefficients(*update_table_, sgd_coefficients(opt_, lr_, steps_ == 0));
  }
}

void CudaMlpTrainer::update() {
  if (opt_.name == "adam") {
    cuda_kernels::multi_adam_update(*update_table_);
  } else {
    cuda_kernels::multi_sgd_update(*update_table_);
  }
  ++steps_;
}

BatchResult CudaMlpTrainer::step(const Tensor& x, std::span<const int32_t> labels) {
  // Synchronous uploads first, while the device is idle (the last step ended with read_loss): a
  // copy from pageable memory waits for the stream, so one made after the passes were queued
  // would hold the host until they finish.
  set_update_coefficients();
  upload_batch(x, labels);
  run_forward();
  queue_loss(true);
  run_backward();
  update();
  return read_loss(steps_);
}

void CudaMlpTrainer::forward(const Tensor& x) {
  const int64_t mb = x.shape().rank() > 0 ? x.size(0) : 0;
  upload_batch(x, std::vector<int32_t>(static_cast<std::size_t>(std::max<int64_t>(mb, 0)), 0));
  run_forward();
  cuda::synchronize();
}

BatchResult CudaMlpTrainer::evaluate(const Tensor& x, std::span<const int32_t> labels) {
  upload_batch(x, labels);
  run_forward();
  queue_loss(false);
  return read_loss(0);
}

BatchResult CudaMlpTrainer::evaluate(const Dataset& data, int64_t batch_size) {
  Batcher batcher(data, batch_size, /*shuffle=*/false, 0);
  batcher.start_epoch();
  Tensor x;
  std::vector<int32_t> labels;
  BatchResult total;
  while (batcher.next(x, labels, /*flatten=*/true)) total += evaluate(x, labels);
  return total;
}

void CudaMlpTrainer::download_params() {
  cuda::synchronize();
  for (Dense& d : dense_) {
    Tensor& w = d.layer->weight();
    d.w.download(std::span<float>(w.data(), static_cast<std::size_t>(w.numel())));
    if (d.bias) {
      Tensor& b = d.layer->bias();
      d.b.download(std::span<float>(b.data(), static_cast<std::size_t>(b.numel())));
    }
  }
}

Tensor CudaMlpTrainer::logits() const {
  cuda::synchronize();
  const Node& last = nodes_.back();
  std::vector<float> all(last.value.size());
  last.value.download(all);
  Tensor out(Shape{mb_, classes_});
  std::memcpy(out.data(), all.data(), static_cast<std::size_t>(mb_ * classes_) * sizeof(float));
  return out;
}

}  // namespace nnperf
