// The GPU's CNN-inference kernels (kernels/cnn_cuda.cu) against the float64 references of the CPU
// kernels at the CPU tests' odd pool shapes (padding, strides other than the kernel, ceil-mode
// outputs, 1x1 planes, non-square): max pooling exact (NaN propagating), average and adaptive
// pooling within the CPU rows' 1e-6 relative, the per-channel affine (BatchNorm inference, conv
// bias), clamp (ReLU6), Add and Concat exact; for training, BatchNorm's forward (with running
// statistics) and backward against the CPU kernels within float32 rounding of float64 sums, and
// the pool backward passes (and max pooling's argmax) equal to the CPU loops' results; Dropout's
// masks equal to their host recomputation, its and ReLU6's backward exact. Without a device every
// entry refuses with the reason.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/counter_rng.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/pool.h"
#include "test_util.h"

namespace nnperf {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason()

using cuda::to_device;
using cuda::to_host;

const PoolShape kShapes[] = {
    {3, 7, 7, 3, 3, 3, 2, 1}, {2, 6, 5, 2, 2, 3, 3, 0},  {1, 1, 1, 1, 1, 1, 1, 0},
    {4, 8, 8, 4, 4, 2, 2, 0}, {2, 9, 11, 5, 6, 3, 2, 1}, {1, 5, 5, 3, 3, 3, 2, 1},
    {2, 4, 6, 2, 3, 3, 2, 1},
};

TEST(CudaCnnKernels, WithoutADeviceEachEntryRefusesWithTheReason) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is usable here";
  float x = 0.0f;
  try {
    cuda_kernels::maxpool2d_forward(kShapes[2], &x, &x);
    FAIL() << "ran without a device";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), cuda::unavailable_reason());
  }
  EXPECT_THROW(cuda_kernels::channel_affine({1, 1, 1}, &x, &x, &x, &x), Error);
  EXPECT_THROW(cuda_kernels::concat_part(&x, 1, 1, &x, 1, 0), Error);
  EXPECT_THROW(cuda_kernels::clamp(&x, &x, 1, 0.0f, 6.0f), Error);
  EXPECT_THROW(cuda_kernels::batchnorm_train_forward(BatchNormTrainArgs{}), Error);
  EXPECT_THROW(cuda_kernels::avgpool2d_backward(kShapes[2], true, &x, &x), Error);
  EXPECT_THROW(cuda_kernels::dropout_forward(&x, &x, &x, 1, 0.5f, 1, 0), Error);
  EXPECT_THROW(cuda_kernels::clamp_backward(&x, &x, &x, 1, 0.0f, 6.0f), Error);
}

TEST(CudaCnnKernels, PoolsMatchTheReferences) {
  SKIP_WITHOUT_DEVICE();
  for (const PoolShape& s : kShapes) {
    const int64_t n_in = s.planes * s.ih * s.iw, n_out = s.planes * s.oh * s.ow;
    std::vector<float> x = test::random_vector(n_in, 5);
    x[0] = std::numeric_limits<float>::quiet_NaN();  // propagates through its windows
    const cuda::Buffer dx = to_device(x);
    cuda::Buffer dy(static_cast<std::size_t>(n_out));
    std::vector<double> ref(static_cast<std::size_t>(n_out));
    std::vector<int64_t> arg(ref.size());
    maxpool2d_reference(s, x.data(), ref.data(), arg.data());
    cuda_kernels::maxpool2d_forward(s, dx.data(), dy.data());
    std::vector<float> y = to_host(dy);
    for (int64_t i = 0; i < n_out; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (std::isnan(ref[k])) {
        ASSERT_TRUE(std::isnan(y[k])) << i;
      } else {
        ASSERT_EQ(y[k], ref[k]) << i;
      }
    }
    x[0] = 0.25f;
    const cuda::Buffer dx2 = to_device(x);
    for (bool include_pad : {true, false}) {
      avgpool2d_reference(s, include_pad, x.data(), ref.data());
      cuda_kernels::avgpool2d_forward(s, include_pad, dx2.data(), dy.data());
      y = to_host(dy);
      for (int64_t i = 0; i < n_out; ++i) {
        const auto k = static_cast<std::size_t>(i);
        ASSERT_NEAR(y[k], ref[k], 1e-6 * (1 + std::abs(ref[k]))) << i;
      }
    }
    adaptive_avgpool2d_reference(s, x.data(), ref.data());
    cuda_kernels::adaptive_avgpool2d_forward(s, dx2.data(), dy.data());
    y = to_host(dy);
    for (int64_t i = 0; i < n_out; ++i) {
      const auto k = static_cast<std::size_t>(i);
      ASSERT_NEAR(y[k], ref[k], 1e-6 * (1 + std::abs(ref[k]))) << i;
    }
  }
}

