#include "nnperf/analysis/activation_analysis.h"

#include <gtest/gtest.h>

#include "nnperf/core/error.h"

namespace nnperf {
namespace {

ActivationRun make_run(const std::string& name, double acc, std::vector<double> totals) {
  ActivationRun r;
  r.activation = name;
  r.folder = "MLP_" + name + "_20260101_000000";
  r.test_acc = acc;
  r.test_samples = 10000;
  for (double t : totals) {
    r.layer_ms_per_epoch.push_back({t * 0.5, t * 0.3, t * 0.2});
    r.total_ms_per_epoch.push_back(t);
  }
  r.imgs_per_sec = 64000;  // 1 ms per batch-64 step
  r.batch_size = 64;
  r.timer_empty_interval_ns = 20;
  return r;
}

TEST(ActivationAnalysis, StatisticsParetoAndRecommendations) {
  const auto a = analyze_activations({make_run("ReLU", 0.880, {0.010, 0.012, 0.011}),
                                      make_run("GELU", 0.885, {0.030, 0.032, 0.031}),
                                      make_run("Sigmoid", 0.850, {0.040, 0.041, 0.039})});
  ASSERT_EQ(a.rows.size(), 3u);
  EXPECT_EQ(a.num_layers, 3);
  const auto& relu = a.rows[0];
  EXPECT_NEAR(relu.mean_ms, 0.011, 1e-12);
  EXPECT_NEAR(relu.final_ms, 0.011, 1e-12);
  EXPECT_NEAR(relu.min_ms, 0.010, 1e-12);
  EXPECT_NEAR(relu.max_ms, 0.012, 1e-12);
  EXPECT_EQ(relu.epochs, 3);
  EXPECT_NEAR(relu.layer_mean_ms[0], 0.0055, 1e-12);
  EXPECT_NEAR(relu.acc_per_ms, 0.880 / 0.011, 1e-9);
  EXPECT_NEAR(relu.share_of_step, 0.011, 1e-9);  // 0.011 ms of a 1 ms step
  EXPECT_TRUE(relu.pareto);                      // fastest
  EXPECT_TRUE(a.rows[1].pareto);                 // most accurate
  EXPECT_FALSE(a.rows[2].pareto);                // slower and less accurate than both
  ASSERT_GE(a.recommendations.size(), 4u);
  EXPECT_NE(a.recommendations[0].find("**ReLU**"), std::string::npos);
  EXPECT_NE(a.recommendations[0].find("is real"), std::string::npos);
  // GELU vs ReLU: 0.5 points apart, SE ~0.32 points -> within 2*sqrt(2)*SE -> tied.
  EXPECT_NE(a.recommendations[1].find("tied with ReLU"), std::string::npos);
  EXPECT_NE(a.recommendations[3].find("ReLU, GELU"), std::string::npos);
}

TEST(ActivationAnalysis, NoiseMakesTimingGapInsignificant) {
  const auto a = analyze_activations({make_run("ReLU", 0.88, {0.010, 0.030, 0.020}),
                                      make_run("Tanh", 0.87, {0.012, 0.032, 0.022})});
  EXPECT_NE(a.recommendations[0].find("equally fast"), std::string::npos);
}

TEST(ActivationAnalysis, SaysWhereTheRunsTrained) {
  ActivationRun cpu = make_run("ReLU", 0.88, {0.01, 0.012}), gpu = make_run("GELU", 0.88, {0.02});
  EXPECT_EQ(analyze_activations({cpu}).device, "cpu");
  gpu.device = "cuda";
  EXPECT_EQ(analyze_activations({gpu}).device, "cuda");
  EXPECT_EQ(analyze_activations({gpu, gpu}).device, "cuda");
  EXPECT_EQ(analyze_activations({cpu, gpu}).device, "mixed");
  EXPECT_EQ(analyze_activations({gpu, cpu, gpu}).device, "mixed");
}

TEST(ActivationAnalysis, RejectsInconsistentLayerCounts) {
  auto r1 = make_run("ReLU", 0.9, {0.01});
  auto r2 = make_run("GELU", 0.9, {0.01});
  r2.layer_ms_per_epoch[0].push_back(0.1);
  EXPECT_THROW(analyze_activations({r1, r2}), Error);
  EXPECT_THROW(analyze_activations({}), Error);
}

}  // namespace
}  // namespace nnperf
