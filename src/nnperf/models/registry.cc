// The model registry table. Builders adapt ModelOptions to each model's own builder signature.
// Minimum input sizes (H = W), from the output-size rules of each layer:
//   alexnet 63: conv 11/4/p2 -> 15 -> pool 3/2 -> 7 -> pool -> 3 -> pool -> 1 (62 gives 14 -> 2).
//   vgg16 32: five 2x2 max pools (2^5).
//   resnet*, mobilenet_v2 1: every strided layer is padded so that ceil-like (x-1)/2+1 >= 1.
//   googlenet 15: conv 7/2/p3 -> 8 -> ceil pool 3/2 -> 4 -> pool -> 2 -> pool -> 1.
//   densenet121 29: conv 7/2/p3 -> 15 -> pool 3/2/p1 -> 8 -> three 2x2 avg pools -> 1.
#include "nnperf/models/registry.h"

#include <fmt/format.h>

#include "nnperf/core/error.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/models/cnn.h"
#include "nnperf/models/mlp.h"

namespace nnperf {
namespace {

Graph build_mlp_model(const ModelOptions& o) {
  const Shape input = o.input_shape.rank() == 0 ? Shape{1, 28, 28} : o.input_shape;
  for (int64_t d : input.dims()) {
    if (d <= 0) {
      throw UsageError(
          fmt::format("mlp: input shape {} has a non-positive dimension", input.str()));
    }
  }
  // A flat feature vector needs no Flatten node; images do.
  const bool flatten = input.rank() > 1;
  return build_mlp(input.numel(), o.hidden, o.classes == 0 ? 10 : o.classes,
                   find_activation(o.activation), flatten, o.linear_init);
}

CnnOptions cnn_options(const char* model, const ModelOptions& o) {
  CnnOptions c;
  if (o.input_shape.rank() != 0) {
    if (o.input_shape.rank() != 3 || o.input_shape[0] <= 0) {
      throw UsageError(fmt::format("{}: the input shape must be C x H x W (one image), got {}",
                                   model, o.input_shape.str()));
    }
    c.in_channels = o.input_shape[0];
  }
  if (o.classes < 0) throw UsageError(fmt::format("{}: classes must be positive", model));
  if (o.classes > 0) c.classes = o.classes;
  c.fold_bn = o.fold_bn;
  return c;
}

Graph alexnet(const ModelOptions& o) { return build_alexnet(cnn_options("alexnet", o)); }
Graph vgg16(const ModelOptions& o) { return build_vgg16(cnn_options("vgg16", o)); }
Graph resnet18(const ModelOptions& o) { return build_resnet(18, cnn_options("resnet18", o)); }
Graph resnet34(const ModelOptions& o) { return build_resnet(34, cnn_options("resnet34", o)); }
Graph resnet50(const ModelOptions& o) { return build_resnet(50, cnn_options("resnet50", o)); }
Graph resnet152(const ModelOptions& o) { return build_resnet(152, cnn_options("resnet152", o)); }
Graph googlenet(const ModelOptions& o) { return build_googlenet(cnn_options("googlenet", o)); }
Graph densenet121(const ModelOptions& o) {
  return build_densenet121(cnn_options("densenet121", o));
}
Graph mobilenet_v2(const ModelOptions& o) {
  return build_mobilenet_v2(cnn_options("mobilenet_v2", o));
}

constexpr std::array<int64_t, 3> kImageNet = {3, 224, 224};

constexpr ModelEntry kModels[] = {
    {"mlp",
     "multi-layer perceptron: [Flatten] -> (Linear -> activation) x hidden -> Linear",
     &build_mlp_model,
     {1, 28, 28},
     1,
     575050},
    {"alexnet", "AlexNet (torchvision): 5 convs (11x11/4 stem), 3 max pools, 3 Linear", &alexnet,
     kImageNet, 63, 61100840},
    {"vgg16", "VGG-16 (torchvision, config D, no BN): 13 3x3 convs, 5 max pools, 3 Linear", &vgg16,
     kImageNet, 32, 138357544},
    {"resnet18", "ResNet-18 (torchvision): BasicBlocks 2-2-2-2, BN, global avg pool", &resnet18,
     kImageNet, 1, 11689512},
    {"resnet34", "ResNet-34 (torchvision): BasicBlocks 3-4-6-3, BN, global avg pool", &resnet34,
     kImageNet, 1, 21797672},
    {"resnet50", "ResNet-50 v1.5 (torchvision): Bottlenecks 3-4-6-3, stride on the 3x3", &resnet50,
     kImageNet, 1, 25557032},
    {"resnet152", "ResNet-152 v1.5 (torchvision): Bottlenecks 3-8-36-3", &resnet152, kImageNet, 1,
     60192808},
    {"googlenet", "GoogLeNet / Inception v1 (torchvision, eval: no aux heads), 9 inception blocks",
     &googlenet, kImageNet, 15, 6624904},
    {"densenet121", "DenseNet-121 (torchvision): growth 32, dense blocks 6-12-24-16", &densenet121,
     kImageNet, 29, 7978856},
    {"mobilenet_v2", "MobileNetV2 (torchvision, width 1.0): inverted residuals, depthwise 3x3",
     &mobilenet_v2, kImageNet, 1, 3504872},
};

constexpr Registry<ModelEntry> kRegistry{kModels};

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::span<const ModelEntry> model_registry() { return kModels; }

std::string model_names() { return kRegistry.names(); }

const ModelEntry& find_model(std::string_view name) {
  if (const ModelEntry* m = kRegistry.find(name)) return *m;
  std::string valid;
  for (const ModelEntry& m : kModels) {
    if (!valid.empty()) valid += ", ";
    valid += fmt::format("{} ({} parameters)", m.name, with_commas(m.params));
  }
  throw UsageError(fmt::format("unknown model '{}': expected one of {}", name, valid));
}

void plan_model(const ModelEntry& m, Graph& g, const Shape& input, const PlanContext& ctx) {
  const bool too_small =
      input.rank() == 4 && (input[2] < m.min_input_size || input[3] < m.min_input_size);
  try {
    g.plan(input, ctx);
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    if (too_small) {
      throw UsageError(fmt::format(
          "{}: input {}x{} is too small; the smallest input {} accepts is {}x{} ({})", m.name,
          input[2], input[3], m.name, m.min_input_size, m.min_input_size, e.what()));
    }
    throw Error(fmt::format("{}: {}", m.name, e.what()), e.kind());
  }
}

}  // namespace nnperf
