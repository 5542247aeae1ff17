// CudaCnnTrainer: per graph node a device output and gradient, the layer's parameters (value,
// gradient, optimizer state) and its kernels' state (cuDNN plans, BatchNorm statistics, max-pool
// argmax); gradients routed as Graph routes them. See cuda_cnn.h. This file plans the nodes and
// holds the optimizer state and the accessors; the passes and the step are in cuda_cnn_step.cc,
// the checks made without a device in cuda_cnn_options.cc.
#include "nnperf/train/cuda_cnn.h"

#include <fmt/format.h>

#include <algorithm>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/cuda_inference.h"
#include "nnperf/nn/cuda_layers.h"
#include "nnperf/nn/dropout.h"
#include "nnperf/nn/linear.h"
#include "nnperf/train/cuda_cnn_internal.h"

namespace nnperf {

namespace {

using Kind = CudaLayerKind;

std::size_t count(const Shape& s) { return static_cast<std::size_t>(s.numel()); }

// UsageError naming the first BatchNorm layer of `graph` that cuDNN's batch normalisation cannot
// run (cudnn::batchnorm_why_not), checked before the trainer allocates.
void require_cudnn_batchnorm(const Graph& graph) {
  for (int n = 1; n < graph.size(); ++n) {
    if (dynamic_cast<const BatchNorm2d*>(&graph.layer(n)) == nullptr) continue;
    const Shape& s = graph.output_shape(n);
    const std::string why =
        cudnn::batchnorm_why_not({s[0], s[1], s.numel() / std::max<int64_t>(s[0] * s[1], 1)});
    if (!why.empty()) {
      throw UsageError(fmt::format("--batchnorm cudnn: layer {} ({}): {}", graph.name(n),
                                   graph.layer(n).describe(), why));
    }
  }
}
}  // namespace

CudaCnnTrainer::CudaCnnTrainer(Graph& graph, const OptimizerOptions& optimizer,
                               const CudaTrainOptions& options)
    : graph_(graph),
      opt_(checked_optimizer(optimizer)),
      lr_(static_cast<float>(optimizer.lr)),
      label_smoothing_(options.label_smoothing),
      deterministic_(options.deterministic),
      choice_(parse_cuda_conv_choice(options.conv_algorithm, options.find_engines)),
      batchnorm_(cudnn::checked_batchnorm_algorithm("--batchnorm", options.batchnorm)),
      cudnn_batchnorm_(batchnorm_ == "cudnn"),
      graph_launch_(parse_cuda_launch(options.launch)) {
  if (deterministic_ && uses_find(choice_)) {
    throw UsageError(fmt::format(
        "--deterministic: --algorithm {} chooses by timing, which can differ run to run",
        options.conv_algorithm));
  }
  if (const std::string why = cuda_training_unsupported(graph); !why.empty()) {
    throw UsageError("--device cuda: " + why);
  }
  cuda::require("--device cuda");
  if (!cudnn::available()) throw UsageError("--device cuda: " + cudnn::unavailable_reason());
  if (cudnn_batchnorm_) require_cudnn_batchnorm(graph);
  const std::size_t need = cuda_training_bytes(graph, opt_);
  if (const std::size_t free = cuda::device_properties().free_bytes; need > free) {
    throw Error(fmt::format(
        "training this batch needs at least {:.1f} GiB of device memory (activations, "
        "gradients, parameters, optimizer state; cuDNN's workspace on top), {:.1f} GiB are free",
        static_cast<double>(need) / (1 << 30), static_cast<double>(free) / (1 << 30)));
  }
  const Shape& out = graph.output_shape(graph.size() - 1);
  mb_ = out[0];
  classes_ = out[1];
  labels_ = cuda::Buffer(static_cast<std::size_t>(mb_));
  loss_slot_ = cuda::Buffer(cuda_kernels::kLossSlotFloats);
  if (graph_launch_) {
    step_graph_ = std::make_unique<cuda::CapturedWork>();
    recorded_graph_ = std::make_unique<cuda::CapturedWork>();
    evaluation_graph_ = std::make_unique<cuda::CapturedWork>();
  }
  nodes_.resize(static_cast<std::size_t>(graph.size()));
  nodes_[0] = std::make_unique<Node>();
  nodes_[0]->numel = graph.input_shape().numel();
  nodes_[0]->mb = mb_;
  nodes_[0]->planned = {nodes_[0]->numel, mb_, {}, {}, {}};
  nodes_[0]->out = cuda::Buffer(count(graph.input_shape()));
  // Nodes first (a gradient buffer only where the routing keeps one), then the routing on them,
  // then the convolutions' cuDNN plans, whose backward passes are chosen on those buffers.
  const GradientRouting routing = graph.gradient_routing();
  for (int n = 1; n < graph.size(); ++n)
    plan_node(n, routing.storage[static_cast<std::size_t>(n)] == n);
  for (const auto& m : nodes_) {
    if (m->kind == Kind::kDropout && step_count_.size() == 0) step_count_ = cuda::Buffer(2);
  }
  route_gradients(routing);
  for (int n = 1; n < graph.size(); ++n) {
    Node& m = *nodes_[static_cast<std::size_t>(n)];
    if (m.kind != Kind::kConv) continue;
    m.conv = plan_conv(m, n, mb_);
    m.plans = m.conv.get();
  }
  batch_ = mb_;
  reserve_workspace();
}

// cuDNN's shared workspace made now the largest need of the plans in use (the planned batch's,
// and a short batch's once made; what find's candidates held beyond it freed), so that no
// convolution regrows it inside a step or an evaluation being captured as a CUDA graph.
void CudaCnnTrainer::reserve_workspace() {
  std::size_t bytes = 0;
  for (const auto& m : nodes_) {
    for (const ConvPlans* p : {m->conv.get(), m->short_conv.get()}) {
      if (p == nullptr) continue;
      bytes = std::max({bytes, p->fwd->workspace_bytes(p->alg_fwd),
                        p->bwd_data->workspace_bytes(p->alg_data),
                        p->bwd_weights->workspace_bytes(p->alg_weights)});
    }
  }
  cudnn::fit_workspace(bytes);
}

CudaCnnTrainer::~CudaCnnTrainer() = default;

// A conv node's cuDNN plans at batch mb, each pass's algorithm as --algorithm asks, chosen on the
// node's own buffers (x: its input's output; their first mb images).
std::unique_ptr<CudaCnnTrainer::ConvPlans> CudaCnnTrainer::plan_conv(Node& m, int n, int64_t mb) {
  auto& c = dynamic_cast<Conv2d&>(graph_.layer(n));
  ConvProblem p = c.problem();
  p.mb = mb;
  const float* x = nodes_[static_cast<std::size_t>(m.inputs[0])]->out.data();
  auto r = std::make_unique<ConvPlans>();
  r->fwd = std::make_unique<cudnn::ConvForward>(
      p, std::span<const float>(c.weight().data(), count(c.weight().shape())));
  cudnn::FindOptions find;  // 1 GiB of workspace at most; candidates timed as the steps run
  find.engines = choice_.find_engines;
  find.launch = graph_launch_ ? cudnn::Launch::kGraph : cudnn::Launch::kEager;
  r->alg_fwd = cudnn::choose_forward(*r->fwd, p, graph_.name(n), choice_.forward, false, x,
                                     m.out.data(), find)
                   .algorithm;
  r->bwd_data = std::make_unique<cudnn::ConvBackward>(p, ConvPass::kBackwardData);
  r->bwd_weights = std::make_unique<cudnn::ConvBackward>(p, ConvPass::kBackwardWeights);
  cuda::Buffer dx(static_cast<std::size_t>(p.src_numel()));
  r->alg_data =
      cudnn::choose_backward(*r->bwd_data, p, ConvPass::kBackwardData, choice_.backward_data,
                             deterministic_, find, m.w->value.data(), m.grad_at, dx.data());
  r->alg_weights = cudnn::choose_backward(*r->bwd_weights, p, ConvPass::kBackwardWeights,
                                          choice_.backward_weights, deterministic_, find, x,
                                          m.grad_at, m.w->grad.data());
  r->fwd->release_weights();  // the steps run on the trainer's weights (run_with)
  return r;
}

void CudaCnnTrainer::plan_node(int n, bool owns_gradient) {
  auto node = std::make_unique<Node>();
  Node& m = *node;
  Layer& layer = graph_.layer(n);
  const Shape& shape = graph_.output_shape(n);
  m.kind = *cuda_layer_kind(layer);
  m.inputs = graph_.inputs(n);
  m.numel = shape.numel();
  m.mb = shape[0];
  m.out = cuda::Buffer(count(shape));
  if (owns_gradient) m.grad = cuda::Buffer(count(shape));  // else route_gradients points it on
  m.grad_at = m.grad.data();
  m.grad_node = static_cast<std::size_t>(n);
  // Parameters in Graph::params() order (the CPU optimizer's).
  std::vector<Param*> mine;
  for (const nnperf::Param& p : layer.params()) {
    auto dp = std::make_unique<Param>();
    dp->host = p.value;
    dp->value = cuda::to_device({p.value->data(), count(p.value->shape())});
    dp->grad = cuda::Buffer(count(p.value->shape()));
    mine.push_back(dp.get());
    params_.push_back(std::move(dp));
  }
  m.w = mine.size() > 0 ? mine[0] : nullptr;
  m.b = mine.size() > 1 ? mine[1] : nullptr;
  const Shape& in = graph_.output_shape(m.inputs[0]);
  switch (m.kind) {
    case Kind::kConv:
      m.shape = {shape[0], shape[1], shape[2] * shape[3]};
      if (!dynamic_cast<Conv2d&>(layer).has_bias()) m.b = nullptr;
      break;
    case Kind::kBatchNorm: {
      m.bn = &dynamic_cast<BatchNorm2d&>(layer);
      m.shape = {shape[0], shape[1], shape.numel() / (shape[0] * shape[1])};
      m.running_mean =
          cuda::to_device({m.bn->running_mean().data(), count(m.bn->running_mean().shape())});
      m.running_var =
          cuda::to_device({m.bn->running_var().data(), count(m.bn->running_var().shape())});
      m.save_mean = cuda::Buffer(2 * static_cast<std::size_t>(shape[1]));
      m.save_inv = cuda::Buffer(2 * static_cast<std::size_t>(shape[1]));
      m.eval_scale = cuda::Buffer(static_cast<std::size_t>(shape[1]));
      m.eval_shift = cuda::Buffer(static_cast<std::size_t>(shape[1]));
      break;
    }
    case Kind::kActivation:
      m.act = &dynamic_cast<Activation&>(layer).kernel();
      break;
    case Kind::kMaxPool:
    case Kind::kAvgPool:
    case Kind::kAdaptivePool: {
      const CudaPool p = cuda_pool(layer, in);
      m.pool = p.shape;
      m.count_include_pad = p.count_include_pad;
      if (m.kind == Kind::kMaxPool) m.argmax = cuda::Buffer(count(shape));  // backward's gather
      break;
    }
    case Kind::kLinear: {
      auto& l = dynamic_cast<Linear&>(layer);
      m.gemm = {false, false, shape[0], shape[1], l.weight().shape()[0]};
      if (!l.has_bias()) m.b = nullptr;
      break;
    }
    case Kind::kDropout:
      m.keep = static_cast<float>(1.0 - dynamic_cast<Dropout&>(layer).p());
      m.mask = cuda::Buffer(count(shape));
      break;
    case Kind::kAdd:
    case Kind::kConcat:
    case Kind::kFlatten:
    case Kind::kRelu6:
      break;
  }
  m.planned = {m.numel, m.mb, m.shape, m.pool, m.gemm};
  nodes_[static_cast<std::size_t>(n)] = std::move(node);
}

void CudaCnnTrainer::set_batch(int64_t mb) {
  if (mb == batch_) return;
  // A new short size: every convolution's plans for it first, so that a refusal (no algorithm,
  // no memory for find) leaves the trainer as it was.
  const bool replan = mb != mb_ && mb != short_mb_;
  // Its BatchNorm statistics, as BatchNorm2d's plan refuses them on the CPU (the planned batch
  // was checked at planning).
  for (std::size_t n = 1; replan && n < nodes_.size(); ++n) {
    const Node& m = *nodes_[n];
    if (m.kind == Kind::kBatchNorm && mb * m.planned.shape.plane < 2) {
      fail("{}: training needs more than 1 value per channel, a batch of {} has {}",
           graph_.name(static_cast<int>(n)), mb, mb * m.planned.shape.plane);
    }
  }
  std::vector<std::unique_ptr<ConvPlans>> short_plans(nodes_.size());
  try {
    for (std::size_t n = 1; replan && n < nodes_.size(); ++n) {
      Node& m = *nodes_[n];
      if (m.kind == Kind::kConv) short_plans[n] = plan_conv(m, static_cast<int>(n), mb);
    }
  } catch (const Error&) {
    reserve_workspace();  // find grew the shared workspace for the plans now dropped
    throw;
  }
  // Every batch-dependent size is a multiple of the planned batch (or 0 where unused).
  const auto scaled = [&](int64_t planned) { return planned / mb_ * mb; };
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    Node& m = *nodes_[n];
    m.numel = scaled(m.planned.numel);
    m.mb = mb;
    m.shape.mb = scaled(m.planned.shape.mb);
    m.pool.planes = scaled(m.planned.pool.planes);
    m.gemm.m = scaled(m.planned.gemm.m);
    for (Node::Sum& a : m.accumulate) a.n = scaled(a.planned_n);
    if (m.kind != Kind::kConv || n == 0) continue;
    if (replan) m.short_conv = std::move(short_plans[n]);
    m.plans = mb == mb_ ? m.conv.get() : m.short_conv.get();
  }
  if (replan) short_mb_ = mb;
  batch_ = mb;
  if (replan) reserve_workspace();
}

