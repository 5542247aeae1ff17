// Pooling layers: PyTorch's output-size rule (ceil mode included, with the values torchvision's
// GoogLeNet and ResNet see), MaxPool2d / AvgPool2d (count_include_pad, ceil mode, padding) /
// AdaptiveAvgPool2d (overlapping and repeating windows) / GlobalAvgPool forward against float64
// loops written here from PyTorch's formulas, every backward by central finite differences, NaN
// propagation, threads, and errors for too-small inputs that name the layer and the minimum.
#include "nnperf/nn/pool.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/nn/global_pool.h"
#include "test_util.h"

namespace nnperf {
namespace {

TEST(PoolOutputSize, MatchesPyTorch) {
  // torchvision GoogLeNet at 224: 112 -> 56 -> 28 -> 14 (k3 s2 ceil), 14 -> 7 (k2 s2 ceil).
  EXPECT_EQ(pool_output_size(112, 3, 2, 0, true), 56);
  EXPECT_EQ(pool_output_size(56, 3, 2, 0, true), 28);
  EXPECT_EQ(pool_output_size(28, 3, 2, 0, true), 14);
  EXPECT_EQ(pool_output_size(14, 2, 2, 0, true), 7);
  EXPECT_EQ(pool_output_size(28, 3, 1, 1, true), 28);    // inception branch 4
  EXPECT_EQ(pool_output_size(112, 3, 2, 1, false), 56);  // ResNet maxpool
  EXPECT_EQ(pool_output_size(8, 3, 2, 0, false), 3);
  EXPECT_EQ(pool_output_size(8, 3, 2, 0, true), 4);
  // The last window may not start in the right padding: 4 -> 3.
  EXPECT_EQ(pool_output_size(5, 2, 2, 1, true), 3);
  EXPECT_EQ(pool_output_size(2, 3, 2, 0, true), 1);
  EXPECT_EQ(pool_output_size(1, 3, 2, 0, true), 0);
  EXPECT_EQ(pool_output_size(2, 3, 2, 0, false), 0);
  EXPECT_EQ(pool_output_size(1, 2, 2, 0, true), 1);  // a window hanging over the edge
}

struct PoolCase {
  int64_t mb, c, ih, iw, k, s, p;
  bool ceil;
};

const PoolCase kCases[] = {
    {1, 2, 7, 7, 3, 2, 0, false}, {2, 3, 8, 8, 3, 2, 0, true}, {1, 2, 9, 6, 3, 2, 1, false},
    {1, 3, 6, 6, 3, 2, 1, true},  {2, 2, 5, 5, 2, 2, 1, true}, {1, 2, 6, 7, 3, 1, 1, true},
    {1, 4, 8, 8, 2, 2, 0, false}, {1, 1, 2, 2, 3, 2, 0, true}, {3, 2, 5, 4, 2, 1, 0, false},
};

// Forward in double from PyTorch's formulas (max_pool2d / avg_pool2d CPU kernels).
std::vector<double> pool_double(const PoolCase& pc, bool max, bool include_pad,
                                const std::vector<double>& x, int64_t oh, int64_t ow) {
  std::vector<double> y(static_cast<std::size_t>(pc.mb * pc.c * oh * ow));
  for (int64_t pl = 0; pl < pc.mb * pc.c; ++pl) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t hs = oy * pc.s - pc.p, ws = ox * pc.s - pc.p;
        int64_t he = std::min(hs + pc.k, pc.ih + pc.p), we = std::min(ws + pc.k, pc.iw + pc.p);
        const int64_t padded = (he - hs) * (we - ws);
        hs = std::max<int64_t>(hs, 0);
        ws = std::max<int64_t>(ws, 0);
        he = std::min(he, pc.ih);
        we = std::min(we, pc.iw);
        double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t iy = hs; iy < he; ++iy) {
          for (int64_t ix = ws; ix < we; ++ix) {
            const double v = x[(pl * pc.ih + iy) * pc.iw + ix];
            acc = max ? std::max(acc, v) : acc + v;
          }
        }
        if (!max) acc /= static_cast<double>(include_pad ? padded : (he - hs) * (we - ws));
        y[(pl * oh + oy) * ow + ox] = acc;
      }
    }
  }
  return y;
}

// Distinct values 0.05 apart in random order, so a finite-difference step of 1e-3 never changes
// which element of a window is the maximum.
Tensor spaced_tensor(const Shape& s, uint64_t seed) {
  Tensor t(s);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(0.05 * (i - t.numel() / 2));
  Rng rng(seed);
  for (int64_t i = t.numel() - 1; i > 0; --i) {
    std::swap(t[i], t[static_cast<int64_t>(rng.below(static_cast<uint64_t>(i + 1)))]);
  }
  return t;
}

double dot(const std::vector<double>& a, const Tensor& r) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * r[static_cast<int64_t>(i)];
  return s;
}

