// GoogLeNet (Inception v1) as torchvision builds it in eval mode with pretrained-style settings:
// no aux heads, transform_input=False, BasicConv2d = conv (no bias) + BN(eps 0.001) + ReLU, and
// torchvision's 3x3 (not 5x5) conv in branch 3 (a known deviation from the paper that its
// weights and parameter count, 6,624,904, depend on). Max pools use ceil_mode as torchvision does.
// Convs keep PyTorch's default init (torchvision draws truncated normals; irrelevant here).
#include <fmt/format.h>

#include "nnperf/models/cnn.h"

namespace nnperf {

namespace {

// BasicConv2d "<p>.conv", "<p>.bn", then F.relu as "<p>.relu".
int basic_conv(CnnBuilder& b, const std::string& p, int x, int64_t ic, int64_t oc, int64_t k,
               int64_t stride = 1, int64_t pad = 0) {
  const int y = b.conv_bn(p + ".conv", p + ".bn", x, ic, oc, k, stride, pad, 1, 0.001);
  return b.relu(p + ".relu", y);
}

struct InceptionSpec {
  const char* name;
  int64_t in, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj;
};

int inception(CnnBuilder& b, const InceptionSpec& s, int x) {
  const std::string p = s.name;
  const int b1 = basic_conv(b, p + ".branch1", x, s.in, s.ch1x1, 1);
  int b2 = basic_conv(b, p + ".branch2.0", x, s.in, s.ch3x3red, 1);
  b2 = basic_conv(b, p + ".branch2.1", b2, s.ch3x3red, s.ch3x3, 3, 1, 1);
  int b3 = basic_conv(b, p + ".branch3.0", x, s.in, s.ch5x5red, 1);
  b3 = basic_conv(b, p + ".branch3.1", b3, s.ch5x5red, s.ch5x5, 3, 1, 1);
  int b4 = b.max_pool(p + ".branch4.0", x, 3, 1, 1, true);
  b4 = basic_conv(b, p + ".branch4.1", b4, s.in, s.pool_proj, 1);
  return b.concat(p + ".cat", {b1, b2, b3, b4});
}

}  // namespace

Graph build_googlenet(const CnnOptions& o) {
  Graph g;
  CnnBuilder b(g, o, ConvInit::kTorchDefault);
  int x = basic_conv(b, "conv1", Graph::kInput, o.in_channels, 64, 7, 2, 3);
  x = b.max_pool("maxpool1", x, 3, 2, 0, true);
  x = basic_conv(b, "conv2", x, 64, 64, 1);
  x = basic_conv(b, "conv3", x, 64, 192, 3, 1, 1);
  x = b.max_pool("maxpool2", x, 3, 2, 0, true);
  x = inception(b, {"inception3a", 192, 64, 96, 128, 16, 32, 32}, x);
  x = inception(b, {"inception3b", 256, 128, 128, 192, 32, 96, 64}, x);
  x = b.max_pool("maxpool3", x, 3, 2, 0, true);
  x = inception(b, {"inception4a", 480, 192, 96, 208, 16, 48, 64}, x);
  x = inception(b, {"inception4b", 512, 160, 112, 224, 24, 64, 64}, x);
  x = inception(b, {"inception4c", 512, 128, 128, 256, 24, 64, 64}, x);
  x = inception(b, {"inception4d", 512, 112, 144, 288, 32, 64, 64}, x);
  x = inception(b, {"inception4e", 528, 256, 160, 320, 32, 128, 128}, x);
  x = b.max_pool("maxpool4", x, 2, 2, 0, true);
  x = inception(b, {"inception5a", 832, 256, 160, 320, 32, 128, 128}, x);
  x = inception(b, {"inception5b", 832, 384, 192, 384, 48, 128, 128}, x);
  x = b.adaptive_avg_pool("avgpool", x, 1, 1);
  x = b.flatten("flatten", x);
  x = b.dropout("dropout", x, 0.2);
  b.linear("fc", x, 1024, o.classes);
  return g;
}

}  // namespace nnperf
