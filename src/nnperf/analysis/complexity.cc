// Complexity from shapes: one rule per layer type gives the output shape and the counts, the
// graph gives the order, the fan-out and which inputs need a gradient. The convention (what
// each layer type counts) is written once, in complexity_convention(), and docs/complexity.md.
#include "nnperf/analysis/complexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/models/cnn_blocks.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/concat.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/dropout.h"
#include "nnperf/nn/flatten.h"
#include "nnperf/nn/global_pool.h"
#include "nnperf/nn/linear.h"
#include "nnperf/nn/pool.h"

namespace nnperf {
namespace {

constexpr double kBytesPerValue = 4.0;  // fp32
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Backward FLOPs per element of the activation table's rows (forward counts come from the table
// itself). Comparisons, exp, erf, tanh and log1p count 1 each, as the table's forward counts do.
struct ActivationBackward {
  const char* name;
  double flops_per_element;
};
constexpr ActivationBackward kActivationBackward[] = {
    {"ReLU", 1},       // select on x > 0
    {"LeakyReLU", 2},  // select, slope * dy
    {"ELU", 3},        // select, (y + 1) * dy
    {"Sigmoid", 3},    // y * (1 - y) * dy
    {"Tanh", 4},       // (1 - y) * (1 + y) * dy
    {"GELU", 11},      // Phi(x) 4 + phi(x) 4 + x * phi, +, * dy
    {"SiLU", 9},       // sigmoid 4 + 1 - s, x * (1 - s), + 1, s * (...), * dy
    {"Mish", 13},      // tanh(softplus) 3 + sigmoid 4 + t * t, 1 -, x * s, *, + t, * dy
};

constexpr std::array<OptimizerCost, 2> kOptimizerCosts = {{
    {"sgd", 4, 5, 1},    // m = mu m + g; w -= lr m
    {"adam", 13, 7, 2},  // m, v, sqrt, eps, update
}};

double numel(const Shape& s) {
  double n = 1;
  for (int64_t d : s.dims()) n *= static_cast<double>(d);
  return n;
}

// What one rule returns for one node. Backward FLOPs and reads are stated for the case where
// the work is needed; the graph decides whether it is (data gradient, trainable parameters).
struct Rule {
  Shape out;
  bool counted = true;
  bool backward_counted = true;
  std::string note;
  double macs = 0, flops = 0;
  double weight_values = 0;           // parameters read by the forward (and by dX)
  double backward_data = 0;           // FLOPs of dL/dinput
  double backward_weights = 0;        // FLOPs of dL/dweights
  bool reads_input_for_data = false;  // backward of dX reads the forward input
  bool reads_input_for_weights = false;
  double saved_values = 0;  // other saved values read by backward (argmax, mask)
  double torchinfo = 0;
};

[[noreturn]] void shape_error(const std::string& what) { throw Error(what); }

void expect_inputs(const Layer& l, std::span<const Shape> in, std::size_t n) {
  if (in.size() != n) {
    shape_error(fmt::format("{}: expected {} input(s), got {}", l.describe(), n, in.size()));
  }
}

void expect_nchw(const Layer& l, const Shape& x, int64_t channels) {
  if (x.rank() != 4 || (channels > 0 && x[1] != channels)) {
    shape_error(fmt::format("{}: expected input [mb, {}, h, w], got {}", l.describe(),
                            channels > 0 ? std::to_string(channels) : "c", x.str()));
  }
}

// folded_batchnorm() only reads the pointer; it is non-const because it hands out a mutable BN.
bool has_folded_bn(const Conv2d& c) { return const_cast<Conv2d&>(c).folded_batchnorm() != nullptr; }

Rule conv_rule(const Conv2d& c, std::span<const Shape> in, bool training) {
  expect_inputs(c, in, 1);
  const Shape& x = in[0];
  expect_nchw(c, x, c.in_channels());
  ConvProblem p;
  p.g = c.groups();
  p.mb = x[0];
  p.ic = c.in_channels();
  p.ih = x[2];
  p.iw = x[3];
  p.oc = c.out_channels();
  p.kh = c.kernel_h();
  p.kw = c.kernel_w();
  p.sh = p.sw = c.stride();
  p.ph = p.pw = c.padding();
  p.dh = p.dw = c.dilation();
  if (p.oh() < 1 || p.ow() < 1 || p.ih + 2 * p.ph < p.dh * (p.kh - 1) + 1 ||
      p.iw + 2 * p.pw < p.dw * (p.kw - 1) + 1) {
    shape_error(
        fmt::format("{}: input {} is too small: the kernel ({}x{}, dilation {}) is larger "
                    "than the padded input",
                    c.describe(), x.str(), p.kh, p.kw, p.dh));
  }
  const bool folded = has_folded_bn(c);
  if (folded && training) {
    shape_error(
        fmt::format("{}: a folded BatchNorm is for inference only; count training "
                    "without BN folding",
                    c.describe()));
  }
  Rule r;
  r.out = Shape{p.mb, p.oc, p.oh(), p.ow()};
  const double outputs = numel(r.out);
  const bool adds_bias = c.has_bias() || folded;
  r.macs = p.macs();
  r.flops = 2 * r.macs + (adds_bias ? outputs : 0);
  r.weight_values =
      static_cast<double>(p.wei_numel()) + (adds_bias ? static_cast<double>(p.oc) : 0);
  r.backward_data = 2 * r.macs;
  r.backward_weights = 2 * r.macs + (c.has_bias() ? outputs : 0);
  r.reads_input_for_weights = true;
  const double positions = static_cast<double>(p.mb) * static_cast<double>(p.oh() * p.ow());
  const double conv_params =
      static_cast<double>(p.wei_numel()) + (c.has_bias() ? static_cast<double>(p.oc) : 0);
  r.torchinfo = conv_params * positions +
                (folded ? static_cast<double>(p.mb) * 2.0 * static_cast<double>(p.oc) : 0);
  if (folded) r.note = "BatchNorm folded: its scale and shift are in the weights and bias";
  return r;
}

Rule linear_rule(const Linear& l, std::span<const Shape> in) {
  expect_inputs(l, in, 1);
  const Shape& x = in[0];
  if (x.rank() != 2 || x[1] != l.in_features()) {
    shape_error(
        fmt::format("{}: expected input [mb, {}], got {}", l.describe(), l.in_features(), x.str()));
  }
  Rule r;
  r.out = Shape{x[0], l.out_features()};
  const double rows = static_cast<double>(x[0]);
  const double outputs = numel(r.out);
  r.macs = rows * static_cast<double>(l.in_features()) * static_cast<double>(l.out_features());
  r.flops = 2 * r.macs + (l.has_bias() ? outputs : 0);
  r.weight_values = static_cast<double>(l.num_params());
  r.backward_data = 2 * r.macs;
  r.backward_weights = 2 * r.macs + (l.has_bias() ? outputs : 0);
  r.reads_input_for_weights = true;
  r.torchinfo = rows * static_cast<double>(l.num_params());
  return r;
}

Rule batchnorm_rule(const BatchNorm2d& b, std::span<const Shape> in, bool training) {
  expect_inputs(b, in, 1);
  const Shape& x = in[0];
  expect_nchw(b, x, b.channels());
  if (training && x[0] * x[2] * x[3] < 2) {
    shape_error(fmt::format("{}: training needs more than 1 value per channel, input is {}",
                            b.describe(), x.str()));
  }
  Rule r;
  r.out = x;
  const double n = numel(x);
  r.flops = (training ? 5.0 : 2.0) * n;
  r.weight_values = static_cast<double>(b.num_params());
  r.backward_data = 4 * n;
  r.backward_weights = 5 * n;
  r.reads_input_for_data = r.reads_input_for_weights = true;
  r.torchinfo = static_cast<double>(x[0]) * static_cast<double>(b.num_params());
  return r;
}

Rule elementwise_rule(const Layer& l, std::span<const Shape> in, double forward_per_element,
                      std::optional<double> backward_per_element) {
  expect_inputs(l, in, 1);
  Rule r;
  r.out = in[0];
  const double n = numel(in[0]);
  r.flops = forward_per_element * n;
  r.reads_input_for_data = true;
  if (backward_per_element) {
    r.backward_data = *backward_per_element * n;
  } else {
    r.backward_counted = false;
    r.note = fmt::format("no backward formula for activation {}", l.describe());
  }
  return r;
}

Rule activation_rule(const Activation& a, std::span<const Shape> in) {
  std::optional<double> backward;
  for (const ActivationBackward& b : kActivationBackward) {
    if (a.kernel().name == std::string_view(b.name)) backward = b.flops_per_element;
  }
  return elementwise_rule(a, in, a.kernel().flops_per_element, backward);
}

Rule pool_rule(const Pool2dBase& p, std::span<const Shape> in, bool is_max) {
  expect_inputs(p, in, 1);
  const Shape& x = in[0];
  expect_nchw(p, x, 0);
  const int64_t oh = pool_output_size(x[2], p.kernel(), p.stride(), p.padding(), p.ceil_mode());
  const int64_t ow = pool_output_size(x[3], p.kernel(), p.stride(), p.padding(), p.ceil_mode());
  if (oh < 1 || ow < 1) {
    shape_error(fmt::format("{}: input {} is too small: the output would be {}x{}", p.describe(),
                            x.str(), oh, ow));
  }
  Rule r;
  r.out = Shape{x[0], x[1], oh, ow};
  const double outputs = numel(r.out);
  const double window = static_cast<double>(p.kernel() * p.kernel());
  if (is_max) {
    r.flops = (window - 1) * outputs;
    r.backward_data = outputs;  // each output gradient added into its argmax
    r.saved_values = outputs;   // the argmax, one int32 per output
  } else {
    r.flops = (window + 1) * outputs;
    r.backward_data = (window + 1) * outputs;
  }
  return r;
}

Rule adaptive_pool_rule(const AdaptiveAvgPool2d& p, std::span<const Shape> in) {
  expect_inputs(p, in, 1);
  const Shape& x = in[0];
  expect_nchw(p, x, 0);
  // PyTorch's windows: [floor(i * in / out), ceil((i + 1) * in / out)).
  auto window_sum = [](int64_t in_size, int64_t out_size) {
    double total = 0;
    for (int64_t i = 0; i < out_size; ++i) {
      const int64_t start = (i * in_size) / out_size;
      const int64_t end = ((i + 1) * in_size + out_size - 1) / out_size;
      total += static_cast<double>(end - start);
    }
    return total;
  };
  Rule r;
  r.out = Shape{x[0], x[1], p.out_h(), p.out_w()};
  const double planes = static_cast<double>(x[0]) * static_cast<double>(x[1]);
  const double per_plane = window_sum(x[2], p.out_h()) * window_sum(x[3], p.out_w()) +
                           static_cast<double>(p.out_h() * p.out_w());
  r.flops = planes * per_plane;
  r.backward_data = planes * per_plane;
  return r;
}

Rule add_rule(std::span<const Shape> in) {
  if (in.size() < 2) shape_error(fmt::format("Add: expected 2 or more inputs, got {}", in.size()));
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (in[i] != in[0]) {
      shape_error(fmt::format("Add: every input must have the shape of input 0, {}; input {} is {}",
                              in[0].str(), i, in[i].str()));
    }
  }
  Rule r;
  r.out = in[0];
  r.flops = static_cast<double>(in.size() - 1) * numel(in[0]);
  return r;
}

Rule concat_rule(std::span<const Shape> in) {
  if (in.empty() || in[0].rank() < 2) shape_error("Concat: expected inputs [mb, c, ...]");
  Shape out = in[0];
  out[1] = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    bool same = in[i].rank() == in[0].rank();
    for (int d = 0; same && d < in[i].rank(); ++d) same = d == 1 || in[i][d] == in[0][d];
    if (!same) {
      shape_error(fmt::format(
          "Concat: every input must match input 0 {} except in dim 1 (channels); input {} is {}",
          in[0].str(), i, in[i].str()));
    }
    out[1] += in[i][1];
  }
  Rule r;
  r.out = out;
  return r;
}

