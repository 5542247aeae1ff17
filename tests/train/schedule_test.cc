// Tests for train/schedule: the warm-up + cosine rate at hand-computed steps (the first, the last
// warm-up step, the middle and end of the decay) and clamping past the end.
#include "nnperf/train/schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace nnperf {
namespace {

TEST(WarmupCosine, LinearWarmupThenCosineToZero) {
  const WarmupCosine s{0.1, 4, 14};
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.025);  // (0 + 1) / 4
  EXPECT_DOUBLE_EQ(s.lr_at(1), 0.05);
  EXPECT_DOUBLE_EQ(s.lr_at(3), 0.1);     // the last warm-up step reaches the base rate
  EXPECT_DOUBLE_EQ(s.lr_at(4), 0.1);     // cosine at p = 0
  EXPECT_NEAR(s.lr_at(9), 0.05, 1e-15);  // p = 5/10: half
  EXPECT_NEAR(s.lr_at(6), 0.1 * 0.5 * (1 + std::cos(std::numbers::pi * 0.2)), 1e-15);
  EXPECT_NEAR(s.lr_at(13), 0.1 * 0.5 * (1 + std::cos(std::numbers::pi * 0.9)), 1e-15);
  EXPECT_DOUBLE_EQ(s.lr_at(14), 0.0);
  EXPECT_DOUBLE_EQ(s.lr_at(1000), 0.0);  // clamped
}

TEST(WarmupCosine, NoWarmupStartsAtTheBaseRate) {
  const WarmupCosine s{0.2, 0, 10};
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.2);
  EXPECT_NEAR(s.lr_at(5), 0.1, 1e-15);
  EXPECT_NE(s.describe().find("cosine"), std::string::npos);
}

TEST(WarmupCosine, WarmupLongerThanTheRunStaysLinear) {
  const WarmupCosine s{1.0, 100, 10};
  EXPECT_DOUBLE_EQ(s.lr_at(9), 0.1);
}

}  // namespace
}  // namespace nnperf
