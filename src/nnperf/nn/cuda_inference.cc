// CudaInference: one Node per graph node, planned once (kind, device buffers, parameters,
// cuDNN plan), then run() walks them in order. See cuda_inference.h.
#include "nnperf/nn/cuda_inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/cuda_layers.h"
#include "nnperf/nn/linear.h"

namespace nnperf {

namespace {

using Kind = CudaLayerKind;

// Flatten and Dropout (the identity in inference) run nothing: their output is their input's.
bool alias(Kind k) { return k == Kind::kFlatten || k == Kind::kDropout; }

std::span<const float> span_of(const Tensor& t) {
  return {t.data(), static_cast<std::size_t>(t.numel())};
}

}  // namespace

struct CudaInference::Node {
  Kind kind = Kind::kFlatten;
  cuda::Buffer out;                      // the node's output (empty for an alias)
  const cuda::Buffer* buffer = nullptr;  // &out, or an alias's source buffer
  std::vector<const float*> src;         // the inputs' device pointers
  std::vector<int64_t> src_numel;
  int64_t numel = 0, mb = 0;
  // Parameters on the device: conv/linear weights and bias; the BatchNorm's scale and shift.
  cuda::Buffer weight, bias, scale, shift;
  std::unique_ptr<cudnn::ConvForward> conv;
  BatchNormShape affine{};
  PoolShape pool{};
  bool count_include_pad = true;
  const ActivationKernel* activation = nullptr;
  GemmShape gemm{};
  const float* data() const { return buffer->data(); }
};

std::string cuda_unsupported(const Graph& graph) {
  for (int n = 1; n < graph.size(); ++n) {
    const Layer& layer = graph.layer(n);
    if (!cuda_layer_kind(layer)) {
      return fmt::format("layer {} ({}): no GPU kernel for {} yet", graph.name(n), layer.describe(),
                         layer.kind());
    }
    if (const auto* c = dynamic_cast<const Conv2d*>(&layer);
        c != nullptr && const_cast<Conv2d*>(c)->folded_batchnorm() != nullptr) {
      return fmt::format("layer {}: folded BatchNorm (--fold-bn) runs on the CPU only",
                         graph.name(n));
    }
  }
  return "";
}

std::size_t cuda_activation_bytes(const Graph& graph) {
  std::size_t bytes = 0;
  for (int n = 0; n < graph.size(); ++n) {
    bytes += static_cast<std::size_t>(graph.output_shape(n).numel()) * sizeof(float);
  }
  return bytes;
}

CudaInference::CudaInference(const Graph& graph, const std::string& conv_algorithm, bool strict,
                             bool cuda_graph, bool find_engines)
    : graph_(graph), cuda_graph_(cuda_graph), find_engines_(find_engines) {
  if (const std::string why = cuda_unsupported(graph); !why.empty()) throw UsageError(why);
  cuda::require("--device cuda");
  if (!cudnn::available()) throw UsageError("--device cuda: " + cudnn::unavailable_reason());
  const std::size_t need = cuda_activation_bytes(graph);
  const cuda::DeviceProperties d = cuda::device_properties();
  if (need > d.free_bytes) {
    throw Error(fmt::format(
        "the activations of this input need {:.1f} GiB of device memory, "
        "{:.1f} GiB are free",
        static_cast<double>(need) / (1 << 30), static_cast<double>(d.free_bytes) / (1 << 30)));
  }
  nodes_.resize(static_cast<std::size_t>(graph.size()));
  info_.resize(static_cast<std::size_t>(graph.size()));
  nodes_[0] = std::make_unique<Node>();
  nodes_[0]->numel = graph.input_shape().numel();
  nodes_[0]->out = cuda::Buffer(static_cast<std::size_t>(nodes_[0]->numel));
  nodes_[0]->buffer = &nodes_[0]->out;
  device_bytes_ = static_cast<std::size_t>(nodes_[0]->numel) * sizeof(float);
  for (int n = 1; n < graph.size(); ++n) plan_node(n, conv_algorithm, strict);
  std::size_t workspace = 0;  // the convolutions share one cuDNN workspace (cudnn_cuda.cc)
  for (const CudaNodeInfo& i : info_) workspace = std::max(workspace, i.workspace_bytes);
  device_bytes_ += workspace;
  cudnn::fit_workspace(workspace);  // now, not inside a capture; what find held beyond, freed
  if (cuda_graph_) {
    plain_ = std::make_unique<cuda::CapturedWork>();
    timed_ = std::make_unique<cuda::CapturedWork>();
  }
}

CudaInference::~CudaInference() = default;

void CudaInference::plan_node(int n, const std::string& conv_algorithm, bool strict) {
  auto node = std::make_unique<Node>();
  Node& m = *node;
  // The layer's parameters are read, never written: const_cast only to reach the accessors
  // that hand out writable tensors (and mark packed CPU weights stale, harmless here).
  Layer& layer = const_cast<Graph&>(graph_).layer(n);
  const Shape& shape = graph_.output_shape(n);
  m.numel = shape.numel();
  m.mb = shape[0];
  for (int k : graph_.inputs(n)) {
    m.src.push_back(nodes_[static_cast<std::size_t>(k)]->data());
    m.src_numel.push_back(graph_.output_shape(k).numel());
  }
  const std::string name = graph_.name(n);
  m.kind = *cuda_layer_kind(layer);  // cuda_unsupported() refused the others
  switch (m.kind) {
    case Kind::kConv: {
      auto& c = dynamic_cast<Conv2d&>(layer);
      m.conv = std::make_unique<cudnn::ConvForward>(c.problem(), span_of(c.weight()));
      m.out = cuda::Buffer(static_cast<std::size_t>(m.numel));
      cudnn::FindOptions find;
      find.launch = cuda_graph_ ? cudnn::Launch::kGraph : cudnn::Launch::kEager;
      find.engines = find_engines_;
      info_[static_cast<std::size_t>(n)] = cudnn::choose_forward(
          *m.conv, c.problem(), name, conv_algorithm, strict, m.src[0], m.out.data(), find);
      device_bytes_ += static_cast<std::size_t>(c.problem().wei_numel()) * sizeof(float);
      if (c.has_bias()) {
        m.bias = cuda::to_device(span_of(c.bias()));
        m.affine = {shape[0], shape[1], shape[2] * shape[3]};
      }
      break;
    }
    case Kind::kBatchNorm: {
      auto& b = dynamic_cast<BatchNorm2d&>(layer);
      std::vector<double> scale(static_cast<std::size_t>(shape[1])), shift(scale.size());
      b.inference_scale_shift(scale.data(), shift.data());
      m.scale = cuda::to_device(std::vector<float>(scale.begin(), scale.end()));
      m.shift = cuda::to_device(std::vector<float>(shift.begin(), shift.end()));
      m.affine = {shape[0], shape[1], shape.numel() / (shape[0] * shape[1])};
      break;
    }
    case Kind::kActivation:
      m.activation = &dynamic_cast<Activation&>(layer).kernel();
      break;
    case Kind::kMaxPool:
    case Kind::kAvgPool:
    case Kind::kAdaptivePool: {
      const CudaPool p = cuda_pool(layer, graph_.output_shape(graph_.inputs(n)[0]));
      m.pool = p.shape;
      m.count_include_pad = p.count_include_pad;
      break;
    }
    case Kind::kLinear: {
      auto& l = dynamic_cast<Linear&>(layer);
      m.weight = cuda::to_device(span_of(l.weight()));  // [in, out]
      if (l.has_bias()) m.bias = cuda::to_device(span_of(l.bias()));
      m.gemm = {false, false, shape[0], shape[1], l.weight().shape()[0]};
      break;
    }
    case Kind::kRelu6:
    case Kind::kAdd:
    case Kind::kConcat:
      break;
    case Kind::kFlatten:
    case Kind::kDropout:
      m.buffer = nodes_[static_cast<std::size_t>(graph_.inputs(n)[0])]->buffer;
      break;
  }
  if (!alias(m.kind)) {
    if (m.out.size() == 0) m.out = cuda::Buffer(static_cast<std::size_t>(m.numel));
    m.buffer = &m.out;
  }
  device_bytes_ +=
      (m.out.size() + m.weight.size() + m.bias.size() + m.scale.size() + m.shift.size()) *
      sizeof(float);
  nodes_[static_cast<std::size_t>(n)] = std::move(node);
}

void CudaInference::set_input(std::span<const float> host) {
  if (static_cast<int64_t>(host.size()) != nodes_[0]->numel) {
    throw Error(fmt::format("CUDA inference: input of {} values, planned {}", host.size(),
                            nodes_[0]->numel));
  }
  nodes_[0]->out.upload(host);
}

void CudaInference::run_node(int n) {
  Node& m = *nodes_[static_cast<std::size_t>(n)];
  switch (m.kind) {
    case Kind::kConv:
      m.conv->run_on(info_[static_cast<std::size_t>(n)].algorithm, m.src[0], m.out.data());
      if (m.bias.size() > 0)
        cuda_kernels::channel_affine(m.affine, m.out.data(), nullptr, m.bias.data(), m.out.data());
      break;
    case Kind::kBatchNorm:
      cuda_kernels::channel_affine(m.affine, m.src[0], m.scale.data(), m.shift.data(),
                                   m.out.data());
      break;
    case Kind::kActivation:
      cuda_kernels::activation_forward(*m.activation, m.src[0], m.out.data(), m.numel);
      break;
    case Kind::kRelu6:
      cuda_kernels::clamp(m.src[0], m.out.data(), m.numel, 0.0f, 6.0f);
      break;
    case Kind::kMaxPool:
      cuda_kernels::maxpool2d_forward(m.pool, m.src[0], m.out.data());
      break;
    case Kind::kAvgPool:
      cuda_kernels::avgpool2d_forward(m.pool, m.count_include_pad, m.src[0], m.out.data());
      break;
    case Kind::kAdaptivePool:
      cuda_kernels::adaptive_avgpool2d_forward(m.pool, m.src[0], m.out.data());
      break;
    case Kind::kAdd:
      cuda_kernels::add(m.src[0], m.src[1], m.out.data(), m.numel);
      for (std::size_t i = 2; i < m.src.size(); ++i)
        cuda_kernels::add(m.out.data(), m.src[i], m.out.data(), m.numel);
      break;
    case Kind::kConcat: {
      int64_t offset = 0;
      for (std::size_t i = 0; i < m.src.size(); ++i) {
        const int64_t per_image = m.src_numel[i] / m.mb;
        cuda_kernels::concat_part(m.src[i], m.mb, per_image, m.out.data(), m.numel / m.mb, offset);
        offset += per_image;
      }
      break;
    }
    case Kind::kLinear: {
      const GemmShape& s = m.gemm;
      gemm_run(find_gemm("cublas", Device::kCuda),
               gemm_args(s, m.src[0], s.k, m.weight.data(), s.n, m.out.data(), s.n, nullptr, 1));
      if (m.bias.size() > 0)
        cuda_kernels::add_bias_rows(m.out.data(), m.bias.data(), s.m, s.n, s.n);
      break;
    }
    case Kind::kFlatten:
    case Kind::kDropout:
      break;
  }
}

void CudaInference::set_timeline(Timeline* timeline) {
  timeline_ = timeline;
  // One mark before the first node and at most one after each.
  if (timeline_ != nullptr) timeline_->reserve(static_cast<int>(nodes_.size()) + 1);
}

void CudaInference::run() {
  if (!cuda_graph_) return queue_pass();
  if (timeline_ != nullptr) {  // captured again: the marks are the timeline's next events
    timed_->capture([this] { queue_pass(); });
    timed_->launch();
    return;
  }
  prepare();
  plain_->launch();
}

void CudaInference::prepare() {
  if (cuda_graph_ && !plain_->current()) plain_->capture([this] { queue_pass(); });
}

std::size_t CudaInference::graph_nodes() const {
  return plain_ && plain_->captured() ? plain_->nodes() : 0;
}

void CudaInference::queue_pass() {
  if (timeline_ != nullptr) marks_.assign(nodes_.size(), timeline_->mark());
  for (int n = 1; n < static_cast<int>(nodes_.size()); ++n) {
    run_node(n);
    if (timeline_ == nullptr) continue;
    const auto i = static_cast<std::size_t>(n);
    marks_[i] = alias(nodes_[i]->kind) ? marks_[i - 1] : timeline_->mark();
  }
}

bool CudaInference::marked(int n) const {
  return n > 0 && !alias(nodes_.at(static_cast<std::size_t>(n))->kind);
}

std::vector<double> CudaInference::node_ms() {
  if (timeline_ == nullptr || marks_.empty()) fail("CUDA inference: node_ms() without a timed run");
  const std::vector<int64_t> t = timeline_->read();
  std::vector<double> ms(marks_.size(), 0.0);
  for (std::size_t n = 1; n < marks_.size(); ++n) {
    ms[n] = static_cast<double>(t.at(static_cast<std::size_t>(marks_[n])) -
                                t.at(static_cast<std::size_t>(marks_[n - 1]))) *
            1e-6;
  }
  marks_.clear();
  return ms;
}

double cuda_mark_cost_ms(bool cuda_graph, MarkKernels kernels) {
  cuda::require("CUDA event cost");
  constexpr int kKernels = 200, kRounds = 15;
  // cuda_kernels' launches: 256 threads a block, 4 floats a thread on aligned buffers (cudaMalloc's
  // are), so 256 floats are one block and 2048 floats two.
  const int64_t values = kernels == MarkKernels::kOneBlock
                             ? 256
                             : int64_t{2048} * cuda::device_properties().multiprocessors;
  cuda::Buffer a = cuda::to_device(std::vector<float>(values, 1.0f));
  cuda::Buffer y(values);
  const std::unique_ptr<Timeline> marks = cuda::make_event_timeline();
  const auto queue = [&](bool marked) {
    for (int k = 0; k < kKernels; ++k) {
      cuda_kernels::add(a.data(), a.data(), y.data(), values);
      if (marked) marks->mark();
    }
  };
  // [0] without marks, [1] with; the marks are read after each round (as graphs: the capture's,
  // once).
  std::vector<std::vector<double>> ms = cuda::time_alternately(
      2, [&](int m) { queue(m == 1); }, cuda_graph, 1, kRounds, [&] { (void)marks->read(); });
  const auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return std::max(0.0, (median(ms[1]) - median(ms[0])) / kKernels);
}

std::vector<float> CudaInference::output() const {
  cuda::synchronize();
  const Node& last = *nodes_.back();
  std::vector<float> out(static_cast<std::size_t>(last.numel));
  last.buffer->download(out);  // an alias (a trailing Flatten) reads its source's buffer
  return out;
}

}  // namespace nnperf