Rule flatten_rule(std::span<const Shape> in) {
  if (in.size() != 1 || in[0].rank() < 2) {
    shape_error("Flatten: expected one input [mb, ...] of rank >= 2");
  }
  Rule r;
  int64_t rest = 1;
  for (int d = 1; d < in[0].rank(); ++d) {
    const auto p = checked_mul(rest, in[0][d]);
    if (!p) shape_error(fmt::format("Flatten: input {} has too many features", in[0].str()));
    rest = *p;
  }
  r.out = Shape{in[0][0], rest};
  return r;
}

Rule dropout_rule(const Dropout& d, std::span<const Shape> in, bool training) {
  expect_inputs(d, in, 1);
  Rule r;
  r.out = in[0];
  const double n = numel(in[0]);
  r.flops = training ? n : 0;
  r.backward_data = n;
  r.saved_values = n;  // the mask
  return r;
}

// The rule for one layer, or nullopt when its type has none.
std::optional<Rule> layer_rule(const Layer& l, std::span<const Shape> in, bool training) {
  if (const auto* c = dynamic_cast<const Conv2d*>(&l)) return conv_rule(*c, in, training);
  if (const auto* li = dynamic_cast<const Linear*>(&l)) return linear_rule(*li, in);
  if (const auto* b = dynamic_cast<const BatchNorm2d*>(&l)) return batchnorm_rule(*b, in, training);
  if (const auto* a = dynamic_cast<const Activation*>(&l)) return activation_rule(*a, in);
  if (dynamic_cast<const ReLU6*>(&l) != nullptr) return elementwise_rule(l, in, 2, 2);
  if (const auto* m = dynamic_cast<const MaxPool2d*>(&l)) return pool_rule(*m, in, true);
  if (const auto* p = dynamic_cast<const AvgPool2d*>(&l)) return pool_rule(*p, in, false);
  if (const auto* ap = dynamic_cast<const AdaptiveAvgPool2d*>(&l)) {
    return adaptive_pool_rule(*ap, in);
  }
  if (dynamic_cast<const Add*>(&l) != nullptr) return add_rule(in);
  if (dynamic_cast<const Concat*>(&l) != nullptr) return concat_rule(in);
  if (dynamic_cast<const Flatten*>(&l) != nullptr) return flatten_rule(in);
  if (const auto* d = dynamic_cast<const Dropout*>(&l)) return dropout_rule(*d, in, training);
  return std::nullopt;
}

