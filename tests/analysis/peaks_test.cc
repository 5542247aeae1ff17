#include "nnperf/analysis/peaks.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/peak/peak.h"

namespace nnperf {
namespace {

TEST(PeakKernels, FmaLoopCountsFlopsAndComputesTheRecurrence) {
  // Each chain computes x <- 0.999999 x + 1e-7 `iters` times; the scalar recurrence in double is
  // the reference for the sum the loop reports.
  const int64_t iters = 1000;
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > cpu_info().simd) continue;
    float sink = 0;
    const double flops = fma_peak_loop(level, iters, &sink);
    const double lanes = level == SimdLevel::kScalar ? 8
                         : level == SimdLevel::kAvx2 ? 8 * 12
                                                     : 16 * 16;
    EXPECT_EQ(flops, 2.0 * lanes * iters) << to_string(level);
    double expect = 0;
    const int chains = level == SimdLevel::kScalar ? 8 : level == SimdLevel::kAvx2 ? 12 : 16;
    const int width = level == SimdLevel::kScalar ? 1 : level == SimdLevel::kAvx2 ? 8 : 16;
    for (int c = 0; c < chains; ++c) {
      double x = c + 1;
      for (int64_t i = 0; i < iters; ++i) x = x * 0.999999 + 1e-7;
      expect += width * x;
    }
    EXPECT_NEAR(sink, expect, 1e-4 * expect) << to_string(level);
  }
}

TEST(PeakKernels, TriadMatchesReference) {
  std::vector<float> a(1001), b(1001), c(1001);
  for (int i = 0; i < 1001; ++i) {
    b[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(i) + 1.0f;
    c[static_cast<std::size_t>(i)] = 1.0f - 0.25f * static_cast<float>(i);
  }
  stream_triad(a.data(), b.data(), c.data(), 3.0f, 1001);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], b[i] + 3.0f * c[i]);
}

TEST(Peaks, MeasuredFiguresArePositiveAndJsonHasTheSeedLayout) {
  PeakOptions o;
  o.threads = 1;
  o.rounds = 1;
  o.seconds_per_round = 0.01;
  o.triad_bytes = 3 << 20;
  o.sgemm_n = 96;
  const Peaks p = measure_peaks(o);
  EXPECT_GT(p.fma_gflops_1thread, 0.0);
  EXPECT_GT(p.triad_gbps, 0.0);
  EXPECT_GT(p.sgemm_gflops_1thread, 0.0);
  const auto j = peaks_to_json(p, "test-env");
  ASSERT_TRUE(j.contains("test-env"));
  const auto& e = j["test-env"];
  EXPECT_TRUE(e["description"].is_string());
  EXPECT_GT(e["peak_gbps"].get<double>(), 0.0);
  EXPECT_GT(e["peak_gflops"]["fp32"].get<double>(), 0.0);
}

}  // namespace
}  // namespace nnperf