// The affine map, clamp and Add on shape s with every array `offset` floats into its buffer: odd
// planes and offsets take the one-by-one kernels, aligned arrays (and, for the affine map, planes
// of a multiple of four) the float4 ones, whose last n % 4 elements go one by one.
void expect_affine_clamp_add_exact(const BatchNormShape& s, std::size_t offset) {
  SCOPED_TRACE(
      fmt::format("mb {} channels {} plane {} offset {}", s.mb, s.channels, s.plane, offset));
  const int64_t n = s.mb * s.channels * s.plane;
  const auto at = [&](std::size_t i) { return i + offset; };
  std::vector<float> x = test::random_vector(n + static_cast<int64_t>(offset), 1, -8.0f, 8.0f);
  const std::vector<float> scale = test::random_vector(s.channels, 2);
  const std::vector<float> shift = test::random_vector(s.channels, 3);
  const cuda::Buffer dx = to_device(x), dscale = to_device(scale), dshift = to_device(shift);
  cuda::Buffer dy(x.size());
  const float* xp = dx.data() + offset;
  float* yp = dy.data() + offset;
  cuda_kernels::channel_affine(s, xp, dscale.data(), dshift.data(), yp);
  std::vector<float> y = to_host(dy);
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const auto c = static_cast<std::size_t>((i / s.plane) % s.channels);
    ASSERT_EQ(y[at(k)], std::fma(x[at(k)], scale[c], shift[c])) << i;
  }
  cuda_kernels::channel_affine(s, xp, nullptr, dshift.data(), yp);  // a bias
  y = to_host(dy);
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const auto c = static_cast<std::size_t>((i / s.plane) % s.channels);
    ASSERT_EQ(y[at(k)], x[at(k)] + shift[c]) << i;
  }
  cuda_kernels::clamp(xp, yp, n, 0.0f, 6.0f);
  y = to_host(dy);
  for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k)
    ASSERT_EQ(y[at(k)], std::min(std::max(x[at(k)], 0.0f), 6.0f)) << k;
  cuda_kernels::add(xp, xp, yp, n);
  y = to_host(dy);
  for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) ASSERT_EQ(y[at(k)], 2 * x[at(k)]);
}

// ReLU6's clamp keeps a NaN, as the CPU's std::min(std::max(x, lo), hi) does, so a diverged run
// shows as one; the rest is clamped to [lo, hi].
TEST(CudaCnnKernels, ClampKeepsANaN) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<float> x{std::numeric_limits<float>::quiet_NaN(), -1.0f, 7.0f, 3.0f,
                             -std::numeric_limits<float>::infinity()};
  const cuda::Buffer dx = to_device(x);
  cuda::Buffer dy(x.size());
  cuda_kernels::clamp(dx.data(), dy.data(), static_cast<int64_t>(x.size()), 0.0f, 6.0f);
  const std::vector<float> y = to_host(dy);
  EXPECT_TRUE(std::isnan(y[0])) << y[0];
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 6.0f);
  EXPECT_EQ(y[3], 3.0f);
  EXPECT_EQ(y[4], 0.0f);
}