// Builds registry model `m` for input_size x input_size after the checks that need no memory.
Graph build_checked(const ModelEntry& m, int64_t input_size, ModelOptions& o) {
  if (input_size < 1 || input_size > kComplexityMaxInputSize) {
    throw UsageError(fmt::format("input size {}: expected an integer in 1..{}", input_size,
                                 kComplexityMaxInputSize));
  }
  if (input_size < m.min_input_size) {
    throw UsageError(
        fmt::format("{}: input {}x{} is too small; the smallest input {} accepts is "
                    "{}x{}",
                    m.name, input_size, input_size, m.name, m.min_input_size, m.min_input_size));
  }
  const int64_t channels = o.input_shape.rank() > 0 ? o.input_shape[0] : m.default_input[0];
  o.input_shape = Shape{channels, input_size, input_size};
  // Building allocates the weights: check that they fit first (mlp: they grow with the input).
  int64_t params = m.params;
  if (std::string_view(m.name) == "mlp") {
    std::optional<int64_t> total = 0;
    std::optional<int64_t> width = checked_mul(channels, input_size);
    if (width) width = checked_mul(*width, input_size);
    std::vector<int64_t> widths = o.hidden;
    widths.push_back(o.classes > 0 ? o.classes : 10);
    for (int64_t next : widths) {
      if (!width || !total || next <= 0) break;
      std::optional<int64_t> layer = checked_mul(*width, next);
      if (layer) layer = checked_add(*layer, next);
      total = layer ? checked_add(*total, *layer) : std::nullopt;
      width = next;
    }
    params = total && width ? *total : std::numeric_limits<int64_t>::max() / 4;
  }
  try {
    check_memory(4 * params, fmt::format("building {} for input {}x{}x{} (its weights)", m.name,
                                         channels, input_size, input_size));
  } catch (const Error& e) {
    throw UsageError(e.what());  // the sizes asked for, not the machine, are the problem
  }
  return m.build(o);
}

}  // namespace

