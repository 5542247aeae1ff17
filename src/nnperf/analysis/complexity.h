// Model complexity from shapes alone: per layer (graph node, in execution order) the parameters,
// multiply-accumulates, FLOPs, minimum bytes moved and arithmetic intensity of the forward pass
// and, for training, of the backward pass (data and weight gradients counted per layer) and the
// optimizer step; totals as torchinfo prints them; the roofline project's summary.json layout.
// Nothing is planned or allocated beyond building the model (its weights): shapes are inferred
// from each layer's own rule (conv arithmetic, pool output size, ...), so any size is counted. The
// counting convention is stated once in complexity_convention() and docs/complexity.md.
//
// Records: complexity_json() turns a ModelComplexity into {"context": {...}, "records": [...]};
// the reporters (complexity_table, complexity_csv, ...) render from that JSON only, so saved
// files can be re-rendered without recomputing anything.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/tensor.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/graph.h"

namespace nnperf {

inline constexpr int64_t kComplexityMaxInputSize = 65536;
inline constexpr int64_t kComplexityMaxBatch = int64_t{1} << 24;

struct ComplexityOptions {
  bool training = false;          // count the backward pass and the optimizer step too
  std::string optimizer = "sgd";  // when training: a row of optimizer_costs()
};

// What one optimizer step costs per parameter: one row per optimizer of train/optimizer.h's
// table (a test checks the two name the same optimizers).
struct OptimizerCost {
  const char* name;
  double flops;         // per parameter and step
  double values;        // float values read and written per parameter and step
  double state_values;  // state kept per parameter (SGD: the momentum buffer; Adam: m and v)
};
std::span<const OptimizerCost> optimizer_costs();
// The row `name` names (core/name_registry.h's rule); UsageError "optimizer 'x': expected sgd
// or adam" otherwise.
const OptimizerCost& find_optimizer_cost(std::string_view name);

// One graph node. Counts are for the whole batch. A layer type without a formula has
// counted == false and NaN in every count (null in JSON), never a silent zero; a formula that
// exists only for the forward pass leaves the backward counts NaN with backward_counted false.
struct LayerComplexity {
  int node = 0;          // graph node id (1 = first layer)
  std::string name;      // graph node name: the `layer` column of profile's layers CSV
  std::string type;      // Layer::kind(): the `layer_type` column
  std::string describe;  // Layer::describe()
  std::vector<Shape> input_shapes;
  Shape output_shape;
  int64_t params = 0;
  bool counted = true;
  bool backward_counted = true;
  std::string note;  // why a count is missing, or what was assumed ("BN folded")
  double macs = 0;   // conv and linear multiply-accumulates (0 for other layers)
  double flops = 0;  // forward
  double bytes = 0;  // forward minimum: fp32 inputs + weights + outputs
  double intensity_flops_per_byte = 0;
  double output_bytes = 0;         // this node's output (activation memory)
  double torchinfo_mult_adds = 0;  // torchinfo's "Mult-Adds" column for this layer
  // Training only (zero otherwise):
  bool data_gradient = false;  // some input depends on a parameter, so dL/dinput is computed
  double flops_backward_data = 0;
  double flops_backward_weights = 0;
  double bytes_backward = 0;  // dY + saved tensors + weights read, dX + dW written
  double optimizer_flops = 0;
  double optimizer_bytes = 0;
  // forward + backward + optimizer (training), forward alone otherwise.
  double flops_iteration() const;
  double bytes_iteration() const;
};

struct ComplexityTotals {
  int64_t params = 0, trainable_params = 0;
  double macs = 0, flops = 0, bytes = 0;  // forward, per batch
  double flops_backward_data = 0, flops_backward_weights = 0, bytes_backward = 0;
  double optimizer_flops = 0, optimizer_bytes = 0;
  double input_bytes = 0;
  double forward_activation_bytes = 0;   // every node's output, as a training forward keeps them
  double backward_activation_bytes = 0;  // gradients of the outputs that need one
  double param_bytes = 0;
  double gradient_bytes = 0;         // training: one gradient per trainable parameter
  double optimizer_state_bytes = 0;  // training: SGD momentum 1x, Adam 2x the parameters
  double torchinfo_mult_adds = 0;    // torchinfo's "Total mult-adds" (see the convention)
  double torchinfo_forward_backward_bytes = 0;  // torchinfo's "Forward/backward pass size"
  std::vector<std::string> uncounted_layers;    // nodes left out of the sums (no formula)
  double flops_iteration() const;
  double bytes_iteration() const;
};

struct ModelComplexity {
  std::string model;  // registry name, or what the caller named the graph
  Shape input;        // [batch, C, H, W] (or [batch, features])
  ComplexityOptions options;
  bool fold_bn = false;
  std::vector<LayerComplexity> layers;  // execution order
  ComplexityTotals totals;
  int64_t batch() const { return input[0]; }
};

// A layer's shape rule refused its input (a shape that does not fit it, or one it cannot train,
// such as a BatchNorm left with one value per channel). what() is labelled
// "complexity: node N 'name': why"; refusal() is the same without the label, for a caller that
// words the message in its own terms.
class LayerRefusedError : public Error {
 public:
  LayerRefusedError(std::string refusal, Kind kind)
      : Error("complexity: " + refusal, kind), refusal_(std::move(refusal)) {}
  const std::string& refusal() const { return refusal_; }

