// Real full-size layers (224x224 input, batch 1) against the float64 reference: convolutions of
// VGG16, ResNet-50 and MobileNetV2 at the spatial size they run at in the network, each checked
// with every algorithm that serves it, on 1 thread, with the bound of conv_test.cc
// (conv_check.h). The reference (the slow part: ~1.2 G multiply-adds in double over the list)
// is computed once per layer and shared by the algorithms. The worst |y - ref| / bound per
// algorithm is printed at the end, next to the tolerance factor it is measured against. The
// per-output bound grows with K (4608 for a 512-channel 3x3 layer) and with a tolerance factor of
// 50 (Winograd) it allows an error of the order of the outputs themselves, so each layer's output
// is also held to a normwise bound, ||y - ref|| <= kNormwise ||ref||, that catches an answer wrong
// by a few percent everywhere; the worst measured ratio is printed too.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "conv_check.h"
#include "nnperf/kernels/conv/conv.h"
#include "test_util.h"

namespace nnperf {
namespace {

struct RealLayer {
  const char* name;     // network and layer (torchvision module path), for the test name
  const char* problem;  // benchdnn string at 224x224 input
};

const RealLayer kLayers[] = {
    {"vgg16_features_0", "mb1ic3ih224oc64kh3ph1"},                           // conv1_1
    {"vgg16_features_2", "mb1ic64ih224oc64kh3ph1"},                          // conv1_2, 1.85 GMAC
    {"vgg16_features_24", "mb1ic512ih14oc512kh3ph1"},                        // conv5_1, 0.46 GMAC
    {"resnet50_conv1", "mb1ic3ih224oc64kh7sh2ph3"},                          // 7x7/2 stem
    {"resnet50_layer1_1_conv1", "mb1ic256ih56oc64kh1"},                      // 1x1 256->64
    {"resnet50_layer1_0_conv2", "mb1ic64ih56oc64kh3ph1"},                    // 3x3 64
    {"resnet50_layer2_0_conv2", "mb1ic128ih56oc128kh3sh2ph1"},               // 3x3/2 128 (v1.5)
    {"resnet50_layer3_1_conv2", "mb1ic256ih14oc256kh3ph1"},                  // 3x3 256 at 14
    {"resnet50_layer4_0_downsample_0", "mb1ic1024ih14oc2048kh1sh2"},         // 1x1/2 1024->2048
    {"resnet50_layer4_1_conv2", "mb1ic512ih7oc512kh3ph1"},                   // 3x3 512 at 7
    {"mobilenet_v2_features_1_conv_0_0", "g32mb1ic32ih112oc32kh3ph1"},       // depthwise at 112
    {"mobilenet_v2_features_2_conv_0_0", "mb1ic16ih112oc96kh1"},             // 1x1 expansion at 112
    {"mobilenet_v2_features_3_conv_0_0", "mb1ic24ih56oc144kh1"},             // 1x1 24->144 at 56
    {"mobilenet_v2_features_4_conv_1_0", "g144mb1ic144ih56oc144kh3sh2ph1"},  // depthwise /2
    {"mobilenet_v2_features_12_conv_1_0", "g576mb1ic576ih14oc576kh3ph1"},    // depthwise at 14
};

// ||y - ref||_2 / ||ref||_2 at most this, for every algorithm on every layer (measured worst on
// 2026-11-29: 4.1e-6, winograd; 3e-7 for direct and the GEMMs).
constexpr double kNormwise = 1e-4;

// Worst ratio per algorithm (per output, and normwise), and how many layers each served.
struct Worst {
  double ratio = 0, normwise = 0;
  int layers = 0;
};
std::map<std::string, Worst>& worst() {
  static std::map<std::string, Worst> w;
  return w;
}

class ReportWorst : public ::testing::Environment {
 public:
  void TearDown() override {
    std::string line;
    for (const auto& [name, w] : worst()) {
      line += fmt::format(" {}={:.4f}(c={:g},{} layers, normwise {:.2e})", name, w.ratio,
                          find_conv(name).tolerance_factor, w.layers, w.normwise);
    }
    if (!line.empty()) {
      std::printf("[conv real layers] worst |y-ref|/(c*K*eps*sum|ab| + eps*|ref|):%s\n",
                  line.c_str());
    }
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportWorst);

class RealLayerTest : public ::testing::TestWithParam<RealLayer> {};

TEST_P(RealLayerTest, EveryServingAlgorithmMatchesFloat64Reference) {
  const RealLayer& layer = GetParam();
  const ConvProblem p = parse_conv_problem(layer.problem);
  const uint64_t seed = 1000 + static_cast<uint64_t>(&layer - kLayers);
  const std::vector<float> src = test::random_vector(p.src_numel(), seed);
  const std::vector<float> wei = test::random_vector(p.wei_numel(), seed + 1);
  const std::vector<float> bias = test::random_vector(p.oc, seed + 2);
  std::vector<double> ref(static_cast<std::size_t>(p.dst_numel())), abs_sum(ref.size());
  conv2d_reference(p, src.data(), wei.data(), bias.data(), ref.data(), abs_sum.data());
  const auto nonzero = std::count_if(ref.begin(), ref.end(), [](double v) { return v != 0.0; });
  ASSERT_GE(static_cast<double>(nonzero), 0.75 * static_cast<double>(ref.size()))
      << p.str() << ": reference is mostly zeros, the test would prove nothing";

  int served = 0;
  for (const ConvAlgorithm& algo : conv_algorithms()) {
    if (!algo.why_not(p).empty()) continue;
    ++served;
    const std::string at = fmt::format(
        "{} on {} ({}) threads=1 seed={} (repro: nnperf verify conv2d --algorithm {} "
        "--problem {})",
        algo.name, p.str(), layer.name, seed, algo.name, p.str());
    const std::vector<float> y = test::conv_run_checked(algo, p, src, wei, bias, 1, at);
    Worst& w = worst()[algo.name];
    ++w.layers;
    const int64_t plane = p.oh() * p.ow();
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double bound = test::conv_bound(algo.tolerance_factor, p, abs_sum[i], ref[i]);
      const double err = std::fabs(static_cast<double>(y[i]) - ref[i]);
      const int64_t e = static_cast<int64_t>(i);
      ASSERT_TRUE(err <= bound) << at << ": dst[oc" << e / plane << " y" << e % plane / p.ow()
                                << " x" << e % p.ow() << "] = " << y[i] << ", reference " << ref[i]
                                << ", |error| " << err << " > bound " << bound;
      if (bound > 0) w.ratio = std::max(w.ratio, err / bound);
    }
    const double normwise = test::relative_l2_error(y, ref);
    EXPECT_LE(normwise, kNormwise) << at << ": ||y - ref|| / ||ref||";
    w.normwise = std::max(w.normwise, normwise);
  }
  // gemm and direct serve every convolution; the fast algorithms add to them where they can.
  EXPECT_GE(served, 2) << p.str();
}

std::string layer_name(const ::testing::TestParamInfo<RealLayer>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Networks, RealLayerTest, ::testing::ValuesIn(kLayers), layer_name);

}  // namespace
}  // namespace nnperf