TEST(CudaCnnKernels, AffineClampAddAndConcatAreExact) {
  SKIP_WITHOUT_DEVICE();
  // Odd planes (the affine map one by one; Add by fours with a tail of 1 and of 3:
  // n = 105 and 7), planes of 8 and 12 (the affine map by fours: n = 48 and 108); each aligned and
  // one float off (everything one by one).
  for (const BatchNormShape& s : {BatchNormShape{3, 5, 7}, BatchNormShape{1, 1, 7},
                                  BatchNormShape{2, 3, 8}, BatchNormShape{3, 3, 12}}) {
    for (const std::size_t offset : {0, 1}) expect_affine_clamp_add_exact(s, offset);
  }
  // Concat of [3, 2, 7] and [3, 3, 7] (as [mb, c, plane]) into [3, 5, 7].
  const int64_t mb = 3, plane = 7, c1 = 2, c2 = 3;
  const std::vector<float> a = test::random_vector(mb * c1 * plane, 4),
                           b = test::random_vector(mb * c2 * plane, 5);
  const cuda::Buffer da = to_device(a), db = to_device(b);
  cuda::Buffer dc(static_cast<std::size_t>(mb * (c1 + c2) * plane));
  cuda_kernels::concat_part(da.data(), mb, c1 * plane, dc.data(), (c1 + c2) * plane, 0);
  cuda_kernels::concat_part(db.data(), mb, c2 * plane, dc.data(), (c1 + c2) * plane, c1 * plane);
  const std::vector<float> c = to_host(dc);
  for (int64_t img = 0; img < mb; ++img) {
    for (int64_t j = 0; j < c1 * plane; ++j) {
      ASSERT_EQ(c[static_cast<std::size_t>(img * (c1 + c2) * plane + j)],
                a[static_cast<std::size_t>(img * c1 * plane + j)]);
    }
    for (int64_t j = 0; j < c2 * plane; ++j) {
      ASSERT_EQ(c[static_cast<std::size_t>(img * (c1 + c2) * plane + c1 * plane + j)],
                b[static_cast<std::size_t>(img * c2 * plane + j)]);
    }
  }
}

// The device buffer of n int32 values: cuda::Buffer holds floats, and int32 has their size.
int32_t* as_int(cuda::Buffer& b) { return reinterpret_cast<int32_t*>(b.data()); }

TEST(CudaCnnKernels, PoolBackwardPassesEqualTheCpuLoops) {
  SKIP_WITHOUT_DEVICE();
  for (const PoolShape& s : kShapes) {
    const int64_t n_in = s.planes * s.ih * s.iw, n_out = s.planes * s.oh * s.ow;
    std::vector<float> x = test::random_vector(n_in, 7);
    if (n_in > 3) x[3] = x[2];  // a tie: the first maximum wins on both
    const std::vector<float> dy = test::random_vector(n_out, 8);
    // CPU
    std::vector<float> y(static_cast<std::size_t>(n_out)), rows(static_cast<std::size_t>(s.iw));
    std::vector<int32_t> cols(rows.size());
    std::vector<int32_t> arg(y.size());
    std::vector<float> dx(static_cast<std::size_t>(n_in));
    maxpool2d_forward(s, x.data(), y.data(), arg.data(), rows.data(), cols.data(), 1);
    // GPU
    const cuda::Buffer dxg = to_device(x), dyg = to_device(dy);
    cuda::Buffer yg(y.size()), argg(y.size()), dxo(dx.size());
    cuda_kernels::maxpool2d_forward_argmax(s, dxg.data(), yg.data(), as_int(argg));
    cuda::synchronize();
    std::vector<int32_t> garg(arg.size());
    argg.download({reinterpret_cast<float*>(garg.data()), garg.size()});
    EXPECT_EQ(to_host(yg), y);
    EXPECT_EQ(garg, arg);
    maxpool2d_backward(s, dy.data(), arg.data(), dx.data(), 1);
    cuda_kernels::maxpool2d_backward(s, dyg.data(), as_int(argg), dxo.data());
    EXPECT_EQ(to_host(dxo), dx);
    for (bool include_pad : {true, false}) {
      avgpool2d_backward(s, include_pad, dy.data(), dx.data(), 1);
      cuda_kernels::avgpool2d_backward(s, include_pad, dyg.data(), dxo.data());
      EXPECT_EQ(to_host(dxo), dx) << "count_include_pad " << include_pad;
    }
    adaptive_avgpool2d_backward(s, dy.data(), dx.data(), 1);
    cuda_kernels::adaptive_avgpool2d_backward(s, dyg.data(), dxo.data());
    EXPECT_EQ(to_host(dxo), dx);
  }
}