double LayerComplexity::flops_iteration() const {
  return flops + flops_backward_data + flops_backward_weights + optimizer_flops;
}
double LayerComplexity::bytes_iteration() const { return bytes + bytes_backward + optimizer_bytes; }
double ComplexityTotals::flops_iteration() const {
  return flops + flops_backward_data + flops_backward_weights + optimizer_flops;
}
double ComplexityTotals::bytes_iteration() const {
  return bytes + bytes_backward + optimizer_bytes;
}

namespace {

// The rule of node i, or (a type with no rule) a flagged one with the planned output shape.
Rule node_rule(const Graph& g, int i, std::span<const Shape> in, const Shape& input,
               bool training) {
  const Layer& layer = g.layer(i);
  std::optional<Rule> rule;
  try {
    rule = layer_rule(layer, in, training);
  } catch (const Error& e) {
    throw LayerRefusedError(fmt::format("node {} '{}': {}", i, g.name(i), e.what()), e.kind());
  }
  if (rule) return *rule;
  if (!g.planned() || g.input_shape() != input) {
    throw Error(fmt::format(
        "complexity: node {} '{}' is a {} ({}), a layer type with no rule in "
        "analysis/complexity.cc; plan the graph for {} first to read its shape from the plan",
        i, g.name(i), layer.kind(), layer.describe(), input.str()));
  }
  Rule r;
  r.out = g.output_shape(i);
  r.counted = r.backward_counted = false;
  r.note = fmt::format("no formula for layer type {}: not counted", layer.kind());
  return r;
}

// Forward counts, and for training the backward counts of a node whose inputs `need_grad` (per
// input: it depends on a parameter) and whose own parameters are trainable.
void count_node(LayerComplexity& l, const Rule& r, const std::vector<bool>& need_grad,
                bool training) {
  const bool data = std::find(need_grad.begin(), need_grad.end(), true) != need_grad.end();
  l.output_shape = r.out;
  l.counted = r.counted;
  l.backward_counted = r.backward_counted;
  l.note = r.note;
  l.output_bytes = kBytesPerValue * numel(r.out);
  l.data_gradient = training && data;
  if (!r.counted) {
    l.macs = l.flops = l.bytes = l.intensity_flops_per_byte = l.torchinfo_mult_adds = kNaN;
    if (training) l.flops_backward_data = l.flops_backward_weights = l.bytes_backward = kNaN;
    return;
  }
  double input_values = 0;
  for (const Shape& s : l.input_shapes) input_values += numel(s);
  l.macs = r.macs;
  l.flops = r.flops;
  l.bytes = kBytesPerValue * (input_values + r.weight_values + numel(r.out));
  l.intensity_flops_per_byte = l.bytes > 0 ? l.flops / l.bytes : 0;
  l.torchinfo_mult_adds = r.torchinfo;
  const bool trainable = l.params > 0;
  if (!training || !(data || trainable)) return;  // no backward runs for this node
  if (!r.backward_counted) {
    l.flops_backward_data = l.flops_backward_weights = l.bytes_backward = kNaN;
    return;
  }
  l.flops_backward_data = data ? r.backward_data : 0;
  l.flops_backward_weights = trainable ? r.backward_weights : 0;
  double reads = numel(r.out) + r.saved_values;  // dY and saved values (argmax, mask)
  if ((data && r.reads_input_for_data) || (trainable && r.reads_input_for_weights)) {
    reads += input_values;
  }
  if (data) reads += r.weight_values;
  double writes = trainable ? static_cast<double>(l.params) : 0;  // dW
  for (std::size_t s = 0; s < need_grad.size(); ++s) {
    if (need_grad[s]) writes += numel(l.input_shapes[s]);  // dX
  }
  l.bytes_backward = kBytesPerValue * (reads + writes);
}

// Fan-out: the consumer that runs backward first (the latest node) writes the producer's
// gradient, every other consumer adds its part in: numel FLOPs, two tensors read, one written.
void count_fan_out(const Graph& g, const std::vector<bool>& needs_grad,
                   std::vector<LayerComplexity>& layers) {
  const int n = g.size();
  for (int k = 1; k < n; ++k) {
    if (!needs_grad[static_cast<std::size_t>(k)]) continue;
    const double values = numel(layers[static_cast<std::size_t>(k - 1)].output_shape);
    bool first = true;
    for (int j = n - 1; j > k; --j) {
      for (int in : g.inputs(j)) {
        if (in != k) continue;
        if (first) {
          first = false;
          continue;
        }
        LayerComplexity& consumer = layers[static_cast<std::size_t>(j - 1)];
        consumer.flops_backward_data += values;
        consumer.bytes_backward += 3 * kBytesPerValue * values;
      }
    }
  }
}

void sum_totals(ModelComplexity& c, const std::vector<bool>& needs_grad, int64_t params) {
  const bool training = c.options.training;
  ComplexityTotals& t = c.totals;
  t.params = params;
  t.trainable_params = params;  // nnperf has no frozen parameters
  t.input_bytes = kBytesPerValue * numel(c.input);
  t.param_bytes = kBytesPerValue * static_cast<double>(params);
  if (training) {
    t.gradient_bytes = t.param_bytes;
    t.optimizer_state_bytes = t.param_bytes * find_optimizer_cost(c.options.optimizer).state_values;
  }
  for (const LayerComplexity& l : c.layers) {
    t.forward_activation_bytes += l.output_bytes;
    if (needs_grad[static_cast<std::size_t>(l.node)]) t.backward_activation_bytes += l.output_bytes;
    if (l.params > 0) t.torchinfo_forward_backward_bytes += 2 * l.output_bytes;
    t.optimizer_flops += l.optimizer_flops;
    t.optimizer_bytes += l.optimizer_bytes;
    if (!l.counted) {
      t.uncounted_layers.push_back(l.name);
      continue;
    }
    t.macs += l.macs;
    t.flops += l.flops;
    t.bytes += l.bytes;
    t.torchinfo_mult_adds += l.torchinfo_mult_adds;
    if (!training) continue;
    if (std::isnan(l.flops_backward_data) || std::isnan(l.bytes_backward)) {
      t.uncounted_layers.push_back(l.name + " (backward)");
      continue;
    }
    t.flops_backward_data += l.flops_backward_data;
    t.flops_backward_weights += l.flops_backward_weights;
    t.bytes_backward += l.bytes_backward;
  }
}

}  // namespace

