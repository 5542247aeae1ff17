// Tests for kernels/pool: max, average and adaptive average pooling against the float64
// references at odd shapes (padding, stride other than the kernel, ceil-mode-sized outputs, 1x1
// planes, non-square), on 1 and 3 threads; the max pool's argmax and NaN rule; the backward
// passes against the references' adjoints (max: the gradient routed to the reference argmax;
// average: central differences of the reference, which is linear). Tolerance: float32 sums of at
// most k*k terms against float64: 1e-6 relative.
#include "nnperf/kernels/pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

namespace nnperf {
namespace {

// planes, ih, iw, oh, ow, k, s, p (outputs as PyTorch's formula gives, ceil mode where larger)
const PoolShape kShapes[] = {
    {3, 7, 7, 3, 3, 3, 2, 1},     {2, 6, 5, 2, 2, 3, 3, 0},  {1, 1, 1, 1, 1, 1, 1, 0},
    {4, 8, 8, 4, 4, 2, 2, 0},     {2, 9, 11, 5, 6, 3, 2, 1}, {1, 5, 5, 3, 3, 3, 2, 1},
    {2, 4, 6, 2, 3, 3, 2, 1},  // ceil mode: the last window starts in the input
    {2, 32, 32, 16, 16, 3, 2, 1}, {1, 6, 7, 5, 6, 2, 1, 0},  {1, 13, 17, 4, 5, 5, 3, 2},
    {3, 7, 7, 1, 1, 7, 7, 0},  // global pooling: the adaptive backward's fast path
};

TEST(PoolKernels, ForwardMatchesReferences) {
  for (const PoolShape& s : kShapes) {
    const int64_t n_in = s.planes * s.ih * s.iw, n_out = s.planes * s.oh * s.ow;
    const std::vector<float> x = test::random_vector(n_in, 5);
    std::vector<double> ref(static_cast<std::size_t>(n_out));
    std::vector<int64_t> ref_arg(ref.size());
    for (int threads : {1, 3}) {
      std::vector<float> y(ref.size()), rows(static_cast<std::size_t>(threads * s.iw));
      std::vector<int32_t> arg(ref.size()), cols(rows.size());
      maxpool2d_reference(s, x.data(), ref.data(), ref_arg.data());
      maxpool2d_forward(s, x.data(), y.data(), arg.data(), rows.data(), cols.data(), threads);
      for (int64_t i = 0; i < n_out; ++i) {
        ASSERT_EQ(y[i], ref[i]) << i;  // a maximum is exact
        ASSERT_EQ(arg[i], ref_arg[i]) << i;
      }
      for (bool include_pad : {true, false}) {
        avgpool2d_reference(s, include_pad, x.data(), ref.data());
        avgpool2d_forward(s, include_pad, x.data(), y.data(), threads);
        for (int64_t i = 0; i < n_out; ++i)
          ASSERT_NEAR(y[i], ref[i], 1e-6 * (1 + std::abs(ref[i])));
      }
      adaptive_avgpool2d_reference(s, x.data(), ref.data());
      adaptive_avgpool2d_forward(s, x.data(), y.data(), threads);
      for (int64_t i = 0; i < n_out; ++i) ASSERT_NEAR(y[i], ref[i], 1e-6 * (1 + std::abs(ref[i])));
    }
  }
}

TEST(PoolKernels, MaxPoolNanAndTiesFollowPyTorch) {
  const PoolShape s{1, 2, 4, 1, 2, 2, 2, 0};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x{1, 1, nan, 5,     // window 0: tie -> the first; window 1: NaN
                             0, 1, 7,   nan};  // the last NaN wins
  std::vector<float> y(2), rows(4);
  std::vector<int32_t> arg(2), cols(4);
  maxpool2d_forward(s, x.data(), y.data(), arg.data(), rows.data(), cols.data(), 1);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(arg[0], 0);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(arg[1], 7);
}

// Inputs as a ReLU leaves them (many zeros, few distinct values: ties everywhere, within a column
// and across a window's columns), with and without a NaN sprinkled in: the output and the argmax
// are the reference's, with the argmax wanted or not (inference), on 1 and 3 threads; with the
// argmax, a zero output has the sign of the input it came from.
TEST(PoolKernels, MaxPoolTiesAndNansMatchTheReference) {
  for (const PoolShape& s : kShapes) {
    const int64_t n_in = s.planes * s.ih * s.iw, n_out = s.planes * s.oh * s.ow;
    for (int nans = 0; nans < 2; ++nans) {
      std::vector<float> x = test::random_vector(n_in, 11);
      for (float& v : x) v = v < 0 ? (v < -0.5f ? -0.0f : 0.0f) : std::round(v * 2);
      if (nans == 1)
        x[static_cast<std::size_t>(n_in / 3)] = std::numeric_limits<float>::quiet_NaN();
      std::vector<double> ref(static_cast<std::size_t>(n_out));
      std::vector<int64_t> ref_arg(ref.size());
      maxpool2d_reference(s, x.data(), ref.data(), ref_arg.data());
      for (int threads : {1, 3}) {
        std::vector<float> y(ref.size()), y_inference(ref.size()),
            rows(static_cast<std::size_t>(threads * s.iw));
        std::vector<int32_t> arg(ref.size()), cols(rows.size());
        maxpool2d_forward(s, x.data(), y.data(), arg.data(), rows.data(), cols.data(), threads);
        maxpool2d_forward(s, x.data(), y_inference.data(), nullptr, rows.data(), nullptr, threads);
        for (int64_t i = 0; i < n_out; ++i) {
          const float want =
              x[static_cast<std::size_t>(i / (s.oh * s.ow) * s.ih * s.iw + ref_arg[i])];
          ASSERT_EQ(arg[i], ref_arg[i]) << i << " nans " << nans;
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(y[i]) && std::isnan(y_inference[i])) << i;
            continue;
          }
          ASSERT_EQ(y[i], want) << i;
          ASSERT_EQ(std::signbit(y[i]), std::signbit(want)) << i;
          ASSERT_EQ(y_inference[i], want) << i;  // -0 == 0: the inference pass tracks no index
        }
      }
    }
  }
}

