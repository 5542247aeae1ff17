// MobileNetV2 (width 1.0): a 3x3 stem, 17 inverted residual blocks (1x1 expand + ReLU6, 3x3
// depthwise + ReLU6, 1x1 linear projection; a residual Add when stride 1 and channels match),
// a 1x1 conv to 1280, global average pool, Dropout(0.2), Linear. Node names follow torchvision:
// "features.3.conv.1.0" is block 3's depthwise conv. Convs He-normal (fan_out) as torchvision.
#include <fmt/format.h>

#include <array>

#include "nnperf/models/cnn.h"

namespace nnperf {

namespace {
struct Stage {
  int64_t t, c, n, s;  // expansion, output channels, repeats, first stride
};
constexpr std::array<Stage, 7> kStages = {{{1, 16, 1, 1},
                                           {6, 24, 2, 2},
                                           {6, 32, 3, 2},
                                           {6, 64, 4, 2},
                                           {6, 96, 3, 1},
                                           {6, 160, 3, 2},
                                           {6, 320, 1, 1}}};
}  // namespace

Graph build_mobilenet_v2(const CnnOptions& o) {
  Graph g;
  CnnBuilder b(g, o, ConvInit::kHeNormalFanOut);
  int x = b.conv_bn("features.0.0", "features.0.1", Graph::kInput, o.in_channels, 32, 3, 2, 1);
  x = b.relu6("features.0.2", x);
  int64_t in = 32;
  int index = 1;
  for (const Stage& st : kStages) {
    for (int64_t i = 0; i < st.n; ++i) {
      const std::string p = fmt::format("features.{}.conv", index);
      const int64_t stride = i == 0 ? st.s : 1;
      const int64_t hidden = in * st.t;
      int y = x;
      int j = 0;  // position inside block.conv
      if (st.t != 1) {
        y = b.conv_bn(fmt::format("{}.0.0", p), fmt::format("{}.0.1", p), y, in, hidden, 1);
        y = b.relu6(fmt::format("{}.0.2", p), y);
        j = 1;
      }
      y = b.conv_bn(fmt::format("{}.{}.0", p, j), fmt::format("{}.{}.1", p, j), y, hidden, hidden,
                    3, stride, 1, hidden);
      y = b.relu6(fmt::format("{}.{}.2", p, j), y);
      y = b.conv_bn(fmt::format("{}.{}", p, j + 1), fmt::format("{}.{}", p, j + 2), y, hidden, st.c,
                    1);
      if (stride == 1 && in == st.c) y = b.add(fmt::format("features.{}.add", index), {y, x});
      x = y;
      in = st.c;
      ++index;
    }
  }
  x = b.conv_bn(fmt::format("features.{}.0", index), fmt::format("features.{}.1", index), x, in,
                1280, 1);
  x = b.relu6(fmt::format("features.{}.2", index), x);
  x = b.adaptive_avg_pool("adaptive_avg_pool2d", x, 1, 1);
  x = b.flatten("flatten", x);
  x = b.dropout("classifier.0", x, 0.2);
  b.linear("classifier.1", x, 1280, o.classes);
  return g;
}

}  // namespace nnperf
