// Tests for data/transform: crop + flip + normalise against a float64 reference written from the
// definition (pad with zeros, crop at (dy, dx), flip the crop, (v - mean) / std) at odd shapes and
// every offset; the random draw (range, determinism, both flips seen); channel statistics against
// a float64 two-pass reference. Tolerance: one float rounding of v * scale + shift against the
// exact value, 4 ulp of the result's magnitude plus 1e-6.
#include "nnperf/data/transform.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "test_util.h"

namespace nnperf {
namespace {

double reference(const std::vector<float>& src, int64_t c, int64_t h, int64_t w,
                 const SampleDraw& d, int pad, double mean, double sd, int64_t y, int64_t x) {
  const int64_t xc = d.flip ? w - 1 - x : x;    // position in the crop before flipping
  const int64_t py = y + d.dy, px = xc + d.dx;  // in the padded image
  const int64_t sy = py - pad, sx = px - pad;
  const double v = (sy < 0 || sy >= h || sx < 0 || sx >= w)
                       ? 0.0
                       : static_cast<double>(src[static_cast<std::size_t>((c * h + sy) * w + sx)]);
  return (v - mean) / sd;
}

TEST(Transform, CropFlipNormaliseMatchesReference) {
  for (const auto& [ch, h, w, pad] : std::vector<std::tuple<int64_t, int64_t, int64_t, int>>{
           {1, 28, 28, 4}, {3, 5, 7, 2}, {2, 1, 1, 1}, {3, 9, 4, 0}}) {
    const std::vector<float> src = test::random_vector(ch * h * w, 11 + ch * h * w, 0.0f, 1.0f);
    std::vector<float> scale, shift;
    std::vector<double> mean, sd;
    for (int64_t c = 0; c < ch; ++c) {
      mean.push_back(0.3 + 0.1 * static_cast<double>(c));
      sd.push_back(0.2 + 0.05 * static_cast<double>(c));
      scale.push_back(static_cast<float>(1.0 / sd.back()));
      shift.push_back(static_cast<float>(-mean.back() / sd.back()));
    }
    std::vector<float> dst(src.size());
    for (int dy = 0; dy <= 2 * pad; ++dy) {
      for (int dx = 0; dx <= 2 * pad; ++dx) {
        for (bool flip : {false, true}) {
          const SampleDraw d{dy, dx, flip};
          transform_sample(src.data(), ch, h, w, d, pad, scale.data(), shift.data(), dst.data());
          for (int64_t c = 0; c < ch; ++c) {
            for (int64_t y = 0; y < h; ++y) {
              for (int64_t x = 0; x < w; ++x) {
                const double want = reference(src, c, h, w, d, pad, mean[c], sd[c], y, x);
                const double got = dst[static_cast<std::size_t>((c * h + y) * w + x)];
                ASSERT_NEAR(got, want, 4 * test::kEps * std::abs(want) + 1e-6)
                    << ch << "x" << h << "x" << w << " pad " << pad << " d " << dy << "," << dx
                    << " flip " << flip << " at " << c << "," << y << "," << x;
              }
            }
          }
        }
      }
    }
  }
}

TEST(Transform, DrawIsDeterministicInRangeAndCoversFlips) {
  const AugmentOptions a;
  std::set<int> offsets;
  int flips = 0;
  for (int64_t pos = 0; pos < 400; ++pos) {
    const SampleDraw d = draw_sample(a, 42, 3, pos);
    const SampleDraw again = draw_sample(a, 42, 3, pos);
    EXPECT_EQ(d.dy, again.dy);
    EXPECT_EQ(d.dx, again.dx);
    EXPECT_EQ(d.flip, again.flip);
    ASSERT_GE(d.dy, 0);
    ASSERT_LE(d.dy, 8);
    ASSERT_GE(d.dx, 0);
    ASSERT_LE(d.dx, 8);
    offsets.insert(d.dy * 9 + d.dx);
    flips += d.flip ? 1 : 0;
  }
  EXPECT_GT(offsets.size(), 60u);  // of 81
  EXPECT_GT(flips, 150);
  EXPECT_LT(flips, 250);
  const SampleDraw off = draw_sample(AugmentOptions{false, 4, true}, 42, 3, 7);
  EXPECT_EQ(off.dy, 4);
  EXPECT_EQ(off.dx, 4);
  EXPECT_FALSE(off.flip);
  // Another epoch draws differently.
  int same = 0;
  for (int64_t pos = 0; pos < 100; ++pos) {
    const SampleDraw a3 = draw_sample(a, 42, 3, pos), a4 = draw_sample(a, 42, 4, pos);
    same += a3.dy == a4.dy && a3.dx == a4.dx && a3.flip == a4.flip;
  }
  EXPECT_LT(same, 10);
}

TEST(Transform, ChannelNormMatchesTwoPassReference) {
  Dataset d;
  d.name = "t";
  d.images = test::random_tensor(Shape{7, 3, 5, 3}, 5, 0.0f, 1.0f);
  d.labels.assign(7, 0);
  float* x = d.images.data();
  for (int64_t i = 0; i < 7; ++i) {
    for (int64_t k = 0; k < 15; ++k) x[(i * 3 + 2) * 15 + k] = 0.25f;  // channel 2 constant
  }
  const ChannelNorm n = channel_norm(d);
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0;
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t k = 0; k < 15; ++k) sum += x[(i * 3 + c) * 15 + k];
    const double mean = sum / 105.0;
    double var = 0;
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t k = 0; k < 15; ++k) var += std::pow(x[(i * 3 + c) * 15 + k] - mean, 2);
    var /= 105.0;
    EXPECT_NEAR(n.mean[c], mean, 1e-12);
    if (c == 2) {
      EXPECT_EQ(n.std[c], 1.0);  // constant: centred, not scaled
    } else {
      EXPECT_NEAR(n.std[c], std::sqrt(var), 1e-9);
    }
  }
  EXPECT_EQ(cifar10_norm().mean[0], 0.4914);
  EXPECT_EQ(cifar10_norm().std[2], 0.2010);
}

}  // namespace
}  // namespace nnperf