TEST(PoolKernels, BackwardIsTheAdjoint) {
  for (const PoolShape& s : kShapes) {
    const int64_t n_in = s.planes * s.ih * s.iw, n_out = s.planes * s.oh * s.ow;
    std::vector<float> x = test::random_vector(n_in, 6);
    const std::vector<float> dy = test::random_vector(n_out, 7);
    std::vector<double> ref(static_cast<std::size_t>(n_out));
    std::vector<int64_t> ref_arg(ref.size());
    maxpool2d_reference(s, x.data(), ref.data(), ref_arg.data());
    std::vector<float> dx(static_cast<std::size_t>(n_in)), y(ref.size()),
        rows(static_cast<std::size_t>(s.iw));
    std::vector<int32_t> arg(ref.size()), cols(rows.size());
    maxpool2d_forward(s, x.data(), y.data(), arg.data(), rows.data(), cols.data(), 1);
    maxpool2d_backward(s, dy.data(), arg.data(), dx.data(), 2);
    std::vector<double> want(dx.size(), 0.0);
    for (int64_t o = 0; o < n_out; ++o) {
      want[static_cast<std::size_t>(o / (s.oh * s.ow) * s.ih * s.iw + ref_arg[o])] += dy[o];
    }
    for (int64_t i = 0; i < n_in; ++i) ASSERT_NEAR(dx[i], want[i], 1e-6) << i;
    // Average pools: L = sum(dy * pool(x)) is linear in x; central differences of the reference.
    for (int kind = 0; kind < 3; ++kind) {
      if (kind < 2) {
        avgpool2d_backward(s, kind == 0, dy.data(), dx.data(), 2);
      } else {
        adaptive_avgpool2d_backward(s, dy.data(), dx.data(), 2);
      }
      const auto loss = [&] {
        if (kind < 2) {
          avgpool2d_reference(s, kind == 0, x.data(), ref.data());
        } else {
          adaptive_avgpool2d_reference(s, x.data(), ref.data());
        }
        double l = 0;
        for (int64_t o = 0; o < n_out; ++o) l += dy[o] * ref[o];
        return l;
      };
      for (int64_t i = 0; i < n_in; ++i) {
        const float keep = x[i];
        x[i] = keep + 0.25f;
        const double up = loss();
        x[i] = keep - 0.25f;
        const double down = loss();
        x[i] = keep;
        ASSERT_NEAR(dx[i], (up - down) / 0.5, 1e-6 * (1 + std::abs(dx[i]))) << kind << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace nnperf