// Graph's routing (Graph::gradient_routing) on device buffers: a node's first consumer in
// backward order writes its gradient, later ones a shared scratch buffer added in after their
// backward; the graph input gets none; an Add's gradient is its only-consumed inputs' too (they
// were planned without a buffer of their own). Last node first, so that an Add's own storage is
// settled before its inputs take it.
void CudaCnnTrainer::route_gradients(const GradientRouting& r) {
  for (const Shape& shape : r.scratch) scratch_.emplace_back(count(shape));
  for (std::size_t j = nodes_.size(); j-- > 1;) {
    Node& m = *nodes_[j];
    if (const auto owner = static_cast<std::size_t>(r.storage[j]); owner != j) {
      m.grad_at = nodes_[owner]->grad_at;
      m.grad_node = owner;
    }
  }
  for (std::size_t j = 1; j < nodes_.size(); ++j) {
    Node& m = *nodes_[j];
    for (std::size_t s = 0; s < m.inputs.size(); ++s) {
      const int route = r.edge[j][s];
      if (route == GradientRouting::kNone || route == GradientRouting::kShared) {
        m.d_src.push_back(nullptr);
        continue;
      }
      Node& producer = *nodes_[static_cast<std::size_t>(m.inputs[s])];
      if (route == GradientRouting::kProducer) {
        m.d_src.push_back(producer.grad_at);
        continue;
      }
      float* t = scratch_[static_cast<std::size_t>(route)].data();
      m.d_src.push_back(t);
      m.accumulate.push_back({producer.grad_at, t, producer.planned.numel, producer.planned.numel});
    }
  }
}