ModelComplexity analyze_complexity(const Graph& g, const Shape& input,
                                   const ComplexityOptions& options, std::string name) {
  const bool training = options.training;
  double optimizer_flops = 0, optimizer_values = 0;
  if (training) {
    const OptimizerCost& cost = find_optimizer_cost(options.optimizer);
    optimizer_flops = cost.flops;
    optimizer_values = cost.values;
  }
  bool positive = input.rank() >= 2;
  for (int64_t d : input.dims()) positive = positive && d >= 1;
  if (!positive) {
    throw Error(
        fmt::format("complexity: input shape {} must be [batch, ...] with every "
                    "dimension >= 1",
                    input.str()));
  }
  if (g.size() < 2) throw Error("complexity: the graph has no layers");

  ModelComplexity c;
  c.model = std::move(name);
  c.input = input;
  c.options = options;
  if (options.training) c.options.optimizer = find_optimizer_cost(options.optimizer).name;
  std::vector<Shape> shapes{input};
  std::vector<bool> needs_grad{false};  // per node: its output depends on a parameter
  for (int i = 1; i < g.size(); ++i) {
    const Layer& layer = g.layer(i);
    LayerComplexity l;
    l.node = i;
    l.name = g.name(i);
    l.type = layer.kind();
    l.describe = layer.describe();
    l.params = layer.num_params();
    std::vector<bool> input_needs_grad;
    for (int in : g.inputs(i)) {
      l.input_shapes.push_back(shapes[static_cast<std::size_t>(in)]);
      input_needs_grad.push_back(needs_grad[static_cast<std::size_t>(in)]);
    }
    const Rule r = node_rule(g, i, l.input_shapes, input, training);
    count_node(l, r, input_needs_grad, training);
    if (training) {
      l.optimizer_flops = optimizer_flops * static_cast<double>(l.params);
      l.optimizer_bytes = kBytesPerValue * optimizer_values * static_cast<double>(l.params);
    }
    if (const auto* conv = dynamic_cast<const Conv2d*>(&layer)) {
      c.fold_bn = c.fold_bn || has_folded_bn(*conv);
    }
    shapes.push_back(r.out);
    needs_grad.push_back(l.params > 0 || std::find(input_needs_grad.begin(), input_needs_grad.end(),
                                                   true) != input_needs_grad.end());
    c.layers.push_back(std::move(l));
  }
  if (training) count_fan_out(g, needs_grad, c.layers);
  sum_totals(c, needs_grad, g.num_params());
  return c;
}

