// counter_uniform (the GPU dropout masks' generator, kernels/counter_rng.h) on the host: draws in
// [0, 1) on the 2^-24 grid, uniform by a chi-square over 64 bins, neighbouring draws and
// neighbouring seeds uncorrelated, and dropout_mask_entry keeping `keep` of the entries with
// the inverted-dropout scale.
#include "nnperf/kernels/counter_rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace nnperf {
namespace {

TEST(CounterRng, DrawsAreUniformAndIndependent) {
  const int n = 1 << 20;
  std::vector<int> bins(64, 0);
  double sum = 0, lag = 0, cross = 0;
  float prev = counter_uniform(7, 0);
  for (int i = 0; i < n; ++i) {
    const float u = counter_uniform(7, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_EQ(u * 16777216.0f, std::floor(u * 16777216.0f)) << i;  // on the 2^-24 grid
    ++bins[static_cast<std::size_t>(u * 64)];
    sum += u;
    if (i > 0) lag += (u - 0.5) * (prev - 0.5);
    cross += (u - 0.5) * (counter_uniform(8, static_cast<uint64_t>(i)) - 0.5);
    prev = u;
  }
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  // Correlations of uniforms: variance 1/144 per product term.
  EXPECT_NEAR(lag / n, 0.0, 5 * std::sqrt(1.0 / 144 / n));
  EXPECT_NEAR(cross / n, 0.0, 5 * std::sqrt(1.0 / 144 / n));
  double chi2 = 0;
  const double expected = n / 64.0;
  for (const int b : bins) chi2 += (b - expected) * (b - expected) / expected;
  EXPECT_LT(chi2, 120.0);  // 63 degrees of freedom: P(chi2 > 120) < 1e-5
}

TEST(CounterRng, DropoutMaskEntryKeepsWithProbabilityKeep) {
  const int n = 200000;
  for (const float keep : {0.5f, 0.8f, 1.0f}) {
    int kept = 0;
    for (int i = 0; i < n; ++i) {
      const float m = dropout_mask_entry(3, static_cast<uint64_t>(i), keep);
      ASSERT_TRUE(m == 0.0f || m == 1.0f / keep) << m;
      kept += m != 0.0f;
    }
    EXPECT_NEAR(kept, n * keep, 5 * std::sqrt(n * keep * (1 - keep)) + 0.5) << keep;
  }
}

}  // namespace
}  // namespace nnperf