std::vector<std::pair<std::string, Tensor>> CudaCnnTrainer::optimizer_state() const {
  std::vector<std::pair<std::string, Tensor>> state;
  const bool adam = opt_.name == "adam";
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Param& p = *params_[i];
    if (p.s1.size() == 0) continue;
    const Shape& shape = p.host->shape();
    const auto add = [&](const char* name, const cuda::Buffer& b) {
      Tensor t(shape);
      b.download({t.data(), count(shape)});
      state.emplace_back(fmt::format("{}.{}", name, i), std::move(t));
    };
    add(adam ? "exp_avg" : "momentum_buffer", p.s1);
    if (adam) add("exp_avg_sq", p.s2);
  }
  return state;
}

void CudaCnnTrainer::load_optimizer_state(
    const std::vector<std::pair<std::string, const Tensor*>>& state, int64_t steps) {
  NNPERF_CHECK(steps >= 0, "step count {}", steps);
  // The state buffers below are new: so is the table, and a captured step (which holds the old
  // table's address) is captured again.
  update_table_.reset();
  state_fresh_ = false;
  if (step_graph_) step_graph_ = std::make_unique<cuda::CapturedWork>();
  // As the CPU optimizer's load: the state is replaced whole (an empty one means buffers made
  // afresh at the next step, its first momentum step keeping none), and must cover every
  // parameter or none.
  for (const auto& p : params_) {
    p->s1 = cuda::Buffer();
    p->s2 = cuda::Buffer();
  }
  const bool adam = opt_.name == "adam";
  for (const auto& [name, t] : state) {
    const std::size_t dot = name.rfind('.');
    const std::string kind = name.substr(0, dot);
    const std::size_t i = dot == std::string::npos ? params_.size()
                                                   : std::stoul(name.substr(dot + 1));
    if (i >= params_.size() || t->shape() != params_[i]->host->shape()) {
      fail("optimizer state {}: no parameter of shape {} at that index", name, t->shape().str());
    }
    Param& p = *params_[i];
    const std::span<const float> values{t->data(), count(t->shape())};
    if (kind == (adam ? "exp_avg" : "momentum_buffer")) {
      p.s1 = cuda::to_device(values);
    } else if (adam && kind == "exp_avg_sq") {
      p.s2 = cuda::to_device(values);
    } else {
      fail("optimizer state {}: not a state of the {} optimizer", name, opt_.name);
    }
  }
  std::size_t with_s1 = 0, with_s2 = 0;
  for (const auto& p : params_) {
    with_s1 += p->s1.size() > 0 ? 1 : 0;
    with_s2 += p->s2.size() > 0 ? 1 : 0;
  }
  if ((with_s1 != 0 && with_s1 != params_.size()) || (adam && with_s2 != with_s1) ||
      (!adam && with_s2 != 0)) {
    fail(
        "optimizer state: buffers for {} and {} of the {} parameters (the {} optimizer's state "
        "covers every parameter or none)",
        with_s1, with_s2, params_.size(), opt_.name);
  }
  steps_ = steps;
}

