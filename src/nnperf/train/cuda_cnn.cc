// CudaCnnTrainer: per graph node a device output and gradient, the layer's parameters (value,
// gradient, optimizer state) and its kernels' state (cuDNN plans, BatchNorm statistics, max-pool
// argmax); gradients routed as Graph routes them. See cuda_cnn.h.
#include "nnperf/train/cuda_cnn.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/elementwise.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/softmax.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/cuda_inference.h"
#include "nnperf/nn/cuda_layers.h"
#include "nnperf/nn/dropout.h"
#include "nnperf/nn/linear.h"

namespace nnperf {

namespace {

using Kind = CudaLayerKind;

// The kinds the GPU trainer runs: every kind the GPU has kernels for.
std::optional<Kind> kind_of(const Layer& l) { return cuda_layer_kind(l); }

// Dropout node n's masks: draws (steps * elements) onwards of this seed (kernels/counter_rng.h),
// so each step, each node and each element draws its own.
uint64_t dropout_seed(int n) { return 0x5EED0D0E00000000ull ^ static_cast<uint64_t>(n); }

std::size_t count(const Shape& s) { return static_cast<std::size_t>(s.numel()); }

// A backward pass's algorithm: `asked` (a name, guess or find) where cuDNN serves it, else the
// first that guess (or find, once per problem: cudnn::cached_find) ranks; with `deterministic`,
// only those cuDNN marks deterministic.
std::string choose_backward(cudnn::ConvBackward& c, const ConvProblem& p, ConvPass pass,
                            const std::string& asked, bool deterministic,
                            const cudnn::FindOptions& find, const float* first, const float* dy,
                            float* out) {
  const std::vector<cudnn::AlgoResult> ranked =
      asked == "find"
          ? cudnn::cached_find(p, pass, find, [&] { return c.find_on(find, first, dy, out); })
          : c.guess();
  const auto usable = [&](const cudnn::AlgoResult& r) {
    return r.status == "CUDNN_STATUS_SUCCESS" && (!deterministic || r.deterministic) &&
           c.why_not(r.algorithm).empty();
  };
  for (const cudnn::AlgoResult& r : ranked) {
    if (r.algorithm == asked && usable(r)) return asked;
  }
  for (const cudnn::AlgoResult& r : ranked) {
    if (usable(r)) return r.algorithm;
  }
  throw Error(fmt::format("cuDNN serves no {}backward algorithm for this convolution",
                          deterministic ? "deterministic " : ""));
}

// One pass's part of --algorithm: guess, find or one of `names`.
std::string checked_name(const std::string& algorithm, const std::string& pass,
                         const std::string& name, std::span<const char* const> names) {
  if (name == "guess" || name == "find" ||
      std::find(names.begin(), names.end(), name) != names.end()) {
    return name;
  }
  throw UsageError(fmt::format("--algorithm {}: {} takes guess, find or one of cuDNN's {}",
                               algorithm, pass, fmt::join(names, ", ")));
}

// The choice `algorithm` names, without --engines' check.
CudaConvChoice parse_passes(const std::string& algorithm) {
  CudaConvChoice c;
  if (algorithm.find('=') == std::string::npos) {
    c.forward = checked_name(algorithm, "the forward pass", algorithm, cudnn::forward_algorithms());
    if (algorithm == "find") c.backward_data = c.backward_weights = "find";
    return c;
  }
  std::string_view rest = algorithm;
  for (bool more = true; more;) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    more = comma != std::string_view::npos;
    if (more) rest = rest.substr(comma + 1);
    const std::size_t eq = part.find('=');
    const std::string key(part.substr(0, eq));
    const std::string value(eq == std::string_view::npos ? "" : part.substr(eq + 1));
    if (key == "fwd") {
      c.forward = checked_name(algorithm, "fwd", value, cudnn::forward_algorithms());
    } else if (key == "bwd_data") {
      c.backward_data =
          checked_name(algorithm, "bwd_data", value, cudnn::algorithms(ConvPass::kBackwardData));
    } else if (key == "bwd_weights") {
      c.backward_weights = checked_name(algorithm, "bwd_weights", value,
                                        cudnn::algorithms(ConvPass::kBackwardWeights));
    } else {
      throw UsageError(fmt::format(
          "--algorithm {}: expected fwd=NAME, bwd_data=NAME and bwd_weights=NAME, comma-separated",
          algorithm));
    }
  }
  return c;
}

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

bool parse_cuda_launch(const std::string& launch) {
  if (launch != "graph" && launch != "eager") {
    throw UsageError(fmt::format(
        "--launch {}: expected graph (each full-batch step's forward, loss, backward and update "
        "as one CUDA graph) or eager",
        launch));
  }
  return launch == "graph";
}

CudaConvChoice parse_cuda_conv_choice(const std::string& algorithm, bool find_engines) {
  CudaConvChoice c = parse_passes(algorithm);
  if (find_engines && c.forward != "find" && c.backward_data != "find" &&
      c.backward_weights != "find") {
    throw UsageError(fmt::format(
        "--engines: adds cuDNN's graph-API engines to find's candidates; --algorithm {} uses "
        "find for no pass",
        algorithm));
  }
  c.find_engines = find_engines;
  return c;
}

std::string cuda_training_unsupported(const Graph& graph) {
  for (int n = 1; n < graph.size(); ++n) {
    const Layer& l = graph.layer(n);
    if (!kind_of(l)) {
      return fmt::format("layer {} ({}): no GPU training kernel for {} yet", graph.name(n),
                         l.describe(), l.kind());
    }
  }
  const Shape& out = graph.output_shape(graph.size() - 1);
  if (out.rank() != 2) {
    return fmt::format("the output {} is not [batch, classes]", out.str());
  }
  return "";
}

std::size_t cuda_training_bytes(const Graph& graph, const OptimizerOptions& optimizer) {
  const OptimizerOptions o = checked_optimizer(optimizer);
  const std::size_t states = o.name == "adam" ? 2 : (o.momentum != 0.0 ? 1 : 0);
  const GradientRouting routing = graph.gradient_routing();
  std::size_t floats = 0;
  for (int n = 0; n < graph.size(); ++n) {
    const auto numel = static_cast<std::size_t>(graph.output_shape(n).numel());
    floats += numel;  // the output
    if (n == 0) continue;
    // Its gradient, unless it is kept in the buffer of the Add it feeds (GradientRouting::storage).
    if (routing.storage[static_cast<std::size_t>(n)] == n) floats += numel;
    const Layer& l = graph.layer(n);
    const std::optional<Kind> kind = kind_of(l);
    if (kind == Kind::kMaxPool || kind == Kind::kDropout) floats += numel;  // argmax or mask
    floats += (2 + states) * static_cast<std::size_t>(l.num_params());  // value, grad, state
  }
  return floats * sizeof(float);
}

struct CudaCnnTrainer::Param {
  Tensor* host = nullptr;
  cuda::Buffer value, grad, s1, s2;  // s1: momentum buffer or Adam's m; s2: Adam's v
};

// A conv node's cuDNN plans for one batch size.
struct CudaCnnTrainer::ConvPlans {
  std::unique_ptr<cudnn::ConvForward> fwd;
  std::unique_ptr<cudnn::ConvBackward> bwd_data, bwd_weights;
  std::string alg_fwd, alg_data, alg_weights;
};

struct CudaCnnTrainer::Node {
  Kind kind = Kind::kFlatten;
  cuda::Buffer out, grad;
  // Where the node's gradient is: grad's storage, or (GradientRouting::kShared) that of node
  // grad_node, the pass-through node it shares with, grad then released.
  float* grad_at = nullptr;
  std::size_t grad_node = 0;
  std::vector<int> inputs;
  std::vector<float*> d_src;  // where backward writes each input's gradient (null: none needed)
  struct Sum {
    float* dst;        // the producer's gradient
    const float* src;  // the edge's scratch buffer
    int64_t n, planned_n;
  };
  std::vector<Sum> accumulate;
  // The sizes the kernels are given, for the batch set_batch set (numel, mb, and shape, pool and
  // gemm where the kind uses them), and their values at the planned batch.
  int64_t numel = 0, mb = 0;
  BatchNormShape shape{};
  PoolShape pool{};
  GemmShape gemm{};
  struct Sizes {
    int64_t numel = 0, mb = 0;
    BatchNormShape shape{};
    PoolShape pool{};
    GemmShape gemm{};
  } planned;
  std::unique_ptr<ConvPlans> conv, short_conv;  // the planned batch's, the short batch's
  ConvPlans* plans = nullptr;                   // the one for the current batch
  Param* w = nullptr;  // conv/linear weight; BatchNorm gamma
  Param* b = nullptr;  // bias; BatchNorm beta
  BatchNorm2d* bn = nullptr;
  // save_*: per channel, two floats each: a double for the own kernels, a float for cuDNN's
  cuda::Buffer running_mean, running_var, save_mean, save_inv;
  cuda::Buffer eval_scale, eval_shift;  // BatchNorm on running statistics, as one affine map
  bool count_include_pad = true;
  cuda::Buffer argmax;  // int32 bit patterns, one per output
  const ActivationKernel* act = nullptr;
  float keep = 1.0f;    // Dropout: 1 - p
  cuda::Buffer mask;    // Dropout: the last training forward's mask, 0 or 1 / keep
};

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
  const CudaConvChoice& choice = choice_;
  if (deterministic_ && (choice.forward == "find" || choice.backward_data == "find" ||
                         choice.backward_weights == "find")) {
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
  r->alg_fwd = choose_cudnn_forward(*r->fwd, p, graph_.name(n), choice_.forward, false, x,
                                    m.out.data(), find)
                   .algorithm;
  r->bwd_data = std::make_unique<cudnn::ConvBackward>(p, ConvPass::kBackwardData);
  r->bwd_weights = std::make_unique<cudnn::ConvBackward>(p, ConvPass::kBackwardWeights);
  cuda::Buffer dx(static_cast<std::size_t>(p.src_numel()));
  r->alg_data = choose_backward(*r->bwd_data, p, ConvPass::kBackwardData, choice_.backward_data,
                                deterministic_, find, m.w->value.data(), m.grad_at, dx.data());
  r->alg_weights =
      choose_backward(*r->bwd_weights, p, ConvPass::kBackwardWeights, choice_.backward_weights,
                      deterministic_, find, x, m.grad_at, m.w->grad.data());
  r->fwd->release_weights();  // the steps run on the trainer's weights (run_with)
  return r;
}

void CudaCnnTrainer::plan_node(int n, bool owns_gradient) {
  auto node = std::make_unique<Node>();
  Node& m = *node;
  Layer& layer = graph_.layer(n);
  const Shape& shape = graph_.output_shape(n);
  m.kind = *kind_of(layer);
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
        cuda_kernels::add(y, nodes_[static_cast<std::size_t>(m.inputs[i])]->out.data(), y,
                          m.numel);
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
