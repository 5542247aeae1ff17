// DenseNet-121 (growth 32, blocks 6-12-24-16, bn_size 4, 64 initial features, no dropout).
// Each dense layer reads the concatenation of the block input and all earlier layers' outputs
// (a Concat node "...denselayerN.cat", as torchvision's torch.cat in bn_function), then
// norm1-relu1-conv1(1x1, 128)-norm2-relu2-conv2(3x3, 32). Pre-activation BNs (after a Concat)
// cannot fold into a conv; norm0 and each norm2 can. Convs He-normal (fan_in) as torchvision.
#include <fmt/format.h>

#include <array>
#include <vector>

#include "nnperf/models/cnn.h"

namespace nnperf {

Graph build_densenet121(const CnnOptions& o) {
  constexpr int64_t kGrowth = 32, kBottleneck = 4 * kGrowth, kInitFeatures = 64;
  constexpr std::array<int, 4> kBlocks = {6, 12, 24, 16};
  Graph g;
  CnnBuilder b(g, o, ConvInit::kHeNormal);
  int x = b.conv_bn("features.conv0", "features.norm0", Graph::kInput, o.in_channels, kInitFeatures,
                    7, 2, 3);
  x = b.relu("features.relu0", x);
  x = b.max_pool("features.pool0", x, 3, 2, 1);
  int64_t features = kInitFeatures;
  for (int block = 0; block < static_cast<int>(kBlocks.size()); ++block) {
    const std::string bp = fmt::format("features.denseblock{}", block + 1);
    std::vector<int> inputs = {x};
    for (int layer = 0; layer < kBlocks[block]; ++layer) {
      const std::string p = fmt::format("{}.denselayer{}", bp, layer + 1);
      const int64_t in = features + layer * kGrowth;
      int y = b.concat(p + ".cat", inputs);
      y = b.batch_norm(p + ".norm1", y, in);
      y = b.relu(p + ".relu1", y);
      y = b.conv_bn(p + ".conv1", p + ".norm2", y, in, kBottleneck, 1);
      y = b.relu(p + ".relu2", y);
      y = b.conv(p + ".conv2", y, kBottleneck, kGrowth, 3, 1, 1);
      inputs.push_back(y);
    }
    x = b.concat(bp + ".cat", inputs);
    features += kBlocks[block] * kGrowth;
    if (block + 1 < static_cast<int>(kBlocks.size())) {
      const std::string tp = fmt::format("features.transition{}", block + 1);
      x = b.batch_norm(tp + ".norm", x, features);
      x = b.relu(tp + ".relu", x);
      x = b.conv(tp + ".conv", x, features, features / 2, 1);
      x = b.avg_pool(tp + ".pool", x, 2, 2);
      features /= 2;
    }
  }
  x = b.batch_norm("features.norm5", x, features);
  x = b.relu("relu", x);
  x = b.adaptive_avg_pool("adaptive_avg_pool2d", x, 1, 1);
  x = b.flatten("flatten", x);
  b.linear("classifier", x, features, o.classes);
  return g;
}

}  // namespace nnperf