PlanContext ctx_with(bool training, int threads = 1) {
  PlanContext c;
  c.training = training;
  c.threads = threads;
  return c;
}

void check_pool(Pool2dBase& layer, const PoolCase& pc, bool max, bool include_pad, uint64_t seed) {
  const std::string what =
      fmt::format("{} on [{}, {}, {}, {}]", layer.describe(), pc.mb, pc.c, pc.ih, pc.iw);
  const Shape in{pc.mb, pc.c, pc.ih, pc.iw};
  const int64_t oh = pool_output_size(pc.ih, pc.k, pc.s, pc.p, pc.ceil);
  const int64_t ow = pool_output_size(pc.iw, pc.k, pc.s, pc.p, pc.ceil);
  for (int threads : {1, 2}) {
    ASSERT_EQ(layer.plan(std::span<const Shape>(&in, 1), ctx_with(true, threads)),
              (Shape{pc.mb, pc.c, oh, ow}))
        << what;
    const Tensor x = max ? spaced_tensor(in, seed) : test::random_tensor(in, seed);
    Tensor y(Shape{pc.mb, pc.c, oh, ow});
    const Tensor* src[] = {&x};
    layer.forward(src, y);
    std::vector<double> xd(x.data(), x.data() + x.numel());
    const std::vector<double> ref = pool_double(pc, max, include_pad, xd, oh, ow);
    for (int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_NEAR(y[i], ref[i], 1e-6 * (1.0 + std::fabs(ref[i]))) << what << " element " << i;
    }
    const Tensor r = test::random_tensor(y.shape(), seed + 1);
    Tensor dx(in);
    Tensor* d_src[] = {&dx};
    layer.backward(src, y, r, d_src);
    test::expect_finite_differences(
        xd, dx, [&] { return dot(pool_double(pc, max, include_pad, xd, oh, ow), r); }, 1e-3, 1e-4,
        what);
  }
}

TEST(MaxPool2d, ForwardAndBackwardMatchPyTorchRules) {
  uint64_t seed = 1;
  for (const PoolCase& pc : kCases) {
    MaxPool2d layer(pc.k, pc.s, pc.p, pc.ceil);
    check_pool(layer, pc, true, true, seed += 2);
  }
  EXPECT_EQ(MaxPool2d(3, 2, 1, true).describe(), "MaxPool2d(k3, s2, p1, ceil)");
  EXPECT_EQ(MaxPool2d(2).describe(), "MaxPool2d(k2, s2)");  // stride defaults to the kernel
}

TEST(AvgPool2d, ForwardAndBackwardMatchPyTorchRules) {
  uint64_t seed = 101;
  for (const PoolCase& pc : kCases) {
    for (bool include_pad : {true, false}) {
      AvgPool2d layer(pc.k, pc.s, pc.p, pc.ceil, include_pad);
      check_pool(layer, pc, false, include_pad, seed += 2);
    }
  }
}

TEST(MaxPool2d, PropagatesNaNAndInferenceNeedsNoArgmax) {
  MaxPool2d layer(2, 2);
  const Shape in{1, 1, 2, 4};
  layer.plan(std::span<const Shape>(&in, 1), ctx_with(false));
  Tensor x = test::random_tensor(in, 7);
  x[1] = std::numeric_limits<float>::quiet_NaN();
  Tensor y(Shape{1, 1, 1, 2});
  const Tensor* src[] = {&x};
  layer.forward(src, y);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_FLOAT_EQ(y[1], std::max(std::max(x[2], x[3]), std::max(x[6], x[7])));
  Tensor dx(in);
  Tensor* d_src[] = {&dx};
  EXPECT_THROW(layer.backward(src, y, y, d_src), Error);  // planned for inference
}

TEST(MaxPool2d, TiesRouteTheGradientToTheFirstMaximumAndTheLastNaN) {
  MaxPool2d layer(2, 2);
  const Shape in{1, 1, 2, 4};
  layer.plan(std::span<const Shape>(&in, 1), ctx_with(true));
  Tensor x(in);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float values[] = {1, 3, nan, 2, 3, 0, 5, nan};  // windows {1,3,3,0} and {nan,2,5,nan}
  std::copy(std::begin(values), std::end(values), x.data());
  Tensor y(Shape{1, 1, 1, 2});
  const Tensor* src[] = {&x};
  layer.forward(src, y);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_TRUE(std::isnan(y[1]));
  Tensor dy(Shape{1, 1, 1, 2}), dx(in);
  dy[0] = 10.0f;
  dy[1] = 20.0f;
  Tensor* d_src[] = {&dx};
  layer.backward(src, y, dy, d_src);
  const float want[] = {0, 10, 0, 0, 0, 0, 0, 20};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(dx[i], want[i]) << i;
}