// BatchNorm's training forward and backward, and the per-channel sum (a convolution's bias
// gradient), against the CPU kernels. The sums split each channel over blocks once it holds 2048
// elements or more: 41 images of 50 (two splits of 1025, the boundary inside an image, 256
// threads stepping over five images and 6 more elements at a time) and 4 images of 4099 (16
// splits); planes of 1 step whole images. Planes of a multiple of four (300, 196, 1024) are
// mapped four elements at a time. The last shape's values lie around 1000 with a spread of 1:
// the one-pass variance (shifted by the channel's first element) keeps its precision there.
TEST(CudaCnnKernels, BatchNormTrainingMatchesTheCpuKernels) {
  SKIP_WITHOUT_DEVICE();
  for (const BatchNormShape s :
       {BatchNormShape{3, 5, 7}, BatchNormShape{2, 4, 1}, BatchNormShape{1, 3, 300},
        BatchNormShape{41, 3, 50}, BatchNormShape{4, 3, 4099}, BatchNormShape{600, 2, 1},
        BatchNormShape{5, 6, 196}, BatchNormShape{9, 3, 1024}}) {
    SCOPED_TRACE(fmt::format("mb {} channels {} plane {}", s.mb, s.channels, s.plane));
    const int64_t n = s.mb * s.channels * s.plane;
    const bool far = s.plane == 1024;
    const std::vector<float> x = test::random_vector(n, 1, far ? 999.0f : -3.0f,
                                                     far ? 1001.0f : 5.0f);  // a mean away from 0
    const std::vector<float> dy = test::random_vector(n, 2);
    const std::vector<float> gamma = test::random_vector(s.channels, 3, 0.5f, 1.5f);
    const std::vector<float> beta = test::random_vector(s.channels, 4);
    // CPU
    std::vector<float> y(static_cast<std::size_t>(n)), dx(y.size()), rm(gamma.size(), 0.1f),
        rv(gamma.size(), 0.9f), dg(gamma.size()), db(gamma.size());
    std::vector<double> mean(gamma.size()), inv(gamma.size());
    BatchNormTrainArgs f{s,   x.data(),  y.data(),  gamma.data(), beta.data(), 1e-5,
                         0.1, rm.data(), rv.data(), mean.data(),  inv.data(),  1};
    batchnorm_train_forward(f);
    batchnorm_backward({s, x.data(), dy.data(), dx.data(), gamma.data(), mean.data(), inv.data(),
                        dg.data(), db.data(), 1});
    // GPU (float64 statistics in float buffers of twice the length)
    const cuda::Buffer xg = to_device(x), dyg = to_device(dy), gg = to_device(gamma),
                       bg = to_device(beta);
    cuda::Buffer yg(y.size()), dxg(y.size()),
        rmg = to_device(std::vector<float>(gamma.size(), 0.1f)),
        rvg = to_device(std::vector<float>(gamma.size(), 0.9f)), meang(2 * gamma.size()),
        invg(2 * gamma.size()), dgg(gamma.size()), dbg(gamma.size());
    auto* mean_d = reinterpret_cast<double*>(meang.data());
    auto* inv_d = reinterpret_cast<double*>(invg.data());
    cuda_kernels::batchnorm_train_forward({s, xg.data(), yg.data(), gg.data(), bg.data(), 1e-5, 0.1,
                                           rmg.data(), rvg.data(), mean_d, inv_d, 1});
    cuda_kernels::batchnorm_backward({s, xg.data(), dyg.data(), dxg.data(), gg.data(), mean_d,
                                      inv_d, dgg.data(), dbg.data(), 1});
    const auto near = [](const std::vector<float>& got, const std::vector<float>& want,
                         const char* what) {
      ASSERT_EQ(got.size(), want.size()) << what;
      for (std::size_t i = 0; i < want.size(); ++i) {
        // The same float64 arithmetic summed in another order: at most one float32 rounding.
        ASSERT_NEAR(got[i], want[i], 2.5e-7 * (1 + std::abs(want[i]))) << what << " " << i;
      }
    };
    near(to_host(yg), y, "y");
    near(to_host(rmg), rm, "running_mean");
    near(to_host(rvg), rv, "running_var");
    near(to_host(dxg), dx, "dx");
    near(to_host(dgg), dg, "d_gamma");
    near(to_host(dbg), db, "d_beta");
    cuda_kernels::channel_sum(s, dyg.data(), dbg.data());  // d_beta's sum on its own
    std::vector<float> want(gamma.size());
    for (int64_t c = 0; c < s.channels; ++c) {
      double sum = 0.0;
      for (int64_t img = 0; img < s.mb; ++img) {
        for (int64_t j = 0; j < s.plane; ++j)
          sum += dy[static_cast<std::size_t>((img * s.channels + c) * s.plane + j)];
      }
      want[static_cast<std::size_t>(c)] = static_cast<float>(sum);
    }
    near(to_host(dbg), want, "channel_sum");
  }
}