void CudaCnnTrainer::download_params() {
  cuda::synchronize();
  for (const auto& p : params_) p->value.download({p->host->data(), count(p->host->shape())});
  for (const auto& m : nodes_) {
    if (m->bn == nullptr) continue;
    m->running_mean.download({m->bn->running_mean().data(), count(m->bn->running_mean().shape())});
    m->running_var.download({m->bn->running_var().data(), count(m->bn->running_var().shape())});
  }
}

// A node buffer's part that holds the current batch.
std::vector<float> CudaCnnTrainer::batch_part(const Node& m, cuda::Buffer Node::*buffer) {
  std::vector<float> v = cuda::to_host(m.*buffer);
  v.resize(static_cast<std::size_t>(m.numel));
  return v;
}

std::vector<float> CudaCnnTrainer::node_output(int n) const {
  NNPERF_CHECK(n >= 0 && n < static_cast<int>(nodes_.size()), "node {} of {}", n, nodes_.size());
  return batch_part(*nodes_[static_cast<std::size_t>(n)], &Node::out);
}

std::vector<float> CudaCnnTrainer::node_grad(int n) const {
  NNPERF_CHECK(n >= 1 && n < static_cast<int>(nodes_.size()), "node {} of {}", n, nodes_.size());
  const Node& m = *nodes_[static_cast<std::size_t>(n)];
  std::vector<float> v = batch_part(*nodes_[m.grad_node], &Node::grad);
  v.resize(static_cast<std::size_t>(m.numel));
  return v;
}