TEST(Pool2d, TooSmallInputNamesTheLayerAndTheMinimum) {
  MaxPool2d pool(3, 2);
  const Shape in{1, 8, 2, 2};
  try {
    pool.plan(std::span<const Shape>(&in, 1), ctx_with(false));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("MaxPool2d(k3, s2)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[1, 8, 2, 2]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at least 3x3"), std::string::npos) << msg;
  }
  MaxPool2d ceil_pool(3, 2, 0, true);  // ceil mode accepts 2x2
  EXPECT_EQ(ceil_pool.plan(std::span<const Shape>(&in, 1), ctx_with(false)), (Shape{1, 8, 1, 1}));
  EXPECT_THROW(MaxPool2d(3, 2, 2), Error);  // padding above half the kernel
  const Shape flat{4, 8};
  EXPECT_THROW(pool.plan(std::span<const Shape>(&flat, 1), ctx_with(false)), Error);
}

// ---- adaptive / global ----

std::vector<double> adaptive_double(int64_t planes, int64_t ih, int64_t iw, int64_t oh, int64_t ow,
                                    const std::vector<double>& x) {
  std::vector<double> y(static_cast<std::size_t>(planes * oh * ow));
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t hs = static_cast<int64_t>(std::floor(double(oy) * ih / oh));
      const int64_t he = static_cast<int64_t>(std::ceil(double(oy + 1) * ih / oh));
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t ws = static_cast<int64_t>(std::floor(double(ox) * iw / ow));
        const int64_t we = static_cast<int64_t>(std::ceil(double(ox + 1) * iw / ow));
        double s = 0.0;
        for (int64_t iy = hs; iy < he; ++iy) {
          for (int64_t ix = ws; ix < we; ++ix) s += x[(pl * ih + iy) * iw + ix];
        }
        y[(pl * oh + oy) * ow + ox] = s / static_cast<double>((he - hs) * (we - ws));
      }
    }
  }
  return y;
}

TEST(AdaptiveAvgPool2d, ForwardAndBackwardMatchPyTorchWindows) {
  struct Case {
    int64_t mb, c, ih, iw, oh, ow;
  };
  // Overlapping windows (7 -> 3), repetition (1 -> 7, VGG on a 1x1 map), non-square, global.
  const Case cases[] = {{1, 2, 7, 7, 3, 3}, {2, 3, 1, 1, 7, 7}, {1, 2, 13, 6, 6, 6},
                        {2, 4, 5, 5, 1, 1}, {1, 3, 6, 6, 6, 6}, {1, 2, 3, 10, 2, 4}};
  uint64_t seed = 300;
  for (const Case& c : cases) {
    AdaptiveAvgPool2d layer(c.oh, c.ow);
    const Shape in{c.mb, c.c, c.ih, c.iw};
    ASSERT_EQ(layer.plan(std::span<const Shape>(&in, 1), ctx_with(true)),
              (Shape{c.mb, c.c, c.oh, c.ow}));
    const Tensor x = test::random_tensor(in, ++seed);
    Tensor y(Shape{c.mb, c.c, c.oh, c.ow});
    const Tensor* src[] = {&x};
    layer.forward(src, y);
    std::vector<double> xd(x.data(), x.data() + x.numel());
    const std::vector<double> ref = adaptive_double(c.mb * c.c, c.ih, c.iw, c.oh, c.ow, xd);
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-6) << layer.describe();
    const Tensor r = test::random_tensor(y.shape(), ++seed);
    Tensor dx(in);
    Tensor* d_src[] = {&dx};
    layer.backward(src, y, r, d_src);
    test::expect_finite_differences(
        xd, dx, [&] { return dot(adaptive_double(c.mb * c.c, c.ih, c.iw, c.oh, c.ow, xd), r); },
        1e-3, 1e-4, layer.describe());
  }
}

TEST(GlobalAvgPool, IsTheMeanOfEachPlane) {
  GlobalAvgPool layer;
  EXPECT_EQ(layer.describe(), "GlobalAvgPool");
  const Shape in{3, 5, 7, 9};
  ASSERT_EQ(layer.plan(std::span<const Shape>(&in, 1), ctx_with(false, 2)), (Shape{3, 5, 1, 1}));
  const Tensor x = test::random_tensor(in, 400);
  Tensor y(Shape{3, 5, 1, 1});
  const Tensor* src[] = {&x};
  layer.forward(src, y);
  for (int64_t pl = 0; pl < 15; ++pl) {
    double s = 0.0;
    for (int64_t i = 0; i < 63; ++i) s += x[pl * 63 + i];
    ASSERT_NEAR(y[pl], s / 63.0, 1e-6);
  }
  const Shape bad{3, 5};
  EXPECT_THROW(layer.plan(std::span<const Shape>(&bad, 1), ctx_with(false)), Error);
}

}  // namespace
}  // namespace nnperf