std::span<const OptimizerCost> optimizer_costs() { return kOptimizerCosts; }

const OptimizerCost& find_optimizer_cost(std::string_view name) {
  constexpr Registry<OptimizerCost> registry{kOptimizerCosts};
  if (const OptimizerCost* row = registry.find(name)) return *row;
  throw UsageError(fmt::format("optimizer '{}': expected {}", name, registry.alternatives()));
}

ModelComplexity model_complexity(std::string_view model, int64_t input_size, int64_t batch,
                                 const ComplexityOptions& options, ModelOptions model_options) {
  const ModelEntry& m = find_model(model);
  if (batch < 1 || batch > kComplexityMaxBatch) {
    throw UsageError(
        fmt::format("batch size {}: expected an integer in 1..{}", batch, kComplexityMaxBatch));
  }
  if (options.training) {
    (void)find_optimizer_cost(options.optimizer);
    if (model_options.fold_bn) {
      throw UsageError("BatchNorm folding is for inference only: drop it or drop training");
    }
  }
  Graph g = build_checked(m, input_size, model_options);
  const Shape& s = model_options.input_shape;
  ModelComplexity c = analyze_complexity(g, Shape{batch, s[0], s[1], s[2]}, options, m.name);
  c.fold_bn = model_options.fold_bn;
  return c;
}