 private:
  std::string refusal_;
};

// Counts `g` for `input` (batch included). Shapes come from each layer's rule; a layer type with
// no rule is read from g's plan when g is planned for exactly `input`, and throws Error naming
// the node otherwise. Throws LayerRefusedError naming the node when a shape does not fit a layer.
ModelComplexity analyze_complexity(const Graph& g, const Shape& input,
                                   const ComplexityOptions& options = {}, std::string name = "");

// Builds registry model `model` (ModelOptions as given; input_shape is set from input_size, its
// channel count kept) and counts it for `batch` images of input_size x input_size. Validates
// before building, throwing UsageError: input_size in 1..kComplexityMaxInputSize and at least the
// model's minimum, batch in 1..kComplexityMaxBatch, the optimizer name, fold_bn without training,
// and that the model's weights (which building allocates; the mlp's grow with the input) fit in
// the memory available.
ModelComplexity model_complexity(std::string_view model, int64_t input_size, int64_t batch,
                                 const ComplexityOptions& options = {},
                                 ModelOptions model_options = {});

// Forward counts of every model x batch size (input_size 0 = each model's default), each model
// built once: the roofline project's summary.json layout,
//   {model: {"<batch>": {params, mult_adds_per_batch_forward, mult_adds_per_sample_forward,
//                        flops_per_batch_forward, flops_per_sample_forward}}}
// with that file's definitions: mult-adds as torchinfo counts them (conv and linear MACs plus one
// per bias element at each output position and per BatchNorm parameter per sample; ResNet-50
// 4,089,238,376 per sample against 4,089,184,256 conv + linear) and FLOPs = 2 x mult-adds.
nlohmann::json complexity_summary(std::span<const std::string> models,
                                  std::span<const int64_t> batch_sizes, int64_t input_size = 0,
                                  const ModelOptions& model_options = {});

// The counting convention: {"flops_per_mac": 2, "summary": [lines], "rules": {topic: text}}.
nlohmann::json complexity_convention();

// {"context": {model, input_shape, batch_size, input_size, training, optimizer, fold_bn,
//  convention, totals}, "records": [one per layer]}; counts of uncounted layers are null.
nlohmann::json complexity_json(const ModelComplexity& c);

// ---- reporters: render the JSON above (or a saved copy of it) ----
// The terminal table: the convention summary once at the top, one row per record, then the
// totals as torchinfo prints them.
std::string complexity_table(const nlohmann::json& doc);
// The CSV: a header and one row per record (numbers as shortest round-trip text, null empty).
struct ComplexityCsv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
ComplexityCsv complexity_csv(const nlohmann::json& doc);
// One line per model x batch size of a complexity_summary() document.
std::string complexity_summary_table(const nlohmann::json& summary);

}  // namespace nnperf
