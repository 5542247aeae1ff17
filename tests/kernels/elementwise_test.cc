// Element-wise kernels against plain double loops: bias add and row sums with a leading dimension
// larger than the row (a sub-matrix), add_inplace, scale, all_finite on inf/NaN at every position.
#include "nnperf/kernels/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

namespace nnperf {
namespace {

TEST(Elementwise, AddBiasRowsTouchesOnlyTheSubMatrix) {
  for (auto [mb, n, ld] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                           {3, 5, 7},
                           {64, 512, 512},
                           {17, 300, 301}}) {
    std::vector<float> dst = test::random_vector(mb * ld, 1 + n);
    const std::vector<float> before = dst;
    const std::vector<float> bias = test::random_vector(n, 2 + n);
    add_bias_rows(dst.data(), bias.data(), mb, n, ld);
    for (int64_t r = 0; r < mb; ++r) {
      for (int64_t c = 0; c < ld; ++c) {
        const float expect = c < n ? before[r * ld + c] + bias[c] : before[r * ld + c];
        ASSERT_EQ(dst[r * ld + c], expect) << r << "," << c;
      }
    }
  }
}

TEST(Elementwise, SumRowsMatchesDoubleSums) {
  // Widths around the 256-column tile, and a long reduction.
  for (auto [mb, n, ld] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                           {5, 3, 4},
                           {64, 255, 255},
                           {7, 256, 260},
                           {9, 257, 257},
                           {4000, 10, 10}}) {
    const std::vector<float> d = test::random_vector(mb * ld, 10 + n);
    std::vector<float> out(n, 123.0f);
    sum_rows(d.data(), out.data(), mb, n, ld);
    for (int64_t c = 0; c < n; ++c) {
      double ref = 0, abs_sum = 0;
      for (int64_t r = 0; r < mb; ++r) ref += d[r * ld + c], abs_sum += std::fabs(d[r * ld + c]);
      // Double accumulation: only the final rounding to float remains.
      ASSERT_NEAR(out[c], ref, test::kEps * std::fabs(ref) + 1e-12 * abs_sum) << "column " << c;
    }
  }
}

TEST(Elementwise, AddInplace) {
  for (int64_t n : {0, 1, 7, 8, 1001}) {
    std::vector<float> a = test::random_vector(n, 20 + n), b = test::random_vector(n, 30 + n);
    const std::vector<float> a0 = a;
    add_inplace(a.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(a[i], a0[i] + b[i]);
  }
}

TEST(Elementwise, ScaleMultipliesEachValueAlsoInPlace) {
  for (int64_t n : {0, 1, 7, 8, 1001}) {
    const std::vector<float> x = test::random_vector(n, 50 + n);
    std::vector<float> y(static_cast<std::size_t>(n)), in_place = x;
    scale(x.data(), 0.25f, y.data(), n);
    scale(in_place.data(), 0.25f, in_place.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(y[i], x[i] * 0.25f) << i;
      ASSERT_EQ(in_place[i], y[i]) << i;
    }
  }
}

TEST(Elementwise, AllFiniteFindsInfAndNaNAnywhere) {
  const float bad[] = {std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN()};
  // 300001 elements: long enough to be split over threads (1, 2 and 3 asked).
  for (int64_t n : {1, 7, 33, 1000, 300001}) {
    std::vector<float> x = test::random_vector(n, 40 + n, -3e38f, 3e38f);
    x[0] = std::numeric_limits<float>::denorm_min();  // finite edge cases stay finite
    if (n > 1) x[1] = std::numeric_limits<float>::max();
    for (int threads : {1, 2, 3}) {
      EXPECT_TRUE(all_finite(x.data(), n, threads));
      for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
        for (float b : bad) {
          std::vector<float> y = x;
          y[pos] = b;
          EXPECT_FALSE(all_finite(y.data(), n, threads))
              << "value " << b << " at " << pos << " of " << n << ", " << threads << " threads";
        }
      }
    }
  }
  EXPECT_TRUE(all_finite(nullptr, 0));
}

// ReLU6's clamp and Dropout's multiply: exact, so equal to the double loops bit for bit, at
// lengths around a vector, with values at and past the bounds, and NaN kept by the clamp.
TEST(Elementwise, ClampAndMultiplyEqualTheDoubleLoops) {
  for (const int64_t n :
       {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{33}, int64_t{1000}}) {
    std::vector<float> x = test::random_vector(n, 50 + n, -8.0f, 8.0f);
    if (n >= 7) {
      x[0] = 0.0f;
      x[1] = 6.0f;
      x[2] = std::numeric_limits<float>::quiet_NaN();
      x[3] = -std::numeric_limits<float>::infinity();
      x[4] = std::numeric_limits<float>::infinity();
    }
    const std::vector<float> dy = test::random_vector(n, 60 + n),
                             m = test::random_vector(n, 70 + n);
    std::vector<float> y(n), dx(n), p(n);
    clamp(x.data(), y.data(), n, 0.0f, 6.0f);
    clamp_backward(x.data(), dy.data(), dx.data(), n, 0.0f, 6.0f);
    multiply(dy.data(), m.data(), p.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double xi = x[i];
      if (std::isnan(xi)) {
        EXPECT_TRUE(std::isnan(y[i])) << i;
      } else {
        EXPECT_EQ(y[i], static_cast<float>(xi < 0.0 ? 0.0 : xi > 6.0 ? 6.0 : xi)) << i;
      }
      EXPECT_EQ(dx[i], xi > 0.0 && xi < 6.0 ? dy[i] : 0.0f) << i;
      EXPECT_EQ(p[i], static_cast<float>(static_cast<double>(dy[i]) * m[i])) << i;
    }
    // In place.
    std::vector<float> z = x;
    clamp(z.data(), z.data(), n, 0.0f, 6.0f);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_TRUE(z[i] == y[i] || (std::isnan(z[i]) && std::isnan(y[i]))) << i;
    }
  }
}

}  // namespace
}  // namespace nnperf
