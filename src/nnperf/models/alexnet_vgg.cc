// AlexNet (torchvision's one-GPU variant: 64-192-384-256-256 channels) and VGG-16 (config "D",
// no batch norm). Both keep their conv biases; VGG's convs are He-normal (fan_out) initialised
// as torchvision does, AlexNet keeps PyTorch's default init.
#include <fmt/format.h>

#include <array>

#include "nnperf/models/cnn.h"

namespace nnperf {

Graph build_alexnet(const CnnOptions& o) {
  Graph g;
  CnnBuilder b(g, o, ConvInit::kTorchDefault);
  int x = b.conv("features.0", Graph::kInput, o.in_channels, 64, 11, 4, 2, 1, true);
  x = b.relu("features.1", x);
  x = b.max_pool("features.2", x, 3, 2);
  x = b.conv("features.3", x, 64, 192, 5, 1, 2, 1, true);
  x = b.relu("features.4", x);
  x = b.max_pool("features.5", x, 3, 2);
  x = b.conv("features.6", x, 192, 384, 3, 1, 1, 1, true);
  x = b.relu("features.7", x);
  x = b.conv("features.8", x, 384, 256, 3, 1, 1, 1, true);
  x = b.relu("features.9", x);
  x = b.conv("features.10", x, 256, 256, 3, 1, 1, 1, true);
  x = b.relu("features.11", x);
  x = b.max_pool("features.12", x, 3, 2);
  x = b.adaptive_avg_pool("avgpool", x, 6, 6);
  x = b.flatten("flatten", x);
  x = b.dropout("classifier.0", x, 0.5);
  x = b.linear("classifier.1", x, 256 * 6 * 6, 4096);
  x = b.relu("classifier.2", x);
  x = b.dropout("classifier.3", x, 0.5);
  x = b.linear("classifier.4", x, 4096, 4096);
  x = b.relu("classifier.5", x);
  b.linear("classifier.6", x, 4096, o.classes);
  return g;
}

Graph build_vgg16(const CnnOptions& o) {
  Graph g;
  CnnBuilder b(g, o, ConvInit::kHeNormalFanOut);
  constexpr int kPool = 0;  // "M" in torchvision's cfgs
  constexpr std::array<int, 18> kConfigD = {64,    64,  kPool, 128, 128,   kPool, 256, 256, 256,
                                            kPool, 512, 512,   512, kPool, 512,   512, 512, kPool};
  int x = Graph::kInput;
  int64_t channels = o.in_channels;
  int index = 0;
  for (int v : kConfigD) {
    if (v == kPool) {
      x = b.max_pool(fmt::format("features.{}", index++), x, 2, 2);
    } else {
      x = b.conv(fmt::format("features.{}", index++), x, channels, v, 3, 1, 1, 1, true);
      x = b.relu(fmt::format("features.{}", index++), x);
      channels = v;
    }
  }
  x = b.adaptive_avg_pool("avgpool", x, 7, 7);
  x = b.flatten("flatten", x);
  x = b.linear("classifier.0", x, 512 * 7 * 7, 4096);
  x = b.relu("classifier.1", x);
  x = b.dropout("classifier.2", x, 0.5);
  x = b.linear("classifier.3", x, 4096, 4096);
  x = b.relu("classifier.4", x);
  x = b.dropout("classifier.5", x, 0.5);
  b.linear("classifier.6", x, 4096, o.classes);
  return g;
}

}  // namespace nnperf
