#include "nnperf/core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "nnperf/core/error.h"
#include "nnperf/core/rng.h"

namespace nnperf {
namespace {

TEST(Tensor, AlignedAndSized) {
  Tensor t(Shape{3, 5, 7});
  EXPECT_EQ(t.numel(), 105);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % kTensorAlignment, 0u);
  t.fill(2.5f);
  for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t[i], 2.5f);
  EXPECT_EQ(t.shape().str(), "[3, 5, 7]");
}

TEST(Tensor, CopyIsDeepAndReshapeKeepsData) {
  Tensor a(Shape{4, 6});
  for (int64_t i = 0; i < a.numel(); ++i) a[i] = static_cast<float>(i) + 0.5f;
  Tensor b = a;
  b[0] = -1.0f;
  EXPECT_EQ(a[0], 0.5f);
  a.reshape(Shape{2, 12});
  EXPECT_EQ(a.size(1), 12);
  EXPECT_EQ(a[23], 23.5f);
  EXPECT_THROW(a.reshape(Shape{5, 5}), Error);
}

TEST(Tensor, ResizeReusesCapacity) {
  Tensor t(Shape{100});
  const float* p = t.data();
  t.resize(Shape{10, 10});
  EXPECT_EQ(t.data(), p);
  t.resize(Shape{4, 5});
  EXPECT_EQ(t.data(), p);
  EXPECT_EQ(t.numel(), 20);
}

TEST(Rng, DeterministicAndInRange) {
  Rng a(42), b(42), c(43);
  double sum = 0;
  bool differs = false;
  for (int i = 0; i < 10000; ++i) {
    const double x = a.uniform();
    ASSERT_EQ(x, b.uniform());
    differs |= x != c.uniform();
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
    sum += x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
  double s = 0, s2 = 0;
  for (int i = 0; i < 20000; ++i) {
    const double z = a.normal();
    s += z;
    s2 += z * z;
  }
  EXPECT_NEAR(s / 20000, 0.0, 0.03);
  EXPECT_NEAR(s2 / 20000, 1.0, 0.05);
  for (int i = 0; i < 1000; ++i) ASSERT_LT(a.below(7), 7u);
}

}  // namespace
}  // namespace nnperf