nlohmann::json complexity_summary(std::span<const std::string> models,
                                  std::span<const int64_t> batch_sizes, int64_t input_size,
                                  const ModelOptions& model_options) {
  for (int64_t b : batch_sizes) {
    if (b < 1 || b > kComplexityMaxBatch) {
      throw UsageError(
          fmt::format("batch size {}: expected an integer in 1..{}", b, kComplexityMaxBatch));
    }
  }
  nlohmann::json summary = nlohmann::json::object();
  for (const std::string& name : models) {
    const ModelEntry& m = find_model(name);
    ModelOptions o = model_options;
    const int64_t size = input_size > 0 ? input_size : m.default_input[1];
    const Graph g = build_checked(m, size, o);
    for (int64_t b : batch_sizes) {
      const Shape& s = o.input_shape;
      const ModelComplexity c = analyze_complexity(g, Shape{b, s[0], s[1], s[2]}, {}, m.name);
      // The file's mult-adds are torchinfo's (its authors wrote it from torchinfo.summary).
      const double macs = c.totals.torchinfo_mult_adds;
      const double per_sample = macs / static_cast<double>(b);
      summary[m.name][std::to_string(b)] = {
          {"params", c.totals.params},
          {"mult_adds_per_batch_forward", macs},
          {"mult_adds_per_sample_forward", per_sample},
          {"flops_per_batch_forward", 2 * macs},
          {"flops_per_sample_forward", 2 * per_sample},
      };
    }
  }
  return summary;
}

}  // namespace nnperf
