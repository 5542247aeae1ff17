// Concat (channel axis, 1..4 inputs, rank 2 and 4) and Dropout: forward against index loops,
// backward slices / masks, skipped gradients (null d_src), shape errors naming the input, and
// Dropout's inference identity, keep rate, 1/(1-p) scaling and seeded reproducibility.
#include "nnperf/nn/concat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/nn/dropout.h"
#include "test_util.h"

namespace nnperf {
namespace {

PlanContext ctx_with(bool training) {
  PlanContext c;
  c.training = training;
  return c;
}

TEST(Concat, JoinsChannelsAndSplitsTheGradient) {
  const std::vector<std::vector<Shape>> cases = {
      {{2, 3, 4, 5}, {2, 1, 4, 5}, {2, 6, 4, 5}},
      {{1, 64, 3, 3}, {1, 32, 3, 3}, {1, 16, 3, 3}, {1, 8, 3, 3}},
      {{3, 7}, {3, 2}},
      {{2, 5, 1, 1}},
  };
  uint64_t seed = 1;
  for (const std::vector<Shape>& shapes : cases) {
    Concat layer;
    const Shape out = layer.plan(shapes, ctx_with(true));
    int64_t total = 0;
    for (const Shape& s : shapes) total += s[1];
    Shape want = shapes[0];
    want[1] = total;
    ASSERT_EQ(out, want);
    std::vector<Tensor> xs;
    for (const Shape& s : shapes) xs.push_back(test::random_tensor(s, ++seed));
    std::vector<const Tensor*> src;
    for (const Tensor& t : xs) src.push_back(&t);
    Tensor y(out);
    layer.forward(src, y);
    const int64_t mb = out[0], inner = out.numel() / (out[0] * out[1]);
    int64_t offset = 0;
    for (const Tensor& t : xs) {
      const int64_t c = t.size(1);
      for (int64_t n = 0; n < mb; ++n) {
        for (int64_t ch = 0; ch < c; ++ch) {
          for (int64_t i = 0; i < inner; ++i) {
            ASSERT_EQ(y[(n * total + offset + ch) * inner + i], t[(n * c + ch) * inner + i]);
          }
        }
      }
      offset += c;
    }
    // Backward: each input gets its slice; null entries are skipped.
    const Tensor dy = test::random_tensor(out, ++seed);
    std::vector<Tensor> dxs;
    for (const Shape& s : shapes) dxs.push_back(Tensor::zeros(s));
    std::vector<Tensor*> d_src;
    for (Tensor& t : dxs) d_src.push_back(&t);
    if (d_src.size() > 1) d_src[1] = nullptr;
    layer.backward(src, y, dy, d_src);
    offset = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const int64_t c = xs[k].size(1);
      for (int64_t n = 0; n < mb; ++n) {
        for (int64_t ch = 0; ch < c; ++ch) {
          for (int64_t i = 0; i < inner; ++i) {
            const float got = dxs[k][(n * c + ch) * inner + i];
            const float want_g = k == 1 ? 0.0f : dy[(n * total + offset + ch) * inner + i];
            ASSERT_EQ(got, want_g) << "input " << k;
          }
        }
      }
      offset += c;
    }
  }
}

TEST(Concat, MismatchedShapesNameTheInput) {
  Concat layer;
  const Shape bad[] = {{2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 5, 5}};
  try {
    layer.plan(bad, ctx_with(false));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("input 2 is [2, 3, 5, 5]"), std::string::npos) << msg;
  }
  const Shape batch[] = {{2, 3, 4, 5}, {3, 3, 4, 5}};
  EXPECT_THROW(layer.plan(batch, ctx_with(false)), Error);
  const Shape vec[] = {{5}};
  EXPECT_THROW(layer.plan(vec, ctx_with(false)), Error);
}

TEST(Dropout, IdentityForInference) {
  Dropout d(0.5);
  const Shape s{4, 10};
  d.plan(std::span<const Shape>(&s, 1), ctx_with(false));
  const Tensor x = test::random_tensor(s, 5);
  Tensor y(s);
  const Tensor* src[] = {&x};
  d.forward(src, y);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y[i], x[i]);
  EXPECT_DOUBLE_EQ(d.forward_flops(), 0.0);
}

TEST(Dropout, TrainingMaskKeepsOneMinusPScaledAndIsSeeded) {
  for (double p : {0.2, 0.5}) {
    const Shape s{8, 1000};
    Dropout a(p, 42), b(p, 42), c(p, 43);
    for (Dropout* d : {&a, &b, &c}) d->plan(std::span<const Shape>(&s, 1), ctx_with(true));
    const Tensor x = test::random_tensor(s, 6);
    Tensor ya(s), yb(s), yc(s);
    const Tensor* src[] = {&x};
    a.forward(src, ya);
    b.forward(src, yb);
    c.forward(src, yc);
    const float scale = static_cast<float>(1.0 / (1.0 - p));
    int64_t kept = 0, same_as_c = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      ASSERT_EQ(ya[i], yb[i]);  // same seed, same mask
      const float m = a.mask()[static_cast<std::size_t>(i)];
      ASSERT_TRUE(m == 0.0f || m == scale) << m;
      ASSERT_EQ(ya[i], x[i] * m);
      kept += m != 0.0f;
      same_as_c += (m != 0.0f) == (c.mask()[static_cast<std::size_t>(i)] != 0.0f);
    }
    // 8000 Bernoulli(1 - p) draws: the kept fraction is within 4 standard deviations.
    const double n = static_cast<double>(x.numel());
    EXPECT_NEAR(kept / n, 1.0 - p, 4.0 * std::sqrt(p * (1.0 - p) / n));
    EXPECT_LT(same_as_c, x.numel());  // another seed, another mask
    // A second forward draws a new mask.
    Tensor y2(s);
    a.forward(src, y2);
    int64_t differ = 0;
    for (int64_t i = 0; i < x.numel(); ++i) differ += y2[i] != ya[i];
    EXPECT_GT(differ, 0);
    // Backward multiplies by the last mask.
    const Tensor dy = test::random_tensor(s, 7);
    Tensor dx(s);
    Tensor* d_src[] = {&dx};
    a.backward(src, y2, dy, d_src);
    for (int64_t i = 0; i < x.numel(); ++i) {
      ASSERT_EQ(dx[i], dy[i] * a.mask()[static_cast<std::size_t>(i)]);
    }
  }
  EXPECT_THROW(Dropout(1.0), Error);
  EXPECT_THROW(Dropout(-0.1), Error);
}

}  // namespace
}  // namespace nnperf