std::vector<float> CudaCnnTrainer::dropout_mask(int n) const {
  NNPERF_CHECK(n >= 1 && n < static_cast<int>(nodes_.size()) &&
                   nodes_[static_cast<std::size_t>(n)]->kind == Kind::kDropout,
               "node {} is not a Dropout", n);
  return batch_part(*nodes_[static_cast<std::size_t>(n)], &Node::mask);
}

std::vector<float> CudaCnnTrainer::param_grad(std::size_t i) const {
  NNPERF_CHECK(i < params_.size(), "parameter {} of {}", i, params_.size());
  return cuda::to_host(params_[i]->grad);
}

// "fwd=..,bwd_data=..,bwd_weights=.." of a conv node's plans ("" for none).
std::string CudaCnnTrainer::describe(const ConvPlans* c) {
  if (c == nullptr) return "";
  return fmt::format("fwd={},bwd_data={},bwd_weights={}", c->alg_fwd, c->alg_data, c->alg_weights);
}

std::string CudaCnnTrainer::algorithms(int node) const {
  return describe(nodes_[static_cast<std::size_t>(node)]->conv.get());
}

std::string CudaCnnTrainer::short_batch_algorithms(int node) const {
  return describe(nodes_[static_cast<std::size_t>(node)]->short_conv.get());
}

}  // namespace nnperf
