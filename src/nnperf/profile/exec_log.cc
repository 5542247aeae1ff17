// The exec log (NNPERF_VERBOSE=exec) and the layer columns it shares with the layers CSV.
#include "nnperf/profile/exec_log.h"

#include <fmt/format.h>

#include <atomic>

#include "nnperf/core/verbose.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/linear.h"
#include "nnperf/core/clock.h"

namespace nnperf {

namespace {

std::string hw(int64_t h, int64_t w) {
  return h == w ? std::to_string(h) : fmt::format("{}x{}", h, w);
}

// "1x64x56x56" (Shape::str() has commas, which would split a CSV-like line).
std::string dims(const Shape& s) {
  std::string out;
  for (int i = 0; i < s.rank(); ++i) out += (i > 0 ? "x" : "") + std::to_string(s[i]);
  return out;
}

constexpr const char* kColumns =
    "model,algorithm,input_size,phase,layer,layer_type,in_channels,out_channels,kernel_size,"
    "stride,padding,algorithm_used,problem,time_ms";

}  // namespace

LayerColumns layer_columns(const Graph& graph, int node) {
  const Layer& layer = graph.layer(node);
  const Shape& out = graph.output_shape(node);
  const Shape& in = graph.output_shape(graph.inputs(node).front());
  LayerColumns c;
  c.layer_type = layer.kind();
  if (in.rank() >= 2) c.in_channels = std::to_string(in[1]);
  if (out.rank() >= 2) c.out_channels = std::to_string(out[1]);
  if (const auto* conv = dynamic_cast<const Conv2d*>(&layer)) {
    const ConvProblem p = conv->problem();
    c.is_conv = true;
    c.kernel_size = hw(p.kh, p.kw);
    c.stride = hw(p.sh, p.sw);
    c.padding = hw(p.ph, p.pw);
    c.algorithm_used = conv->algorithm() != nullptr ? conv->algorithm()->name : "";
    c.fallback_reason = conv->fallback_reason();
    c.problem = p.str();
    c.workspace_bytes = std::to_string(conv->workspace_bytes());
    if (conv->backward_data_algorithm() != nullptr) {
      c.backward_data = conv->backward_data_algorithm()->name;
      c.backward_weights = conv->backward_weights_algorithm()->name;
    }
  }
  return c;
}

std::string input_size_column(const Shape& input) {
  if (input.rank() == 4) return hw(input[2], input[3]);
  return input.rank() >= 2 ? std::to_string(input[input.rank() - 1]) : dims(input);
}

ExecLog::ExecLog(const Graph& graph, std::string model, std::string algorithm, std::FILE* out)
    : graph_(graph), model_(std::move(model)), algorithm_(std::move(algorithm)), out_(out) {}

void ExecLog::before(int node, Phase phase) {
  const auto i = static_cast<std::size_t>(node);
  if (begin_ns_.size() <= i) begin_ns_.resize(static_cast<std::size_t>(graph_.size()), 0);
  begin_ns_[i] = now_ns();
  if (next_ != nullptr) next_->before(node, phase);
}

void ExecLog::after(int node, Phase phase) {
  if (next_ != nullptr) next_->after(node, phase);
  const int64_t end = now_ns();
  const double ms = static_cast<double>(end - begin_ns_[static_cast<std::size_t>(node)]) * 1e-6;

  // Formatting happens outside both intervals (this one and the inner hook's).
  const bool forward = phase == Phase::kForward;
  LayerColumns c = layer_columns(graph_, node);
  const Layer& layer = graph_.layer(node);
  if (c.is_conv && !forward) {
    // Conv2d's backward runs a row of each backward registry (planned for training).
    c.algorithm_used = c.backward_data + "+" + c.backward_weights;
  } else if (const auto* lin = dynamic_cast<const Linear*>(&layer)) {
    const int64_t mb = graph_.output_shape(node)[0];
    const int64_t in = lin->in_features(), out = lin->out_features();
    c.algorithm_used = lin->gemm() != nullptr ? lin->gemm()->name : "";
    c.problem = forward ? GemmShape{false, false, mb, out, in}.str()
                        : GemmShape{true, false, in, out, mb}.str() + "+" +
                              GemmShape{false, true, mb, in, out}.str();
  }
  if (c.problem.empty()) {  // no problem descriptor: the shapes, "1x64x56x56->1x64x28x28"
    for (std::size_t s = 0; s < graph_.inputs(node).size(); ++s) {
      c.problem += (s > 0 ? "+" : "") + dims(graph_.output_shape(graph_.inputs(node)[s]));
    }
    c.problem += "->" + dims(graph_.output_shape(node));
  }
  static std::atomic<bool> template_printed{false};
  if (!template_printed.exchange(true)) {
    fmt::print(out_, "nnperf_verbose,info,template:{}\n", kColumns);
  }
  fmt::print(out_, "nnperf_verbose,exec,{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4f}\n", model_,
             algorithm_, input_size_column(graph_.input_shape()), forward ? "forward" : "backward",
             graph_.name(node), c.layer_type, c.in_channels, c.out_channels, c.kernel_size,
             c.stride, c.padding, c.algorithm_used, c.problem, ms);
  ++lines_;
}

std::unique_ptr<ExecLog> exec_log_from_env(const Graph& graph, std::string model,
                                           std::string algorithm) {
  if (!verbose_enabled("exec")) return nullptr;
  return std::make_unique<ExecLog>(graph, std::move(model), std::move(algorithm));
}

GraphHook* with_exec_log(ExecLog* log, GraphHook* hook) {
  if (log == nullptr) return hook;
  log->set_next(hook);
  return log;
}

}  // namespace nnperf