// Dropout's forward: each mask entry the host's dropout_mask_entry of its draw (exactly), the
// output x * mask, about `keep` of the entries kept; another offset draws another mask. Its
// backward (multiply) and ReLU6's backward (clamp_backward, the boundaries 0 and 6 included)
// exact against nn/'s loops.
TEST(CudaCnnKernels, DropoutMaskMultiplyAndClampBackwardAreExact) {
  SKIP_WITHOUT_DEVICE();
  const int64_t n = 100003;
  const float keep = 0.7f;
  const uint64_t seed = 0x5EED0D0E00000003ull, offset = 12345;
  std::vector<float> x = test::random_vector(n, 31, -3.0f, 9.0f);
  x[0] = 0.0f;
  x[1] = 6.0f;
  x[2] = -0.0f;
  const std::vector<float> dy = test::random_vector(n, 32, -1.0f, 1.0f);
  cuda::Buffer dx(x.size()), y(x.size()), mask(x.size()), mask2(x.size()), dx2(x.size());
  const cuda::Buffer xd = to_device(x), dyd = to_device(dy);
  cuda_kernels::dropout_forward(xd.data(), y.data(), mask.data(), n, keep, seed, offset);
  cuda_kernels::dropout_forward(xd.data(), dx2.data(), mask2.data(), n, keep, seed, offset + n);
  cuda_kernels::multiply(dyd.data(), mask.data(), dx.data(), n);
  const std::vector<float> m = to_host(mask), m2 = to_host(mask2), yh = to_host(y),
                           dxh = to_host(dx);
  int64_t kept = 0, same = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    ASSERT_EQ(m[k], dropout_mask_entry(seed, offset + static_cast<uint64_t>(i), keep)) << i;
    ASSERT_EQ(yh[k], x[k] * m[k]) << i;
    ASSERT_EQ(dxh[k], dy[k] * m[k]) << i;
    kept += m[k] != 0.0f;
    same += (m[k] != 0.0f) == (m2[k] != 0.0f);
  }
  const double sigma = std::sqrt(n * keep * (1.0 - keep));
  EXPECT_NEAR(static_cast<double>(kept), n * keep, 5 * sigma);
  // Independent masks agree on keep^2 + (1 - keep)^2 = 0.58 of the entries.
  EXPECT_NEAR(static_cast<double>(same) / n, 0.58, 0.01);
  cuda_kernels::clamp_backward(xd.data(), dyd.data(), dx.data(), n, 0.0f, 6.0f);
  const std::vector<float> g = to_host(dx);
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    ASSERT_EQ(g[k], (x[k] > 0.0f && x[k] < 6.0f) ? dy[k] : 0.0f) << i;
  }
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_EQ(g[1], 0.0f);
}

// Dropout's draws from a device step counter (a training step captured once as a CUDA graph):
// each launch reads the counter as it runs, so the mask after the host sets it to k is the one
// drawn from offset + k * per_step, exactly.
TEST(CudaCnnKernels, DropoutReadsItsStepCountFromTheDevice) {
  SKIP_WITHOUT_DEVICE();
  const int64_t n = 1031;
  const float keep = 0.5f;
  const uint64_t seed = 0x5EED0D0E00000007ull, offset = 3, per_step = 4096;
  const cuda::Buffer xd = to_device(test::random_vector(n, 33, -1.0f, 1.0f));
  cuda::Buffer y(static_cast<std::size_t>(n)), mask(static_cast<std::size_t>(n)), counter(2);
  cuda::CapturedWork draw;
  draw.capture([&] {
    cuda_kernels::dropout_forward(xd.data(), y.data(), mask.data(), n, keep, seed, offset,
                                  reinterpret_cast<const uint64_t*>(counter.data()), per_step);
  });
  for (const uint64_t k : {uint64_t{0}, uint64_t{1}, uint64_t{5}, uint64_t{1} << 33}) {
    cuda::upload_value(counter, k);
    draw.launch();
    const std::vector<float> m = to_host(mask);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(m[static_cast<std::size_t>(i)],
                dropout_mask_entry(seed, offset + k * per_step + static_cast<uint64_t>(i), keep))
          << "step " << k << ", element " << i;
    }
  }
}

}  // namespace
}  // namespace nnperf
