#include "nnperf/kernels/batchnorm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/threads.h"
#include "nnperf/kernels/batchnorm_impl.h"
#include "nnperf/kernels/batchnorm_internal.h"

namespace nnperf {

namespace {

// Below this many elements a second thread costs more than it saves (~20 us of one core).
constexpr int64_t kMinElementsPerThread = 1 << 15;

int useful_threads(int threads, int64_t elements) {
  return nnperf::useful_threads(threads, static_cast<double>(elements), kMinElementsPerThread);
}

// Planes that fit a block go by blocks of whole channels (batchnorm_impl.h). Measured on one core
// (Zen 4, AVX-512 loops; bench/batchnorm_bench.cc), the blocks' time over the per-channel loops',
// forward / backward: 0.10 / 0.10 at 1x1 planes, 0.16 / 0.22 at 2x2, 0.35 / 0.53 at 4x4, 0.74 /
// 0.82 at 8x8, 0.88 / 0.95 at 16x16, 0.78 / 0.64 at 32x32 (batch 32); 0.70 / 0.77 at 7x7, 0.96 /
// 0.94 at 14x14, 0.79 / 0.70 at 28x28 (batch 8). With larger blocks (16384 values) 1.0-1.5 at
// 56x56 and 112x112, which stay with the per-channel loops. So kAuto takes blocks wherever the
// plane fits one (kBatchNormBlockValues).

// The inference map goes image by image, with the scale and shift spread over each plane, for
// planes of at most this many values and batches of at least this many images (spreading costs
// about one image's pass); row by row (one plane each) otherwise. Measured on the same core,
// images' time (spreading included) over rows': 0.17 at 1x1 planes, 0.31 at 2x2, 0.44 at 8 values
// (batch 32); 1.7-1.9 at batch 1; 2.2 at 9 and 16 values.
constexpr int64_t kApplyImagesMaxPlane = 8, kApplyImagesMinBatch = 4;

// The loops for the instruction set active_simd() allows.
const detail::BatchNormPaths& paths() {
  static const detail::BatchNormPaths portable{
      &detail::train_forward_channel, &detail::backward_channel, &detail::apply_rows,
      &detail::train_forward_block,   &detail::backward_block,   &detail::apply_images};
  switch (active_simd()) {
    case SimdLevel::kAvx512:
      return detail::kBatchNormPathsAvx512;
    case SimdLevel::kAvx2:
      return detail::kBatchNormPathsAvx2;
    default:
      return portable;
  }
}

// f(c0, c1) over blocks of whole channels on t threads: as many channels as a block holds, but
// at least one block per thread.
template <class F>
void for_channel_blocks(const BatchNormShape& s, int t, F f) {
  const int64_t fit = std::max<int64_t>(1, kBatchNormBlockValues / s.plane);
  const int64_t per = std::min(fit, (s.channels + t - 1) / t);
  const int64_t blocks = (s.channels + per - 1) / per;
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) f(b * per, std::min(s.channels, (b + 1) * per));
}

// f(i0, i1) over t contiguous chunks of [0, items), one per thread.
template <class F>
void for_chunks(int64_t items, int t, F f) {
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int i = 0; i < t; ++i) f(items * i / t, items * (i + 1) / t);
}

}  // namespace

void batchnorm_apply(const BatchNormShape& s, const float* x, const float* scale,
                     const float* shift, float* y, int threads) {
  const int t = useful_threads(threads, s.mb * s.channels * s.plane);
  if (s.plane <= kApplyImagesMaxPlane && s.mb >= kApplyImagesMinBatch) {
    std::vector<float> scale_values, shift_values;
    scale_values.reserve(static_cast<std::size_t>(s.channels * s.plane));
    shift_values.reserve(scale_values.capacity());
    for (int64_t c = 0; c < s.channels; ++c) {
      scale_values.insert(scale_values.end(), static_cast<std::size_t>(s.plane), scale[c]);
      shift_values.insert(shift_values.end(), static_cast<std::size_t>(s.plane), shift[c]);
    }
    const auto apply_images = paths().apply_images;
    for_chunks(s.mb, t, [&](int64_t n0, int64_t n1) {
      apply_images(s, x, scale_values.data(), shift_values.data(), y, n0, n1);
    });
    return;
  }
  const auto apply_rows = paths().apply_rows;
  for_chunks(s.mb * s.channels, t,
             [&](int64_t r0, int64_t r1) { apply_rows(s, x, scale, shift, y, r0, r1); });
}

const char* to_string(BatchNormLayout layout) {
  switch (layout) {
    case BatchNormLayout::kChannels:
      return "channels";
    case BatchNormLayout::kBlocks:
      return "blocks";
    case BatchNormLayout::kAuto:
      break;
  }
  return "auto";
}

