// ResNet-18/34 (BasicBlock) and ResNet-50/101/152 (Bottleneck with the stride on the 3x3 conv,
// torchvision's "v1.5"). Convs have no bias and are He-normal (fan_out) as torchvision
// initialises them; a projection shortcut (downsample.0 conv 1x1 + downsample.1 BN) appears when
// the stride or the channel count changes. A module that torchvision calls several times (the
// block's relu) gets torch.fx-style suffixes: relu, relu_1, relu_2.
#include <fmt/format.h>

#include <array>

#include "nnperf/core/error.h"
#include "nnperf/models/cnn.h"

namespace nnperf {

namespace {

// Returns the block's output node; `inplanes` becomes the block's output channels.
int basic_block(CnnBuilder& b, const std::string& p, int x, int64_t& inplanes, int64_t planes,
                int64_t stride) {
  int y = b.conv_bn(p + ".conv1", p + ".bn1", x, inplanes, planes, 3, stride, 1);
  y = b.relu(p + ".relu", y);
  y = b.conv_bn(p + ".conv2", p + ".bn2", y, planes, planes, 3, 1, 1);
  int shortcut = x;
  if (stride != 1 || inplanes != planes) {
    shortcut = b.conv_bn(p + ".downsample.0", p + ".downsample.1", x, inplanes, planes, 1, stride);
  }
  y = b.add(p + ".add", {y, shortcut});
  inplanes = planes;
  return b.relu(p + ".relu_1", y);
}

int bottleneck(CnnBuilder& b, const std::string& p, int x, int64_t& inplanes, int64_t planes,
               int64_t stride) {
  constexpr int64_t kExpansion = 4;
  const int64_t width = planes;  // base_width 64, groups 1
  int y = b.conv_bn(p + ".conv1", p + ".bn1", x, inplanes, width, 1);
  y = b.relu(p + ".relu", y);
  y = b.conv_bn(p + ".conv2", p + ".bn2", y, width, width, 3, stride, 1);
  y = b.relu(p + ".relu_1", y);
  y = b.conv_bn(p + ".conv3", p + ".bn3", y, width, planes * kExpansion, 1);
  int shortcut = x;
  if (stride != 1 || inplanes != planes * kExpansion) {
    shortcut = b.conv_bn(p + ".downsample.0", p + ".downsample.1", x, inplanes, planes * kExpansion,
                         1, stride);
  }
  y = b.add(p + ".add", {y, shortcut});
  inplanes = planes * kExpansion;
  return b.relu(p + ".relu_2", y);
}

}  // namespace

Graph build_resnet(int depth, const CnnOptions& o) {
  std::array<int, 4> blocks{};
  bool bottlenecks = true;
  switch (depth) {
    case 18:
      blocks = {2, 2, 2, 2};
      bottlenecks = false;
      break;
    case 34:
      blocks = {3, 4, 6, 3};
      bottlenecks = false;
      break;
    case 50:
      blocks = {3, 4, 6, 3};
      break;
    case 101:
      blocks = {3, 4, 23, 3};
      break;
    case 152:
      blocks = {3, 8, 36, 3};
      break;
    default:
      throw UsageError(fmt::format("resnet: depth {} is not one of 18, 34, 50, 101, 152", depth));
  }
  Graph g;
  CnnBuilder b(g, o, ConvInit::kHeNormalFanOut);
  int x = b.conv_bn("conv1", "bn1", Graph::kInput, o.in_channels, 64, 7, 2, 3);
  x = b.relu("relu", x);
  x = b.max_pool("maxpool", x, 3, 2, 1);
  int64_t inplanes = 64;
  constexpr std::array<int64_t, 4> kPlanes = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    for (int i = 0; i < blocks[layer]; ++i) {
      const std::string prefix = fmt::format("layer{}.{}", layer + 1, i);
      const int64_t stride = (layer > 0 && i == 0) ? 2 : 1;
      x = bottlenecks ? bottleneck(b, prefix, x, inplanes, kPlanes[layer], stride)
                      : basic_block(b, prefix, x, inplanes, kPlanes[layer], stride);
    }
  }
  x = b.adaptive_avg_pool("avgpool", x, 1, 1);
  x = b.flatten("flatten", x);
  b.linear("fc", x, inplanes, o.classes);
  return g;
}

}  // namespace nnperf
