// Whole-model agreement: every registry CNN, seeded weights and input at a small size, run with
// every conv algorithm (non-strict: a layer the algorithm cannot serve falls back and says why),
// "guess" and "find"; the logits must match the `gemm` run's within a bound relative to the
// logit range, and every layer an algorithm supports must run that algorithm. The worst error
// per algorithm and model is printed at the end (the evidence for kLogitTolerance).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/profile/conv_timer.h"
#include "test_util.h"

namespace nnperf {
namespace {

// max_i |y_i - y_gemm_i| <= kLogitTolerance * max_i |y_gemm_i|. Each conv adds about its own
// rounding (c_algo * K * eps * sum|ab|) to what flows in, so the logits differ by a few float32
// ulps per layer. Measured worst case over the nine models and every algorithm, 1 thread:
// 5.1e-6 on AVX2 and 5.3e-6 on the portable path (NNPERF_SIMD=scalar), both fft_tiling on
// mobilenet_v2 (see the table this test prints); the bound leaves a ~19x margin.
constexpr double kLogitTolerance = 1e-4;

struct ModelCase {
  const char* name;
  int64_t size;  // H = W: the model's minimum (alexnet 63, googlenet 15, densenet121 29) or 32
};

const ModelCase kCases[] = {{"alexnet", 63},   {"vgg16", 32},       {"resnet18", 32},
                            {"resnet34", 32},  {"resnet50", 32},    {"resnet152", 32},
                            {"googlenet", 32}, {"densenet121", 32}, {"mobilenet_v2", 32}};

// [model][algorithm] -> max |y - y_gemm| / max |y_gemm|, and how many convs ran the requested one.
struct Outcome {
  double rel_err = 0;
  int served = 0, convs = 0;
};
std::map<std::string, std::map<std::string, Outcome>>& outcomes() {
  static std::map<std::string, std::map<std::string, Outcome>> o;
  return o;
}

class ReportAgreement : public ::testing::Environment {
 public:
  void TearDown() override {
    std::map<std::string, double> worst;
    for (const auto& [model, per_algo] : outcomes()) {
      std::string line;
      for (const auto& [algo, o] : per_algo) {
        line += fmt::format(" {}={:.2e}({}/{})", algo, o.rel_err, o.served, o.convs);
        worst[algo] = std::max(worst[algo], o.rel_err);
      }
      std::printf("[agreement] %s max|y-y_gemm|/max|y_gemm| (convs served as requested):%s\n",
                  model.c_str(), line.c_str());
    }
    std::string line;
    for (const auto& [algo, w] : worst) line += fmt::format(" {}={:.2e}", algo, w);
    if (!line.empty()) {
      std::printf("[agreement] worst over models (bound %.0e):%s\n", kLogitTolerance, line.c_str());
    }
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportAgreement);

PlanContext context(const std::string& algo) {
  PlanContext ctx;
  ctx.training = false;
  ctx.threads = 1;
  ctx.strict = false;
  ctx.conv_algorithm = algo;
  ctx.time_conv = time_conv_ms;
  return ctx;
}

std::vector<std::string> requested_algorithms() {
  std::vector<std::string> names;
  for (const ConvAlgorithm& a : conv_algorithms()) names.emplace_back(a.name);
  names.emplace_back("guess");
  names.emplace_back("find");
  return names;
}

class ModelAgreement : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelAgreement, EveryAlgorithmGivesTheGemmLogits) {
  const ModelCase& mc = GetParam();
  const ModelEntry& m = find_model(mc.name);
  Graph g = m.build(ModelOptions{});
  test::fast_init(g, 101);
  const Shape in{1, 3, mc.size, mc.size};
  const Tensor x = test::random_tensor(in, 202);

  plan_model(m, g, in, context("gemm"));
  const Tensor ref = g.forward(x);
  double scale = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(ref[i])) << mc.name << " gemm logit " << i;
    scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
  }
  ASSERT_GT(scale, 0.0) << mc.name << ": all-zero logits would prove nothing";

  for (const std::string& algo : requested_algorithms()) {
    if (algo == "gemm") continue;
    SCOPED_TRACE(fmt::format("{} at {}x{} with {}", mc.name, mc.size, mc.size, algo));
    plan_model(m, g, in, context(algo));
    Outcome& out = outcomes()[mc.name][algo];
    // The algorithm each conv runs: the requested one wherever it can serve the layer, else a
    // supported fallback with the reason; guess and find always pick a supported one.
    for (int i = 1; i < g.size(); ++i) {
      const auto* conv = dynamic_cast<const Conv2d*>(&g.layer(i));
      if (conv == nullptr) continue;
      ++out.convs;
      const ConvProblem p = conv->problem();
      ASSERT_NE(conv->algorithm(), nullptr) << g.name(i);
      EXPECT_EQ(conv->algorithm()->why_not(p), "") << g.name(i) << " runs an unsupported one";
      if (algo == "guess" || algo == "find") {
        EXPECT_EQ(conv->requested_algorithm(), algo) << g.name(i);
        ++out.served;
        continue;
      }
      if (find_conv(algo).why_not(p).empty()) {
        EXPECT_EQ(conv->algorithm()->name, algo) << g.name(i) << " " << p.str();
        EXPECT_EQ(conv->fallback_reason(), "") << g.name(i);
        out.served += conv->algorithm()->name == algo;
      } else {
        EXPECT_NE(conv->fallback_reason(), "") << g.name(i) << " fell back without a reason";
      }
    }
    const Tensor& y = g.forward(x);
    ASSERT_EQ(y.shape(), ref.shape());
    double err = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << "logit " << i;
      err = std::max(err, std::fabs(static_cast<double>(y[i]) - ref[i]));
    }
    out.rel_err = err / scale;
    EXPECT_LE(out.rel_err, kLogitTolerance)
        << "max |y - y_gemm| = " << err << ", max |y_gemm| = " << scale;
  }
  // Every named algorithm serves some layer of every model except where the model has none it
  // supports; the count is in the printed table. The direct algorithm serves every conv.
  EXPECT_EQ(outcomes()[mc.name]["direct"].served, outcomes()[mc.name]["direct"].convs);
}

std::string model_name(const ::testing::TestParamInfo<ModelCase>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Registry, ModelAgreement, ::testing::ValuesIn(kCases), model_name);

}  // namespace
}  // namespace nnperf