BatchNormLayout batchnorm_auto_layout(const BatchNormShape& s) {
  return s.plane <= kBatchNormBlockValues ? BatchNormLayout::kBlocks : BatchNormLayout::kChannels;
}

std::string batchnorm_layout_why_not(BatchNormLayout layout, const BatchNormShape& s) {
  if (layout != BatchNormLayout::kBlocks || s.plane <= kBatchNormBlockValues) return "";
  return fmt::format("a plane of {} values: more than a block of channels holds ({})", s.plane,
                     kBatchNormBlockValues);
}

namespace {
// The layout a pass runs: kAuto resolved, any other checked.
bool by_blocks(const BatchNormShape& s, BatchNormLayout layout) {
  if (layout == BatchNormLayout::kAuto) layout = batchnorm_auto_layout(s);
  const std::string why = batchnorm_layout_why_not(layout, s);
  NNPERF_CHECK(why.empty(), "batchnorm: {}", why);
  return layout == BatchNormLayout::kBlocks;
}
}  // namespace

void batchnorm_train_forward(const BatchNormTrainArgs& a, BatchNormLayout layout) {
  const BatchNormShape& s = a.shape;
  const int t = useful_threads(a.threads, s.mb * s.channels * s.plane);
  if (by_blocks(s, layout)) {
    const auto block = paths().train_forward_block;
    for_channel_blocks(s, t, [&a, block](int64_t c0, int64_t c1) { block(a, c0, c1); });
    return;
  }
  const auto channel = paths().train_forward_channel;
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) channel(a, c);
}

void batchnorm_backward(const BatchNormBackwardArgs& a, BatchNormLayout layout) {
  const BatchNormShape& s = a.shape;
  NNPERF_CHECK(!a.relu || a.y != nullptr, "batchnorm backward: the fused ReLU needs its output");
  const int t = useful_threads(a.threads, s.mb * s.channels * s.plane);
  if (by_blocks(s, layout)) {
    const auto block = paths().backward_block;
    for_channel_blocks(s, t, [&a, block](int64_t c0, int64_t c1) { block(a, c0, c1); });
    return;
  }
  const auto channel = paths().backward_channel;
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) channel(a, c);
}

void batchnorm_train_forward_reference(const BatchNormShape& s, const float* x, const float* gamma,
                                       const float* beta, double eps, double* y, double* mean,
                                       double* var, bool relu) {
  const double count = static_cast<double>(s.mb * s.plane);
  for (int64_t c = 0; c < s.channels; ++c) {
    double m = 0, v = 0;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) m += x[(n * s.channels + c) * s.plane + i];
    m /= count;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) {
        const double d = x[(n * s.channels + c) * s.plane + i] - m;
        v += d * d;
      }
    v /= count;
    mean[c] = m;
    var[c] = v;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) {
        const int64_t k = (n * s.channels + c) * s.plane + i;
        y[k] = (x[k] - m) / std::sqrt(v + eps) * gamma[c] + beta[c];
        if (relu && y[k] < 0.0) y[k] = 0.0;
      }
  }
}

void batchnorm_backward_reference(const BatchNormShape& s, const float* x, const float* dy,
                                  const float* gamma, double eps, double* dx, double* d_gamma,
                                  double* d_beta, const float* beta, bool relu) {
  const double count = static_cast<double>(s.mb * s.plane);
  std::vector<double> y(static_cast<std::size_t>(s.mb * s.channels * s.plane));
  std::vector<double> mean(static_cast<std::size_t>(s.channels)), var(mean.size());
  std::vector<float> zeros(mean.size(), 0.0f);
  NNPERF_CHECK(!relu || beta != nullptr, "batchnorm_backward_reference: relu needs beta");
  // BatchNorm's output before the ReLU (only its sign is read, for the mask).
  batchnorm_train_forward_reference(s, x, gamma, relu ? beta : zeros.data(), eps, y.data(),
                                    mean.data(), var.data());
  // dy through the ReLU: 0 where BatchNorm's output is not positive.
  std::vector<double> g(y.size());
  for (std::size_t k = 0; k < g.size(); ++k) g[k] = relu && !(y[k] > 0.0) ? 0.0 : dy[k];
  for (int64_t c = 0; c < s.channels; ++c) {
    const double inv = 1.0 / std::sqrt(var[c] + eps);
    double sdy = 0, sdyx = 0;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) {
        const int64_t k = (n * s.channels + c) * s.plane + i;
        sdy += g[k];
        sdyx += g[k] * (x[k] - mean[c]) * inv;
      }
    d_gamma[c] = sdyx;
    d_beta[c] = sdy;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) {
        const int64_t k = (n * s.channels + c) * s.plane + i;
        const double xhat = (x[k] - mean[c]) * inv;
        dx[k] = gamma[c] * inv * (g[k] - sdy / count - xhat * sdyx / count);
      }
  }
}

}  // namespace nnperf
