#include "nnperf/profile/stats.h"

#include <gtest/gtest.h>

#include <vector>

#include "nnperf/core/clock.h"
#include "nnperf/profile/profiler.h"

namespace nnperf {
namespace {

TEST(Stats, SummaryMatchesHandComputedValues) {
  const std::vector<double> v{4.0, 1.0, 3.0, 2.0, 10.0};
  const Summary s = summarize(v);
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  // population std: sqrt(((0)^2 + 3^2 + 1^2 + 2^2 + 6^2) / 5) = sqrt(10)
  EXPECT_NEAR(s.std, 3.1622776601683795, 1e-12);
  // p95 by linear interpolation: position 0.95 * 4 = 3.8 between 4 and 10 -> 4 + 0.8 * 6
  EXPECT_NEAR(s.p95, 8.8, 1e-12);
}

TEST(Stats, MedianOfEvenCountInterpolates) {
  EXPECT_DOUBLE_EQ(median({1.0, 2.0, 3.0, 4.0}), 2.5);
  EXPECT_DOUBLE_EQ(quantile({5.0}, 0.3), 5.0);
  EXPECT_EQ(summarize(std::vector<double>{}).count, 0);
}

TEST(Clock, CpuIntervalTimerAccumulatesPerSlot) {
  CpuIntervalTimer t(2);
  for (int i = 0; i < 3; ++i) {
    t.begin(0);
    volatile double sink = 0;
    for (int k = 0; k < 10000; ++k) sink = sink + k;
    t.end(0);
  }
  std::vector<double> ms;
  std::vector<int64_t> n;
  t.resolve(ms, n);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(n[0], 3);
  EXPECT_EQ(n[1], 0);
  EXPECT_GT(ms[0], 0.0);
  EXPECT_EQ(ms[1], 0.0);
  // resolve() resets.
  std::vector<double> ms2;
  std::vector<int64_t> n2;
  t.resolve(ms2, n2);
  EXPECT_EQ(n2[0], 0);
}

TEST(Clock, TimerOverheadIsMeasuredAndSmall) {
  const TimerOverhead o = measure_timer_overhead(5, 200);
  EXPECT_GT(o.pair_cost_ns, 0.0);
  EXPECT_GE(o.empty_interval_ns, 0.0);
  // A clock read that cost a microsecond would make per-layer timing meaningless.
  EXPECT_LT(o.pair_cost_ns, 5000.0);
}

}  // namespace
}  // namespace nnperf
